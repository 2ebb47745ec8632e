// Membership from etcd (issue 14): a real etcd started by the harness, real
// `shoal worker` processes registering in it, and clients watching it.
// Every wait polls a condition against a deadline; none sleeps to synchronise.
#include <signal.h>

#include <gtest/gtest.h>
#include <algorithm>
#include <cctype>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cluster/etcd_membership.h"
#include "common/config.h"
#include "common/metrics.h"
#include "common/subprocess.h"
#include "shoal/client.h"
#include "tests/cli_helpers.h"
#include "tests/harness/etcd.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Polls `done` every 20 ms until it holds or `timeout` passes.
template <class F>
bool WaitFor(F done, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);  // poll interval
  }
  return done();
}

struct Worker {
  Subprocess proc;
  WorkerEntry entry;
};

class MembershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = EtcdProcess::Start();
    if (!e && e.error().code() == Code::kNotFound) GTEST_SKIP() << e.error().message();
    ASSERT_TRUE(e) << e.error().ToString();
    etcd_ = std::move(*e);
    root_ = MakeTempDir("membership");
    ASSERT_FALSE(root_.empty());
    std::filesystem::create_directories(root_ + "/ufs");
    for (int i = 0; i < kFiles; ++i) {
      ASSERT_TRUE(WriteFile(root_ + "/ufs/f" + std::to_string(i), Content(i)).ok());
    }
  }

  void TearDown() override {
    for (auto& w : workers_) w.proc.Stop(10s);
    workers_.clear();
    etcd_.reset();
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }

  static constexpr int kFiles = 40;
  static std::string Content(int i) {
    return RandomBytes(20'000 + static_cast<size_t>(i) * 97, static_cast<uint64_t>(i));
  }

  Config MakeConfig(std::chrono::milliseconds ttl) const {
    Config c;
    c.mounts = {FileMount(root_ + "/ufs")};
    c.worker.page_size = 64 * 1024;
    c.cluster.shard_size = 1 << 20;
    c.worker.ufs_threads = 4;
    c.cluster.etcd.endpoints = {etcd_->endpoint()};
    c.cluster.etcd.prefix = "/shoal/test";
    c.cluster.etcd.lease_ttl = ttl;
    c.cluster.etcd.timeout = 2s;
    return c;
  }

  // Starts a `shoal worker` registering in etcd; cache dir `cache` (its id lives there).
  size_t StartWorker(const Config& c, const std::string& cache) {
    std::string config = root_ + "/worker.yaml";
    EXPECT_TRUE(WriteFile(config, ToYaml(c)).ok());
    Subprocess::Options o;
    o.argv = {ShoalBinary(), "worker",      "--config",          config,         "--listen",
              "127.0.0.1:0", "--cache-dir", root_ + "/" + cache, "--cache-size", "64MiB"};
    o.stderr_file = root_ + "/" + cache + ".log";
    auto p = Subprocess::Start(o);
    EXPECT_TRUE(p) << p.error().ToString();
    auto line = p->WaitForLine("listening:", 60s);
    EXPECT_TRUE(line) << line.error().ToString() << Slurp(o.stderr_file);
    auto entry = ParseListeningLine(line.value_or(""));
    EXPECT_TRUE(entry);
    workers_.push_back({std::move(*p), entry.value_or(WorkerEntry{})});
    return workers_.size() - 1;
  }

  std::unique_ptr<Client> NewClient(const Config& c) {
    auto client = Client::FromYaml(ToYaml(c), "test");
    EXPECT_TRUE(client) << client.error().ToString();
    return client ? std::move(*client) : nullptr;
  }

  // Workers 0 and 1 (cache dirs c0, c1) and a client that sees both.
  std::unique_ptr<Client> StartTwoWorkersAndAClient(const Config& c) {
    StartWorker(c, "c0");
    StartWorker(c, "c1");
    auto client = NewClient(c);
    if (client && !WaitFor([&] { return client->Ring().members.size() == 2; }, 10s)) {
      ADD_FAILURE() << "the client did not see both workers in etcd";
    }
    return client;
  }

  static bool HasMember(const RingInfo& r, const WorkerEntry& w) {
    for (const auto& m : r.members) {
      if (m.id == w.id && m.address == w.address) return true;
    }
    return false;
  }

  std::unique_ptr<EtcdProcess> etcd_;
  std::string root_;
  std::vector<Worker> workers_;
};

