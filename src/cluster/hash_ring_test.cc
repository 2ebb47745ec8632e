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

TEST(HashRing, RemovingOneWorkerMovesOnlyItsKeys) {
  auto m = Members(50);
  HashRing before(m);
  const std::string gone = m[17];
  m.erase(m.begin() + 17);
  HashRing after(m);
  int moved = 0;
  for (int i = 0; i < kShards / 4; ++i) {
    const std::string& a = before.members()[before.Owner(Key(i))];
    const std::string& b = after.members()[after.Owner(Key(i))];
    if (a != b) {
      ++moved;
      EXPECT_EQ(a, gone) << "a key of a remaining worker moved";
    }
  }
  double expected = before.Shares()[17] * (kShards / 4);
  EXPECT_NEAR(moved, expected, 0.1 * expected);
}

TEST(HashRing, ExactSharesAreBalancedAtAThousandWorkers) {
  HashRing ring(Members(1000));
  auto shares = ring.Shares();
  double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
  EXPECT_NEAR(sum, 1.0, 1e-9);
  double max = *std::max_element(shares.begin(), shares.end());
  EXPECT_LE(max * 1000, 1.05);
  EXPECT_GT(*std::min_element(shares.begin(), shares.end()) * 1000, 0.5);
}

TEST(HashRing, SharesMatchWhereKeysGo) {
  HashRing ring(Members(5), {1, 2, 2, 4, 1});
  auto shares = ring.Shares();
  std::vector<int> load(5, 0);
  for (int i = 0; i < kShards; ++i) load[ring.Owner(Key(i))]++;
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(load[i] / double(kShards), shares[i], 0.01) << "member " << i;
}

TEST(HashRing, WeightsGiveProportionalShares) {
  std::vector<uint64_t> w;
  for (int i = 0; i < 60; ++i) w.push_back((1ull << (i % 3)) << 40);  // 1, 2 and 4 TiB
  HashRing ring(Members(60), w);
  auto shares = ring.Shares();
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  for (size_t i = 0; i < w.size(); ++i) {
    double fair = w[i] / total;
    EXPECT_NEAR(shares[i] / fair, 1.0, 0.15) << "member " << i << " weight " << w[i];
  }
  // Per weight class, the mean is fair to within a few percent.
  for (int cls = 0; cls < 3; ++cls) {
    double got = 0, want = 0;
    for (size_t i = cls; i < w.size(); i += 3) got += shares[i], want += w[i] / total;
    EXPECT_NEAR(got / want, 1.0, 0.03) << "weight class " << cls;
  }
}

TEST(HashRing, EqualWeightsGiveEqualPoints) {
  HashRing a(Members(4));
  HashRing b(Members(4), {4ull << 40, 4ull << 40, 4ull << 40, 4ull << 40});  // a power of two: the unit
  HashRing c(Members(4), {5ull << 40, 5ull << 40, 5ull << 40, 5ull << 40});
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a.Points(i), HashRing::kPointsPerUnit);
    EXPECT_EQ(b.Points(i), HashRing::kPointsPerUnit);
    EXPECT_EQ(c.Points(i), c.Points(0));
  }
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(a.Owner(Key(i)), b.Owner(Key(i)));
  // A zero weight counts as the mean of the others.
  HashRing z(Members(3), {2, 0, 2});
  EXPECT_EQ(z.Points(1), z.Points(0));
  // A join of the same weight changes no one's points (the unit stays).
  HashRing d(Members(5), {5ull << 40, 5ull << 40, 5ull << 40, 5ull << 40, 5ull << 40});
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(d.Points(i), c.Points(i));
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
  for (int i = 0; i < 2000; ++i) {
    auto all = ring.Owners(Key(i), 5);
    ASSERT_EQ(all.size(), 5u);
    EXPECT_EQ(all[0], ring.Owner(Key(i)));
    EXPECT_EQ(std::set<size_t>(all.begin(), all.end()).size(), 5u);
    auto two = ring.Owners(Key(i), 2);
    EXPECT_EQ(two[1], all[1]) << "the replica order does not depend on how many are asked for";
  }
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
