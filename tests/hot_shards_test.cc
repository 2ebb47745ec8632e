// Hot shards (issue 14, item 5): a shard read past worker.hot_shard_rps is
// served by its next owner on the ring too, filled from the owner's cache,
// and given back when the heat goes. Real `shoal worker` processes on
// loopback over a file:// store; waits poll a condition against a deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/hash_ring.h"
#include "cluster/membership.h"
#include "shoal/client.h"
#include "tests/etcd_workers.h"
#include "tests/harness/ring_snapshot.h"
#include "ufs/uri.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kShard = 1 << 20;

struct Shard {
  uint64_t offset;    // first byte
  size_t owner;       // index into addresses_
  size_t next_owner;  // the worker after it on the ring
};

// Three workers in etcd (they know each other, so the next owner can fetch
// from the owner), a hot file of two shards and a cold file.
class HotShardsTest : public EtcdWorkersTest {
 protected:
  void SetUp() override {
    EtcdWorkersTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    hot_ = RandomBytes(kShard + kShard / 2, 31);  // two shards: the open's key and a data key
    cold_ = RandomBytes(100'000, 32);
    ASSERT_TRUE(WriteFile(root_ + "/ufs/hot", hot_).ok());
    ASSERT_TRUE(WriteFile(root_ + "/ufs/cold", cold_).ok());
    config_ = BaseConfig();
    config_.cluster.shard_size = kShard;
    config_.client.short_circuit = false;  // every read over HTTP, where the heat is counted
    // Hot at 50 reads/s of one shard over a 1 s window: the readers below
    // (64 KiB reads, hundreds a second even on a loaded machine) pass it; the
    // handful of reads of the cold file, and the dozen whole-file reads after
    // the heat (two requests of shard 0 each), stay under it.
    config_.worker.hot_shard_rps = 50;
    config_.worker.hot_shard_window = 1s;
    for (int i = 0; i < 3; ++i) StartWorker(config_, "c" + std::to_string(i));
  }

  std::unique_ptr<Client> Reader() { return NewClient(config_, 3); }

  // Where each shard of `st` lives, on the ring the client routes by.
  std::vector<Shard> Shards(Client& client, const FileStatus& st) {
    const RingSnapshot ring = SnapshotOf(client.Ring());
    const std::vector<WorkerEntry>& workers = ring.workers;
    auto index = [&](size_t member) {
      for (size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i].id == workers[member].id) return i;
      }
      ADD_FAILURE() << "worker " << workers[member].id << " is not one the test started";
      return size_t{0};
    };
    std::vector<Shard> out;
    for (uint64_t off = 0; off < st.size; off += kShard) {
      auto owners = ring.ring.Owners(HashRing::DataKey(st.path, st.version, off / kShard), 2);
      EXPECT_EQ(owners.size(), 2u);
      if (owners.size() == 2) out.push_back({off, index(owners[0]), index(owners[1])});
    }
    return out;
  }

  double Metric(size_t worker, const std::string& name) { return Sum(name, {addresses_[worker]}); }
  double Total(const std::string& name) { return Sum(name, addresses_); }

  nlohmann::json Status(size_t worker) {
    auto body = WorkerGet(addresses_[worker], "/v1/status", config_.cluster.secret);
    EXPECT_TRUE(body) << body.error().ToString();
    return body ? nlohmann::json::parse(*body) : nlohmann::json::object();
  }

  // Whether any worker finds a shard of `path` hot now.
  bool AnyHot(const std::string& path) {
    for (size_t i = 0; i < addresses_.size(); ++i) {
      for (const auto& h : Status(i).value("hot_shards", nlohmann::json::array())) {
        if (h.value("path", "") == path) return true;
      }
    }
    return false;
  }

  std::string ReadTarget(const FileStatus& st, uint64_t offset, uint64_t length) const {
    return "/v1/read?path=" + PercentEncode(st.path, true) + "&version=" + PercentEncode(st.version, false) +
           "&size=" + std::to_string(st.size) + "&offset=" + std::to_string(offset) +
           "&length=" + std::to_string(length);
  }

  // A cache-only read of a shard's bytes from one worker: whether it holds them all.
  bool Holds(size_t worker, const FileStatus& st, const Shard& s) {
    const uint64_t len = std::min<uint64_t>(kShard, st.size - s.offset);
    auto got = WorkerGet(addresses_[worker], ReadTarget(st, s.offset, len) + "&cache_only=1", config_.cluster.secret);
    return got && *got == hot_.substr(s.offset, len);
  }

  Config config_;
  std::string hot_, cold_;
};

