// One suite that every registered eviction policy passes (instantiated over
// the registry, so a new policy is tested without editing this file), then a
// test of each policy's own behaviour.
#include "cache/policy/eviction_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <unordered_set>

#include "cache/policy/registry.h"
#include "cache/policy/simulated_cache.h"
#include "common/config.h"

namespace shoal {
namespace {

using Time = EvictionPolicy::Time;
const Time kT0 = Time{} + std::chrono::hours(24 * 365 * 50);

PageId Id(uint64_t n) { return PageId{n * 0x9e3779b97f4a7c15ull, n}; }

std::unique_ptr<EvictionPolicy> Make(std::string_view name) {
  auto p = MakeEvictionPolicy(name);
  EXPECT_TRUE(p) << p.error().ToString();
  return p ? std::move(*p) : nullptr;
}

// Evicts everything: the victims in order. Fails on a victim not held or named twice.
std::vector<PageId> Drain(EvictionPolicy& p) {
  std::vector<PageId> out;
  std::set<PageId> seen;
  while (auto v = p.Victim()) {
    EXPECT_TRUE(seen.insert(*v).second) << "victim named twice: " << v->lo;
    if (out.size() > 1'000'000) break;
    out.push_back(*v);
    p.Erase(*v);
  }
  EXPECT_EQ(p.size(), 0u);
  return out;
}

class EveryPolicy : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<EvictionPolicy> p_ = Make(GetParam());
};

TEST_P(EveryPolicy, EmptyHasNoVictimAndIgnoresUnknownIds) {
  EXPECT_EQ(p_->name(), GetParam());
  EXPECT_FALSE(p_->Victim());
  p_->Touch(Id(1), kT0);
  p_->Erase(Id(1));
  p_->Demote(Id(1));
  EXPECT_FALSE(p_->Victim());
  EXPECT_EQ(p_->size(), 0u);
}

TEST_P(EveryPolicy, EveryPageIsVictimOnceAndOnlyWhileHeld) {
  for (uint64_t i = 0; i < 100; ++i) p_->Insert(Id(i), 4096, kT0);
  for (uint64_t i = 0; i < 100; i += 3) p_->Touch(Id(i), kT0);
  EXPECT_EQ(p_->size(), 100u);
  auto victims = Drain(*p_);
  ASSERT_EQ(victims.size(), 100u);
  std::set<PageId> all(victims.begin(), victims.end());
  for (uint64_t i = 0; i < 100; ++i) EXPECT_TRUE(all.contains(Id(i)));
}

TEST_P(EveryPolicy, VictimIsStableUntilSomethingChanges) {
  for (uint64_t i = 0; i < 50; ++i) p_->Insert(Id(i), 1, kT0);
  for (uint64_t i = 0; i < 50; i += 2) p_->Touch(Id(i), kT0);
  auto v = p_->Victim();
  ASSERT_TRUE(v);
  EXPECT_EQ(p_->Victim(), v);
  EXPECT_EQ(p_->Victim(), v);
  p_->Erase(*v);
  auto next = p_->Victim();
  ASSERT_TRUE(next);
  EXPECT_NE(*next, *v);
  EXPECT_EQ(p_->size(), 49u);
}

TEST_P(EveryPolicy, DemotedPagesGoFirstInTheOrderDemoted) {
  for (uint64_t i = 0; i < 20; ++i) p_->Insert(Id(i), 1, kT0);
  for (uint64_t i = 0; i < 20; ++i) p_->Touch(Id(i), kT0);
  p_->Demote(Id(17));
  p_->Demote(Id(5));
  p_->Demote(Id(17));      // twice: no change
  p_->Touch(Id(17), kT0);  // a read does not rescue a demoted page
  EXPECT_EQ(p_->size(), 20u);
  EXPECT_EQ(p_->Victim(), Id(17));
  p_->Erase(Id(17));
  EXPECT_EQ(p_->Victim(), Id(5));
  p_->Erase(Id(5));
  auto v = p_->Victim();
  ASSERT_TRUE(v);
  EXPECT_NE(*v, Id(5));
  EXPECT_EQ(Drain(*p_).size(), 18u);
}

TEST_P(EveryPolicy, ErasingTheVictimOrAnotherPageKeepsTheRestConsistent) {
  for (uint64_t i = 0; i < 10; ++i) p_->Insert(Id(i), 1, kT0);
  auto v = p_->Victim();
  ASSERT_TRUE(v);
  p_->Erase(*v);
  p_->Erase(*v);  // twice: ignored
  p_->Erase(v->lo == 3 ? Id(4) : Id(3));
  EXPECT_EQ(p_->size(), 8u);
  auto rest = Drain(*p_);
  EXPECT_EQ(rest.size(), 8u);
  EXPECT_EQ(std::count(rest.begin(), rest.end(), *v), 0);
}

// 1e5 random operations against a model that knows only which pages are held:
// every victim is a held page, the size matches, and a page erased is never
// named again until inserted again.
TEST_P(EveryPolicy, RandomOperationsAgainstAReferenceModel) {
  std::mt19937_64 rng(42);
  std::vector<PageId> held;  // the model
  std::unordered_map<PageId, size_t, PageIdHash> pos;
  auto remove = [&](const PageId& id) {
    size_t i = pos.at(id);
    pos[held.back()] = i;
    std::swap(held[i], held.back());
    held.pop_back();
    pos.erase(id);
  };
  uint64_t next_id = 0;
  Time now = kT0;
  for (int op = 0; op < 100'000; ++op) {
    now += std::chrono::milliseconds(1);
    int kind = static_cast<int>(rng() % 100);
    if (kind < 35 || held.empty()) {
      // Mostly new pages, sometimes one that was held before (ghost hits).
      PageId id = Id(rng() % 4 == 0 && next_id > 0 ? rng() % next_id : next_id++);
      if (pos.contains(id)) continue;
      p_->Insert(id, 1 + rng() % 8192, now);
      pos[id] = held.size();
      held.push_back(id);
    } else if (kind < 75) {
      p_->Touch(held[rng() % held.size()], now);
    } else if (kind < 80) {
      PageId id = held[rng() % held.size()];
      p_->Erase(id);
      remove(id);
    } else if (kind < 82) {
      p_->Demote(held[rng() % held.size()]);
    } else {
      auto v = p_->Victim();
      ASSERT_TRUE(v) << "op " << op << ": no victim while " << held.size() << " pages are held";
      ASSERT_TRUE(pos.contains(*v)) << "op " << op << ": victim " << v->lo << " is not held";
      p_->Erase(*v);
      remove(*v);
    }
    ASSERT_EQ(p_->size(), held.size()) << "op " << op;
  }
  auto rest = Drain(*p_);
  EXPECT_EQ(rest.size(), held.size());
  for (const auto& id : rest) EXPECT_TRUE(pos.contains(id));
}

// What survives a restart: a policy restored from Save() evicts in the same order.
TEST_P(EveryPolicy, SaveAndRestoreKeepTheVictimOrder) {
  std::mt19937_64 rng(7);
  SimulatedCache cache(Make(GetParam()), 500);
  for (int i = 0; i < 20'000; ++i) {
    // Skewed: low ids are read far more often.
    uint64_t k = static_cast<uint64_t>(std::pow(static_cast<double>(rng() % 1'000'000) / 1e6, 3) * 2000);
    cache.Access(Id(k), 1, kT0 + std::chrono::seconds(i));
  }
  auto& original = cache.policy();
  original.Demote(original.Victim().value());
  auto saved = original.Save();
  ASSERT_EQ(saved.size(), original.size());
  auto restored = Make(GetParam());
  for (const auto& e : saved) restored->Restore(e, kT0);
  EXPECT_EQ(restored->size(), original.size());
  EXPECT_EQ(Drain(*restored), Drain(original));
}

INSTANTIATE_TEST_SUITE_P(Registered, EveryPolicy, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& p : EvictionPolicies()) names.push_back(p.name);
                           return names;
                         }()),
                         [](const auto& info) { return info.param; });

