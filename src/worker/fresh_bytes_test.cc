#include "worker/fresh_bytes.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

TEST(FreshBytesTest, ServedBytesTakeTheCreditOnceAndTheRestAreHits) {
  FreshBytes f;
  EXPECT_EQ(f.Take("/a", "v1", 0, 100), 0u) << "nothing credited: all hits";
  f.Credit("/a", "v1", 0, 1000);
  EXPECT_EQ(f.Take("/a", "v2", 0, 100), 0u) << "another version";
  EXPECT_EQ(f.Take("/a", "v1", 1000, 100), 0u) << "another page";
  EXPECT_EQ(f.Take("/a", "v1", 0, 600), 600u);
  EXPECT_EQ(f.Take("/a", "v1", 0, 600), 400u) << "only what is left";
  EXPECT_EQ(f.Take("/a", "v1", 0, 600), 0u) << "served once: hits from now on";
  EXPECT_EQ(f.pages(), 0u);
}

TEST(FreshBytesTest, ForgetDropsARangeOfPages) {
  FreshBytes f;
  for (uint64_t p = 0; p < 5; ++p) f.Credit("/a", "v", p * 10, 10);
  f.Forget("/a", "v", 10, 30, 10);  // pages 10, 20, 30
  EXPECT_EQ(f.Take("/a", "v", 0, 10), 10u);
  EXPECT_EQ(f.Take("/a", "v", 20, 10), 0u);
  EXPECT_EQ(f.Take("/a", "v", 40, 10), 10u);
  EXPECT_EQ(f.pages(), 0u);
}

TEST(FreshBytesTest, TheOldestCreditGoesPastTheBound) {
  FreshBytes f;
  for (uint64_t p = 0; p < FreshBytes::kMaxPages + 10; ++p) f.Credit("/big", "v", p, 1);
  EXPECT_EQ(f.pages(), FreshBytes::kMaxPages);
  EXPECT_EQ(f.Take("/big", "v", 0, 1), 0u) << "the oldest was dropped";
  EXPECT_EQ(f.Take("/big", "v", FreshBytes::kMaxPages + 9, 1), 1u) << "the newest is kept";
  // Taking everything and crediting again keeps the bookkeeping bounded.
  for (int round = 0; round < 3; ++round) {
    for (uint64_t p = 0; p < FreshBytes::kMaxPages; ++p) f.Take("/big", "v", p + 10, 1);
    for (uint64_t p = 0; p < FreshBytes::kMaxPages; ++p) f.Credit("/big", "w", p, 1);
    EXPECT_LE(f.pages(), FreshBytes::kMaxPages);
  }
}

}  // namespace
}  // namespace shoal
