// End-to-end tests of the read-through cache: real `shoal worker` processes on
// loopback, the native client, a file:// under-store with random data.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "cluster/hash_ring.h"
#include "common/end_user.h"
#include "tests/harness/raw_http.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kTestPage = 256 * 1024;  // ShoalCluster's default page size

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ufs_ = MakeTempDir("ufs");
    ASSERT_FALSE(ufs_.empty());
  }
  void TearDown() override {
    cluster_.reset();
    std::error_code ec;
    fs::remove_all(ufs_, ec);
  }

  // Writes `n` bytes of random data to the UFS and remembers them.
  const std::string& AddFile(const std::string& rel, size_t n, uint64_t seed) {
    auto& data = files_[rel] = RandomBytes(n, seed);
    EXPECT_TRUE(WriteFile(ufs_ + "/" + rel, data).ok());
    return data;
  }

  void StartCluster(int workers, ClientConfig client = {}, uint64_t capacity = 256ull << 20) {
    ShoalCluster::Options o;
    o.workers = workers;
    o.mounts = {FileMount(ufs_)};
    o.client = client;
    o.cache_capacity = capacity;
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    auto cl = cluster_->NewClient();
    ASSERT_TRUE(cl) << cl.error().ToString();
    client_ = std::move(*cl);
  }

  std::string ReadAll(const std::string& path) {
    auto f = client_->OpenFile(path);
    EXPECT_TRUE(f) << f.error().ToString();
    if (!f) return {};
    std::string out((*f)->status().size, '\0');
    auto n = (*f)->Pread(0, std::span<char>(out.data(), out.size()));
    EXPECT_TRUE(n) << n.error().ToString();
    return out;
  }

  double Metric(const std::string& name) {
    auto v = cluster_->MetricSum(name);
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  }

  // The page a stat reads is written to disk after the reader is answered, at
  // idle priority, so on a busy machine it may not be there yet when the read
  // returns: checks of the cache's contents wait (up to 30 s) for `done`.
  template <typename F>
  static bool CacheFilled(F done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  uint64_t CacheUsed() {
    uint64_t used = 0;
    for (const auto& w : client_->ClusterStatus()) used += w.cache_used_bytes;
    return used;
  }

  std::string ufs_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClusterTest, RandomReadsMatchTheSource) {
  // Shards are 4 MiB and pages 256 KiB in the test cluster: the big file spans
  // several shards (so several workers), the small ones stay whole on one.
  AddFile("big.bin", 19 * 1024 * 1024 + 12345, 1);
  for (int i = 0; i < 20; ++i) AddFile("small/f" + std::to_string(i), 1000 + i * 7919, 100 + i);
  AddFile("empty", 0, 0);
  StartCluster(3);

  std::vector<std::jthread> readers;
  std::atomic<int> mismatches{0}, errors{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 7);
      std::vector<std::string> names;
      for (auto& [k, v] : files_) names.push_back(k);
      for (int i = 0; i < 60; ++i) {
        const auto& name = names[rng() % names.size()];
        const auto& src = files_[name];
        auto f = client_->OpenFile("/data/" + name);
        if (!f) {
          errors++;
          continue;
        }
        uint64_t off = src.empty() ? 0 : rng() % (src.size() + 100);
        size_t len = 1 + rng() % (i % 5 == 0 ? 9'000'000 : 300'000);
        std::string buf(len, '\0');
        auto n = (*f)->Pread(off, std::span<char>(buf.data(), buf.size()));
        if (!n) {
          errors++;
          continue;
        }
        std::string want = off >= src.size() ? "" : src.substr(off, len);
        if (buf.substr(0, *n) != want) mismatches++;
      }
    });
  }
  readers.clear();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(client_->stats().fallback_read_bytes, 0u);
  // Whole files, sequentially through Read() and its read-ahead.
  for (const auto& [name, data] : files_) {
    auto f = client_->OpenFile("/data/" + name);
    ASSERT_TRUE(f);
    std::string got, buf(100'000, '\0');
    for (;;) {
      auto n = (*f)->Read(std::span<char>(buf.data(), buf.size()));
      ASSERT_TRUE(n) << n.error().ToString();
      if (*n == 0) break;
      got.append(buf.data(), *n);
    }
    EXPECT_TRUE(got == data) << name;
  }
}