TEST(EvictionPolicyRegistry, HasEveryPolicyAndNamesThemOnAnUnknownName) {
  std::vector<std::string> names;
  for (const auto& p : EvictionPolicies()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"epoch", "fifo", "lfu", "lru", "s3fifo", "sieve"}));
  auto bad = MakeEvictionPolicy("random");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("'random'"), std::string::npos);
  EXPECT_NE(bad.error().message().find("worker.eviction"), std::string::npos);
  for (const auto& n : names) EXPECT_NE(bad.error().message().find(n), std::string::npos) << n;
  auto def = MakeEvictionPolicy("");
  ASSERT_TRUE(def);
  EXPECT_EQ((*def)->name(), kDefaultEvictionPolicy);
}

// --- each policy's own behaviour ---------------------------------------------

TEST(LruPolicy, EvictsTheLeastRecentlyRead) {
  auto p = Make("lru");
  for (uint64_t i = 0; i < 4; ++i) p->Insert(Id(i), 1, kT0);
  p->Touch(Id(0), kT0);
  EXPECT_EQ(Drain(*p), (std::vector<PageId>{Id(1), Id(2), Id(3), Id(0)}));
}

TEST(FifoPolicy, ReadsDoNotChangeTheOrder) {
  auto p = Make("fifo");
  for (uint64_t i = 0; i < 4; ++i) p->Insert(Id(i), 1, kT0);
  p->Touch(Id(0), kT0);
  p->Touch(Id(0), kT0);
  EXPECT_EQ(Drain(*p), (std::vector<PageId>{Id(0), Id(1), Id(2), Id(3)}));
}

