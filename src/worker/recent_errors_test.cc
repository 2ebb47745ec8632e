#include "worker/recent_errors.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

TEST(RecentErrors, KeepsTheNewestBoundedAndOneLineEach) {
  RecentErrors errors(3);
  for (int i = 0; i < 5; ++i)
    errors.Add("server error", "GET /v1/read: HTTP 503 #" + std::to_string(i), "r" + std::to_string(i));
  EXPECT_EQ(errors.total(), 5u);
  auto newest = errors.Newest(10);
  ASSERT_EQ(newest.size(), 3u);  // bounded
  EXPECT_EQ(newest[0].message, "GET /v1/read: HTTP 503 #4");
  EXPECT_EQ(newest[2].message, "GET /v1/read: HTTP 503 #2");
  EXPECT_EQ(errors.Newest(1).size(), 1u);

  errors.Add("corrupt page", std::string(1000, 'x') + "\nsecond line");
  auto e = errors.Newest(1).at(0);
  EXPECT_LE(e.message.size(), 403u);
  EXPECT_EQ(e.message.find('\n'), std::string::npos);
  std::string line = FormatRecentError(newest[0]);
  EXPECT_NE(line.find("Z server error: GET /v1/read: HTTP 503 #4 [request r4]"), std::string::npos) << line;
  EXPECT_EQ(line.find("[request"), line.rfind("[request"));
}

}  // namespace
}  // namespace shoal
