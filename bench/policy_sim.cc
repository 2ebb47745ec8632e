// policy_sim: the trace-driven simulator of the eviction policies (issue 13).
//
// Drives the real policy classes (every one in the registry, through
// SimulatedCache, which evicts as the PageStore does) with synthetic traces of
// page reads, and prints the miss ratio of each policy on each trace as a
// markdown table, then the targets, each marked met or missed:
//   - S3-FIFO or SIEVE at most LRU's miss ratio on every trace;
//   - S3-FIFO or SIEVE at least 10% fewer misses than LRU on Zipf with scans;
//   - the epoch policy's hit ratio at least 0.9 x cache/dataset on the epoch traces.
// It also says whether the epoch policy is never worse than LRU on the Zipf
// traces (the condition for making it the default).
//
//   policy_sim [--ops N] [--cache PAGES] [--seed S]
//
// Traces (all pages the same size but in the last; the cache holds --cache pages):
//   zipf-0.8, zipf-1.0   Zipf over 10x the cache's pages, scrambled ids;
//   zipf-0.8+scans       Zipf 0.8 with, every 50k reads, a scan of 2x the cache
//                        of pages never read before;
//   zipf-0.8-shifting    Zipf 0.8 whose popular pages change 5 times (a new
//                        random order of the pages each fifth of the trace);
//   epochs-1.5x, -3x     shuffled passes over a dataset 1.5x / 3x the cache,
//                        measured from the second epoch (the first is cold
//                        for every policy);
//   epochs-1.5x-sizes    the same with pages of 110-150 units in a cache of
//                        130 units per page (the real small-files dataset).
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/policy/registry.h"
#include "cache/policy/simulated_cache.h"
#include "cache/rules/retention.h"

namespace shoal {
namespace {

struct Trace {
  std::string name;
  std::vector<uint64_t> keys;
  size_t measured_from = 0;  // reads before this one warm the cache and are not counted
  double dataset_pages = 0;  // epoch traces: the dataset's size
  bool sized = false;        // pages of 110-150 units (SizeOf) in a cache of 130 units per page, else all 1
};

// The size of a page of a sized trace: 110-150 units, like the small files of
// the real epoch experiment (bench/epoch_bench.sh, 110-150 KiB), where one
// eviction often does not free room for the next page.
uint64_t SizeOf(uint64_t key) { return 110 + XXH3_64bits(&key, sizeof key) % 41; }
constexpr uint64_t kMeanSize = 130;

// Zipf(alpha) over [0, n) by inverting the CDF; ranks scrambled so that hot
// pages are not neighbours.
class Zipf {
 public:
  Zipf(uint64_t n, double alpha, uint64_t seed) : cdf_(n), perm_(n) {
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i) cdf_[i] = sum += 1.0 / std::pow(static_cast<double>(i + 1), alpha);
    for (auto& c : cdf_) c /= sum;
    std::iota(perm_.begin(), perm_.end(), 0);
    std::shuffle(perm_.begin(), perm_.end(), std::mt19937_64(seed));
  }
  // A popularity shift: the same skew over a new order of the pages.
  void Reshuffle(uint64_t seed) { std::shuffle(perm_.begin(), perm_.end(), std::mt19937_64(seed)); }
  uint64_t operator()(std::mt19937_64& rng) {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    size_t i = std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin();
    return perm_[std::min(i, perm_.size() - 1)];
  }