TEST_F(MembershipTest, JoinAndCleanLeaveReachEveryClientWithOneVersion) {
  // A long lease: a leave seen well before it could expire was the worker's own delete.
  Config c = MakeConfig(30s);
  StartWorker(c, "c0");
  StartWorker(c, "c1");
  auto a = NewClient(c);
  auto b = NewClient(c);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(WaitFor([&] { return a->Ring().members.size() == 2 && b->Ring().members.size() == 2; }, 10s));
  EXPECT_EQ(a->Ring().membership, "etcd");
  const uint64_t v2 = a->Ring().version;
  EXPECT_EQ(b->Ring().version, v2);
  for (const auto& m : a->Ring().members) EXPECT_EQ(m.weight, 64ull << 20) << m.id;  // its cache capacity

  // Join: routed to within the lease TTL plus a watch round trip.
  auto t0 = Clock::now();
  size_t joined = StartWorker(c, "c2");
  ASSERT_TRUE(WaitFor(
      [&] { return HasMember(a->Ring(), workers_[joined].entry) && HasMember(b->Ring(), workers_[joined].entry); },
      c.cluster.etcd.lease_ttl + 5s));
  std::printf("join seen by both clients %lld ms after the worker was started\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
  ASSERT_TRUE(WaitFor([&] { return a->Ring().version == b->Ring().version; }, 5s));
  const uint64_t v3 = a->Ring().version;
  EXPECT_GT(v3, v2);
  auto late = NewClient(c);  // a client started after the change reads the same ring
  ASSERT_TRUE(late);
  EXPECT_EQ(late->Ring().version, v3);
  EXPECT_EQ(late->Ring().members.size(), 3u);
  double total = 0;
  for (const auto& m : late->Ring().members) total += m.share;
  EXPECT_NEAR(total, 1.0, 1e-9);

  // Clean leave: SIGTERM deletes the key; seen long before the 30 s lease could expire.
  t0 = Clock::now();
  workers_[joined].proc.Stop(10s);
  ASSERT_TRUE(WaitFor([&] { return a->Ring().members.size() == 2 && b->Ring().members.size() == 2; }, 15s));
  EXPECT_LT(Clock::now() - t0, c.cluster.etcd.lease_ttl);
  ASSERT_TRUE(WaitFor([&] { return a->Ring().version == b->Ring().version; }, 5s));
  EXPECT_GT(a->Ring().version, v3);
  EXPECT_FALSE(HasMember(a->Ring(), workers_[joined].entry));
}

TEST_F(MembershipTest, KilledWorkerLeavesWhenItsLeaseExpires) {
  Config c = MakeConfig(2s);
  auto client = StartTwoWorkersAndAClient(c);
  ASSERT_TRUE(client);
  const size_t victim = 1;
  auto t0 = Clock::now();
  workers_[victim].proc.Signal(SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return client->Ring().members.size() == 1; }, c.cluster.etcd.lease_ttl + 8s))
      << "a kill -9'd worker is still on the ring after its lease";
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  std::printf("kill -9'd worker left the ring after %lld ms (lease ttl 2 s)\n", static_cast<long long>(took.count()));
  // It left by expiry, not sooner: nothing deleted its key.
  EXPECT_GE(took, 1s);
  EXPECT_TRUE(HasMember(client->Ring(), workers_[0].entry));
  // Reads still work: its keys went to the survivor.
  for (int i = 0; i < kFiles; ++i) {
    auto f = client->OpenFile("/data/f" + std::to_string(i));
    ASSERT_TRUE(f) << f.error().ToString();
  }
}

