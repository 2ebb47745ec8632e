#include "common/repeat_limiter.h"

#include <gtest/gtest.h>

#include <string>

namespace shoal {
namespace {

using namespace std::chrono_literals;

TEST(RepeatLimiterTest, HoldsBackRepeatsWithinTheIntervalAndCountsThem) {
  RepeatLimiter limiter(10s);
  const auto t0 = RepeatLimiter::Clock::time_point{} + 1h;
  EXPECT_EQ(limiter.Admit("worker a is down", t0), 0u);
  for (int i = 1; i <= 5; ++i) EXPECT_FALSE(limiter.Admit("worker a is down", t0 + i * 1s)) << i;
  // Another text is its own: not held back by the first.
  EXPECT_EQ(limiter.Admit("worker b is down", t0 + 2s), 0u);
  // After the interval the text is printed again, with the count held back.
  EXPECT_EQ(limiter.Admit("worker a is down", t0 + 10s), 5u);
  EXPECT_FALSE(limiter.Admit("worker a is down", t0 + 11s));
  EXPECT_EQ(limiter.Admit("worker a is down", t0 + 25s), 1u);
  EXPECT_EQ(limiter.Admit("worker a is down", t0 + 40s), 0u) << "nothing held back since";
}

TEST(RepeatLimiterTest, TextsThatDifferEveryTimeDoNotGrowWithoutBound) {
  RepeatLimiter limiter(10s);
  const auto t0 = RepeatLimiter::Clock::time_point{} + 1h;
  for (int i = 0; i < 5000; ++i) {
    EXPECT_EQ(limiter.Admit("offset " + std::to_string(i), t0 + i * 1ms), 0u);
  }
  // Long after, old texts are forgotten as new ones come; repeats are still held back.
  EXPECT_EQ(limiter.Admit("offset 1", t0 + 1h), 0u);
  EXPECT_EQ(limiter.Admit("fresh", t0 + 1h), 0u);
  EXPECT_FALSE(limiter.Admit("fresh", t0 + 1h + 1s));
}

}  // namespace
}  // namespace shoal
