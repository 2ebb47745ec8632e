// Path rules against real workers (tests/harness): pin survives cache
// pressure and unpin makes it evictable, low priority goes before high, ttl
// expiry by the sweep, a quota holds its prefix to its limit without touching
// other paths, admission: skip caches nothing, config and CLI rules survive a
// worker restart, `shoal pin/unpin/rules` through the CLI binary, and bad
// rule input gets a clear error and changes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/cli_helpers.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;

constexpr uint64_t kPage = 256 * 1024;
constexpr uint64_t kMiB = 1 << 20;

PathRule Rule(std::string path, std::vector<std::pair<std::string, std::string>> fields) {
  PathRule r = EmptyRule(std::move(path));
  for (auto& [f, v] : fields) EXPECT_TRUE(SetRuleField(&r, f, v).ok()) << f << "=" << v;
  return r;
}

class RulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ufs_ = MakeTempDir("rules-ufs");
    ASSERT_FALSE(ufs_.empty());
  }
  void TearDown() override {
    client_.reset();
    cluster_.reset();
    fs::remove_all(ufs_);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `workers` workers of `capacity` cache each over the mount /data -> ufs_.
  void Start(int workers, uint64_t capacity, std::vector<PathRule> rules = {}) {
    ShoalCluster::Options o;
    o.workers = workers;
    o.mounts = {FileMount(ufs_)};
    o.rules = std::move(rules);
    o.page_size = kPage;
    o.cache_capacity = capacity;
    o.client.short_circuit = false;  // every read goes through a worker's read path
    // No read-ahead: a read fetches exactly its own pages.
    // LRU: the default policy keeps part of a scan cached by design, which would blur "evictable".
    o.worker = [](WorkerConfig& w) {
      w.readahead = 0;
      w.eviction = "lru";
    };
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    auto cl = cluster_->NewClient();
    ASSERT_TRUE(cl) << cl.error().ToString();
    client_ = std::move(*cl);
    dir_ = MakeTempDir("rules-cfg");
    config_ = dir_ + "/client.yaml";
    ASSERT_TRUE(WriteFile(config_, cluster_->ClientYaml()).ok());
  }

  // A file of `bytes` under the mount; returns its namespace path.
  std::string MakeFile(const std::string& rel, uint64_t bytes) {
    fs::create_directories(fs::path(ufs_ + "/" + rel).parent_path());
    std::string data(bytes, static_cast<char>('a' + rel.size() % 26));
    EXPECT_TRUE(WriteFile(ufs_ + "/" + rel, data).ok());
    return "/data/" + rel;
  }

  // Reads the whole file; returns the UFS bytes the cluster read for it.
  uint64_t ReadCost(const std::string& path) {
    double before = Metric("shoal_ufs_read_bytes_total");
    auto f = client_->OpenFile(path);
    EXPECT_TRUE(f) << path << ": " << f.error().ToString();
    if (!f) return UINT64_MAX;
    std::string buf(1 << 20, '\0');
    uint64_t got = 0;
    for (;;) {
      auto n = (*f)->Read(std::span<char>(buf.data(), buf.size()));
      EXPECT_TRUE(n) << path << ": " << n.error().ToString();
      if (!n || *n == 0) break;
      got += *n;
    }
    EXPECT_EQ(got, (*f)->status().size) << path;
    return static_cast<uint64_t>(Metric("shoal_ufs_read_bytes_total") - before);
  }

  double Metric(const std::string& name) {
    auto v = cluster_->MetricSum(name);
    EXPECT_TRUE(v) << name << ": " << v.error().ToString();
    return v.value_or(-1);
  }

  // Reads `n` files of 1 MiB under /data/flood-TAG: far more than the caches hold.
  void Flood(const std::string& tag, int n) {
    for (int i = 0; i < n; ++i) ReadCost(MakeFile("flood-" + tag + "/f" + std::to_string(i), kMiB));
  }

  shoal::testing::Run Cli(std::vector<std::string> args) {
    args.push_back("-c");
    args.push_back(config_);
    return Shoal(std::move(args));
  }

  // GET /v1/rules of worker i, parsed.
  Json WorkerRules(size_t i) {
    auto body = cluster_->Get(i, "/v1/rules");
    EXPECT_TRUE(body) << body.error().ToString();
    return body ? Json::parse(*body) : Json::object();
  }
  // Bytes worker i says rule `path` holds (-1: no such rule).
  int64_t RuleBytes(size_t i, const std::string& path) {
    const Json all = WorkerRules(i);
    for (const auto& r : all["rules"]) {
      if (r["path"] == path) return r["bytes"].get<int64_t>();
    }
    return -1;
  }

  std::string ufs_, dir_, config_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(RulesTest, PinThroughTheCliSurvivesPressureAndUnpinMakesItEvictable) {
  Start(2, 4 * kMiB);
  std::string val = MakeFile("val/v0", kMiB + 1000);
  shoal::testing::Run pin = Cli({"pin", "/data/val"});
  ASSERT_EQ(pin.exit_code, 0) << pin.err;
  EXPECT_NE(pin.out.find("on 2 workers"), std::string::npos) << pin.out;
  EXPECT_GT(ReadCost(val), kMiB);
  // The file's first page came with the open's stat and is written to the
  // cache by the worker's idle-priority writer; on a busy machine that can
  // lag, and until then the page is served from memory. Wait for all of the
  // file to be in the page store, or the flood would not test the pin.
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (Metric("shoal_cache_pinned_bytes") < static_cast<double>(kMiB + 1000) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_GE(Metric("shoal_cache_pinned_bytes"), static_cast<double>(kMiB + 1000)) << "the pinned file never got cached";
  Flood("a", 24);  // 24 MiB through 8 MiB of cache
  EXPECT_EQ(ReadCost(val), 0u) << "the pinned file was evicted";
  EXPECT_GT(Metric("shoal_cache_pinned_bytes"), static_cast<double>(kMiB));

  shoal::testing::Run status = Cli({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("pinned 1.0 MiB"), std::string::npos) << status.out;

  shoal::testing::Run list = Cli({"rules"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("/data/val"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("pin=true"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("cli"), std::string::npos) << list.out;

  shoal::testing::Run unpin = Cli({"unpin", "/data/val"});
  ASSERT_EQ(unpin.exit_code, 0) << unpin.err;
  EXPECT_EQ(Metric("shoal_cache_pinned_bytes"), 0);
  Flood("b", 24);
  EXPECT_GT(ReadCost(val), 0u) << "the unpinned file was never evicted";
}

TEST_F(RulesTest, LowPriorityIsEvictedBeforeHigh) {
  // One worker holding 4 MiB of pages (and their headers).
  Start(1, 4 * kMiB + 64 * 1024,
        {Rule("/data/low", {{"priority", "low"}}), Rule("/data/high", {{"priority", "high"}})});
  std::string high = MakeFile("high/h", 2 * kMiB), low = MakeFile("low/l", 2 * kMiB);
  ReadCost(high);
  ReadCost(low);
  ReadCost(MakeFile("mid/m", 2 * kMiB));  // needs 2 MiB: taken from the low file, though the high one is older
  EXPECT_EQ(ReadCost(high), 0u);
  EXPECT_GT(ReadCost(low), 0u);
}

TEST_F(RulesTest, TtlExpiresPagesInTheBackground) {
  Start(1, 64 * kMiB, {Rule("/data/tmp", {{"ttl", "1s"}})});
  std::string tmp = MakeFile("tmp/t", kMiB), keep = MakeFile("keep/k", kMiB);
  ReadCost(tmp);
  ReadCost(keep);
  // The sweep (every second) drops the pages once they are a second old; polled, not slept on.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (RuleBytes(0, "/data/tmp") != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  EXPECT_EQ(RuleBytes(0, "/data/tmp"), 0) << WorkerRules(0).dump();
  EXPECT_GE(Metric("shoal_cache_expired_pages_total"), 4);
  EXPECT_EQ(ReadCost(keep), 0u);
  EXPECT_GT(ReadCost(tmp), 0u);
}

TEST_F(RulesTest, QuotaHoldsItsPrefixWithoutTouchingOthers) {
  Start(1, 64 * kMiB, {Rule("/data/team", {{"quota", "1MiB"}})});
  std::string other = MakeFile("other/o", 2 * kMiB);
  ReadCost(other);
  for (int i = 0; i < 3; ++i) ReadCost(MakeFile("team/t" + std::to_string(i), kMiB - 8192));  // 3x its quota
  auto st = Json::parse(*cluster_->Get(0, "/v1/status"));
  ASSERT_EQ(st["quotas"].size(), 1u) << st.dump();
  EXPECT_LE(st["quotas"][0]["used_bytes"].get<uint64_t>(), kMiB);
  EXPECT_GT(st["quotas"][0]["used_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(st["quotas"][0]["limit_bytes"].get<uint64_t>(), kMiB);
  EXPECT_LE(RuleBytes(0, "/data/team"), static_cast<int64_t>(kMiB));
  EXPECT_GT(RuleBytes(0, "/data/team"), 0);
  EXPECT_EQ(ReadCost(other), 0u) << "a page outside the quota's prefix was evicted";
  EXPECT_GT(Metric("shoal_cache_quota_bytes{rule=\"/data/team\"}"), 0);
}

TEST_F(RulesTest, AdmissionSkipServesWithoutCaching) {
  Start(1, 64 * kMiB, {Rule("/data/stream", {{"admission", "skip"}})});
  std::string s = MakeFile("stream/s", kMiB);
  double used = Metric("shoal_cache_used_bytes");
  EXPECT_GE(ReadCost(s), kMiB);
  EXPECT_GE(ReadCost(s), kMiB);
  EXPECT_EQ(Metric("shoal_cache_used_bytes"), used);
  EXPECT_GE(Metric("shoal_cache_admission_skips_total"), 4);
}

TEST_F(RulesTest, ConfigAndCliRulesSurviveARestart) {
  Start(1, 4 * kMiB, {Rule("/data/cfg", {{"pin", "true"}})});
  std::string cfg = MakeFile("cfg/c", kMiB), cli = MakeFile("cli/c", kMiB);
  shoal::testing::Run set = Cli({"rules", "set", "/data/cli", "pin=true", "priority=high"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  ReadCost(cfg);
  ReadCost(cli);
  ASSERT_TRUE(cluster_->Restart(0).ok());
  Flood("a", 12);
  EXPECT_EQ(ReadCost(cfg), 0u) << "the config rule's pin was lost at the restart";
  EXPECT_EQ(ReadCost(cli), 0u) << "the CLI rule's pin was lost at the restart";
  shoal::testing::Run list = Cli({"rules", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::map<std::string, Json> rows;
  std::istringstream in(list.out);
  for (std::string line; std::getline(in, line);) {
    auto j = Json::parse(line);
    rows[j["path"]] = j;
  }
  ASSERT_TRUE(rows.contains("/data/cfg") && rows.contains("/data/cli")) << list.out;
  EXPECT_EQ(rows["/data/cfg"]["source"], "config");
  EXPECT_EQ(rows["/data/cli"]["source"], "cli");
  EXPECT_EQ(rows["/data/cli"]["fields"], Json({"pin=true", "priority=high"}));
  EXPECT_GT(rows["/data/cli"]["total_bytes"].get<uint64_t>(), kMiB);
  // A CLI rule over a config rule's path overrides the fields it sets, and is removable.
  ASSERT_EQ(Cli({"unpin", "/data/cfg"}).exit_code, 0);
  shoal::testing::Run rm = Cli({"rules", "rm", "/data/cli"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  ASSERT_TRUE(cluster_->Restart(0).ok());
  EXPECT_EQ(Metric("shoal_cache_pinned_bytes"), 0);
  Json rules = WorkerRules(0);
  ASSERT_EQ(rules["rules"].size(), 1u) << rules.dump();
  EXPECT_EQ(rules["rules"][0]["source"], "config+cli");
  EXPECT_EQ(rules["rules"][0]["fields"], Json({"pin=false"}));
}

TEST_F(RulesTest, BadRuleInputIsRefusedAndChangesNothing) {
  Start(2, 16 * kMiB);
  ASSERT_EQ(Cli({"rules", "set", "/data/a", "ttl=1h"}).exit_code, 0);
  uint64_t version = WorkerRules(0)["version"];
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{{{"rules", "set", "/data/a", "ttl=banana"}, "ttl"},
                                         {{"rules", "set", "/data/a", "pin=maybe"}, "pin"},
                                         {{"rules", "set", "/data/a", "colour=red"}, "colour"},
                                         {{"rules", "set", "/data/a", "write_mode=through"}, "config"},
                                         {{"rules", "set", "/data/a", "quota"}, "field=value"},
                                         {{"rules", "set", "data/a", "pin=true"}, "absolute"},
                                         {{"rules", "rm", "/data/none"}, "no CLI rule"}}) {
    shoal::testing::Run r = Cli(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args[2] << " " << c.args.back();
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  // Straight to the route: refused with 400, nothing changed.
  auto raw = cluster_->Get(0, "/v1/rules?path=/data/a");
  EXPECT_FALSE(raw);  // GET takes no parameters
  for (size_t i = 0; i < 2; ++i) {
    Json rules = WorkerRules(i);
    EXPECT_EQ(rules["version"], version);
    ASSERT_EQ(rules["rules"].size(), 1u);
    EXPECT_EQ(rules["rules"][0]["fields"], Json({"ttl=1h"}));
  }
  // A worker that is down does not silently miss a change: it is named, exit non-zero.
  cluster_->Stop(1);
  shoal::testing::Run pin = Cli({"pin", "/data/b"});
  EXPECT_NE(pin.exit_code, 0);
  EXPECT_NE(pin.err.find("1 of 2 workers"), std::string::npos) << pin.err;
  const auto& down = cluster_->workers()[1];
  EXPECT_TRUE(pin.err.find("worker " + (down.id.empty() ? down.address : down.id)) != std::string::npos) << pin.err;
}

}  // namespace
}  // namespace shoal::testing