TEST_F(MembershipTest, WorkerRestartingUnderTheSameIdentityStaysOnTheRing) {
  Config c = MakeConfig(2s);
  size_t w = StartWorker(c, "c0");
  auto client = NewClient(c);
  ASSERT_TRUE(client);
  ASSERT_TRUE(WaitFor([&] { return HasMember(client->Ring(), workers_[w].entry); }, 10s));
  const std::string id = workers_[w].entry.id;
  workers_[w].proc.Signal(SIGKILL);
  workers_[w].proc.Wait(10s);
  // Back at once, before its old lease expires: same cache dir, so the same id; a new port.
  size_t again = StartWorker(c, "c0");
  ASSERT_EQ(workers_[again].entry.id, id);
  ASSERT_TRUE(WaitFor([&] { return HasMember(client->Ring(), workers_[again].entry); }, 10s));
  // The old lease expiring must not take the new registration with it.
  auto until = Clock::now() + 2 * c.cluster.etcd.lease_ttl + 1s;
  while (Clock::now() < until) {
    ASSERT_TRUE(HasMember(client->Ring(), workers_[again].entry)) << "the restarted worker fell off the ring";
    std::this_thread::sleep_for(50ms);  // poll interval over a fixed observation window
  }
  EXPECT_EQ(client->Ring().members.size(), 1u);
  auto f = client->OpenFile("/data/f1");
  ASSERT_TRUE(f) << f.error().ToString();
}

TEST_F(MembershipTest, ReadsKeepWorkingAcrossAJoinAndALeave) {
  Config c = MakeConfig(10s);
  auto client = StartTwoWorkersAndAClient(c);
  ASSERT_TRUE(client);
  const size_t leaver = 1;

  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, failed{0};
  std::string first_failure;
  std::thread reader([&] {
    for (int i = 0; !stop; i = (i + 1) % kFiles) {
      auto f = client->OpenFile("/data/f" + std::to_string(i));
      std::string want = Content(i);
      std::string got(want.size(), '\0');
      Result<size_t> n = f ? (*f)->Pread(0, std::span<char>(got)) : Result<size_t>(Err(f.error()));
      if (!n || *n != want.size() || got != want) {
        if (failed++ == 0) first_failure = n ? "wrong bytes of f" + std::to_string(i) : n.error().ToString();
      }
      ++reads;
    }
  });
  auto reads_at = [&](int n) { return WaitFor([&] { return reads.load() >= n; }, 60s); };
  ASSERT_TRUE(reads_at(100));
  const uint64_t before = client->Ring().version;
  size_t joined = StartWorker(c, "c2");
  ASSERT_TRUE(WaitFor([&] { return client->Ring().members.size() == 3; }, c.cluster.etcd.lease_ttl + 5s));
  ASSERT_TRUE(reads_at(reads.load() + 200));
  workers_[leaver].proc.Stop(10s);
  ASSERT_TRUE(WaitFor([&] { return client->Ring().members.size() == 2; }, c.cluster.etcd.lease_ttl + 5s));
  ASSERT_TRUE(reads_at(reads.load() + 200));
  stop = true;
  reader.join();
  EXPECT_EQ(failed.load(), 0) << first_failure;
  EXPECT_GT(client->Ring().version, before);
  // The joiner took its share: it was asked for data.
  auto hits = WorkerMetricSum({workers_[joined].entry.address}, "shoal_cache_hit_bytes_total");
  auto misses = WorkerMetricSum({workers_[joined].entry.address}, "shoal_cache_miss_bytes_total");
  ASSERT_TRUE(hits && misses);
  EXPECT_GT(*hits + *misses, 0) << "no read was routed to the worker that joined";
  std::printf("%d reads across a join and a leave, %d failed\n", reads.load(), failed.load());
}