TEST_F(ClusterTest, LargeFileSpreadsOverWorkersAndSecondReadIsCached) {
  const auto& data = AddFile("shards.bin", 24 * 1024 * 1024, 2);
  StartCluster(3);
  EXPECT_TRUE(ReadAll("/data/shards.bin") == data);
  // Every page on disk (page 0 is written at idle priority, after the read):
  // counted in pages, since the bytes used include each page's header.
  const double pages = static_cast<double>((data.size() + kTestPage - 1) / kTestPage);
  EXPECT_TRUE(CacheFilled([&] { return Metric("shoal_cache_pages") >= pages; }));
  double ufs1 = Metric("shoal_ufs_read_bytes_total");
  double hit1 = Metric("shoal_cache_hit_bytes_total");
  EXPECT_GE(ufs1, static_cast<double>(data.size()));
  // Six 4 MiB shards over three workers: more than one worker holds pages.
  int holders = 0;
  for (auto& w : client_->ClusterStatus()) holders += w.cache_used_bytes > 0;
  EXPECT_GE(holders, 2);

  EXPECT_TRUE(ReadAll("/data/shards.bin") == data);
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total"), ufs1) << "the second read went to the under-store";
  EXPECT_GE(Metric("shoal_cache_hit_bytes_total") - hit1, static_cast<double>(data.size()));
  EXPECT_GT(Metric("shoal_read_latency_seconds_count"), 0);
  // Every byte served left through one door: the doors add up to hits and misses.
  EXPECT_EQ(Metric("shoal_served_bytes_total"),
            Metric("shoal_cache_hit_bytes_total") + Metric("shoal_cache_miss_bytes_total"));
}

TEST_F(ClusterTest, SameHostClientReadsCachedPagesShortCircuit) {
  const auto& data = AddFile("sc.bin", 9 * 1024 * 1024 + 4321, 12);
  StartCluster(2);
  EXPECT_TRUE(ReadAll("/data/sc.bin") == data);
  // Until page 0 is on disk (written at idle priority) its bytes go over TCP.
  const double sc_pages = static_cast<double>((data.size() + kTestPage - 1) / kTestPage);
  EXPECT_TRUE(CacheFilled([&] { return Metric("shoal_cache_pages") >= sc_pages; }));
  uint64_t local1 = client_->stats().local_read_bytes;
  double ufs1 = Metric("shoal_ufs_read_bytes_total");
  double sc1 = Metric("shoal_short_circuit_bytes_total");

  // Warm: everything past the bytes the open brings comes from page files.
  EXPECT_TRUE(ReadAll("/data/sc.bin") == data);
  uint64_t local = client_->stats().local_read_bytes - local1;
  EXPECT_GE(local, data.size() - 256 * 1024) << "warm bytes went over TCP";
  EXPECT_EQ(Metric("shoal_short_circuit_bytes_total") - sc1, static_cast<double>(local));
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total"), ufs1);
  EXPECT_EQ(client_->stats().fallback_read_bytes, 0u);

  // Random ranges, short-circuit, against the source.
  auto f = client_->OpenFile("/data/sc.bin");
  ASSERT_TRUE(f);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    uint64_t off = rng() % data.size();
    std::string buf(1 + rng() % 3'000'000, '\0');
    auto n = (*f)->Pread(off, std::span<char>(buf.data(), buf.size()));
    ASSERT_TRUE(n) << n.error().ToString();
    ASSERT_TRUE(buf.substr(0, *n) == data.substr(off, buf.size())) << "offset " << off << " length " << buf.size();
  }

  // A small file, warm: the open brings its stat and its bytes short-circuit.
  const auto& small = AddFile("small.bin", 130 * 1024 + 7, 14);
  EXPECT_TRUE(ReadAll("/data/small.bin") == small);
  // Until its one page is on disk a reader is served over TCP.
  const double pages = static_cast<double>((data.size() + kTestPage - 1) / kTestPage + 1);
  EXPECT_TRUE(CacheFilled([&] { return Metric("shoal_cache_pages") >= pages; }));
  uint64_t before = client_->stats().local_read_bytes;
  EXPECT_TRUE(ReadAll("/data/small.bin") == small);
  EXPECT_EQ(client_->stats().local_read_bytes - before, small.size());

  // The same cluster with the short circuit off reads everything over TCP.
  ClientConfig off;
  off.short_circuit = false;
  auto tcp = Client::FromYaml(cluster_->ClientYaml(off));
  ASSERT_TRUE(tcp) << tcp.error().ToString();
  auto g = (*tcp)->OpenFile("/data/sc.bin");
  ASSERT_TRUE(g);
  std::string got(data.size(), '\0');
  ASSERT_TRUE((*g)->Pread(0, std::span<char>(got.data(), got.size())));
  g->reset();
  EXPECT_TRUE(got == data);
  EXPECT_EQ((*tcp)->stats().local_read_bytes, 0u);
  EXPECT_GE((*tcp)->stats().worker_read_bytes, data.size());
}

