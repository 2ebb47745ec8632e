#include "cluster/hot_shards.h"

#include <gtest/gtest.h>

#include <string>

namespace shoal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// `n` reads of `key` spread evenly over [from, from + span).
bool NoteEvenly(ShardHeat& heat, const std::string& key, int n, Clock::time_point from, Clock::duration span) {
  bool hot = false;
  for (int i = 0; i < n; ++i) hot = heat.Note(key, "/data/" + key, 0, from + span * i / n);
  return hot;
}

TEST(ShardHeat, AKeyReadFasterThanTheThresholdBecomesHot) {
  ShardHeat heat({100, 1s, 16});
  const auto t0 = Clock::now();
  // 50 reads/s for two windows: under the threshold.
  EXPECT_FALSE(NoteEvenly(heat, "cool", 100, t0, 2s));
  EXPECT_TRUE(heat.HotShards(t0 + 2s).empty());
  // 300 reads/s: hot within the window.
  EXPECT_TRUE(NoteEvenly(heat, "warm", 300, t0 + 2s, 1s));
  auto hot = heat.HotShards(t0 + 3s);
  ASSERT_EQ(hot.size(), 1u);
  EXPECT_EQ(hot[0].path, "/data/warm");
  EXPECT_GE(hot[0].rps, 100);
  EXPECT_EQ(heat.heated(), 1u);
  // The cool key stays cool, whatever the hot one does.
  EXPECT_FALSE(heat.Note("cool", "/data/cool", 0, t0 + 3s));
}

TEST(ShardHeat, TheRateCountsThePreviousWindowByItsOverlap) {
  ShardHeat heat({1'000, 1s, 16});
  const auto t0 = Clock::now();
  NoteEvenly(heat, "k", 200, t0, 1s);  // 200 in the first window
  EXPECT_NEAR(heat.Rate("k", t0 + 1s), 200, 1);
  // Half way through the next window, half of the previous one still overlaps.
  EXPECT_NEAR(heat.Rate("k", t0 + 1500ms), 100, 1);
  // Two windows later nothing is left.
  EXPECT_EQ(heat.Rate("k", t0 + 3500ms), 0);
}

TEST(ShardHeat, AHotKeyStaysHotAtHalfItsRateAndCoolsBelowAQuarter) {
  ShardHeat heat({100, 1s, 16});
  const auto t0 = Clock::now();
  ASSERT_TRUE(NoteEvenly(heat, "k", 200, t0, 1s));
  // Spread over two workers the owner sees half: still hot.
  EXPECT_TRUE(NoteEvenly(heat, "k", 60, t0 + 1s, 1s));
  EXPECT_TRUE(NoteEvenly(heat, "k", 60, t0 + 2s, 1s));
  EXPECT_EQ(heat.HotShards(t0 + 3s).size(), 1u);
  // The readers stop: once the rate is under 25/s the key cools, without a read of it.
  EXPECT_TRUE(heat.HotShards(t0 + 5s).empty());
  EXPECT_EQ(heat.cooled(), 1u);
  // A read at a low rate does not heat it again.
  EXPECT_FALSE(heat.Note("k", "/data/k", 0, t0 + 5s));
}

TEST(ShardHeat, ManyDistinctKeysDoNotGrowItAndDoNotMakeColdKeysHot) {
  ShardHeat heat({500, 1s, 8});
  const auto t0 = Clock::now();
  // 100,000 distinct keys read once each within one window: 100,000 reads/s in
  // all, none of them hot (the sketch's overestimate stays under the threshold).
  for (int i = 0; i < 100'000; ++i) {
    EXPECT_FALSE(heat.Note("k" + std::to_string(i), "/p", 0, t0 + 1s * i / 100'000)) << i;
  }
  EXPECT_TRUE(heat.HotShards(t0 + 1s).empty());
  // At most max_hot keys are hot at once; the rest are refused, not stored.
  for (int k = 0; k < 12; ++k) NoteEvenly(heat, "hot" + std::to_string(k), 1'000, t0 + 1s, 1s);
  EXPECT_EQ(heat.HotShards(t0 + 2s).size(), 8u);
  EXPECT_GE(heat.refused(), 4u);
}

TEST(ShardHeat, ZeroThresholdIsOff) {
  ShardHeat heat({0, 1s, 8});
  EXPECT_FALSE(NoteEvenly(heat, "k", 10'000, Clock::now(), 1s));
  EXPECT_TRUE(heat.HotShards(Clock::now()).empty());
}

TEST(HotKeys, AMarkHoldsUntilClearedOrExpired) {
  HotKeys keys;
  const auto t0 = Clock::now();
  EXPECT_TRUE(keys.empty());
  EXPECT_EQ(keys.Spread("a", t0), 0u);
  keys.Mark("a", 2, t0);
  keys.Mark("b", 99, t0);  // clamped
  keys.Mark("c", 0, t0);   // at least the owner and the next
  EXPECT_EQ(keys.Spread("a", t0 + 1s), 2u);
  EXPECT_EQ(keys.Spread("b", t0 + 1s), HotKeys::kMaxSpread);
  EXPECT_EQ(keys.Spread("c", t0 + 1s), 2u);
  keys.Clear("a");
  EXPECT_EQ(keys.Spread("a", t0 + 1s), 0u);
  // A refreshed mark holds on; the others expire after kHold.
  keys.Mark("b", 2, t0 + HotKeys::kHold - 1s);
  EXPECT_EQ(keys.Spread("c", t0 + HotKeys::kHold), 0u);
  EXPECT_EQ(keys.Spread("b", t0 + HotKeys::kHold), 2u);
  EXPECT_EQ(keys.Spread("b", t0 + 2 * HotKeys::kHold), 0u);
  EXPECT_TRUE(keys.empty());
}

TEST(HotKeys, IsBounded) {
  HotKeys keys;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < HotKeys::kMaxKeys + 100; ++i) keys.Mark("k" + std::to_string(i), 2, t0);
  EXPECT_EQ(keys.Spread("k" + std::to_string(HotKeys::kMaxKeys + 50), t0), 0u);  // refused while full
  EXPECT_EQ(keys.Spread("k0", t0), 2u);
  // Once the marks expire there is room again.
  keys.Mark("late", 2, t0 + HotKeys::kHold);
  EXPECT_EQ(keys.Spread("late", t0 + HotKeys::kHold), 2u);
}

}  // namespace
}  // namespace shoal
