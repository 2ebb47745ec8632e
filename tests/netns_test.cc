// Several hosts on one machine (issue 14): three worker hosts, each in a
// network namespace of its own on a bridge (tests/harness/netns.h), and this
// test's own namespace as the fourth host, with the object store (s3rver
// behind a counting proxy, bench/wan_proxy.h), etcd and the reader. One worker
// host's link is cut during reads, as a pulled cable would: no read fails, the
// ring drops the host within its lease, the store sends little; the link
// comes back: the host rejoins and serves its shards from the cache it kept.
//
// Needs root (CI runs as root); skips otherwise, or without `ip netns`.
// Waits poll a condition against a deadline; none sleeps to synchronise.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "bench/wan_proxy.h"
#include "tests/etcd_workers.h"
#include "tests/harness/netns.h"
#include "tests/harness/s3rver.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kHosts = 3;
constexpr int kFiles = 24;
constexpr int kCut = 2;  // the worker host whose link is cut
constexpr auto kLease = 5s;

// Reads every file in turn, again and again, on its own thread, and counts
// reads and failures (an error, or bytes that differ from the store's).
class Reader {
 public:
  Reader(Client* client, const std::map<std::string, std::string>* files) : client_(client), files_(files) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Reader() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t reads() const { return reads_.load(); }
  uint64_t failures() const { return failures_.load(); }
  std::string first_error() {
    std::lock_guard lock(mu_);
    return first_error_;
  }

 private:
  void Run() {
    while (!stop_) {
      for (const auto& [path, data] : *files_) {
        if (stop_) return;
        auto got = ReadWholeFile(*client_, path);
        if (!got || *got != data) {
          ++failures_;
          std::lock_guard lock(mu_);
          if (first_error_.empty()) first_error_ = path + ": " + (got ? "wrong bytes" : got.error().ToString());
        }
        ++reads_;
      }
    }
  }

