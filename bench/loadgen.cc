#include "bench/loadgen.h"

#include <sys/resource.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

namespace shoal::bench {

using Clock = std::chrono::steady_clock;

Result<Workload> ParseWorkload(std::string_view name) {
  if (name == "whole") return Workload::kWhole;
  if (name == "seq") return Workload::kSeq;
  if (name == "ranges") return Workload::kRanges;
  return Err(Code::kInvalidArgument, "unknown workload '" + std::string(name) + "' (whole, seq or ranges)");
}

std::string_view WorkloadName(Workload w) {
  switch (w) {
    case Workload::kWhole: return "whole";
    case Workload::kSeq: return "seq";
    case Workload::kRanges: return "ranges";
  }
  return "?";
}

std::string EpochResult::ToLine() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "epoch=%d ops=%llu bytes=%llu secs=%.3f mbps=%.1f ops_per_s=%.1f p50_ms=%.3f p99_ms=%.3f "
                "max_ms=%.3f au=%.4f batches=%llu errors=%llu verified_bytes=%llu cpu_s=%.3f",
                epoch, static_cast<unsigned long long>(ops), static_cast<unsigned long long>(bytes), seconds,
                mb_per_s(), ops_per_s(), p50_ms, p99_ms, max_ms, au, static_cast<unsigned long long>(batches),
                static_cast<unsigned long long>(errors), static_cast<unsigned long long>(verified_bytes), cpu_seconds);
  return buf;
}

namespace {

// CPU time (user + system, all threads) this process has used so far.
double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

struct Op {
  uint32_t file;
  uint64_t offset, length;
};

std::vector<Op> PlanEpoch(const Manifest& m, const LoadOptions& o, int epoch) {
  std::mt19937_64 rng(o.seed * 1'000'003 + static_cast<uint64_t>(epoch));
  std::vector<Op> ops;
  if (o.workload == Workload::kRanges) {
    std::uniform_int_distribution<uint32_t> pick(0, static_cast<uint32_t>(m.files.size() - 1));
    std::uniform_int_distribution<uint64_t> len_dist(o.range_min, o.range_max);
    for (uint64_t i = 0; i < o.ranges_per_epoch; i++) {
      uint32_t f = pick(rng);
      uint64_t size = m.files[f].size;
      uint64_t len = std::min(len_dist(rng), size);
      uint64_t off = std::uniform_int_distribution<uint64_t>(0, (size - len) / 4096)(rng) * 4096;
      ops.push_back({f, off, len});
    }
  } else {
    for (uint32_t i = 0; i < m.files.size(); i++) ops.push_back({i, 0, m.files[i].size});
    std::shuffle(ops.begin(), ops.end(), rng);
  }
  return ops;
}

// The simulated accelerators and the bounded sample queue between them and the
// readers (readers block when it is full, as a real loader's prefetch does).
class Accelerators {
 public:
  Accelerators(const LoadOptions& o, uint64_t total)
      : o_(o), total_(total), capacity_(static_cast<uint64_t>(o.prefetch_batches * o.batch * o.accelerators)) {}

  void Start() {
    for (int i = 0; i < o_.accelerators; i++) threads_.emplace_back([this] { Run(); });
  }
  void Push() {
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return available_ < capacity_; });
    available_++;
    ready_.notify_all();
  }
  void Join() {
    for (auto& t : threads_) t.join();
  }
  double Utilisation() const {
    auto wall = std::chrono::duration<double>(last_end_ - first_ready_).count();
    return wall > 0 ? compute_seconds_ / (wall * o_.accelerators) : 0;
  }
  uint64_t batches() const { return batches_; }

 private:
  void Run() {
    for (;;) {
      std::unique_lock lock(mu_);
      if (claimed_ == total_) return;
      uint64_t want = std::min<uint64_t>(static_cast<uint64_t>(o_.batch), total_ - claimed_);
      claimed_ += want;
      ready_.wait(lock, [&] { return available_ >= want; });
      available_ -= want;
      space_.notify_all();
      auto start = Clock::now();
      if (batches_++ == 0) first_ready_ = start;
      lock.unlock();
      std::this_thread::sleep_for(o_.compute);  // the "computation"
      auto end = Clock::now();
      lock.lock();
      compute_seconds_ += std::chrono::duration<double>(end - start).count();
      last_end_ = std::max(last_end_, end);
    }
  }

  const LoadOptions& o_;
  const uint64_t total_, capacity_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  uint64_t available_ = 0, claimed_ = 0, batches_ = 0;
  double compute_seconds_ = 0;
  Clock::time_point first_ready_{}, last_end_{};
  std::vector<std::thread> threads_;
};

}  // namespace

