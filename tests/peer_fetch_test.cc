// Peer fetch (issue 14, item 4): a worker's miss asks the shard's previous
// holder's cache before the under-store. Real `shoal worker` processes, a
// real etcd from the harness where membership must change, a file:// store.
// Waits poll a condition against a deadline; none sleeps to synchronise.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/subprocess.h"
#include "shoal/client.h"
#include "tests/etcd_workers.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/uri.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kPage = 64 * 1024;

std::string CacheOnlyTarget(const std::string& path, const FileStatus& st, uint64_t offset, uint64_t length,
                            const std::string& flag = "1") {
  return "/v1/read?path=" + PercentEncode(path, true) + "&version=" + PercentEncode(st.version, false) +
         "&size=" + std::to_string(st.size) + "&offset=" + std::to_string(offset) +
         "&length=" + std::to_string(length) + "&cache_only=" + flag;
}

// One worker (pages of kPage) over a temp file:// directory holding `/f`
// with `data`, and a client; all removed at the end.
struct OneWorker {
  std::string ufs;
  std::unique_ptr<ShoalCluster> cluster;
  std::unique_ptr<Client> client;
  std::string address;

  ~OneWorker() {
    client.reset();
    cluster.reset();
    std::error_code ec;
    if (!ufs.empty()) fs::remove_all(ufs, ec);
  }
};

void StartOneWorker(const std::string& name, const std::string& data, OneWorker* w) {
  w->ufs = MakeTempDir(name);
  ASSERT_FALSE(w->ufs.empty());
  ASSERT_TRUE(WriteFile(w->ufs + "/f", data).ok());
  ShoalCluster::Options o;
  o.workers = 1;
  o.mounts = {FileMount(w->ufs)};
  o.page_size = kPage;
  auto cluster = ShoalCluster::Start(o);
  ASSERT_TRUE(cluster) << cluster.error().ToString();
  w->cluster = std::move(*cluster);
  auto client = w->cluster->NewClient();
  ASSERT_TRUE(client) << client.error().ToString();
  w->client = std::move(*client);
  w->address = w->cluster->addresses()[0];
}