// Issue 13: a cold small file read by a client on the worker's host. The
// open's stat reads the file's one page from the under-store; the worker
// writes that page and passes it like a cached one, so the whole file costs
// one short-circuit request and one under-store request, and no byte of it
// crosses TCP.
TEST_F(ClusterTest, ColdSmallFileReachesASameHostReaderInOneRequest) {
  const auto& small = AddFile("cold.bin", 130 * 1024 + 11, 16);
  StartCluster(2);
  const std::string opens = "shoal_short_circuit_requests_total{kind=\"open\"}";
  const std::string reads = "shoal_short_circuit_requests_total{kind=\"read\"}";
  const double opens0 = Metric(opens), reads0 = Metric(reads), ufs0 = Metric("shoal_ufs_requests_total");
  EXPECT_TRUE(ReadAll("/data/cold.bin") == small);
  EXPECT_EQ(client_->stats().local_read_bytes, small.size()) << "cold bytes went over TCP";
  EXPECT_EQ(client_->stats().worker_read_bytes, small.size());
  EXPECT_EQ(Metric(opens) - opens0, 1);
  EXPECT_EQ(Metric(reads) - reads0, 0) << "the open did not bring the whole file";
  EXPECT_EQ(Metric("shoal_ufs_requests_total") - ufs0, 1);
  EXPECT_EQ(Metric("shoal_cache_pages"), 1) << "the page was not written before it was passed";
  // The page the stat read (and wrote before answering) counts as a miss.
  EXPECT_EQ(Metric("shoal_cache_miss_bytes_total"), static_cast<double>(small.size()));
  EXPECT_EQ(Metric("shoal_cache_hit_bytes_total"), 0);
  // Warm, from the same page file.
  EXPECT_TRUE(ReadAll("/data/cold.bin") == small);
  EXPECT_EQ(client_->stats().local_read_bytes, 2 * small.size());
  EXPECT_EQ(Metric("shoal_cache_hit_bytes_total"), static_cast<double>(small.size()));
  EXPECT_EQ(Metric("shoal_ufs_requests_total") - ufs0, 1);
}