TEST(LfuPolicy, KeepsTheHotPageAndBreaksTiesByAge) {
  auto p = Make("lfu");
  for (uint64_t i = 0; i < 5; ++i) p->Insert(Id(i), 1, kT0);
  for (int i = 0; i < 5; ++i) p->Touch(Id(0), kT0);
  p->Touch(Id(3), kT0);
  p->Touch(Id(1), kT0);  // 1 and 3 read twice; 3 longer ago
  EXPECT_EQ(Drain(*p), (std::vector<PageId>{Id(2), Id(4), Id(3), Id(1), Id(0)}));
}

TEST(SievePolicy, KeepsAVisitedPageAndMovesTheHandOn) {
  auto p = Make("sieve");
  for (uint64_t i = 0; i < 3; ++i) p->Insert(Id(i), 1, kT0);
  p->Touch(Id(0), kT0);
  EXPECT_EQ(p->Victim(), Id(1));  // the hand passes 0, clearing its bit
  p->Erase(Id(1));
  p->Insert(Id(3), 1, kT0);
  EXPECT_EQ(p->Victim(), Id(2));  // from where the hand stopped, not from the oldest (0)
  p->Erase(Id(2));
  EXPECT_EQ(p->Victim(), Id(3));  // the hand goes on to the newest page before returning to 0
  p->Erase(Id(3));
  EXPECT_EQ(p->Victim(), Id(0));  // its bit cleared by the first sweep
}

TEST(S3FifoPolicy, EvictsOneHitWondersBeforeAPageReadAgain) {
  SimulatedCache c(Make("s3fifo"), 100);
  for (uint64_t i = 0; i < 100; ++i) c.Access(Id(i), 1, kT0);
  c.Access(Id(0), 1, kT0);  // the oldest page, read a second time
  // A scan of 300 pages read once: page 0 stays, moved to the main queue.
  for (uint64_t i = 1000; i < 1300; ++i) c.Access(Id(i), 1, kT0);
  EXPECT_TRUE(c.contains(Id(0)));
  EXPECT_FALSE(c.contains(Id(1)));
  // The ghost queue remembers the ids of the last pages that left the small
  // queue unread (1111..1200 here): a miss on one of them enters the main
  // queue and outlives a second scan; a miss on an older one (1000) does not.
  c.Access(Id(1150), 1, kT0);
  c.Access(Id(1000), 1, kT0);
  for (uint64_t i = 2000; i < 2300; ++i) c.Access(Id(i), 1, kT0);
  EXPECT_TRUE(c.contains(Id(1150)));
  EXPECT_FALSE(c.contains(Id(1000)));
  EXPECT_TRUE(c.contains(Id(0)));
}