TEST_F(HotShardsTest, AHotFileIsServedByTwoWorkersFromOneStoreReadAndGivenBackWhenItCools) {
  auto client = Reader();
  ASSERT_TRUE(client);
  auto st = client->Stat("/data/hot");
  ASSERT_TRUE(st) << st.error().ToString();
  const auto shards = Shards(*client, *st);
  ASSERT_EQ(shards.size(), 2u);

  // A cold file read now and then is never spread.
  for (int i = 0; i < 5; ++i) {
    auto got = ReadWholeFile(*client, "/data/cold");
    ASSERT_TRUE(got && *got == cold_);
  }
  EXPECT_EQ(Total("shoal_hot_answers_total"), 0);
  EXPECT_EQ(Total("shoal_hot_spread_reads_total"), 0);
  EXPECT_EQ(client->stats().hot_spread_reads, 0u);

  // One read warms the owners; wait until their caches hold every page (the
  // first page is written to disk in the background).
  auto first = ReadWholeFile(*client, "/data/hot");
  ASSERT_TRUE(first && *first == hot_);
  for (const auto& s : shards) {
    ASSERT_TRUE(WaitFor([&] { return Holds(s.owner, *st, s); }, 30s)) << "shard at " << s.offset << " not cached";
  }
  const double store_bytes = Total("shoal_ufs_read_bytes_total");
  EXPECT_EQ(store_bytes, static_cast<double>(hot_.size() + cold_.size()));

  // Four readers, each with its own client (as four processes of a job), read
  // the hot file in a loop until both next owners have served spread reads.
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::atomic<uint64_t> reads{0}, spread{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      auto c = Reader();
      if (!c) {
        ++wrong;
        return;
      }
      // 64 KiB reads over the whole file, the two shards in turn (shard 1's
      // pages twice per pass), so that each shard is asked for often and
      // every page of it is read.
      constexpr uint64_t kPiece = 64 * 1024;
      const uint64_t first = kShard / kPiece, second = (hot_.size() - kShard + kPiece - 1) / kPiece;
      std::string buf(kPiece, '\0');
      while (!stop) {
        auto f = c->OpenFile("/data/hot");
        if (!f) {
          ++wrong;
          continue;
        }
        for (uint64_t i = 0; i < 2 * first && !stop; ++i) {
          const uint64_t off = (i % 2 == 0 ? i / 2 : first + (i / 2) % second) * kPiece;
          const size_t len = std::min<uint64_t>(kPiece, hot_.size() - off);
          auto n = (*f)->Pread(off, std::span<char>(buf.data(), len));
          if (!n || *n != len || std::string_view(buf.data(), len) != std::string_view(hot_).substr(off, len)) ++wrong;
          ++reads;
        }
      }
      spread += c->stats().hot_spread_reads;
    });
  }
  bool both = WaitFor(
      [&] {
        if (wrong > 0) return true;
        // Each shard: its owner marked it hot, and its next owner holds a copy.
        for (const auto& s : shards) {
          if (Metric(s.owner, "shoal_hot_answers_total") == 0 || !Holds(s.next_owner, *st, s)) return false;
        }
        return Total("shoal_hot_spread_reads_total") >= 20;
      },
      120s);
  EXPECT_FALSE(AnyHot("/data/cold")) << "a cold file was found hot";
  // `shoal status` names the hot shards while the readers go on.
  testing::Run status;
  if (both && wrong == 0) {
    const std::string yaml = root_ + "/client.yaml";
    if (WriteFile(yaml, ToYaml(config_)).ok()) {  // no ASSERT while the readers run
      status = Shoal({"status", "--config", yaml});
    } else {
      ADD_FAILURE() << "cannot write " << yaml;
    }
  }
  stop = true;
  for (auto& r : readers) r.join();
  ASSERT_TRUE(both) << "the next owners did not serve the hot shards; spread reads: "
                    << Total("shoal_hot_spread_reads_total") << ", hot answers: " << Total("shoal_hot_answers_total")
                    << ", reads: " << reads.load();
  EXPECT_EQ(wrong.load(), 0) << "a read returned wrong bytes";
  std::printf("hot file: %llu 64 KiB reads by 4 readers, %llu of them spread to the next owner\n",
              static_cast<unsigned long long>(reads.load()), static_cast<unsigned long long>(spread.load()));
  EXPECT_GT(spread.load(), 0u);
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("hot shards: /data/hot shard "), std::string::npos) << status.out;
  EXPECT_EQ(CountLines(status.out, "reads served as next owner: "), 3) << status.out;

  // Both workers of each shard served it: the next owner holds a copy, which
  // came from the owner's cache, not the store.
  for (const auto& s : shards) {
    EXPECT_GT(Metric(s.owner, "shoal_hot_answers_total"), 0) << "owner of shard at " << s.offset;
    EXPECT_TRUE(Holds(s.next_owner, *st, s)) << "next owner of shard at " << s.offset << " holds no copy";
    EXPECT_GT(Metric(s.next_owner, "shoal_peer_fetch_bytes_total"), 0);
  }
  EXPECT_EQ(Total("shoal_ufs_read_bytes_total"), store_bytes) << "the extra copies were read from the store";

  // The readers stopped: the shards cool on their owners.
  ASSERT_TRUE(WaitFor([&] { return !AnyHot("/data/hot"); }, 60s)) << "the hot shards never cooled";
  // A client that still holds the mark goes back to the owner at the owner's
  // first unmarked answer: after a few reads no read is spread any more.
  for (int i = 0; i < 6; ++i) {
    auto got = ReadWholeFile(*client, "/data/hot");
    ASSERT_TRUE(got && *got == hot_);
  }
  const uint64_t spread_before = client->stats().hot_spread_reads;
  for (int i = 0; i < 5; ++i) {
    auto got = ReadWholeFile(*client, "/data/hot");
    ASSERT_TRUE(got && *got == hot_);
  }
  EXPECT_EQ(client->stats().hot_spread_reads, spread_before) << "reads were still spread after the heat went";
  EXPECT_FALSE(AnyHot("/data/hot")) << "a handful of reads heated the shards again";

  // The next owners drop their extra copies once no spread read has come for
  // a while (the client's hold plus two windows); the owners keep theirs.
  for (const auto& s : shards) {
    // (Checked at the worker's next read or status call.)
    EXPECT_TRUE(WaitFor([&] { return !Status(s.next_owner).empty() && !Holds(s.next_owner, *st, s); }, 90s))
        << "the next owner kept its copy of the shard at " << s.offset;
    EXPECT_TRUE(Holds(s.owner, *st, s)) << "the owner lost the shard at " << s.offset;
  }
  EXPECT_GE(Total("shoal_hot_copies_dropped_total"), 2);
  auto again = ReadWholeFile(*client, "/data/hot");
  ASSERT_TRUE(again && *again == hot_);
  EXPECT_EQ(Total("shoal_ufs_read_bytes_total"), store_bytes);
}

TEST_F(HotShardsTest, AReadNamingABadSpreadFlagIsRefused) {
  auto client = Reader();
  ASSERT_TRUE(client);
  auto st = client->Stat("/data/hot");
  ASSERT_TRUE(st) << st.error().ToString();
  const std::string& secret = config_.cluster.secret;
  const std::string read = ReadTarget(*st, 0, 100);
  auto bad = WorkerGet(addresses_[0], read + "&spread=yes", secret);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("HTTP 400"), std::string::npos) << bad.error().ToString();
  EXPECT_NE(bad.error().message().find("spread"), std::string::npos) << bad.error().ToString();
  auto open = WorkerGet(addresses_[0], "/v1/open?path=%2Fdata%2Fhot&length=10&spread=2", secret);
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().message().find("HTTP 400"), std::string::npos) << open.error().ToString();
  // spread=1 is served like any read, and counted.
  auto ok = WorkerGet(addresses_[0], read + "&spread=1", secret);
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_TRUE(*ok == hot_.substr(0, 100));
  EXPECT_EQ(Metric(0, "shoal_hot_spread_reads_total"), 1);
}

}  // namespace
}  // namespace shoal::testing