// Reads by the door the client declared (issue 30 item 4): the per-client
// metrics count them over the short circuit (the door rides in the hello)
// and over HTTP (X-Shoal-Door, with a latency sample), and a label the worker
// does not know counts as "other", never as a series of its own.
TEST_F(ClusterTest, ReadsAreCountedByTheDoorTheClientDeclared) {
  constexpr uint64_t kSize = 300 * 1024;  // one page each
  for (int i = 0; i < 4; ++i) AddFile("d" + std::to_string(i) + ".bin", kSize, 900 + i);
  struct NativeAgain {
    ~NativeAgain() { SetDoorName("native"); }
  } native_again;
  SetDoorName("python");  // as the Python extension does, before its client connects
  StartCluster(2);
  auto bytes = [&](const std::string& client) {
    return Metric("shoal_client_served_bytes_total{client=\"" + client + "\"}");
  };
  // Every door's series is there from the start, at 0.
  for (const char* door : {"native", "cli", "fuse", "s3", "python", "load", "other"}) EXPECT_EQ(bytes(door), 0) << door;

  // Over the short circuit (the default on the workers' host).
  EXPECT_TRUE(ReadAll("/data/d0.bin") == files_["d0.bin"]);
  EXPECT_TRUE(ReadAll("/data/d1.bin") == files_["d1.bin"]);
  EXPECT_GT(Metric("shoal_short_circuit_bytes_total"), 0) << "the reads did not take the short circuit";
  EXPECT_EQ(bytes("python"), 2.0 * kSize);

  // Over HTTP, as a FUSE daemon on another host.
  SetDoorName("fuse");
  ClientConfig tcp;
  tcp.short_circuit = false;
  auto over_tcp = Client::FromYaml(cluster_->ClientYaml(tcp));
  ASSERT_TRUE(over_tcp) << over_tcp.error().ToString();
  auto f = (*over_tcp)->OpenFile("/data/d2.bin");
  ASSERT_TRUE(f) << f.error().ToString();
  std::string got(kSize, '\0');
  auto n = (*f)->Pread(0, std::span<char>(got.data(), got.size()));
  ASSERT_TRUE(n && *n == kSize);
  EXPECT_TRUE(got == files_["d2.bin"]);
  EXPECT_EQ(bytes("fuse"), static_cast<double>(kSize));
  EXPECT_GE(Metric("shoal_client_read_latency_seconds_count{client=\"fuse\"}"), 1);
  EXPECT_EQ(bytes("python"), 2.0 * kSize) << "the HTTP reads went to another door";

  // A made-up label, straight to the file's worker: "other".
  for (size_t w = 0; w < cluster_->workers().size(); ++w) {
    auto conn = RawConnection::Connect(cluster_->workers()[w].address);
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(conn->Send(HttpGet("/v1/open?path=%2Fdata%2Fd3.bin&length=1000", "X-Shoal-Door: <made-up>\r\n")));
    auto r = conn->ReadResponse(Millis(30'000));
    ASSERT_TRUE(r);
    if (r->status == 200) break;  // the owner answered; the other one redirects or refuses
  }
  EXPECT_GE(bytes("other"), 1000.0);
  auto metrics = cluster_->Get(0, "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->find("made-up"), std::string::npos) << "a client's label became a series";
}

// A hit is a byte served that the store did not send for this read: a cold
// epoch is all misses even though the workers fetch whole pages and read
// ahead (the review's case: 30 never-read 1 MiB files showed ~75% hits), a
// warm one all hits, a mixed one its warm share; checked against the store's
// own count of bytes sent, over the short circuit and over TCP, reading each
// file whole and in 128 KiB pieces.
TEST_F(ClusterTest, HitBytesAreTheBytesTheStoreDidNotSendForTheRead) {
  constexpr int kFiles = 30;
  constexpr uint64_t kSize = 1 << 20;
  for (int i = 0; i < 2 * kFiles; ++i) AddFile("h" + std::to_string(i) + ".bin", kSize, 500 + i);
  StartCluster(3);
  ClientConfig tcp;
  tcp.short_circuit = false;
  auto over_tcp = Client::FromYaml(cluster_->ClientYaml(tcp));
  ASSERT_TRUE(over_tcp) << over_tcp.error().ToString();

  struct Epoch {
    double hit, miss, store;
  };
  // Reads files [from, to) with `client`, whole or in pieces; the counters' growth.
  auto epoch = [&](Client& client, int from, int to, bool pieces) {
    const double h0 = Metric("shoal_cache_hit_bytes_total"), m0 = Metric("shoal_cache_miss_bytes_total"),
                 u0 = Metric("shoal_ufs_read_bytes_total");
    for (int i = from; i < to; ++i) {
      const std::string rel = "h" + std::to_string(i) + ".bin";
      auto f = client.OpenFile("/data/" + rel);
      EXPECT_TRUE(f) << f.error().ToString();
      if (!f) continue;
      std::string got(kSize, '\0');
      const uint64_t step = pieces ? 128 * 1024 : kSize;
      for (uint64_t off = 0; off < kSize; off += step) {
        auto n = (*f)->Pread(off, std::span<char>(got.data() + off, step));
        EXPECT_TRUE(n && *n == step) << rel << " at " << off;
      }
      EXPECT_TRUE(got == files_[rel]) << rel;
    }
    return Epoch{Metric("shoal_cache_hit_bytes_total") - h0, Metric("shoal_cache_miss_bytes_total") - m0,
                 Metric("shoal_ufs_read_bytes_total") - u0};
  };
  const double bytes = static_cast<double>(kFiles) * kSize;

  // Cold: files 0-29 over the short circuit in pieces; files 30-59 over TCP whole.
  for (auto [client, from, pieces] : {std::tuple{client_.get(), 0, true}, std::tuple{over_tcp->get(), kFiles, false}}) {
    Epoch cold = epoch(*client, from, from + kFiles, pieces);
    EXPECT_EQ(cold.store, bytes) << "the store sent each byte once";
    EXPECT_LE(cold.hit, 0.05 * bytes) << "cold bytes counted as hits (from " << from << ")";
    EXPECT_GE(cold.miss, 0.95 * bytes) << "from " << from;
  }
  // Warm: both sets again, each by the other client.
  for (auto [client, from, pieces] : {std::tuple{client_.get(), kFiles, false}, std::tuple{over_tcp->get(), 0, true}}) {
    Epoch warm = epoch(*client, from, from + kFiles, pieces);
    EXPECT_EQ(warm.store, 0);
    EXPECT_GE(warm.hit, 0.95 * bytes) << "from " << from;
    EXPECT_LE(warm.miss, 0.05 * bytes) << "from " << from;
  }
  // Mixed: 15 warm files and 15 new ones (rewritten in the store: new versions).
  for (int i = 0; i < kFiles / 2; ++i) AddFile("h" + std::to_string(i) + ".bin", kSize, 900 + i);
  ASSERT_TRUE(client_->Refresh("/data", /*recursive=*/true, /*data=*/false).ok());
  Epoch mixed = epoch(*client_, 0, kFiles, true);
  EXPECT_EQ(mixed.store, bytes / 2);
  EXPECT_NEAR(mixed.hit, bytes / 2, 0.05 * bytes);
  EXPECT_NEAR(mixed.miss, bytes / 2, 0.05 * bytes);
}

// Every metric the README names exists on a fresh worker (at 0), so that
// dashboards and alerts see 0 and not "no data" before the first event.
// Left out: the etcd membership series (etcd clusters only) and the quota
// series (one per quota rule).
TEST_F(ClusterTest, EveryMetricTheReadmeNamesExistsFromTheStart) {
  std::ifstream in(SourceDir() + "/README.md");
  ASSERT_TRUE(in) << "README.md not found under " << SourceDir();
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> names;
  const std::regex metric("`(shoal_[a-z0-9_]+)");
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), metric); it != std::sregex_iterator(); ++it) {
    const std::string n = (*it)[1];
    if (n.starts_with("shoal_membership_etcd_") || n.starts_with("shoal_membership_watch_") ||
        n.starts_with("shoal_cache_quota_") ||
        !n.ends_with("_total") && !n.ends_with("_bytes") && !n.ends_with("_seconds") && !n.ends_with("_inflight") &&
            !n.ends_with("_pages") && !n.ends_with("_connections")) {
      continue;  // not series on every worker, or not a metric (a program's name)
    }
    names.insert(n);
  }
  ASSERT_GT(names.size(), 30u) << "the README's metric names were not found";
  StartCluster(1);
  // The under-store's series appear once the worker has opened it, off the start.
  std::string text;
  EXPECT_TRUE(CacheFilled([&] {
    auto m = cluster_->Get(0, "/metrics");
    text = m ? *m : "";
    return text.find("# TYPE shoal_ufs_requests_total ") != std::string::npos;
  })) << "the mount's store was not opened at start";
  for (const auto& n : names) {
    EXPECT_NE(text.find("# TYPE " + n + " "), std::string::npos) << n << " is named in the README but not served";
  }
}