TEST(S3FifoPolicy, LruLosesThePageReadTwiceToTheSameScan) {
  SimulatedCache c(Make("lru"), 100);
  for (uint64_t i = 0; i < 100; ++i) c.Access(Id(i), 1, kT0);
  c.Access(Id(0), 1, kT0);
  for (uint64_t i = 1000; i < 1300; ++i) c.Access(Id(i), 1, kT0);
  EXPECT_FALSE(c.contains(Id(0)));  // the contrast that makes the test above mean something
}

// Shuffled epochs over a dataset three times the cache: the epoch policy
// keeps a stable subset (about cache/dataset of each epoch hits), where LRU
// cycles everything through and hits next to nothing.
// The hit ratio of epochs [from, epochs).
// With `sized`, pages are 110-150 units in a cache of 130 units per page (as
// the small files of bench/epoch_bench.sh), so one eviction often does not make
// room for the next page; the ratio is then of bytes.
double EpochHitRatio(std::string_view policy, uint64_t cache_pages, uint64_t dataset_pages, int epochs, int from,
                     bool sized = false, SimulatedCache::Watermarks watermarks = {0, 0}) {
  SimulatedCache c(Make(policy), sized ? cache_pages * 130 : cache_pages, watermarks);
  std::vector<uint64_t> order(dataset_pages);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(3);
  uint64_t hits = 0, reads = 0;
  for (int e = 0; e < epochs; ++e) {
    std::shuffle(order.begin(), order.end(), rng);
    for (auto k : order) {
      const uint64_t h = std::hash<uint64_t>{}(k) * 0x9e3779b97f4a7c15ull;
      const uint64_t bytes = sized ? 110 + (h >> 32) % 41 : 1;
      bool hit = c.Access(PageId{k, h}, bytes, kT0);
      if (e >= from) hits += hit ? bytes : 0, reads += bytes;
    }
  }
  return static_cast<double>(hits) / static_cast<double>(reads);
}

TEST(EpochPolicy, KeepsAStableSubsetAcrossShuffledEpochs) {
  // The subset settles within a few epochs (the first is cold for every policy).
  double epoch = EpochHitRatio("epoch", 1000, 3000, 12, 4);
  double lru = EpochHitRatio("lru", 1000, 3000, 12, 4);
  double early = EpochHitRatio("epoch", 1000, 3000, 4, 1);
  EXPECT_GE(epoch, 0.9 * 1000 / 3000);
  EXPECT_LT(lru, 0.5 * epoch);
  EXPECT_GE(early, 0.7 * 1000 / 3000);
}

TEST(EpochPolicy, KeepsTheSubsetWhenPagesDifferInSize) {
  // A page that needs more room than its victim freed takes a second victim;
  // that one must not come from the kept subset (it did, by the main queue's
  // CLOCK: 0.82 x cache/dataset, in the simulator and on a real cluster).
  double sized = EpochHitRatio("epoch", 1000, 1500, 6, 1, true);
  EXPECT_GE(sized, 0.9 * 1000 / 1500);
}