TEST(CacheOnlyRead, AnUncachedPageIsNotCachedAndCostsNoStoreBytes) {
  const std::string data = RandomBytes(5 * kPage + 123, 7);
  OneWorker w;
  ASSERT_NO_FATAL_FAILURE(StartOneWorker("cache-only", data, &w));
  const std::string& address = w.address;
  auto st = w.client->Stat("/data/f");
  ASSERT_TRUE(st) << st.error().ToString();

  const double before = *w.cluster->MetricSum("shoal_ufs_read_bytes_total");
  auto miss = WorkerGet(address, CacheOnlyTarget("/data/f", *st, 2 * kPage, kPage));
  ASSERT_FALSE(miss) << "a cache-only read of an uncached page answered";
  EXPECT_NE(miss.error().message().find("HTTP 404"), std::string::npos) << miss.error().ToString();
  EXPECT_NE(miss.error().message().find("not cached"), std::string::npos) << miss.error().ToString();
  EXPECT_EQ(*w.cluster->MetricSum("shoal_ufs_read_bytes_total"), before) << "a cache-only read read the store";

  // A bad flag is refused like any bad parameter.
  auto bad = WorkerGet(address, CacheOnlyTarget("/data/f", *st, 0, kPage, "yes"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("HTTP 400"), std::string::npos) << bad.error().ToString();

  // Once read, the same range is answered from the cache, byte for byte; the
  // last page only with the right size.
  auto all = ReadWholeFile(*w.client, "/data/f");
  ASSERT_TRUE(all && *all == data);
  Result<std::string> hit = Err(Code::kInternal, "not tried");
  ASSERT_TRUE(WaitFor(
      [&] { return (hit = WorkerGet(address, CacheOnlyTarget("/data/f", *st, 2 * kPage, kPage))).has_value(); }, 30s))
      << hit.error().ToString();
  EXPECT_TRUE(*hit == data.substr(2 * kPage, kPage));
  auto tail = WorkerGet(address, CacheOnlyTarget("/data/f", *st, 4 * kPage, 2 * kPage));
  ASSERT_TRUE(tail) << tail.error().ToString();
  EXPECT_TRUE(*tail == data.substr(4 * kPage));
  FileStatus shorter = *st;
  shorter.size -= 1;  // a claim one byte short must not be answered from a longer last page
  EXPECT_FALSE(WorkerGet(address, CacheOnlyTarget("/data/f", shorter, 4 * kPage, 2 * kPage)));
}

// The peer's side of metadata peer fetch: a cache-only stat answers a fresh
// cached entry with its age, or 404 "not cached", and never asks the store.
TEST(CacheOnlyStat, AnswersACachedEntryWithItsAgeAndNeverAsksTheStore) {
  OneWorker w;
  ASSERT_NO_FATAL_FAILURE(StartOneWorker("cache-only-stat", RandomBytes(3 * kPage, 8), &w));
  const std::string& address = w.address;
  const std::string target = "/v1/stat?path=" + PercentEncode("/data/f", true) + "&cache_only=1";

  const double before = *w.cluster->MetricSum("shoal_ufs_requests_total");
  auto miss = WorkerGet(address, target);
  ASSERT_FALSE(miss) << "a cache-only stat of an uncached path answered";
  EXPECT_NE(miss.error().message().find("HTTP 404"), std::string::npos) << miss.error().ToString();
  EXPECT_NE(miss.error().message().find("not cached"), std::string::npos) << miss.error().ToString();
  EXPECT_EQ(*w.cluster->MetricSum("shoal_ufs_requests_total"), before) << "a cache-only stat asked the store";
  auto bad = WorkerGet(address, "/v1/stat?path=/data/f&cache_only=yes");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("HTTP 400"), std::string::npos) << bad.error().ToString();

  const auto stat_started = Clock::now();  // the entry is made after this
  auto st = w.client->Stat("/data/f");
  ASSERT_TRUE(st) << st.error().ToString();
  auto hit = WorkerGet(address, target);
  ASSERT_TRUE(hit) << hit.error().ToString();
  const auto asked = Clock::now();
  auto j = nlohmann::json::parse(*hit, nullptr, false);
  ASSERT_TRUE(j.is_object()) << *hit;
  EXPECT_EQ(j.value("path", ""), "/data/f");
  EXPECT_EQ(j.value("version", ""), st->version);
  EXPECT_EQ(j.value("size", uint64_t{0}), st->size);
  EXPECT_FALSE(j.value("is_dir", true));
  ASSERT_TRUE(j.contains("age_ms") && j["age_ms"].is_number_integer()) << *hit;
  EXPECT_GE(j["age_ms"].get<int64_t>(), 0);
  EXPECT_LE(j["age_ms"].get<int64_t>(),
            std::chrono::duration_cast<std::chrono::milliseconds>(asked - stat_started).count() + 1)
      << "older than the stat that made it";
}

class PeerFetchTest : public EtcdWorkersTest {
 protected:
  static constexpr int kFiles = 40;

  void WriteDataset() {
    for (int i = 0; i < kFiles; ++i) {
      files_.push_back(RandomBytes(150'000 + static_cast<size_t>(i) * 7'919, static_cast<uint64_t>(i) + 100));
      ASSERT_TRUE(WriteFile(root_ + "/ufs/f" + std::to_string(i), files_.back()).ok());
      dataset_bytes_ += files_.back().size();
    }
  }

  void ReadDataset(Client& client) {
    for (int i = 0; i < kFiles; ++i) {
      auto got = ReadWholeFile(client, "/data/f" + std::to_string(i));
      ASSERT_TRUE(got) << got.error().ToString();
      ASSERT_TRUE(*got == files_[static_cast<size_t>(i)]) << "f" << i << " differs";
    }
  }