TEST_F(ClusterTest, ShortCircuitSurvivesAWorkerRestart) {
  const auto& data = AddFile("r.bin", 3 * 1024 * 1024, 13);
  StartCluster(1);
  EXPECT_TRUE(ReadAll("/data/r.bin") == data);
  EXPECT_TRUE(ReadAll("/data/r.bin") == data);
  ASSERT_GT(client_->stats().local_read_bytes, 0u);
  // Same port, new process and token: the pooled socket connections are dead.
  ASSERT_EQ(cluster_->Stop(0), 0);
  ASSERT_TRUE(cluster_->Restart(0).ok());
  EXPECT_TRUE(ReadAll("/data/r.bin") == data);
  EXPECT_EQ(client_->stats().fallback_read_bytes, 0u) << "a dead short circuit must not count as a dead worker";
}

TEST_F(ClusterTest, ConcurrentMissesShareOneFetch) {
  const auto& data = AddFile("hot.bin", 2 * 1024 * 1024, 3);
  StartCluster(1);
  std::vector<std::jthread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&] {
      if (ReadAll("/data/hot.bin") != data) bad++;
    });
  }
  readers.clear();
  EXPECT_EQ(bad.load(), 0);
  // Eight readers of one cold file: its stat and its bytes come from the UFS
  // once, not eight times. How the pages group into requests depends on timing
  // (a fetch stops at a page another reader already claimed), so the request
  // count is bounded by one per page (8 of 256 KiB) plus the stat.
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total"), static_cast<double>(data.size()));
  EXPECT_LE(Metric("shoal_ufs_requests_total"), 1 + 8);
}