  Client* client_;
  const std::map<std::string, std::string>* files_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> reads_{0}, failures_{0};
  std::mutex mu_;
  std::string first_error_;
  std::thread thread_;
};

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hosts = VirtualHosts::Create(kHosts);
    if (!hosts && hosts.error().code() == Code::kUnavailable) GTEST_SKIP() << hosts.error().message();
    ASSERT_TRUE(hosts) << hosts.error().ToString();
    hosts_ = std::move(*hosts);
    root_ = MakeTempDir("netns");
    ASSERT_FALSE(root_.empty());

    // The store: s3rver on this host's loopback, reached by every host through
    // a proxy on the bridge that counts what the store sends.
    auto s3 = S3rverProcess::Start();
    ASSERT_TRUE(s3) << s3.error().ToString();
    s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
    ASSERT_TRUE(s3_->CreateBucket("netns").ok());
    bench::WanProxyOptions po;
    po.upstream_port = static_cast<uint16_t>(s3_->port());
    po.listen_host = hosts_->bridge_address();
    po.first_byte_delay = 0us;
    po.conn_bytes_per_sec = 0;
    po.total_bytes_per_sec = 0;
    auto proxy = bench::WanProxy::Start(po);
    ASSERT_TRUE(proxy) << proxy.error().ToString();
    proxy_ = std::move(*proxy);

    auto etcd = EtcdProcess::Start(hosts_->bridge_address());
    if (!etcd && etcd.error().code() == Code::kNotFound) GTEST_SKIP() << etcd.error().message();
    ASSERT_TRUE(etcd) << etcd.error().ToString();
    etcd_ = std::move(*etcd);

    MountConfig m;
    m.path = "/data";
    m.ufs = "s3://netns/set/";
    m.consistency = Consistency::kImmutable;
    m.options = s3_->MountOptions();
    MountConfig direct = m;  // the test writes the dataset past the proxy
    m.options["endpoint"] = "http://" + hosts_->bridge_address() + ":" + std::to_string(proxy_->port());
    auto store = OpenUnderStore(direct);
    ASSERT_TRUE(store) << store.error().ToString();
    for (int i = 0; i < kFiles; ++i) {
      const std::string key = "f" + std::to_string(i);
      files_["/data/" + key] = RandomBytes(200 * 1024 + static_cast<size_t>(i) * 4096, 1400 + i);
      ASSERT_TRUE((*store)->Write(key, files_["/data/" + key]).ok());
      dataset_bytes_ += files_["/data/" + key].size();
    }

    config_.mounts = {m};
    config_.worker.page_size = 64 * 1024;
    config_.cluster.shard_size = 128 * 1024;
    config_.worker.ufs_threads = 4;
    // Short-circuit reads would cross namespaces over UNIX sockets: every byte goes over the bridge.
    config_.worker.local_socket = "off";
    config_.client.short_circuit = false;
    config_.client.down_backoff = 1s;
    config_.cluster.etcd.endpoints = {etcd_->endpoint()};
    config_.cluster.etcd.prefix = "/shoal/netns";
    config_.cluster.etcd.lease_ttl = kLease;
    config_.cluster.etcd.timeout = 2s;
    config_.cluster.secret = "netns-test-secret-0123456789";
    PathRule rule = EmptyRule("/data");
    rule.replicas = 2;
    config_.rules = {rule};
    ASSERT_TRUE(WriteFile(root_ + "/worker.yaml", ToYaml(config_)).ok());
    for (int i = 0; i < kHosts && !HasFatalFailure(); ++i) StartWorker(i);
  }

  void TearDown() override {
    for (auto& w : workers_) w.Stop(10s);  // before their namespaces go
    workers_.clear();
    etcd_.reset();
    proxy_.reset();
    s3_.reset();
    hosts_.reset();
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }

  void StartWorker(int i) {
    const std::string cache = root_ + "/cache" + std::to_string(i);
    Subprocess::Options o;
    o.argv = hosts_->Exec(i, {ShoalBinary(), "worker", "--config", root_ + "/worker.yaml", "--listen",
                              hosts_->host_address(i) + ":0", "--cache-dir", cache, "--cache-size", "64MiB"});
    o.stderr_file = cache + ".log";
    auto p = Subprocess::Start(o);
    ASSERT_TRUE(p) << p.error().ToString();
    auto line = p->WaitForLine("listening:", 60s);
    ASSERT_TRUE(line) << line.error().ToString() << Slurp(o.stderr_file);
    auto entry = ParseListeningLine(*line);
    ASSERT_TRUE(entry);
    workers_.push_back(std::move(*p));
    entries_.push_back(*entry);
  }

  double Metric(int i, const std::string& name) {
    auto v = WorkerMetricSum({entries_[static_cast<size_t>(i)].address}, name);
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  }
  uint64_t Egress() const { return proxy_->stats().bytes_from_upstream; }

  std::unique_ptr<VirtualHosts> hosts_;
  std::string root_;
  std::unique_ptr<S3rverProcess> s3_;
  std::unique_ptr<bench::WanProxy> proxy_;
  std::unique_ptr<EtcdProcess> etcd_;
  Config config_;
  std::map<std::string, std::string> files_;  // namespace path -> bytes
  uint64_t dataset_bytes_ = 0;
  std::vector<Subprocess> workers_;
  std::vector<WorkerEntry> entries_;
};

