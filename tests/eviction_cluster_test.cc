// The default eviction policy on a real cluster (issue 31 item 7): three
// workers whose caches hold 2/3 of a dataset of small files, read for three
// epochs, each in a new random order. The epoch policy keeps a stable subset
// (epochs 2-3 hit about cache/dataset of the bytes) where LRU cycles the
// dataset through the cache. What the store sent is the workers' own count
// (shoal_ufs_read_bytes_total), every byte read is checked.
//
// The policy simulator passing was not enough: the workers evict between
// watermarks, in bursts, and the epoch policy moved each burst's newcomers
// into its main queue: 0.40 of the ideal on a cluster while the simulator,
// evicting page by page, still showed 0.93.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kPage = 64 * 1024;
constexpr int kFiles = 600;
constexpr int kEpochs = 3;

struct EpochRun {
  std::vector<double> hit_ratio;  // per epoch: 1 - store bytes / dataset bytes
};

class EvictionOnACluster : public ::testing::Test {
 protected:
  void SetUp() override {
    ufs_ = MakeTempDir("eviction-ufs");
    ASSERT_FALSE(ufs_.empty());
    std::mt19937_64 rng(31);
    for (int i = 0; i < kFiles; ++i) {
      // 44-60 KiB: one page each, of different sizes (as the bench's 110-150 KiB files).
      const uint64_t size = 44 * 1024 + rng() % (16 * 1024 + 1);
      std::string data(size, '\0');
      for (auto& c : data) c = static_cast<char>(rng());
      const std::string name = "f" + std::to_string(i);
      ASSERT_TRUE(WriteFile(ufs_ + "/" + name, data).ok());
      files_.push_back({"/data/" + name, std::move(data)});
      dataset_ += size;
    }
  }
  void TearDown() override { fs::remove_all(ufs_); }

  // `high`, `low`: the workers' eviction watermarks (0: their defaults).
  EpochRun Run(const std::string& policy, int high = 0, int low = 0) {
    ShoalCluster::Options o;
    o.workers = 3;
    o.mounts = {FileMount(ufs_)};
    o.page_size = kPage;
    o.cache_capacity = dataset_ * 2 / 3 / 3;
    o.client.short_circuit = true;  // as a reader on a worker's host: leases and touch batches included
    o.worker = [policy, high, low](WorkerConfig& w) {
      w.eviction = policy;
      if (high > 0) w.eviction_high_watermark = high, w.eviction_low_watermark = low;
    };
    auto c = ShoalCluster::Start(o);
    EXPECT_TRUE(c) << c.error().ToString();
    if (!c) return {};
    auto cluster = std::move(*c);
    auto client = cluster->NewClient();
    EXPECT_TRUE(client) << client.error().ToString();
    if (!client) return {};
    std::vector<size_t> order(files_.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(7);
    EpochRun run;
    for (int e = 0; e < kEpochs; ++e) {
      std::shuffle(order.begin(), order.end(), rng);
      const double before = cluster->MetricSum("shoal_ufs_read_bytes_total").value_or(-1);
      for (size_t i : order) {
        const auto& [path, data] = files_[i];
        std::string got = ReadWhole(**client, path);
        if (got != data) {
          ADD_FAILURE() << policy << ", epoch " << e + 1 << ": " << path << " read back "
                        << (got.starts_with("<error") ? got : std::to_string(got.size()) + " other bytes");
          return {};
        }
      }
      const double after = cluster->MetricSum("shoal_ufs_read_bytes_total").value_or(-1);
      EXPECT_GE(before, 0);
      EXPECT_GE(after, before);
      run.hit_ratio.push_back(1.0 - (after - before) / static_cast<double>(dataset_));
    }
    client->reset();
    return run;
  }

  std::string ufs_;
  std::vector<std::pair<std::string, std::string>> files_;
  uint64_t dataset_ = 0;
};

TEST_F(EvictionOnACluster, TheEpochPolicyKeepsASubsetWhereLruCyclesTheDataset) {
  const double ideal = 2.0 / 3.0;
  EpochRun lru = Run("lru");
  EpochRun epoch = Run("epoch");
  // The watermarks of before 2026-12-07 (95/90): bursts of 5% of the cache,
  // where the defect showed most (0.40 of the ideal in bench/epoch_bench.sh).
  EpochRun wide = Run("epoch", 95, 90);
  ASSERT_EQ(lru.hit_ratio.size(), static_cast<size_t>(kEpochs));
  ASSERT_EQ(epoch.hit_ratio.size(), static_cast<size_t>(kEpochs));
  ASSERT_EQ(wide.hit_ratio.size(), static_cast<size_t>(kEpochs));
  // The first epoch is cold for all: the store sent every byte.
  EXPECT_LT(lru.hit_ratio[0], 0.02);
  EXPECT_LT(epoch.hit_ratio[0], 0.02);
  auto warm = [](const EpochRun& r) { return (r.hit_ratio[1] + r.hit_ratio[2]) / 2; };
  RecordProperty("lru_epochs_2_3", std::to_string(warm(lru)));
  RecordProperty("epoch_epochs_2_3", std::to_string(warm(epoch)));
  RecordProperty("epoch_95_90_epochs_2_3", std::to_string(warm(wide)));
  std::printf(
      "hit ratio, epochs 2-3: lru %.3f, epoch %.3f (%.2f of the ideal %.3f), epoch with watermarks 95/90 %.3f "
      "(%.2f)\n",
      warm(lru), warm(epoch), warm(epoch) / ideal, ideal, warm(wide), warm(wide) / ideal);
  // The watermarks hold each cache at 96-98% of its capacity, page headers
  // and the ring's unequal shares take a little more: about 0.93 of the ideal
  // here and 0.91 in the bench.
  EXPECT_GE(warm(epoch), 0.85 * ideal) << "lru " << warm(lru);
  EXPECT_GE(warm(epoch), 1.3 * warm(lru));
  // At 90-95%: 0.84 of the ideal in the bench; the defect made it 0.40 (LRU 0.38).
  EXPECT_GE(warm(wide), 0.75 * ideal) << "lru " << warm(lru);
}

}  // namespace
}  // namespace shoal::testing
