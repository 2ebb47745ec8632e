#include "common/units.h"

#include <gtest/gtest.h>

namespace shoal {

TEST(Units, ParseSize) {
  EXPECT_EQ(ParseSize("4096").value(), 4096u);
  EXPECT_EQ(ParseSize("64KiB").value(), 64u * 1024);
  EXPECT_EQ(ParseSize("1MiB").value(), 1u << 20);
  EXPECT_EQ(ParseSize("1.5G").value(), 3ull << 29);
  EXPECT_EQ(ParseSize("100MB").value(), 100'000'000u);
  EXPECT_EQ(ParseSize(" 2 gib ").value(), 2ull << 30);
  EXPECT_FALSE(ParseSize("lots"));
  auto bad = ParseSize("10 parsecs");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("parsecs"), std::string::npos);
}

TEST(Units, ParseDuration) {
  EXPECT_EQ(ParseDuration("500ms").value().count(), 500);
  EXPECT_EQ(ParseDuration("60s").value().count(), 60'000);
  EXPECT_EQ(ParseDuration("5m").value().count(), 300'000);
  EXPECT_EQ(ParseDuration("2").value().count(), 2'000);
  EXPECT_FALSE(ParseDuration("soon"));
}

TEST(Units, Format) {
  EXPECT_EQ(FormatSize(512), "512 B");
  EXPECT_EQ(FormatSize(1536), "1.5 KiB");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(60'000)), "1m");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(1500)), "1500ms");
}

}  // namespace shoal