Result<std::vector<EpochResult>> RunLoad(const Manifest& m, const ReaderFactory& factory, const LoadOptions& o) {
  if (m.files.empty()) return Err(Code::kInvalidArgument, "loadgen: the manifest lists no files");
  if (o.readers < 1 || o.epochs < 1 || o.batch < 1 || o.accelerators < 1 || o.prefetch_batches < 1)
    return Err(Code::kInvalidArgument, "loadgen: readers, epochs, batch, accelerators and prefetch must be >= 1");
  std::vector<std::unique_ptr<Reader>> readers;
  for (int i = 0; i < o.readers; i++) {
    auto r = factory();
    if (!r) return Err(r.error().WithContext("loadgen: cannot make a reader"));
    readers.push_back(std::move(*r));
  }
  std::vector<std::atomic<bool>> checked(m.files.size());
  std::vector<EpochResult> results;
  const bool model = o.compute.count() > 0;

  for (int epoch = 1; epoch <= o.epochs; epoch++) {
    std::vector<Op> ops = PlanEpoch(m, o, epoch);
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> bytes{0}, errors{0}, verified{0};
    std::mutex err_mu;
    std::string first_error;
    std::vector<std::vector<double>> latencies(static_cast<size_t>(o.readers));
    std::unique_ptr<Accelerators> acc;
    if (model) {
      acc = std::make_unique<Accelerators>(o, ops.size());
      acc->Start();
    }
    auto fail = [&](std::string why) {
      errors++;
      std::lock_guard lock(err_mu);
      if (first_error.empty()) first_error = std::move(why);
    };

    auto t0 = Clock::now();
    double cpu0 = ProcessCpuSeconds();
    std::vector<std::thread> threads;
    for (int t = 0; t < o.readers; t++) {
      threads.emplace_back([&, t] {
        Reader& reader = *readers[static_cast<size_t>(t)];
        auto& lat = latencies[static_cast<size_t>(t)];
        XXH3_state_t* h = XXH3_createState();
        for (size_t i; (i = next.fetch_add(1)) < ops.size();) {
          const Op& op = ops[i];
          const DatasetFile& f = m.files[op.file];
          bool whole = op.offset == 0 && op.length == f.size;
          bool verify = o.verify == Verify::kAll || (o.verify == Verify::kFirst && !checked[op.file].exchange(true));
          uint64_t key = ContentKey(m.seed, f.name);
          uint64_t pos = 0;
          bool bad = false;
          XXH3_64bits_reset(h);
          Sink sink = [&](std::span<const char> data) {
            if (verify) {
              if (whole)
                XXH3_64bits_update(h, data.data(), data.size());
              else if (!bad && !CheckContent(key, op.offset + pos, data))
                bad = true;
            }
            pos += data.size();
          };
          auto start = Clock::now();
          auto got = reader.Read(f, op.offset, op.length, sink);
          lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
          if (!got) {
            fail(f.name + ": " + got.error().ToString());
          } else if (*got != op.length || pos != op.length) {
            fail(f.name + ": short read at offset " + std::to_string(op.offset) + ": got " + std::to_string(pos) +
                 " of " + std::to_string(op.length) + " bytes");
          } else if (verify && (bad || (whole && XXH3_64bits_digest(h) != f.xxh3))) {
            fail(f.name + ": data does not match the source at offset " + std::to_string(op.offset) +
                 " length " + std::to_string(op.length));
          } else {
            bytes += op.length;
            if (verify) verified += op.length;
          }
          if (acc) acc->Push();
        }
        XXH3_freeState(h);
      });
    }
    for (auto& th : threads) th.join();
    auto io_end = Clock::now();
    if (acc) acc->Join();

    EpochResult r;
    r.epoch = epoch;
    r.ops = ops.size();
    r.bytes = bytes;
    r.errors = errors;
    r.verified_bytes = verified;
    r.first_error = first_error;
    r.seconds = std::chrono::duration<double>(io_end - t0).count();
    r.cpu_seconds = ProcessCpuSeconds() - cpu0;
    std::vector<double> all;
    for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
    if (!all.empty()) {
      std::sort(all.begin(), all.end());
      auto at = [&](double q) { return all[std::min(all.size() - 1, static_cast<size_t>(q * all.size()))]; };
      r.p50_ms = at(0.50);
      r.p99_ms = at(0.99);
      r.max_ms = all.back();
    }
    if (acc) {
      r.au = acc->Utilisation();
      r.batches = acc->batches();
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace shoal::bench
