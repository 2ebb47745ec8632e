#include "cache/policy/policy_state.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace shoal {
namespace {

std::vector<EvictionPolicy::Entry> Sample() {
  return {{PageId{1, 2}, 4096, 0}, {PageId{~0ull, 7}, 1 << 20, 5}, {PageId{3, 3}, 1, EvictionPolicy::kDemotedTag}};
}

TEST(PolicyState, RoundTrips) {
  auto s = policy_state::Decode(policy_state::Encode("s3fifo", Sample()));
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->policy, "s3fifo");
  ASSERT_EQ(s->entries.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s->entries[i].id, Sample()[i].id);
    EXPECT_EQ(s->entries[i].bytes, Sample()[i].bytes);
    EXPECT_EQ(s->entries[i].tag, Sample()[i].tag);
  }
}

TEST(PolicyState, AnyFlippedByteOrTruncationIsRefused) {
  std::string good = policy_state::Encode("lru", Sample());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    auto s = policy_state::Decode(bad);
    ASSERT_FALSE(s) << "byte " << i;
    EXPECT_EQ(s.error().code(), Code::kCorruption);
  }
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(policy_state::Decode(good.substr(0, n))) << n;
}

TEST(PolicyState, FileWriteAndRead) {
  char tmpl[] = "/tmp/shoal-pstate-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string path = dir + "/policy.state";
  auto missing = policy_state::Read(path);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
  ASSERT_TRUE(policy_state::Write(path, "lfu", Sample()).ok());
  auto s = policy_state::Read(path);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->entries.size(), 3u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  auto torn = policy_state::Read(path);
  ASSERT_FALSE(torn);
  EXPECT_NE(torn.error().message().find(path), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