 private:
  std::vector<double> cdf_;
  std::vector<uint64_t> perm_;
};

Trace ZipfTrace(std::string name, uint64_t ops, uint64_t universe, double alpha, uint64_t scan_every, uint64_t scan_len,
                uint64_t seed, uint64_t shift_every = 0) {
  Trace t{std::move(name), {}, 0, 0};
  std::mt19937_64 rng(seed);
  Zipf zipf(universe, alpha, seed + 1);
  uint64_t fresh = universe;  // scanned pages are never read again
  while (t.keys.size() < ops) {
    t.keys.push_back(zipf(rng));
    if (shift_every && t.keys.size() % shift_every == 0) zipf.Reshuffle(seed + t.keys.size());
    if (scan_every && t.keys.size() % scan_every == 0) {
      for (uint64_t i = 0; i < scan_len && t.keys.size() < ops; ++i) t.keys.push_back(fresh++);
    }
  }
  return t;
}

Trace EpochTrace(std::string name, uint64_t ops, uint64_t dataset, uint64_t seed, bool sized = false) {
  Trace t{std::move(name), {}, dataset, static_cast<double>(dataset), sized};
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> order(dataset);
  std::iota(order.begin(), order.end(), 0);
  while (t.keys.size() < ops) {
    std::shuffle(order.begin(), order.end(), rng);
    t.keys.insert(t.keys.end(), order.begin(), order.end());
  }
  return t;
}

PageId IdOf(uint64_t key) {
  auto h = XXH3_128bits(&key, sizeof key);
  return PageId{h.high64, h.low64};
}

double MissRatio(const std::string& policy, const Trace& t, const std::vector<PageId>& ids, uint64_t cache) {
  SimulatedCache c(std::move(*MakeEvictionPolicy(policy)), t.sized ? cache * kMeanSize : cache);
  uint64_t misses = 0, reads = 0;
  auto now = std::chrono::system_clock::time_point{};
  for (size_t i = 0; i < ids.size(); ++i) {
    now += std::chrono::milliseconds(1);
    bool hit = c.Access(ids[i], t.sized ? SizeOf(t.keys[i]) : 1, now);
    if (i >= t.measured_from) misses += !hit, ++reads;
  }
  if (c.stray_victims() != 0) {
    std::fprintf(stderr, "policy_sim: %s named %llu victims it did not hold\n", policy.c_str(),
                 static_cast<unsigned long long>(c.stray_victims()));
    std::exit(1);
  }
  return static_cast<double>(misses) / static_cast<double>(reads);
}

// Hit ratio of validation reads (cache/5 pages, under /val) made after each
// shuffled scan of a training set 3x the cache (under /train), rounds 2-5,
// evicting as the PageStore does through the rules layer.
double PinnedValidationHits(std::string_view policy, bool pinned, uint64_t cache, uint64_t seed) {
  auto r = std::move(*Retention::Make(policy, 1));
  if (pinned) {
    PathRule pin = EmptyRule("/val");
    pin.pin = true;
    r->SetRules(*PathRules::Make({pin}), 1);
  }
  const auto val_class = r->ClassFor("/val/x"), train_class = r->ClassFor("/train/x");
  std::unordered_map<PageId, Retention::ClassId, PageIdHash> cached;
  EvictionPolicy::Time now{};
  auto access = [&](const PageId& id, Retention::ClassId cls) {
    now += std::chrono::milliseconds(1);
    if (cached.contains(id)) {
      r->Touch(0, cls, id, now);
      return true;
    }
    while (cached.size() + 1 > cache) {
      auto v = r->Victim(0);
      if (!v) return false;  // only pinned pages left: not cached
      r->Erase(0, v->first, v->second, 1);
      cached.erase(v->second);
    }
    cached[id] = cls;
    r->Insert(0, cls, id, 1, now);
    return false;
  };
  const uint64_t val = cache / 5, train = 3 * cache;
  std::vector<uint64_t> order(train);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed + 60);
  uint64_t hits = 0, reads = 0;
  for (int round = 0; round < 5; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (auto k : order) access(IdOf(k), train_class);
    for (uint64_t k = 0; k < val; ++k) {
      bool hit = access(IdOf(~k), val_class);
      if (round > 0) hits += hit, ++reads;
    }
  }
  return reads ? static_cast<double>(hits) / static_cast<double>(reads) : 0;
}