TEST_F(ClusterTest, KilledWorkerMidReadFallsBackToUfs) {
  const auto& data = AddFile("k.bin", 24 * 1024 * 1024, 4);
  StartCluster(3);
  auto f = client_->OpenFile("/data/k.bin");
  ASSERT_TRUE(f);
  std::string got(data.size(), '\0');
  size_t half = data.size() / 2;
  ASSERT_TRUE((*f)->Pread(0, std::span<char>(got.data(), half)));
  // Kill the owner of the last shard (so some of the second half must come
  // from the store) and one more worker.
  std::vector<std::string> ids;
  for (const auto& w : cluster_->workers()) ids.push_back(w.id);
  const HashRing ring(ids);
  const uint64_t last_shard = (data.size() - 1) / ShoalCluster::Options{}.shard_size;
  const size_t owner = ring.Owner(HashRing::DataKey("/data/k.bin", (*f)->status().version, last_shard));
  cluster_->Kill(owner);
  cluster_->Kill((owner + 1) % 3);
  auto n = (*f)->Pread(half, std::span<char>(got.data() + half, data.size() - half));
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_TRUE(got == data);
  EXPECT_GT(client_->stats().fallback_read_bytes, 0u);
  // Stat and list keep working with the metadata owner gone, too.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(client_->Stat("/data/k.bin"));
  EXPECT_TRUE(client_->List("/data"));
}