TEST_F(NetnsTest, ACutLinkFailsNoReadAndTheHostRejoinsWarm) {
  auto client = Client::FromYaml(ToYaml(config_), "netns");
  ASSERT_TRUE(client) << client.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return (*client)->Ring().members.size() == static_cast<size_t>(kHosts); }, 30s));

  // A first epoch warms the cache: each shard on two hosts (`replicas: 2`).
  for (const auto& [path, data] : files_) {
    auto got = ReadWholeFile(**client, path);
    ASSERT_TRUE(got) << path << ": " << got.error().ToString();
    ASSERT_TRUE(*got == data) << path;
  }
  std::vector<std::string> addresses;
  for (const auto& e : entries_) addresses.push_back(e.address);
  ASSERT_TRUE(WaitFor(
      [&] { return WorkerMetricSum(addresses, "shoal_replica_push_bytes_total").value_or(0) >= dataset_bytes_; }, 60s))
      << "replicas pushed: " << WorkerMetricSum(addresses, "shoal_replica_push_bytes_total").value_or(-1) << " of "
      << dataset_bytes_ << " bytes";
  const uint64_t cold_egress = Egress();
  EXPECT_GE(cold_egress, dataset_bytes_);

  Reader reader(client->get(), &files_);
  ASSERT_TRUE(WaitFor([&] { return reader.reads() >= kFiles; }, 60s)) << "the reader made no progress";

  // The cable is pulled.
  const double hits_before = Metric(kCut, "shoal_cache_hit_bytes_total");
  const double misses_before = Metric(kCut, "shoal_cache_miss_bytes_total");
  const uint64_t egress_at_cut = Egress();
  const uint64_t reads_at_cut = reader.reads();
  const auto cut = Clock::now();
  ASSERT_TRUE(hosts_->SetLink(kCut, false).ok());
  ASSERT_TRUE(WaitFor([&] { return (*client)->Ring().members.size() == static_cast<size_t>(kHosts - 1); }, kLease + 60s))
      << "the ring kept the cut host";
  const auto dropped_after = Clock::now() - cut;
  // Its lease was renewed at most a third of a TTL before the cut; the margin is for a loaded machine.
  EXPECT_LE(dropped_after, kLease + 20s);
  for (const auto& m : (*client)->Ring().members) EXPECT_NE(m.id, entries_[kCut].id);
  const uint64_t reads_at_drop = reader.reads();
  ASSERT_TRUE(WaitFor([&] { return reader.reads() >= reads_at_drop + kFiles; }, 60s))
      << "no full pass over the dataset after the ring dropped the host";
  const uint64_t outage_egress = Egress() - egress_at_cut;
  const uint64_t outage_reads = reader.reads();
  EXPECT_EQ(reader.failures(), 0u) << reader.first_error();

  // The cable is back: the host re-registers, and what it cached is served again.
  const uint64_t egress_at_restore = Egress();
  const auto restore = Clock::now();
  ASSERT_TRUE(hosts_->SetLink(kCut, true).ok());
  ASSERT_TRUE(WaitFor([&] { return (*client)->Ring().members.size() == static_cast<size_t>(kHosts); }, kLease + 60s))
      << "the host did not rejoin the ring";
  const auto rejoined_after = Clock::now() - restore;
  auto hits = [&] { return WorkerMetricSum({entries_[kCut].address}, "shoal_cache_hit_bytes_total").value_or(0); };
  ASSERT_TRUE(WaitFor([&] { return hits() > hits_before; }, 60s))
      << "the rejoined host served nothing from its cache";
  const uint64_t reads_at_warm = reader.reads();
  ASSERT_TRUE(WaitFor([&] { return reader.reads() >= reads_at_warm + kFiles; }, 60s));
  reader.Stop();
  const uint64_t rejoin_egress = Egress() - egress_at_restore;
  const double rejoin_misses = Metric(kCut, "shoal_cache_miss_bytes_total") - misses_before;

  EXPECT_EQ(reader.failures(), 0u) << reader.first_error();
  EXPECT_GT(outage_reads, reads_at_drop);
  // What the lost host held was on its replicas: the outage costs the store a
  // small part of the dataset (metadata, stragglers), never the host's share.
  EXPECT_LT(outage_egress, dataset_bytes_ / kHosts / 2) << outage_egress << " bytes from the store during the outage";
  // The rejoined host's cache survived: its shards are not fetched again.
  EXPECT_LT(rejoin_egress, dataset_bytes_ / 20) << rejoin_egress << " bytes from the store after the rejoin";
  EXPECT_LT(rejoin_misses, static_cast<double>(dataset_bytes_) / 20) << "bytes the rejoined host had to fetch again";
  std::printf("netns: dataset %llu bytes, cold egress %llu; ring dropped the cut host after %.1f s (lease %lld s); "
              "outage egress %llu bytes over %llu reads; rejoined after %.1f s, rejoin egress %llu, misses %.0f\n",
              static_cast<unsigned long long>(dataset_bytes_), static_cast<unsigned long long>(cold_egress),
              std::chrono::duration<double>(dropped_after).count(), static_cast<long long>(kLease.count()),
              static_cast<unsigned long long>(outage_egress),
              static_cast<unsigned long long>(outage_reads - reads_at_cut),
              std::chrono::duration<double>(rejoined_after).count(), static_cast<unsigned long long>(rejoin_egress),
              rejoin_misses);
}

}  // namespace
}  // namespace shoal::testing