int Main(int argc, char** argv) {
  uint64_t ops = 1'000'000, cache = 10'000, seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> uint64_t {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "policy_sim: %s needs a number\n", a.c_str());
        std::exit(2);
      }
      return std::strtoull(argv[++i], nullptr, 10);
    };
    if (a == "--ops") ops = next();
    else if (a == "--cache") cache = next();
    else if (a == "--seed") seed = next();
    else {
      std::fprintf(stderr, "usage: policy_sim [--ops N] [--cache PAGES] [--seed S]\n");
      return 2;
    }
  }
  if (cache < 100 || ops < 10 * cache) {
    std::fprintf(stderr, "policy_sim: need --cache >= 100 and --ops >= 10 x --cache\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Trace> traces;
  traces.push_back(ZipfTrace("zipf-0.8", ops, 10 * cache, 0.8, 0, 0, seed));
  traces.push_back(ZipfTrace("zipf-1.0", ops, 10 * cache, 1.0, 0, 0, seed + 10));
  traces.push_back(ZipfTrace("zipf-0.8+scans", ops, 10 * cache, 0.8, 50'000, 2 * cache, seed + 20));
  traces.push_back(ZipfTrace("zipf-0.8-shifting", ops, 10 * cache, 0.8, 0, 0, seed + 50, ops / 5));
  traces.push_back(EpochTrace("epochs-1.5x", ops, cache * 3 / 2, seed + 30));
  traces.push_back(EpochTrace("epochs-3x", ops, cache * 3, seed + 40));
  traces.push_back(EpochTrace("epochs-1.5x-sizes", ops, cache * 3 / 2, seed + 70, true));

  std::vector<std::string> policies;
  for (const auto& p : EvictionPolicies()) policies.push_back(p.name);
  // miss[trace][policy]
  std::vector<std::vector<double>> miss(traces.size(), std::vector<double>(policies.size()));
  for (size_t t = 0; t < traces.size(); ++t) {
    std::vector<PageId> ids(traces[t].keys.size());
    std::transform(traces[t].keys.begin(), traces[t].keys.end(), ids.begin(), IdOf);
    for (size_t p = 0; p < policies.size(); ++p) miss[t][p] = MissRatio(policies[p], traces[t], ids, cache);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  auto col = [&](std::string_view name) {
    return static_cast<size_t>(std::find(policies.begin(), policies.end(), name) - policies.begin());
  };
  const size_t lru = col("lru"), s3 = col("s3fifo"), sieve = col("sieve"), epoch = col("epoch");
  if (std::max({lru, s3, sieve, epoch}) >= policies.size()) {
    std::fprintf(stderr, "policy_sim: lru, s3fifo, sieve and epoch must be registered\n");
    return 1;
  }

  std::printf(
      "Miss ratio (lower is better) of each registered policy, driven through the real policy classes; "
      "%llu reads per trace, a cache of %llu equal pages (Zipf over %llu pages; scans of %llu new pages "
      "every 50k reads; the shifting trace draws new popular pages every fifth of the trace; epoch traces "
      "measured from the second epoch). %.1f s for the whole table.\n\n",
      static_cast<unsigned long long>(ops), static_cast<unsigned long long>(cache),
      static_cast<unsigned long long>(10 * cache), static_cast<unsigned long long>(2 * cache), secs);
  std::printf("| trace |");
  for (const auto& p : policies) std::printf(" %s |", p.c_str());
  std::printf("\n|---|");
  for (size_t p = 0; p < policies.size(); ++p) std::printf("---|");
  std::printf("\n");
  for (size_t t = 0; t < traces.size(); ++t) {
    std::printf("| %s |", traces[t].name.c_str());
    for (size_t p = 0; p < policies.size(); ++p) std::printf(" %.4f |", miss[t][p]);
    std::printf("\n");
  }

  std::printf("\nTargets (issue 13):\n\n");
  auto verdict = [](bool ok) { return ok ? "met" : "MISSED"; };
  bool modern_never_worse = true, epoch_never_worse_on_zipf = true;
  for (size_t t = 0; t < traces.size(); ++t) {
    bool ok = std::min(miss[t][s3], miss[t][sieve]) <= miss[t][lru];
    modern_never_worse &= ok;
    if (traces[t].dataset_pages == 0) epoch_never_worse_on_zipf &= miss[t][epoch] <= miss[t][lru];
  }
  std::printf("- S3-FIFO or SIEVE <= LRU on every trace: %s\n", verdict(modern_never_worse));
  const size_t scans = 2;
  double best = std::min(miss[scans][s3], miss[scans][sieve]);
  double fewer = 1 - best / miss[scans][lru];
  std::printf("- S3-FIFO or SIEVE >= 10%% fewer misses than LRU on Zipf with scans: %.1f%% fewer (%s)\n", 100 * fewer,
              verdict(fewer >= 0.10));
  for (size_t t = 0; t < traces.size(); ++t) {
    if (traces[t].dataset_pages == 0) continue;
    double ideal = static_cast<double>(cache) / traces[t].dataset_pages;
    double hit = 1 - miss[t][epoch];
    std::printf(
        "- epoch policy on %s: hit ratio %.3f, %.2f x cache/dataset (%.3f); target >= 0.9 x (%s); "
        "LRU hits %.3f\n",
        traces[t].name.c_str(), hit, hit / ideal, ideal, verdict(hit >= 0.9 * ideal), 1 - miss[t][lru]);
  }
  std::printf("- epoch policy never worse than LRU on the Zipf traces (the condition to make it the default): %s\n",
              epoch_never_worse_on_zipf ? "yes" : "no");

  std::printf(
      "\nA validation set (cache/5 pages) read after each shuffled scan of a training set 3x the cache, "
      "through the rules layer (cache/rules/retention.h); hit ratio of the validation reads from the "
      "second round:\n\n| policy | not pinned | pinned (`pin: true` on its prefix) |\n|---|---|---|\n");
  for (const char* name : {"lru", "epoch"}) {
    std::printf("| %s | %.4f | %.4f |\n", name, PinnedValidationHits(name, false, cache, seed),
                PinnedValidationHits(name, true, cache, seed));
  }
  return 0;
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) { return shoal::Main(argc, argv); }
