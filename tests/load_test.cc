// `shoal load` and `shoal free` against s3rver and three real workers: each
// worker fetches only the shards it owns, a following read is all hits,
// --stop from another process, resuming, --skip-if-exists, --verify, free,
// bad arguments and the JSON output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/hash_ring.h"
#include "tests/cli_helpers.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/raw_http.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;

constexpr uint64_t kPage = 256 * 1024;
constexpr uint64_t kShard = 1 << 20;

class LoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s3 = S3rverProcess::Start();
    ASSERT_TRUE(s3) << s3.error().ToString();
    s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
    ASSERT_TRUE(s3_->CreateBucket("load").ok());
    MountConfig m;
    m.path = "/data";
    m.ufs = "s3://load/data/";
    m.options = s3_->MountOptions();
    auto ufs = OpenUnderStore(m);
    ASSERT_TRUE(ufs) << ufs.error().ToString();
    ufs_ = *ufs;
    ShoalCluster::Options o;
    o.workers = 3;
    o.mounts = {m};
    o.page_size = kPage;
    o.shard_size = kShard;
    // No read-ahead: what each worker fetches is exactly what it was asked for.
    o.worker = [](WorkerConfig& w) { w.readahead = 0; };
    o.secret = ClusterSecret();
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    dir_ = MakeTempDir("load-test");
    config_ = dir_ + "/client.yaml";
    ASSERT_TRUE(WriteFile(config_, cluster_->ClientYaml()).ok());
    // A dataset: small files, a subdirectory, and files of several shards.
    for (int i = 0; i < 12; ++i) Put("ds/img" + std::to_string(i), RandomBytes(7'000 + i * 31'000, i));
    Put("ds/sub/a", RandomBytes(90'000, 100));
    Put("ds/sub/deeper/b", RandomBytes(3 * kShard + 12'345, 101));
    Put("ds/big", RandomBytes(2 * kShard + kPage + 7, 102));
    Put("ds/empty", "");
  }

  // cluster.secret of the workers and the CLI: none here.
  virtual std::string ClusterSecret() const { return ""; }

  void TearDown() override {
    cluster_.reset();
    s3_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void Put(const std::string& key, const std::string& data) {
    ASSERT_TRUE(ufs_->Write(key, std::span<const char>(data.data(), data.size())).ok()) << key;
    files_["/data/" + key] = data;
  }

  testing::Run Cli(std::vector<std::string> args) {
    args.push_back("-c");
    args.push_back(config_);
    return Shoal(std::move(args));
  }

  // Each line of a JSON-lines output, parsed (a line that does not parse fails the test).
  static std::vector<Json> Lines(const std::string& out) {
    std::vector<Json> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      try {
        lines.push_back(Json::parse(line));
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not JSON: " << line << " (" << e.what() << ")";
      }
    }
    return lines;
  }

  double Metric(size_t worker, const std::string& name) {
    auto v = WorkerMetricSum({cluster_->addresses()[worker]}, name);
    EXPECT_TRUE(v) << v.error().ToString();
    return v.value_or(-1);
  }
  std::vector<uint64_t> UfsBytes() {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < 3; ++i) out.push_back(static_cast<uint64_t>(Metric(i, "shoal_ufs_read_bytes_total")));
    return out;
  }
  static uint64_t Sum(const std::vector<uint64_t>& v) {
    uint64_t s = 0;
    for (auto x : v) s += x;
    return s;
  }

  uint64_t DatasetBytes() const {
    uint64_t n = 0;
    for (const auto& [p, d] : files_) n += d.size();
    return n;
  }

  // Bytes of the dataset each worker owns: the client's routing, computed here
  // from the ring and each object's version as the store gives it.
  // Only the files under `under` when it is given.
  std::vector<uint64_t> OwnedBytes(const std::string& under = "") {
    std::vector<std::string> ids;
    for (const auto& w : cluster_->workers()) ids.push_back(w.id);
    HashRing ring(ids);
    std::vector<uint64_t> owned(3, 0);
    for (const auto& [path, data] : files_) {
      if (!path.starts_with(under)) continue;
      auto st = ufs_->Stat(path.substr(std::string("/data/").size()));
      EXPECT_TRUE(st) << path;
      if (!st) continue;
      uint64_t shards = std::max<uint64_t>(1, (data.size() + kShard - 1) / kShard);
      for (uint64_t s = 0; s < shards; ++s) {
        owned[ring.Owner(HashRing::DataKey(path, st->Version(), s))] +=
            std::min<uint64_t>(data.size(), (s + 1) * kShard) - s * kShard;
      }
    }
    return owned;
  }

  // Reads every file through a new client and checks its bytes.
  void ReadAll() {
    auto c = cluster_->NewClient();
    ASSERT_TRUE(c) << c.error().ToString();
    for (const auto& [path, data] : files_) {
      auto f = (*c)->OpenFile(path);
      ASSERT_TRUE(f) << path << ": " << f.error().ToString();
      std::string got(data.size(), '\0');
      auto n = (*f)->Pread(0, std::span<char>(got.data(), got.size()));
      ASSERT_TRUE(n) << path << ": " << n.error().ToString();
      EXPECT_EQ(*n, data.size()) << path;
      EXPECT_TRUE(got == data) << path << " read back different bytes";
    }
  }

  Json Final(const testing::Run& r) {
    auto lines = Lines(r.out);
    if (lines.empty()) return Json::object();
    EXPECT_TRUE(lines.back().value("final", false)) << r.out;
    return lines.back();
  }

  std::unique_ptr<S3rverProcess> s3_;
  std::shared_ptr<UnderStore> ufs_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::string dir_, config_;
  std::map<std::string, std::string> files_;
};

TEST_F(LoadTest, EveryWorkerFetchesWhatItOwnsAndReadsThenHit) {
  auto before = UfsBytes();
  auto r = Cli({"load", "/data/ds", "-r"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json fin = Final(r);
  EXPECT_EQ(fin["state"], "done");
  EXPECT_EQ(fin["workers"], 3);
  EXPECT_EQ(fin["files_total"].get<uint64_t>(), files_.size());
  EXPECT_EQ(fin["files_done"].get<uint64_t>(), files_.size());
  EXPECT_EQ(fin["bytes_total"].get<uint64_t>(), DatasetBytes());
  EXPECT_EQ(fin["bytes_fetched"].get<uint64_t>(), DatasetBytes());
  EXPECT_EQ(fin["files_failed"].get<uint64_t>(), 0u);

  // Each worker read from the store exactly the bytes of the shards it owns.
  auto after = UfsBytes();
  auto owned = OwnedBytes();
  size_t owners = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(after[i] - before[i], owned[i]) << "worker " << i;
    owners += owned[i] > 0;
  }
  EXPECT_GE(owners, 2u) << "the dataset should spread over the workers";
  EXPECT_EQ(Sum(after) - Sum(before), DatasetBytes());

  // A following read of everything is served from the cache: no byte from the store.
  std::vector<double> hits;
  for (size_t i = 0; i < 3; ++i) hits.push_back(Metric(i, "shoal_cache_hit_bytes_total"));
  ReadAll();
  EXPECT_EQ(UfsBytes(), after) << "a read after the load went to the under-store";
  for (size_t i = 0; i < 3; ++i) {
    if (owned[i]) {
      EXPECT_GT(Metric(i, "shoal_cache_hit_bytes_total"), hits[i]) << "worker " << i << " served no hit";
    }
  }

  // Loading again fetches nothing: everything is cached.
  r = Cli({"load", "/data/ds", "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["bytes_fetched"].get<uint64_t>(), 0u);
  EXPECT_EQ(Final(r)["bytes_cached"].get<uint64_t>(), DatasetBytes());
  EXPECT_EQ(UfsBytes(), after);
}

// Every worker walks the whole tree, but each directory is listed at the
// store once for the cluster: the others take the listing from the worker that
// owns the directory's metadata (before: once per worker, 3 x the requests).
// The workers here were started without a list of each other (as `shoal up`
// starts them), so they call the addresses the load request names only
// because the request carried the cluster secret.
class LoadWithSecretTest : public LoadTest {
 protected:
  std::string ClusterSecret() const override { return "load-test-secret"; }

  // One request to the worker at `address` with the cluster secret; its JSON answer ({} unless 200).
  Json Call(const std::string& address, const std::string& method, const std::string& target) {
    auto conn = RawConnection::Connect(address);
    EXPECT_TRUE(conn);
    if (!conn) return Json();
    conn->Send(method + " " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ClusterSecret() +
               "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    auto resp = conn->ReadResponse(30s);
    EXPECT_TRUE(resp && resp->status == 200) << (resp ? resp->body : "no response");
    return resp && resp->status == 200 ? Json::parse(resp->body) : Json();
  }

  // Load job `id` on the worker at `address` once it is no longer running (at most 120 s).
  Json WaitForJob(const std::string& address, const std::string& id) {
    Json job;
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    do {
      Json all = Call(address, "GET", "/v1/load?id=" + id);
      if (all.contains("jobs") && !all["jobs"].empty()) job = all["jobs"][0];
      if (job.value("state", "running") == "running") std::this_thread::sleep_for(20ms);  // a poll's pace, not a wait
    } while (job.value("state", "running") == "running" && std::chrono::steady_clock::now() < deadline);
    return job;
  }
};

// The store's list requests, summed over the workers.
const std::string kStoreLists = R"(shoal_ufs_requests_total{ufs="s3://load/data/",op="list"})";

TEST_F(LoadWithSecretTest, EachDirectoryIsListedAtTheStoreOnce) {
  auto before = cluster_->MetricSum(kStoreLists);
  ASSERT_TRUE(before) << before.error().ToString();
  auto r = Cli({"load", "/data/ds", "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json fin = Final(r);
  EXPECT_EQ(fin["files_done"].get<uint64_t>(), files_.size());
  EXPECT_EQ(fin["bytes_fetched"].get<uint64_t>(), DatasetBytes());
  auto after = cluster_->MetricSum(kStoreLists);
  ASSERT_TRUE(after) << after.error().ToString();
  // /data/ds, /data/ds/sub and /data/ds/sub/deeper: one page each.
  EXPECT_EQ(*after - *before, 3) << "list requests to the store for a load of 3 directories by 3 workers";
  ReadAll();
}

// The member named as the owner of a directory's listing garbles its answer,
// or hangs up before any: the worker lists the store itself and the load
// completes with every file.
TEST_F(LoadWithSecretTest, AnOwnerThatGarblesOrHangsUpIsListedAroundAtTheStore) {
  const std::string w0 = cluster_->addresses()[0], self = cluster_->workers()[0].id;
  // A member id that a ring of it and worker 0 makes the owner of /data/ds's listing.
  std::string fake;
  for (int i = 0; fake.empty() && i < 1000; ++i) {
    const std::string id = "w-fake" + std::to_string(i);
    HashRing ring({self, id});
    if (ring.members()[ring.Owner(HashRing::MetaKey("/data/ds"))] == id) fake = id;
  }
  ASSERT_FALSE(fake.empty());
  const std::vector<std::string> answers = {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{garbage!", ""};
  for (size_t n = 0; n < answers.size(); ++n) {
    SCOPED_TRACE(answers[n].empty() ? "hangs up" : "garbles");
    std::atomic<int> asked{0};
    LoopbackListener peer([&](int fd) {
      char buf[4096];
      if (::read(fd, buf, sizeof buf) > 0) ++asked;
      if (!answers[n].empty()) (void)!::write(fd, answers[n].data(), answers[n].size());
    });  // then closed
    const std::string id = "peer" + std::to_string(n);
    Call(w0, "POST", "/v1/refresh?path=/data/ds&recursive=1");  // the first round's listing is cached
    auto before = cluster_->MetricSum(kStoreLists);
    ASSERT_TRUE(before) << before.error().ToString();
    Call(w0, "POST",
         "/v1/load?id=" + id + "&path=/data/ds&recursive=1&members=" + self + "," + fake + "&self=" + self +
             "&addresses=" + w0 + ",127.0.0.1:" + std::to_string(peer.port()));
    const Json job = WaitForJob(w0, id);
    ASSERT_EQ(job.value("state", ""), "done") << job.dump();
    EXPECT_EQ(job.at("files_failed").get<uint64_t>(), 0u) << job.dump();
    EXPECT_GE(asked.load(), 1) << "the owner named in the request was never asked";
    auto after = cluster_->MetricSum(kStoreLists);
    ASSERT_TRUE(after) << after.error().ToString();
    EXPECT_GE(*after - *before, 1) << "the listing was taken from nobody";
  }
}

// A load's member addresses are the request's word. A worker that knows its
// members (here a static cluster.workers list) calls the owner of a listing
// only at the address it has for that member: named at another address, the
// member is not called and the worker lists the store itself; named at its
// own address, it is called.
TEST_F(LoadWithSecretTest, AnOwnersAddressThatIsNotItsMembershipsIsNeverCalled) {
  std::atomic<int> lists{0};
  LoopbackListener peer([&](int fd) {
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0 && std::string_view(buf, static_cast<size_t>(n)).starts_with("GET /v1/list")) ++lists;
    const std::string garbled = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{garbage!";
    (void)!::write(fd, garbled.data(), garbled.size());
  });
  const std::string peer_address = "127.0.0.1:" + std::to_string(peer.port());
  for (const bool known_there : {false, true}) {
    SCOPED_TRACE(known_there ? "the member list has the peer at that address" : "the member list has it elsewhere");
    // A fourth worker, outside the cluster, whose member list holds the peer.
    Config c;
    MountConfig m;
    m.path = "/data";
    m.ufs = "s3://load/data/";
    m.options = s3_->MountOptions();
    c.mounts = {m};
    c.cluster.secret = ClusterSecret();
    c.cluster.shard_size = kShard;
    c.worker.page_size = kPage;
    c.worker.readahead = 0;
    const std::string self = "w-self-" + std::string(known_there ? "known" : "elsewhere");
    c.worker.id = self;
    // A peer id that a ring of it and this worker makes the owner of /data/ds's listing.
    std::string peer_id;
    for (int i = 0; peer_id.empty() && i < 1000; ++i) {
      HashRing ring({self, "w-peer" + std::to_string(i)});
      if (ring.members()[ring.Owner(HashRing::MetaKey("/data/ds"))] != self) peer_id = "w-peer" + std::to_string(i);
    }
    ASSERT_FALSE(peer_id.empty());
    c.cluster.workers = {WorkerEntry{peer_id, known_there ? peer_address : std::string("127.0.0.1:9")}};
    const std::string tag = known_there ? "known" : "elsewhere";
    ASSERT_TRUE(WriteFile(dir_ + "/" + tag + ".yaml", ToYaml(c)).ok());
    auto w = StartWorkerProcess(dir_ + "/" + tag + ".yaml", "127.0.0.1:0", dir_ + "/cache-" + tag,
                                std::to_string(64 << 20), dir_ + "/" + tag + ".log");
    ASSERT_TRUE(w) << w.error().ToString();
    ASSERT_EQ(w->entry.id, self);
    const std::string address = w->entry.address;
    const int lists0 = lists.load();
    Call(address, "POST",
         "/v1/load?id=m-" + tag + "&path=/data/ds&recursive=0&members=" + self + "," + peer_id + "&self=" + self +
             "&addresses=" + address + "," + peer_address);
    const Json job = WaitForJob(address, "m-" + tag);
    ASSERT_EQ(job.value("state", ""), "done") << job.dump();
    EXPECT_EQ(job.at("files_failed").get<uint64_t>(), 0u) << job.dump();
    EXPECT_GT(job.at("files_done").get<uint64_t>(), 0u)
        << "the directory was not listed at the store either: " << job.dump();
    if (known_there) {
      EXPECT_GE(lists.load() - lists0, 1) << "the member at the address the worker has for it was not asked";
    } else {
      EXPECT_EQ(lists.load() - lists0, 0) << "an address the request gave, not the worker's member list, was called";
    }
    w->process.Stop(std::chrono::seconds(10));
  }
}

// Without a cluster secret anyone may post a load, so its addresses are
// nobody's word: a worker that knows no members lists the store itself
// rather than call them.
TEST_F(LoadTest, WithoutASecretOrAMemberListEachWorkerListsTheStoreItself) {
  auto before = cluster_->MetricSum(kStoreLists);
  ASSERT_TRUE(before) << before.error().ToString();
  auto r = Cli({"load", "/data/ds", "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["files_done"].get<uint64_t>(), files_.size());
  auto after = cluster_->MetricSum(kStoreLists);
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(*after - *before, 9) << "3 directories, each listed by each of the 3 workers";
}

// A load is done when its pages are cached: the first page its stat read is
// written before the job counts the file, not left to the idle writer (which
// runs at SCHED_IDLE and may be seconds behind on a busy node). A guard: here
// the idle writer usually keeps up, so this does not catch every regression.
TEST_F(LoadTest, EveryPageIsCachedWhenTheLoadSaysDone) {
  uint64_t pages = 0;
  for (const auto& [path, data] : files_) pages += (data.size() + kPage - 1) / kPage;
  auto r = Cli({"load", "/data/ds", "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["state"], "done");
  auto cached = cluster_->MetricSum("shoal_cache_pages");
  ASSERT_TRUE(cached) << cached.error().ToString();
  EXPECT_EQ(static_cast<uint64_t>(*cached), pages) << "pages in the workers' page stores right after the load";
}

// --bandwidth caps the load: split among the workers, each paces the bytes
// it fetches. A small file's one page, which the stat reads, is charged once:
// charged twice (at the stat and again with the file's pages), a load took
// twice as long as its cap allows.
TEST_F(LoadTest, BandwidthCapsTheLoadAndChargesEachByteOnce) {
  const size_t files = 30;
  for (size_t i = 0; i < files; ++i) Put("paced/f" + std::to_string(i), RandomBytes(64 * 1024, 200 + i));
  const auto owned = OwnedBytes("/data/paced/");
  const uint64_t bandwidth = 3 * 256 * 1024, per_worker = bandwidth / 3;  // bytes per second
  const double most = static_cast<double>(*std::max_element(owned.begin(), owned.end()));
  const double expected = most / static_cast<double>(per_worker);  // seconds, at the cap
  auto r = Cli({"load", "/data/paced", "--bandwidth", std::to_string(bandwidth), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json fin = Final(r);
  ASSERT_EQ(fin["files_done"].get<uint64_t>(), files) << fin.dump();
  const double elapsed = fin["elapsed_s"].get<double>();
  // The first file of each worker goes at once; every later byte waits its turn.
  EXPECT_GE(elapsed, expected - 64.0 * 1024 / static_cast<double>(per_worker) - 0.05)
      << "faster than --bandwidth allows (" << most << " bytes on the busiest worker)";
  EXPECT_LT(elapsed, 1.5 * expected + 0.5)
      << "slower than --bandwidth: bytes charged twice? (expected about " << expected << " s)";
}

// A file under a rule that says admission: skip would be dropped as it came:
// the load does not ask the store for it, counts it apart and says why.
TEST_F(LoadTest, FilesThatARuleKeepsOutOfTheCacheAreNotFetched) {
  auto set = Cli({"rules", "set", "/data/ds/sub", "admission=skip"});
  ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  const uint64_t kept_out = files_["/data/ds/sub/a"].size() + files_["/data/ds/sub/deeper/b"].size();
  const uint64_t before = Sum(UfsBytes());
  auto r = Cli({"load", "/data/ds", "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json fin = Final(r);
  EXPECT_EQ(fin.value("files_not_admitted", uint64_t{0}), 2u) << fin.dump();
  EXPECT_EQ(fin["files_done"].get<uint64_t>(), files_.size() - 2);
  EXPECT_EQ(fin["bytes_total"].get<uint64_t>(), DatasetBytes() - kept_out);
  EXPECT_EQ(Sum(UfsBytes()) - before, DatasetBytes() - kept_out) << "the store was asked for files never cached";
  EXPECT_NE(r.err.find("2 files were not loaded: a path rule says admission: skip"), std::string::npos) << r.err;
}

// "done" means fetched and cached, not that it all stays: what a load brings a
// worker beyond a quota that covers the path is evicted as it comes, and the
// CLI says so, worker by worker; a load that fits says nothing of the kind.
TEST_F(LoadTest, ALoadBeyondAQuotaSaysWhatDoesNotStay) {
  const std::string note = "not all of the load stays cached";
  auto r = Cli({"load", "/data/ds", "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find(note), std::string::npos) << r.err;
  ASSERT_EQ(Cli({"free", "/data/ds", "-r"}).exit_code, 0);
  auto set = Cli({"rules", "set", "/data/ds", "quota=256KiB"});
  ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  r = Cli({"load", "/data/ds", "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["state"], "done");
  EXPECT_NE(r.err.find(note), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("keeps 256.0 KiB under /data/ds (its quota)"), std::string::npos) << r.err;
}

TEST_F(LoadTest, NonRecursiveLoadsTheDirectoryOnlyAndSaysSo) {
  auto r = Cli({"load", "/data/ds"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["files_total"].get<uint64_t>(), 14u);  // img0..11, big, empty
  EXPECT_NE(r.err.find("1 subdirectory was not loaded; add -r to load it"), std::string::npos) << r.err;
  // A single file: its shards, on the workers that own them.
  auto before = Sum(UfsBytes());
  r = Cli({"load", "s3://load/data/ds/sub/deeper/b"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["files_total"].get<uint64_t>(), 1u);
  EXPECT_EQ(Sum(UfsBytes()) - before, files_["/data/ds/sub/deeper/b"].size());
}

TEST_F(LoadTest, StopFromAnotherProcessThenResumeFetchesOnlyWhatIsMissing) {
  // A slow load (the dataset takes ~10 s at 1 MB/s), watched by one process...
  Subprocess::Options o;
  o.argv = {ShoalBinary(), "load", "/data/ds", "-r", "--bandwidth", "1MB/s", "--id", "slow", "-c", config_};
  auto watcher = Subprocess::Start(o);
  ASSERT_TRUE(watcher) << watcher.error().ToString();
  // ... seen and stopped from others, once it has fetched something.
  auto deadline = std::chrono::steady_clock::now() + 60s;
  Json status = Json::object();
  for (;;) {
    auto s = Cli({"load", "--status", "--id", "slow", "--json"});
    auto lines = Lines(s.out);
    if (s.exit_code == 0 && !lines.empty()) status = lines.back();
    if (status.value("bytes_fetched", uint64_t{0}) > 0) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the load fetched nothing in 60 s: " << s.out << s.err;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(status["state"], "running");
  EXPECT_EQ(status["workers"], 3);
  auto stop = Cli({"load", "--stop", "--id", "slow"});
  ASSERT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  EXPECT_NE(stop.out.find("stopped"), std::string::npos);
  int st = watcher->Wait(60s);
  ASSERT_NE(st, -1) << "the watching process did not end after --stop";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0);
  auto s = Cli({"load", "--status", "--id", "slow", "--json"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(Lines(s.out).back()["state"], "stopped");
  uint64_t partial = Sum(UfsBytes());
  EXPECT_GT(partial, 0u);
  EXPECT_LT(partial, DatasetBytes()) << "the stop came too late to test a resume";

  // Resuming fetches only what is missing: in all, each byte once.
  auto r = Cli({"load", "/data/ds", "-r"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json fin = Final(r);
  EXPECT_EQ(Sum(UfsBytes()), DatasetBytes());
  EXPECT_EQ(fin["bytes_fetched"].get<uint64_t>() + fin["bytes_cached"].get<uint64_t>(), DatasetBytes());
  EXPECT_GT(fin["bytes_cached"].get<uint64_t>(), 0u);
  auto before = UfsBytes();
  ReadAll();
  EXPECT_EQ(UfsBytes(), before);
  // Stopping a job that is not there is a clear error.
  auto none = Cli({"load", "--stop", "--id", "nope"});
  EXPECT_EQ(none.exit_code, 3) << none.err;
  EXPECT_NE(none.err.find("no load job nope"), std::string::npos) << none.err;
}

TEST_F(LoadTest, SkipIfExistsLeavesAPartlyCachedFileAlone) {
  // Opening a file caches its first page on its owner (the stat reads it).
  const std::string path = "/data/ds/img11";  // 348 KiB: two pages, one shard
  auto c = cluster_->NewClient();
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->OpenFile(path));
  // The page is written to disk off the open's path: wait until it is.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (cluster_->MetricSum("shoal_cache_used_bytes").value_or(0) == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the opened file's first page was never cached";
    std::this_thread::sleep_for(20ms);
  }
  uint64_t before = Sum(UfsBytes());
  EXPECT_EQ(before, kPage);
  auto r = Cli({"load", path, "--skip-if-exists"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["files_skipped"].get<uint64_t>(), 1u);
  EXPECT_EQ(Sum(UfsBytes()), before) << "--skip-if-exists fetched a file that was partly cached";
  // Without it, the rest of the file is fetched.
  r = Cli({"load", path});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["files_skipped"].get<uint64_t>(), 0u);
  EXPECT_EQ(Sum(UfsBytes()), files_[path].size());
}

TEST_F(LoadTest, VerifyCatchesCorruptPagesAndChangedObjects) {
  auto r = Cli({"load", "/data/ds", "-r"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Cli({"load", "/data/ds", "-r", "--verify"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json v = Final(r)["verify"];
  EXPECT_EQ(v["mismatches"], 0);
  EXPECT_GT(v["pages_checked"].get<uint64_t>(), 0u);
  EXPECT_GT(v["files_md5_checked"].get<uint64_t>(), 0u);  // s3rver's ETags are MD5s

  // Flip the last byte of every page file of worker 0, and change an object in the store.
  size_t corrupted = 0;
  for (const auto& e : fs::recursive_directory_iterator(cluster_->cache_dir(0))) {
    if (e.path().extension() != ".pg") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char ch = 0;
    f.get(ch);
    f.seekp(-1, std::ios::end);
    f.put(static_cast<char>(ch ^ 0x5a));
    ++corrupted;
  }
  ASSERT_GT(corrupted, 0u) << "worker 0 cached nothing";
  Put("ds/img3", RandomBytes(files_["/data/ds/img3"].size(), 999));

  r = Cli({"load", "/data/ds", "-r", "--verify"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("mismatches"), std::string::npos) << r.err;
  v = Final(r)["verify"];
  EXPECT_GE(v["mismatches"].get<uint64_t>(), corrupted);
  bool changed_reported = false, checksum_reported = false;
  for (const auto& m : v["mismatch_list"]) {
    std::string what = m.value("what", "");
    changed_reported |= m.value("path", "") == "/data/ds/img3" && what.find("older version") != std::string::npos;
    checksum_reported |= what.find("failed its check") != std::string::npos;
  }
  EXPECT_TRUE(changed_reported) << v.dump();
  EXPECT_TRUE(checksum_reported) << v.dump();
  // What was dropped was loaded again: reads are right (the new img3 too) and all hits.
  auto before = UfsBytes();
  ReadAll();
  EXPECT_EQ(UfsBytes(), before);
  r = Cli({"load", "/data/ds", "-r", "--verify"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Final(r)["verify"]["mismatches"], 0);
}

TEST_F(LoadTest, FreeMakesTheNextReadMiss) {
  auto r = Cli({"load", "/data/ds", "-r"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto f = Cli({"free", "/data/ds"});
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.err.find("add -r"), std::string::npos) << f.err;
  f = Cli({"free", "/data/ds/sub", "-r"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_NE(f.out.find("of /data/ds/sub"), std::string::npos) << f.out;
  uint64_t sub = files_["/data/ds/sub/a"].size() + files_["/data/ds/sub/deeper/b"].size();
  // "freed X (N bytes, P pages)": page headers included, so at least the data.
  auto open = f.out.find('('), sp = f.out.find(' ', open);
  ASSERT_NE(open, std::string::npos) << f.out;
  EXPECT_GE(std::stoull(f.out.substr(open + 1, sp - open - 1)), sub) << f.out;
  auto before = Sum(UfsBytes());
  ReadAll();
  EXPECT_EQ(Sum(UfsBytes()) - before, sub) << "only the freed files are read from the store again";
}

TEST_F(LoadTest, BadArgumentsGetClearErrors) {
  auto r = Cli({"load"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs a PATH"), std::string::npos) << r.err;
  r = Cli({"load", "/data/nope", "-r"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("/data/nope"), std::string::npos) << r.err;
  r = Cli({"load", "/data/ds", "--bandwidth", "fast"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bandwidth fast"), std::string::npos) << r.err;
  r = Cli({"load", "--status", "--id", "bad id!"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--id"), std::string::npos) << r.err;
  r = Cli({"load", "--status", "--stop"});
  EXPECT_EQ(r.exit_code, 2);
  r = Cli({"load", "--status", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << "no jobs yet: " << r.out;

  // The route itself checks every parameter.
  const std::string w = cluster_->addresses()[0], self = cluster_->workers()[0].id;
  auto post = [&](const std::string& query) {
    auto conn = RawConnection::Connect(w);
    EXPECT_TRUE(conn);
    if (!conn) return std::string();
    conn->Send("POST /v1/load?" + query + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    auto resp = conn->ReadResponse(10s);
    if (!resp) return std::string("no response");
    return std::to_string(resp->status) + " " + resp->body;
  };
  std::string ok = "id=j1&path=/data/ds&members=" + self + "&self=" + self;
  EXPECT_NE(post("path=/data/ds&members=" + self + "&self=" + self).find("400"), std::string::npos);
  EXPECT_NE(post("id=a%20b&path=/data/ds&members=" + self + "&self=" + self).find("must be 1 to 64"),
            std::string::npos);
  EXPECT_NE(post(ok + "&concurrency=0").find("concurrency=0 must be 1 to 256"), std::string::npos);
  EXPECT_NE(post(ok + "&bandwidth=-1").find("non-negative integer"), std::string::npos);
  EXPECT_NE(post(ok + "&color=red").find("unknown query parameter 'color'"), std::string::npos);
  auto outside = post("id=j1&path=/elsewhere&members=" + self + "&self=" + self);
  EXPECT_NE(outside.substr(0, 3), "200") << outside;
  EXPECT_NE(outside.find("/elsewhere"), std::string::npos) << outside;
  EXPECT_NE(post("id=j1&path=/data/ds&members=w-x,w-y&self=w-x").find("not 'w-x'"), std::string::npos);
  EXPECT_NE(post("id=j1&path=/data/ds&members=" + self + "," + self + "&self=" + self).find("appears twice"),
            std::string::npos);
  EXPECT_NE(post(ok + "&version=abc").find("come together"), std::string::npos);
  EXPECT_NE(post(ok + "&version=abc&size=99999999999999999999").find("non-negative integer"), std::string::npos);
  EXPECT_NE(post("id=j1&path=/data/ds&members=" + std::string(200, 'a') + "&self=x").find("is not a worker id"),
            std::string::npos);
  EXPECT_NE(post(ok + "&weights=1,2").find("2 given for 1 members"), std::string::npos);
  EXPECT_NE(post(ok + "&weights=big").find("weights=big must be a non-negative integer"), std::string::npos);
  EXPECT_EQ(post(ok + "&id=j2&weights=1073741824").substr(0, 3), "200");
  EXPECT_NE(post(ok + "&addresses=127.0.0.1:1,127.0.0.1:2").find("2 given for 1 members"), std::string::npos);
  EXPECT_NE(post(ok + "&addresses=nowhere").find("'nowhere' is not host:port"), std::string::npos);
  EXPECT_NE(post(ok + "&addresses=a%20b:1").find("is not host:port"), std::string::npos);
  auto good = post(ok);
  EXPECT_EQ(good.substr(0, 3), "200") << good;
}

}  // namespace
}  // namespace shoal::testing