// Anyone who may write the prefix can put any value there. A member record
// whose fields were not strings ({"address": 7001}) threw out of every
// watcher's thread and killed the workers and the clients watching; it is now
// ignored with a warning, and the ring goes on.
TEST_F(MembershipTest, AMemberRecordOfTheWrongShapeIsIgnoredByEveryWatcher) {
  Config c = MakeConfig(10s);
  auto client = StartTwoWorkersAndAClient(c);
  ASSERT_TRUE(client);
  EtcdClient etcd(c.cluster.etcd);
  const std::string members = EtcdMembersPrefix(c.cluster.etcd);
  ASSERT_TRUE(etcd.Put(members + "odd", R"({"address":7001,"id":["odd"],"weight":"many"})", 0).ok());
  ASSERT_TRUE(etcd.Put(members + "w-other", EtcdMemberValue({"w-else", "127.0.0.1:1"}, 1), 0).ok());
  ASSERT_TRUE(etcd.Put(members + "bin", std::string("\xff\0{", 3), 0).ok());
  // A worker joining after them: once a watcher sees it, it has read the records before it.
  StartWorker(c, "c2");
  ASSERT_TRUE(WaitFor([&] { return client->Ring().members.size() == 3; }, 20s)) << client->Ring().members.size();
  for (auto& w : workers_) EXPECT_TRUE(w.proc.running()) << "a worker died of a member record";
  auto f = client->OpenFile("/data/f1");
  ASSERT_TRUE(f) << f.error().ToString();
  std::string got(Content(1).size(), '\0');
  auto n = (*f)->Pread(0, std::span<char>(got));
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(got, Content(1));
  EXPECT_NE(Slurp(root_ + "/c2.log").find("etcd key " + members + "odd does not describe a worker"), std::string::npos)
      << Slurp(root_ + "/c2.log");
  EXPECT_NE(Slurp(root_ + "/c2.log").find("its id is not the key's"), std::string::npos);
}

TEST_F(MembershipTest, EtcdLostMidRunKeepsTheLastRingAndRewatches) {
  Config c = MakeConfig(10s);
  auto client = StartTwoWorkersAndAClient(c);
  ASSERT_TRUE(client);
  const uint64_t version = client->Ring().version;
  auto& connected = MetricsRegistry::Global().GetGauge("shoal_membership_etcd_connected", "");
  auto& errors = MetricsRegistry::Global().GetCounter("shoal_membership_watch_errors_total", "");
  const uint64_t errors_before = errors.value();

  etcd_->Kill();
  ASSERT_TRUE(WaitFor([&] { return connected.value() == 0; }, 40s)) << "the watch did not notice etcd was gone";
  EXPECT_GT(errors.value(), errors_before);
  // The last ring stays, and reads go on over it.
  EXPECT_EQ(client->Ring().members.size(), 2u);
  EXPECT_EQ(client->Ring().version, version);
  for (int i = 0; i < kFiles; ++i) {
    auto f = client->OpenFile("/data/f" + std::to_string(i));
    ASSERT_TRUE(f) << f.error().ToString();
  }

  ASSERT_TRUE(etcd_->Restart().ok());
  ASSERT_TRUE(WaitFor([&] { return connected.value() == 1; }, 30s)) << "the watch did not come back";
  // Both workers are still (or again) registered: their leases were renewed or re-granted.
  ASSERT_TRUE(WaitFor([&] { return client->Ring().members.size() == 2; }, c.cluster.etcd.lease_ttl + 10s));
}

TEST_F(MembershipTest, EtcdDownAtStartIsAClearError) {
  Config c = MakeConfig(2s);
  c.cluster.etcd.endpoints = {"http://127.0.0.1:1"};
  auto client = Client::FromYaml(ToYaml(c), "test");
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code(), Code::kUnavailable);
  EXPECT_NE(client.error().message().find("http://127.0.0.1:1"), std::string::npos) << client.error().message();
  EXPECT_NE(client.error().message().find("cluster.etcd.endpoints"), std::string::npos) << client.error().message();

  std::string config = root_ + "/down.yaml";
  ASSERT_TRUE(WriteFile(config, ToYaml(c)).ok());
  auto r = Shoal({"worker", "--config", config, "--listen", "127.0.0.1:0", "--cache-dir", root_ + "/down-cache"}, 60s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("http://127.0.0.1:1"), std::string::npos) << r.err;
}