TEST_F(ClusterTest, DeadWorkerWithoutFallbackFailsFastNotHangs) {
  AddFile("d.bin", 1024 * 1024, 5);
  ClientConfig cc;
  cc.ufs_fallback = false;
  cc.timeout = std::chrono::seconds(3);
  StartCluster(1, cc);
  auto f = client_->OpenFile("/data/d.bin");
  ASSERT_TRUE(f);
  cluster_->Kill(0);
  auto start = std::chrono::steady_clock::now();
  char buf[100];
  auto n = (*f)->Pread(600'000, buf);  // past the bytes the open already brought
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code(), Code::kUnavailable) << n.error().ToString();
  EXPECT_NE(n.error().message().find("ufs_fallback"), std::string::npos) << n.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(ClusterTest, RestartedWorkerIsWarm) {
  const auto& data = AddFile("w.bin", 6 * 1024 * 1024, 6);
  StartCluster(1);
  EXPECT_TRUE(ReadAll("/data/w.bin") == data);
  ASSERT_EQ(cluster_->Stop(0), 0) << "the worker did not exit cleanly on SIGTERM";
  auto st = cluster_->Restart(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto c = cluster_->NewClient();
  ASSERT_TRUE(c);
  client_ = std::move(*c);
  EXPECT_TRUE(ReadAll("/data/w.bin") == data);
  // A new process: its counters start at zero, so any UFS byte would show.
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total"), 0);
  EXPECT_GE(Metric("shoal_cache_hit_bytes_total"), static_cast<double>(data.size()));
}

TEST_F(ClusterTest, CorruptPageOnDiskIsRefetchedNotServed) {
  const auto& data = AddFile("c.bin", 1024 * 1024, 7);
  StartCluster(1);
  EXPECT_TRUE(ReadAll("/data/c.bin") == data);
  ASSERT_EQ(cluster_->Stop(0), 0);
  // Flip a byte in the data of every page file.
  int flipped = 0;
  for (auto& e : fs::recursive_directory_iterator(cluster_->cache_dir(0))) {
    if (e.path().extension() != ".pg") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char c = static_cast<char>(f.get() ^ 0x55);
    f.seekp(-1, std::ios::end);
    f.put(c);
    ++flipped;
  }
  ASSERT_GT(flipped, 0);
  ASSERT_TRUE(cluster_->Restart(0).ok());
  client_ = std::move(*cluster_->NewClient());
  EXPECT_TRUE(ReadAll("/data/c.bin") == data);
  EXPECT_EQ(Metric("shoal_cache_corrupt_pages_total"), flipped);
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total"), static_cast<double>(data.size()));
}

TEST_F(ClusterTest, EvictionKeepsCacheWithinCapacity) {
  for (int i = 0; i < 6; ++i) AddFile("e/" + std::to_string(i), 1024 * 1024, 10 + i);
  StartCluster(1, {}, 3ull << 20);  // room for about three files
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(ReadAll("/data/e/" + std::to_string(i)) == files_["e/" + std::to_string(i)]);
  }
  EXPECT_TRUE(CacheFilled([&] { return Metric("shoal_cache_evicted_bytes_total") > 0; }));
  auto w = client_->ClusterStatus().at(0);
  EXPECT_LE(w.cache_used_bytes, w.cache_capacity_bytes);
}

TEST_F(ClusterTest, FullCacheDiskServesFromUfs) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  const auto& data = AddFile("full.bin", 8 * 1024 * 1024, 8);
  std::string root = MakeTempDir("fulldisk");
  // A 2 MiB disk under a cache configured for 256 MiB: writes hit ENOSPC.
  if (::mount("tmpfs", root.c_str(), "tmpfs", 0, "size=2m") != 0) GTEST_SKIP() << "cannot mount tmpfs here";
  {
    ShoalCluster::Options o;
    o.workers = 1;
    o.mounts = {FileMount(ufs_)};
    o.cache_root = root;
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    auto cl = (*c)->NewClient();
    ASSERT_TRUE(cl);
    client_ = std::move(*cl);
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(ReadAll("/data/full.bin") == data);
    EXPECT_EQ(client_->stats().fallback_read_bytes, 0u) << "the worker itself must serve, not the fallback";
    EXPECT_TRUE((*c)->running(0));
    // The full disk is not silent: the capacity the worker exports is what the disk holds.
    auto effective = (*c)->MetricSum("shoal_cache_effective_capacity_bytes");
    ASSERT_TRUE(effective) << effective.error().ToString();
    EXPECT_GT(*effective, 0);
    EXPECT_LE(*effective, 2.0 * 1024 * 1024);
    EXPECT_EQ((*c)->MetricSum("shoal_cache_capacity_bytes").value_or(0), 256.0 * 1024 * 1024);
    auto st = client_->ClusterStatus().at(0);
    EXPECT_LE(st.cache_effective_capacity_bytes, 2u << 20) << "shoal status shows what the disk holds";
    EXPECT_EQ(st.cache_capacity_bytes, 256u << 20);
    std::ifstream log(root + "/worker-0.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("capacity lowered"), std::string::npos) << text;
  }
  ::umount2(root.c_str(), MNT_DETACH);
  fs::remove_all(root);
}

TEST_F(ClusterTest, ErrorsAreClear) {
  AddFile("x", 10, 9);
  StartCluster(1);
  auto nf = client_->Stat("/data/nope");
  ASSERT_FALSE(nf);
  EXPECT_EQ(nf.error().code(), Code::kNotFound);
  EXPECT_NE(nf.error().message().find("/data/nope"), std::string::npos);
  // The second answer comes from the negative cache, and reads the same.
  auto again = client_->OpenFile("/data/nope");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().ToString(), nf.error().ToString());
  auto out = client_->Stat("/elsewhere/x");
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message().find("outside every mount"), std::string::npos);
  auto dir = client_->OpenFile("/data");
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().message().find("directory"), std::string::npos);
  auto list = client_->List("/data");
  ASSERT_TRUE(list) << list.error().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->at(0).path, "/data/x");
  EXPECT_EQ(list->at(0).size, 10u);
  // A physical URI reads the same bytes.
  auto f = client_->OpenFile("file://" + ufs_ + "/x");
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ((*f)->status().path, "/data/x");
}

}  // namespace
}  // namespace shoal::testing
