// EtcdWorkersTest: a fixture with a real etcd (tests/harness/etcd.h), a
// file:// under-store directory, and `shoal worker` processes that register
// in etcd, started one by one (so a test can add a worker to a warm ring or
// kill one). Shared by the replica and peer-fetch tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/config.h"
#include "common/subprocess.h"
#include "shoal/client.h"
#include "tests/cli_helpers.h"
#include "tests/harness/etcd.h"
#include "tests/harness/file_io.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {

class EtcdWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = EtcdProcess::Start();
    if (!e && e.error().code() == Code::kNotFound) GTEST_SKIP() << e.error().message();
    ASSERT_TRUE(e) << e.error().ToString();
    etcd_ = std::move(*e);
    root_ = MakeTempDir("etcd-workers");
    ASSERT_FALSE(root_.empty());
    std::filesystem::create_directories(root_ + "/ufs");
  }

  void TearDown() override {
    for (auto& w : workers_) w.Stop(std::chrono::seconds(10));
    workers_.clear();
    etcd_.reset();
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }

  // /data -> root_/ufs (immutable), 64 KiB pages, 256 KiB shards, etcd membership with a 30 s lease,
  // and a cluster secret.
  Config BaseConfig() const {
    Config c;
    MountConfig m = FileMount(root_ + "/ufs");
    m.consistency = Consistency::kImmutable;
    c.mounts = {m};
    c.worker.page_size = 64 * 1024;
    c.cluster.shard_size = 256 * 1024;
    c.worker.ufs_threads = 4;
    c.cluster.etcd.endpoints = {etcd_->endpoint()};
    c.cluster.etcd.prefix = "/shoal/test";
    c.cluster.etcd.lease_ttl = std::chrono::seconds(30);
    c.cluster.etcd.timeout = std::chrono::seconds(2);
    // Workers fetch from each other and push replicas under the cluster secret, as under `shoal up`.
    c.cluster.secret = "etcd-workers-secret-0123456789";
    return c;
  }

  // Starts a worker with cache dir root_/cache (its id lives there), listening on `listen`.
  void StartWorker(const Config& c, const std::string& cache, const std::string& listen = "127.0.0.1:0") {
    std::string config = root_ + "/worker.yaml";
    ASSERT_TRUE(WriteFile(config, ToYaml(c)).ok());
    auto w = StartWorkerProcess(config, listen, root_ + "/" + cache, "64MiB", root_ + "/" + cache + ".log");
    ASSERT_TRUE(w) << w.error().ToString();
    workers_.push_back(std::move(w->process));
    entries_.push_back(w->entry);
    addresses_.push_back(w->entry.address);
  }

  // A client of `c` that sees `members` workers.
  std::unique_ptr<Client> NewClient(const Config& c, size_t members) {
    auto client = Client::FromYaml(ToYaml(c), "test");
    EXPECT_TRUE(client) << client.error().ToString();
    if (!client) return nullptr;
    EXPECT_TRUE(WaitFor([&] { return (*client)->Ring().members.size() == members; }, std::chrono::seconds(20)));
    return std::move(*client);
  }

  // A counter summed over the given workers' /metrics.
  double Sum(const std::string& metric, const std::vector<std::string>& addresses) {
    auto v = WorkerMetricSum(addresses, metric);
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  }

  std::unique_ptr<EtcdProcess> etcd_;
  std::string root_;
  std::vector<Subprocess> workers_;
  std::vector<WorkerEntry> entries_;
  std::vector<std::string> addresses_;
};

}  // namespace shoal::testing