TEST_F(MembershipTest, UpWithEtcdWritesOnlyTheEndpointsAndStatusShowsTheRing) {
  std::string state = root_ + "/state";
  Up up = LaunchUp({"--ufs", root_ + "/ufs", "--workers", "2", "--etcd", "--state-dir", state, "--cache-size", "64MiB"},
                   root_ + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  auto cfg = LoadConfig(up.config);
  ASSERT_TRUE(cfg) << cfg.error().ToString();
  EXPECT_TRUE(cfg->cluster.workers.empty()) << Slurp(up.config);
  EXPECT_TRUE(cfg->mounts.empty()) << "the mount table is in etcd: " << Slurp(up.config);
  ASSERT_EQ(cfg->cluster.etcd.endpoints.size(), 1u);
  const std::string endpoint = cfg->cluster.etcd.endpoints[0];
  EXPECT_TRUE(endpoint.starts_with("http://127.0.0.1:")) << endpoint;

  auto client = Client::Open(up.config);
  ASSERT_TRUE(client) << client.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return (*client)->Ring().members.size() == 2; }, 20s));
  auto mounts = (*client)->Mounts();
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].path, "/data");
  auto status = Shoal({"status", "--config", up.config});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("ring: etcd membership, version "), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("2 workers"), std::string::npos) << status.out;
  EXPECT_EQ(CountLines(status.out, " up "), 2) << status.out;
  auto json = Shoal({"status", "--json", "--config", up.config});
  EXPECT_NE(json.out.find("\"ring_weight\":67108864"), std::string::npos) << json.out;

  client->reset();
  up.proc.Signal(SIGTERM);
  EXPECT_NE(up.proc.Wait(60s), -1);
  // etcd went with it.
  EXPECT_FALSE(LocalEtcd::Answers(endpoint, 1s));
}

// The pid of the process whose command line holds `needle`, or -1.
pid_t FindProcess(const std::string& needle) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string cmd = Slurp(e.path().string() + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(needle) != std::string::npos && cmd.find("etcd") != std::string::npos) return std::stoi(name);
  }
  return -1;
}

// `shoal up --etcd` keeps its etcd as it keeps its workers: killed, it is
// logged and started again on the same endpoint and data, within seconds.
TEST_F(MembershipTest, UpRestartsItsEtcdAfterAKillAndSaysSo) {
  std::string state = root_ + "/state-etcd";
  Up up = LaunchUp({"--ufs", root_ + "/ufs", "--workers", "1", "--etcd", "--state-dir", state, "--cache-size", "64MiB"},
                   root_ + "/up-etcd.err");
  ASSERT_TRUE(up.ready) << up.err();
  auto cfg = LoadConfig(up.config);
  ASSERT_TRUE(cfg) << cfg.error().ToString();
  ASSERT_EQ(cfg->cluster.etcd.endpoints.size(), 1u);
  const std::string endpoint = cfg->cluster.etcd.endpoints[0];
  const pid_t first = FindProcess(state + "/etcd");
  ASSERT_GT(first, 0) << "no etcd with its data under " << state;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  EXPECT_TRUE(WaitFor([&] { return FindProcess(state + "/etcd") > 0 && FindProcess(state + "/etcd") != first; }, 30s))
      << "no new etcd: " << up.err();
  EXPECT_TRUE(WaitFor([&] { return LocalEtcd::Answers(endpoint, 1s); }, 30s)) << "etcd is not back on " << endpoint;
  EXPECT_NE(up.err().find("etcd (pid " + std::to_string(first) + ") was killed by signal 9"), std::string::npos)
      << up.err();
  EXPECT_TRUE(WaitFor([&] { return up.err().find("etcd is back on " + endpoint) != std::string::npos; }, 30s))
      << up.err();
  shoal::testing::Run status;
  EXPECT_TRUE(WaitFor(
      [&] {
        status = Shoal({"status", "--config", up.config});
        return status.exit_code == 0 && CountLines(status.out, " up ") == 1;
      },
      30s))
      << "the worker is not in the ring of the etcd started again: " << status.out << status.err;
  EXPECT_NE(status.out.find("ring: etcd membership"), std::string::npos) << status.out;

  up.proc.Signal(SIGTERM);
  EXPECT_NE(up.proc.Wait(60s), -1);
  EXPECT_FALSE(LocalEtcd::Answers(endpoint, 1s)) << "the restarted etcd went with it";
}

}  // namespace
}  // namespace shoal::testing