  // Warms the dataset on two workers, adds a third, reads the dataset again:
  // the under-store bytes of that second epoch.
  double StoreBytesOfTheEpochAfterAJoin(bool peer_fetch) {
    WriteDataset();
    Config c = BaseConfig();
    c.worker.peer_fetch = peer_fetch;
    StartWorker(c, "c0");
    StartWorker(c, "c1");
    auto client = NewClient(c, 2);
    if (!client) return -1;
    ReadDataset(*client);
    const double warm = Sum("shoal_ufs_read_bytes_total", addresses_);
    EXPECT_GE(warm, static_cast<double>(dataset_bytes_));

    StartWorker(c, "c2");
    EXPECT_TRUE(WaitFor([&] { return client->Ring().members.size() == 3; }, 20s));
    ReadDataset(*client);
    const double after = Sum("shoal_ufs_read_bytes_total", addresses_);  // the new worker's counter started at 0
    return after - warm;
  }

  // Metadata requests (stats, lists) the workers sent to the under-store.
  double StoreMetadataRequests() {
    double n = 0;
    for (const auto& a : addresses_) {
      auto text = WorkerGet(a, "/metrics");
      EXPECT_TRUE(text) << text.error().ToString();
      if (!text) return -1;
      std::istringstream in(*text);
      for (std::string line; std::getline(in, line);) {
        if (line.starts_with("shoal_ufs_requests_total{") &&
            (line.find("op=\"stat\"") != std::string::npos || line.find("op=\"list\"") != std::string::npos)) {
          n += std::stod(line.substr(line.rfind(' ') + 1));
        }
      }
    }
    return n;
  }

  // Stats every file through `client`: each must succeed with `files`' size.
  void StatDataset(Client& client, const std::vector<std::string>& files) {
    for (size_t i = 0; i < files.size(); ++i) {
      auto st = client.Stat("/data/f" + std::to_string(i));
      ASSERT_TRUE(st) << st.error().ToString();
      EXPECT_EQ(st->size, files[i].size()) << "f" << i;
    }
  }

  // Starts c0 and c1 with `c` and reads the dataset through a client: warm.
  std::unique_ptr<Client> WarmTwoWorkers(const Config& c) {
    WriteDataset();
    StartWorker(c, "c0");
    StartWorker(c, "c1");
    auto client = NewClient(c, 2);
    if (client) ReadDataset(*client);
    return client;
  }

  std::vector<std::string> files_;
  uint64_t dataset_bytes_ = 0;
};

// The metadata half of a join (issue 14): the new worker owns the metadata of
// about a third of the paths, and takes each entry from its previous owner's
// cache (a cache-only stat) instead of asking the store again.
TEST_F(PeerFetchTest, AfterAJoinStatsAndReadsOfEveryFileCostNoStoreMetadataRequest) {
  Config c = BaseConfig();
  auto warm = WarmTwoWorkers(c);
  ASSERT_TRUE(warm);
  const double before = StoreMetadataRequests();
  StartWorker(c, "c2");
  auto client = NewClient(c, 3);  // a new client: nothing of the first epoch in it
  ASSERT_TRUE(client);
  StatDataset(*client, files_);
  ReadDataset(*client);
  EXPECT_EQ(StoreMetadataRequests(), before) << "the epoch after the join asked the store for metadata";
  auto hits = WorkerMetricSum({addresses_[2]}, "shoal_peer_meta_hits_total");
  ASSERT_TRUE(hits) << hits.error().ToString();
  EXPECT_GE(*hits, 1) << "the new worker took no metadata from its peers";
  std::printf("epoch after a join: %.0f stats of %d files taken from peers by the new worker\n", *hits, kFiles);
}

