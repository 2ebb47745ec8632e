#include <gtest/gtest.h>

#include "ufs/http/retry.h"
#include "ufs/http/xml.h"

namespace shoal {
namespace {

using namespace std::chrono_literals;

RetryPolicy Policy(int retries, std::chrono::milliseconds budget) {
  RetryPolicy p;
  p.max_retries = retries;
  p.base_delay = 1ms;
  p.max_delay = 4ms;
  p.deadline = std::chrono::steady_clock::now() + budget;
  return p;
}

TEST(Retry, StopsAtFirstGoodAnswer) {
  int calls = 0;
  auto out = RunWithRetries(Policy(5, 10s), [&](std::chrono::milliseconds) { return ++calls; },
                            [](int v) { return v < 3; });
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(*out.last, 3);
  EXPECT_FALSE(out.out_of_time);
}

TEST(Retry, SpendsAtMostTheRetryBudget) {
  int calls = 0;
  auto out = RunWithRetries(Policy(2, 10s), [&](std::chrono::milliseconds) { return ++calls; },
                            [](int) { return true; });
  EXPECT_EQ(out.attempts, 3);  // the first try and two retries
  EXPECT_EQ(calls, 3);
}

TEST(Retry, PassedDeadlineRunsNothing) {
  auto p = Policy(5, 0ms);
  p.deadline = std::chrono::steady_clock::now() - 1s;
  int calls = 0;
  auto out = RunWithRetries(p, [&](std::chrono::milliseconds) { return ++calls; }, [](int) { return true; });
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(out.out_of_time);
  EXPECT_FALSE(out.last);
}

TEST(Retry, BackoffDoublesUpToTheCapWithJitterInTheUpperHalf) {
  RetryPolicy p;
  p.base_delay = 100ms;
  p.max_delay = 400ms;
  for (int i = 0; i < 50; ++i) {
    auto d0 = BackoffDelay(p, 0), d3 = BackoffDelay(p, 3);
    EXPECT_GE(d0, 50ms);
    EXPECT_LE(d0, 100ms);
    EXPECT_GE(d3, 200ms);
    EXPECT_LE(d3, 400ms);
  }
}

TEST(Xml, FindsTextAndDecodesEntities) {
  std::string doc = "<R><Key>a&amp;b &lt;c&gt; &#65;&#x42;</Key><Key>two</Key><Empty/></R>";
  EXPECT_EQ(XmlText(doc, "Key").value(), "a&b <c> AB");
  EXPECT_EQ(XmlElements(doc, "Key").size(), 2u);
  EXPECT_FALSE(XmlText(doc, "Missing"));
  EXPECT_EQ(XmlDecode(XmlEscape("<a & 'b' \"c\">")), "<a & 'b' \"c\">");
}

}  // namespace
}  // namespace shoal