TEST(EpochPolicy, KeepsTheSubsetWhenEvictionRunsBetweenWatermarks) {
  // The worker evicts off the read path: above the high watermark of a dir's
  // capacity, down to the low one at once. The first Victim() of such a burst
  // finds probation holding every page read since the last burst (then 5% of
  // the cache, not its share); they joined the main queue as if the cache were
  // filling, and the victims came from the kept subset: 0.39 of the ideal in
  // this simulation and 0.40 on a real cluster (bench/epoch_bench.sh,
  // 2026-12-05 and -07), 0.94 with the watermarks off.
  const SimulatedCache::Watermarks wide{95, 90};  // the defaults until 2026-12-07
  const SimulatedCache::Watermarks defaults{static_cast<unsigned>(WorkerConfig{}.eviction_high_watermark),
                                            static_cast<unsigned>(WorkerConfig{}.eviction_low_watermark)};
  double equal = EpochHitRatio("epoch", 1000, 1500, 6, 1, false, wide);
  double sized = EpochHitRatio("epoch", 1000, 1500, 6, 1, true, wide);
  double lru = EpochHitRatio("lru", 1000, 1500, 6, 1, true, wide);
  // The cache holds 90-95% of its capacity: the ideal is at most 0.95 x 1000 / 1500.
  EXPECT_GE(equal, 0.85 * 0.95 * 1000 / 1500);
  EXPECT_GE(sized, 0.85 * 0.95 * 1000 / 1500);
  EXPECT_LT(lru, 0.7 * sized);
  // With the defaults, the target: 0.9 of cache/dataset.
  EXPECT_GE(EpochHitRatio("epoch", 1000, 1500, 6, 1, true, defaults), 0.9 * 1000 / 1500);
}

TEST(EpochPolicy, AScanOfUnreadPagesLeavesTheReadOnesAlone) {
  SimulatedCache c(Make("epoch"), 100);
  for (uint64_t i = 0; i < 100; ++i) c.Access(Id(i), 1, kT0);
  for (uint64_t i = 0; i < 100; ++i) c.Access(Id(i), 1, kT0);  // every page read twice
  for (uint64_t i = 1000; i < 2000; ++i) c.Access(Id(i), 1, kT0);
  int kept = 0;
  for (uint64_t i = 0; i < 100; ++i) kept += c.contains(Id(i));
  EXPECT_GE(kept, 95);
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

// lfu and sieve make the same decisions read by read on many traces (the
// review saw equal hit counts on 6 of policy_sim's 7): on a trace where the
// sieve hand never wraps, pages behind it keep their bit, as lfu keeps any
// page read twice, and both evict the pages read once oldest first. Counts
// that never decay must still cost lfu where popularity moved: half a cache
// read 8 times, then a working set of 3/4 of the cache read in pairs.
TEST(EvictionPolicyCompare, LfuAndSieveDifferWhereOldCountsOutliveTheirPages) {
  constexpr uint64_t kCache = 400, kOld = kCache / 2, kWorking = kCache * 3 / 4;
  auto misses = [&](std::string_view name) {
    SimulatedCache c(std::move(*MakeEvictionPolicy(name)), kCache);
    auto now = std::chrono::system_clock::time_point{};
    for (int round = 0; round < 8; ++round) {
      for (uint64_t k = 0; k < kOld; ++k) c.Access(Id(k), 1, now += std::chrono::milliseconds(1));
    }
    uint64_t missed = 0, reads = 0;
    for (int round = 0; round < 12; ++round) {
      for (uint64_t k = kOld; k < kOld + kWorking; ++k) {
        for (int twice = 0; twice < 2; ++twice) {
          bool hit = c.Access(Id(k), 1, now += std::chrono::milliseconds(1));
          if (round >= 4) missed += !hit, ++reads;
        }
      }
    }
    EXPECT_EQ(c.stray_victims(), 0u) << name;
    return static_cast<double>(missed) / static_cast<double>(reads);
  };
  EXPECT_DOUBLE_EQ(misses("lfu"), 0.5) << "each pair: a miss, then a hit";
  EXPECT_DOUBLE_EQ(misses("sieve"), 0.0) << "the old pages go after one sweep unread";
}

}  // namespace
}  // namespace shoal