// An entry is taken from a peer only while the mount's rule still finds it
// fresh, counted from when the store gave it: once past the ttl, the new
// owner asks the store, and a changed object is seen.
TEST_F(PeerFetchTest, AnEntryPastTheMountsTtlIsNotTakenFromAPeer) {
  Config c = BaseConfig();
  c.mounts[0].consistency = Consistency::kTtl;
  c.mounts[0].ttl = std::chrono::seconds(3);
  auto warm = WarmTwoWorkers(c);
  ASSERT_TRUE(warm);
  const auto warmed = Clock::now();  // every entry was fetched before this
  std::vector<std::string> changed;
  for (int i = 0; i < kFiles; ++i) {
    changed.push_back(RandomBytes(files_[static_cast<size_t>(i)].size() + 1, static_cast<uint64_t>(i) + 500));
    ASSERT_TRUE(WriteFile(root_ + "/ufs/f" + std::to_string(i), changed.back()).ok());
  }
  // Waiting for the entries to age past the ttl (what the test is about), not for an event.
  ASSERT_TRUE(WaitFor([&] { return Clock::now() > warmed + c.mounts[0].ttl + 500ms; }, 30s));
  StartWorker(c, "c2");
  auto client = NewClient(c, 3);
  ASSERT_TRUE(client);
  StatDataset(*client, changed);
  files_ = changed;
  ReadDataset(*client);
  EXPECT_EQ(Sum("shoal_peer_meta_hits_total", {addresses_[2]}), 0) << "an entry past its ttl was taken from a peer";
  EXPECT_GE(Sum("shoal_peer_meta_misses_total", {addresses_[2]}), 1) << "the new worker did not ask its peers";
}

