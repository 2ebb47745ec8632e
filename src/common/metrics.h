// A small Prometheus metrics registry: counters, gauges and histograms with
// labels, rendered in the Prometheus text exposition format.
//
// Thread safety: all methods are safe from any thread. Metric objects live as
// long as the registry; hot paths look a metric up once and keep the reference.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace shoal {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Add(uint64_t v = 1) { v_.fetch_add(v, std::memory_order_relaxed); }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void Add(int64_t v) { v_.fetch_add(v, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  // Approximate quantile (0..1) from the buckets, for status output.
  double Quantile(double q) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  friend class MetricsRegistry;
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1 (the +Inf bucket)
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};  // sum in millionths, to stay atomic
};

// Latency buckets in seconds, 50 us to 10 s.
std::vector<double> LatencyBuckets();

class MetricsRegistry {
 public:
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& GetHistogram(const std::string& name, const std::string& help, const Labels& labels = {},
                          std::vector<double> bounds = LatencyBuckets());

  std::string RenderPrometheus() const;

  // The process-wide registry that /metrics renders.
  static MetricsRegistry& Global();

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Family {
    Kind kind;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& GetFamily(const std::string& name, Kind kind, const std::string& help);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace shoal
