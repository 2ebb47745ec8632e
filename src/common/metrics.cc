#include "common/metrics.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace shoal {
namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string LabelText(const Labels& labels, const std::string& extra_key = "", const std::string& extra_value = "") {
  if (labels.empty() && extra_key.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k + "=\"" + Escape(v) + "\"";
  }
  if (!extra_key.empty()) {
    if (!first) out += ',';
    out += extra_key + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

std::string Num(double v) {
  if (std::isinf(v)) return "+Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<uint64_t>(v * 1e6), std::memory_order_relaxed);
}

double Histogram::Quantile(double q) const {
  uint64_t total = count();
  if (total == 0) return 0;
  uint64_t want = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total)));
  uint64_t seen = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen >= want) return i < bounds_.size() ? bounds_[i] : INFINITY;
  }
  return INFINITY;
}

std::vector<double> LatencyBuckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

MetricsRegistry::Family& MetricsRegistry::GetFamily(const std::string& name, Kind kind, const std::string& help) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.kind = kind;
    it->second.help = help;
  } else if (it->second.kind != kind) {
    throw std::logic_error("metric " + name + " registered with two kinds");
  }
  return it->second;
}

Counter& MetricsRegistry::GetCounter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& f = GetFamily(name, Kind::kCounter, help);
  auto& slot = f.counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& f = GetFamily(name, Kind::kGauge, help);
  auto& slot = f.gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::GetHistogram(const std::string& name, const std::string& help, const Labels& labels,
                                         std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  auto& f = GetFamily(name, Kind::kHistogram, help);
  auto& slot = f.histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

std::string MetricsRegistry::RenderPrometheus() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n";
    switch (f.kind) {
      case Kind::kCounter:
        out += "# TYPE " + name + " counter\n";
        for (const auto& [l, c] : f.counters) out += name + LabelText(l) + " " + std::to_string(c->value()) + "\n";
        break;
      case Kind::kGauge:
        out += "# TYPE " + name + " gauge\n";
        for (const auto& [l, g] : f.gauges) out += name + LabelText(l) + " " + std::to_string(g->value()) + "\n";
        break;
      case Kind::kHistogram:
        out += "# TYPE " + name + " histogram\n";
        for (const auto& [l, h] : f.histograms) {
          uint64_t cum = 0;
          for (size_t i = 0; i <= h->bounds_.size(); ++i) {
            cum += h->buckets_[i].load(std::memory_order_relaxed);
            double le = i < h->bounds_.size() ? h->bounds_[i] : INFINITY;
            out += name + "_bucket" + LabelText(l, "le", Num(le)) + " " + std::to_string(cum) + "\n";
          }
          out += name + "_sum" + LabelText(l) + " " + Num(static_cast<double>(h->sum_micros_.load()) / 1e6) + "\n";
          out += name + "_count" + LabelText(l) + " " + std::to_string(h->count()) + "\n";
        }
        break;
    }
  }
  return out;
}

MetricsRegistry& MetricsRegistry::Global() {
  static MetricsRegistry* r = new MetricsRegistry();
  return *r;
}

}  // namespace shoal
