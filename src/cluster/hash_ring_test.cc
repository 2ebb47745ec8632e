#include "cluster/hash_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>

namespace shoal {
namespace {

std::vector<std::string> Members(int n) {
  std::vector<std::string> m;
  for (int i = 0; i < n; ++i) m.push_back("10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":7070");
  return m;
}

constexpr int kShards = 400'000;

std::string Key(int i) {
  // Shards of many files: 2000 files x 200 shards.
  return HashRing::ShardKey("/data/train/file-" + std::to_string(i / 200) + ".tar", "etag-" + std::to_string(i / 200),
                            static_cast<uint64_t>(i % 200));
}

TEST(HashRing, BalancedAtHundredWorkers) {
  HashRing ring(Members(100));
  std::vector<int> load(100, 0);
  for (int i = 0; i < kShards; ++i) load[ring.Owner(Key(i))]++;
  double mean = static_cast<double>(kShards) / 100;
  int max = *std::max_element(load.begin(), load.end());
  EXPECT_LE(max / mean, 1.10) << "max " << max << " mean " << mean;
  std::printf("100 workers, %d shards: max/mean load %.3f\n", kShards, max / mean);
  EXPECT_GT(*std::min_element(load.begin(), load.end()), 0);
}

TEST(HashRing, AddingOneWorkerMovesAboutOneOverNPlusOne) {
  auto m = Members(100);
  HashRing before(m);
  m.push_back("10.9.9.9:7070");
  HashRing after(m);
  int moved = 0;
  for (int i = 0; i < kShards; ++i) {
    size_t a = before.Owner(Key(i)), b = after.Owner(Key(i));
    if (a != b) {
      ++moved;
      EXPECT_EQ(b, 100u) << "a key moved between two old workers";
    }
  }
  double expected = kShards / 101.0;
  EXPECT_NEAR(moved, expected, 0.2 * expected);
  std::printf("adding a 101st worker moved %d of %d shards (1/(N+1) = %.0f)\n", moved, kShards, expected);
}

TEST(HashRing, SameAnswerEverywhereAndOrderIndependent) {
  auto m = Members(10);
  HashRing a(m);
  std::reverse(m.begin(), m.end());
  HashRing b(m);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(a.members()[a.Owner(Key(i))], b.members()[b.Owner(Key(i))]);
}

TEST(HashRing, ReplicasAreDistinctAndStartWithOwner) {
  HashRing ring(Members(5));
  auto owners = ring.Owners("some key", 3);
  ASSERT_EQ(owners.size(), 3u);
  EXPECT_EQ(owners[0], ring.Owner("some key"));
  EXPECT_NE(owners[0], owners[1]);
  EXPECT_NE(owners[1], owners[2]);
  EXPECT_EQ(ring.Owners("k", 10).size(), 5u);
}

TEST(HashRing, FirstShardLivesWithTheMetadata) {
  HashRing ring(Members(8));
  for (int i = 0; i < 100; ++i) {
    std::string path = "/d/f" + std::to_string(i);
    EXPECT_EQ(ring.Owner(HashRing::DataKey(path, "v", 0)), ring.Owner(HashRing::MetaKey(path)));
    EXPECT_EQ(HashRing::DataKey(path, "v", 3), HashRing::ShardKey(path, "v", 3));
  }
}

TEST(HashRing, LargeFileSpreadsSmallFileStaysWhole) {
  HashRing ring(Members(8));
  std::set<size_t> owners;
  for (uint64_t s = 0; s < 64; ++s) owners.insert(ring.Owner(HashRing::ShardKey("/big", "v1", s)));
  EXPECT_GE(owners.size(), 6u);  // 64 shards over 8 workers touch nearly all of them
}

}  // namespace
}  // namespace shoal