// An entry taken from a peer keeps the time the store gave it: its ttl ends
// when the original's does, not a ttl after it was copied. Entries 8 s old
// are taken; the store then changes; every stat must show the change before
// a ttl has passed since they were taken (a copy that restarted its ttl would
// show the old version until then).
TEST_F(PeerFetchTest, AnEntryTakenFromAPeerExpiresWhenTheOriginalDoes) {
  Config c = BaseConfig();
  c.mounts[0].consistency = Consistency::kTtl;
  c.mounts[0].ttl = std::chrono::seconds(20);
  auto warm = WarmTwoWorkers(c);
  ASSERT_TRUE(warm);
  const auto warmed = Clock::now();  // every entry was fetched before this
  // Waiting for the entries to age (what the test is about), not for an event.
  ASSERT_TRUE(WaitFor([&] { return Clock::now() > warmed + 8s; }, 30s));
  StartWorker(c, "c2");
  auto client = NewClient(c, 3);
  ASSERT_TRUE(client);
  const auto taken = Clock::now();
  if (taken > warmed + 16s) GTEST_SKIP() << "the third worker took too long to start: the entries are about to expire";
  StatDataset(*client, files_);
  ASSERT_GE(Sum("shoal_peer_meta_hits_total", {addresses_[2]}), 1) << "the new worker took no metadata from its peers";
  std::vector<std::string> changed;
  for (int i = 0; i < kFiles; ++i) {
    changed.push_back(RandomBytes(files_[static_cast<size_t>(i)].size() + 1, static_cast<uint64_t>(i) + 900));
    ASSERT_TRUE(WriteFile(root_ + "/ufs/f" + std::to_string(i), changed.back()).ok());
  }
  auto all_changed = [&] {
    for (int i = 0; i < kFiles; ++i) {
      auto st = client->Stat("/data/f" + std::to_string(i));
      if (!st || st->size != changed[static_cast<size_t>(i)].size()) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitFor(all_changed, 60s)) << "the change was never seen";
  using std::chrono::duration_cast, std::chrono::milliseconds;
  const auto seen = Clock::now();
  EXPECT_LT(duration_cast<milliseconds>(seen - taken).count(), duration_cast<milliseconds>(c.mounts[0].ttl).count())
      << "an entry taken from a peer was served until " << duration_cast<milliseconds>(seen - warmed).count()
      << " ms after the store gave it (ttl 20 s): its ttl restarted when it was copied";
}

// The previous owner of a third of the paths is killed (its lease keeps it in
// the ring): the new worker's cache-only stats to it fail, and every stat
// still succeeds, from the store.
TEST_F(PeerFetchTest, AStatFallsBackToTheStoreWhenThePeerIsDown) {
  Config c = BaseConfig();
  c.client.timeout = std::chrono::seconds(60);
  auto warm = WarmTwoWorkers(c);
  ASSERT_TRUE(warm);
  workers_[1].Signal(SIGKILL);
  workers_[1].Wait(std::chrono::seconds(10));
  StartWorker(c, "c2");
  auto client = NewClient(c, 3);
  ASSERT_TRUE(client);
  StatDataset(*client, files_);
  ReadDataset(*client);
  EXPECT_GE(Sum("shoal_peer_fetch_errors_total", {addresses_[2]}), 1) << "the new worker never asked the dead peer";
}

TEST_F(PeerFetchTest, AWorkerJoiningAWarmClusterCostsAlmostNoStoreBytes) {
  const double epoch = StoreBytesOfTheEpochAfterAJoin(true);
  std::printf("epoch after a join, peer fetch on: under-store bytes / dataset bytes = %.0f / %llu = %.4f\n", epoch,
              static_cast<unsigned long long>(dataset_bytes_), epoch / static_cast<double>(dataset_bytes_));
  EXPECT_LE(epoch, 0.05 * static_cast<double>(dataset_bytes_))
      << "the epoch after a join read " << epoch << " of " << dataset_bytes_ << " dataset bytes from the store";
  // The new worker's share came from the other workers' caches.
  auto peer = WorkerMetricSum({addresses_[2]}, "shoal_peer_fetch_bytes_total");
  ASSERT_TRUE(peer) << peer.error().ToString();
  EXPECT_GT(*peer, 0.15 * static_cast<double>(dataset_bytes_)) << "the new worker fetched little from its peers";
}

TEST_F(PeerFetchTest, WithoutPeerFetchTheNewWorkersShareComesFromTheStore) {
  // The control: the same epoch with worker.peer_fetch off re-reads the new
  // worker's share from the store (so the test above measures peer fetch).
  const double epoch = StoreBytesOfTheEpochAfterAJoin(false);
  std::printf("epoch after a join, peer fetch off: under-store bytes / dataset bytes = %.0f / %llu = %.4f\n", epoch,
              static_cast<unsigned long long>(dataset_bytes_), epoch / static_cast<double>(dataset_bytes_));
  EXPECT_GT(epoch, 0.15 * static_cast<double>(dataset_bytes_));
  EXPECT_EQ(Sum("shoal_peer_fetch_bytes_total", addresses_), 0);
}

// A write-back file, once uploaded, stays cached for all its shards: its
// primary pushes their pages under the store's version to their owners on
// the ring it follows (etcd here), so reading it back costs the store nothing.
TEST_F(PeerFetchTest, AnUploadedWriteBackFileStaysCachedOnTheOwnersOfAllItsShards) {
  Config c = BaseConfig();
  fs::create_directories(root_ + "/wb");
  MountConfig m = FileMount(root_ + "/wb");
  m.path = "/wb";
  m.write_mode = WriteMode::kWriteBack;
  m.consistency = Consistency::kTtl;
  m.ttl = std::chrono::hours(1);
  c.mounts.push_back(m);
  for (const char* cache : {"c0", "c1", "c2"}) StartWorker(c, cache);
  auto client = NewClient(c, 3);
  ASSERT_TRUE(client);
  const std::string data = RandomBytes(12 * 256 * 1024 + 777, 9);  // 13 shards of 256 KiB
  {
    auto w = client->Create("/wb/ckpt.bin");
    ASSERT_TRUE(w) << w.error().ToString();
    ASSERT_TRUE((*w)->Write(std::span<const char>(data.data(), data.size())).ok());
    auto st = (*w)->Close();
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_TRUE(st->version.starts_with("wb-")) << "held, not written through: " << st->version;
  }
  auto drained = [&] {
    for (const auto& a : addresses_) {
      auto body = WorkerGet(a, "/v1/status", c.cluster.secret);
      if (!body || body->find("\"write_back_pending_files\":0") == std::string::npos) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitFor(drained, 60s)) << "the upload did not finish";
  ASSERT_TRUE(WaitFor(
      [&] {
        auto st = client->Stat("/wb/ckpt.bin");
        return st && !st->version.starts_with("wb-");
      },
      30s))
      << "the store's version is not seen after the upload";
  const double before = Sum("shoal_ufs_read_bytes_total", addresses_);
  auto got = ReadWholeFile(*client, "/wb/ckpt.bin");
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_TRUE(*got == data) << "the bytes read back differ";
  EXPECT_EQ(Sum("shoal_ufs_read_bytes_total", addresses_), before) << "the read back was not served from the cache";
}

}  // namespace
}  // namespace shoal::testing
