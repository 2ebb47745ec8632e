// The `shoal` command line, end to end: `shoal up` with real workers, the client
// commands against it, and the one-line errors with their exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstring>
#include <signal.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "client/worker_connection.h"
#include "common/subprocess.h"
#include "shoal/version.h"
#include "tests/cli_helpers.h"
#include "tests/harness/azurite.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("cli");
    ufs_ = dir_ + "/ufs";
    state_ = dir_ + "/state";
    big_ = RandomBytes(3 * 1024 * 1024 + 77, 1);
    ASSERT_TRUE(WriteFile(ufs_ + "/train/big.bin", big_).ok());
    ASSERT_TRUE(WriteFile(ufs_ + "/train/small.txt", "hello shoal\n").ok());
  }
  void TearDown() override {
    up_.Stop();
    fs::remove_all(dir_);
  }

  void StartUp(std::vector<std::string> extra = {}, int workers = 2) {
    Subprocess::Options o;
    o.argv = {ShoalBinary(),           "up",          "--ufs", ufs_,           "--workers",
              std::to_string(workers), "--state-dir", state_,  "--cache-size", "64MiB"};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.stderr_file = dir_ + "/up.err";
    auto p = Subprocess::Start(o);
    ASSERT_TRUE(p) << p.error().ToString();
    up_ = std::move(*p);
    auto line = up_.WaitForLine("ready: config=", std::chrono::seconds(60));
    ASSERT_TRUE(line) << line.error().ToString() << Slurp(dir_ + "/up.err");
    config_ = line->substr(line->find('=') + 1);
  }

  std::string dir_, ufs_, state_, config_, big_;
  Subprocess up_;
};

// `shoal status --json` is one document whose summary is the sum of its
// workers, and the text status shows the same numbers; the bytes the store sent
// (its own count: the file's size, once) and the bytes saved agree with it.
TEST_F(CliTest, StatusIsOneJsonDocumentWhoseSummaryAddsUpTheWorkers) {
  StartUp();
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto cat = Shoal({"cat", "--config", config_, "/data/train/big.bin"});
    ASSERT_EQ(cat.exit_code, 0) << cat.err;
  }
  auto status = Shoal({"status", "--json", "--config", config_});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto doc = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << "not one JSON document:\n" << status.out;
  const auto& workers = doc["workers"];
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(doc["ring"]["members"].size(), 2u);
  EXPECT_EQ(doc["ring"]["membership"], "static");
  const auto& sum = doc["summary"];
  EXPECT_EQ(sum["workers"], 2);
  EXPECT_EQ(sum["up"], 2);
  EXPECT_EQ(sum["down"], 0);
  uint64_t hit = 0, ufs = 0, used = 0;
  for (const auto& w : workers) {
    hit += w["hit_bytes"].get<uint64_t>();
    ufs += w["ufs_read_bytes"].get<uint64_t>();
    used += w["cache_used_bytes"].get<uint64_t>();
    EXPECT_TRUE(w.contains("pinned_bytes") && w.contains("quotas")) << w.dump();
  }
  EXPECT_EQ(sum["hit_bytes"].get<uint64_t>(), hit);
  EXPECT_EQ(sum["egress_saved_bytes"].get<uint64_t>(), hit);
  EXPECT_EQ(sum["ufs_read_bytes"].get<uint64_t>(), ufs);
  EXPECT_EQ(sum["cache_used_bytes"].get<uint64_t>(), used);
  // The store sent the file once (cold), give or take a page; the warm epoch was all hits.
  EXPECT_GE(ufs, big_.size());
  EXPECT_LE(ufs, big_.size() + (1 << 20));
  EXPECT_GE(hit, big_.size());
  auto lines = Shoal({"status", "--json-lines", "--config", config_});
  EXPECT_EQ(CountLines(lines.out, "\"address\""), 2) << lines.out;
  auto text = Shoal({"status", "--config", config_});
  EXPECT_NE(text.out.find("cluster: 2 up, 0 down"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("egress saved"), std::string::npos) << text.out;
}

// Every worker serves the status page at GET /: HTML naming every worker of
// the cluster, carrying the document it draws, and the JSON route the page
// refreshes from is the document `shoal status --json` prints.
TEST_F(CliTest, EveryWorkerServesAStatusPageNamingEveryWorker) {
  StartUp({}, 3);
  auto cat = Shoal({"cat", "--config", config_, "/data/train/big.bin"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  auto status = Shoal({"status", "--json", "--config", config_});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto doc = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << status.out;
  std::vector<std::string> addresses;
  for (const auto& w : doc["workers"]) addresses.push_back(w["address"].get<std::string>());
  ASSERT_EQ(addresses.size(), 3u);
  for (const auto& at : addresses) {
    auto page = Command({"curl", "-sS", "--max-time", "30", "-H", "Accept: text/html", "-w",
                         "\n%{http_code} %{content_type}", "http://" + at + "/"});
    ASSERT_EQ(page.exit_code, 0) << page.err;
    EXPECT_NE(page.out.find("\n200 text/html"), std::string::npos) << page.out.substr(page.out.rfind('\n'));
    EXPECT_EQ(page.out.rfind("<!DOCTYPE html>", 0), 0u);
    for (const auto& other : addresses) {
      EXPECT_NE(page.out.find(other), std::string::npos) << "the page of " << at << " does not name " << other;
    }
    auto json = Command({"curl", "-sS", "--fail", "--max-time", "30", "http://" + at + "/v1/cluster/status"});
    ASSERT_EQ(json.exit_code, 0) << json.err;
    auto served = nlohmann::json::parse(json.out, nullptr, false);
    ASSERT_TRUE(served.is_object()) << json.out;
    EXPECT_EQ(served["ring"], doc["ring"]);
    EXPECT_EQ(served["summary"]["up"], 3);
    // Nothing was read in between: the same bytes as `shoal status --json` counted.
    EXPECT_EQ(served["summary"]["hit_bytes"], doc["summary"]["hit_bytes"]);
    // (Read-ahead may still be landing: the store's count only grows.)
    EXPECT_GE(served["summary"]["ufs_read_bytes"].get<uint64_t>(), doc["summary"]["ufs_read_bytes"].get<uint64_t>());
    // One mount, a local directory: its bytes saved are the hits, and cost nothing by default.
    ASSERT_EQ(served["mounts"].size(), 1u) << served["mounts"].dump();
    EXPECT_EQ(served["mounts"][0]["mount"], "/data");
    EXPECT_EQ(served["mounts"][0]["saved_bytes"], served["summary"]["hit_bytes"]);
    EXPECT_EQ(served["mounts"][0]["price_per_gb"].get<double>(), 0.0);
  }
}

// log.format: json (or SHOAL_LOG_FORMAT=json): every line a worker logs is one
// JSON object with its time, level and message, text from the network included.
TEST_F(CliTest, AWorkerLogsOneJsonObjectPerLine) {
  for (bool from_env : {false, true}) {
    SCOPED_TRACE(from_env ? "SHOAL_LOG_FORMAT=json" : "log.format: json");
    std::string config = dir_ + "/worker.yaml";
    ASSERT_TRUE(WriteFile(config, std::string("mounts:\n  - {path: /data, ufs: 'file://") + ufs_ + "/'}\n" +
                                      (from_env ? "" : "log:\n  format: json\n"))
                    .ok());
    Subprocess::Options o;
    o.argv = {ShoalBinary(), "worker", "--config", config, "--cache-dir", dir_ + "/cache", "--cache-size", "16MiB"};
    if (from_env) o.env["SHOAL_LOG_FORMAT"] = "json";
    o.env["SHOAL_LOG"] = "info";
    o.stderr_file = dir_ + "/worker.err";
    auto p = Subprocess::Start(o);
    ASSERT_TRUE(p) << p.error().ToString();
    auto line = p->WaitForLine("listening:", std::chrono::seconds(60));
    ASSERT_TRUE(line) << Slurp(o.stderr_file);
    // A request with a quote, a newline and a byte that is not UTF-8 in its path: logged as text, safely.
    std::string address = line->substr(std::string("listening: ").size());
    address = address.substr(0, address.find(' '));
    Command({"curl", "-s", "--max-time", "10", "http://" + address + "/v1/stat?path=%2Fdata%2F%22x%0Ay%FF"});
    p->Stop(std::chrono::seconds(20));
    std::istringstream err(Slurp(o.stderr_file));
    int lines = 0;
    bool serving = false;
    for (std::string l; std::getline(err, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      ASSERT_TRUE(j.is_object()) << "not a JSON object: " << l;
      ASSERT_TRUE(j.contains("time") && j.contains("level") && j.contains("msg") && j.contains("pid")) << l;
      serving = serving || j["msg"].get<std::string>().find("worker serving on") != std::string::npos;
      ++lines;
    }
    EXPECT_GT(lines, 0);
    EXPECT_TRUE(serving) << Slurp(o.stderr_file);
    fs::remove_all(dir_ + "/cache");
  }
}

TEST_F(CliTest, UpServesClientCommandsAndStopsCleanly) {
  StartUp();
  EXPECT_NE(up_.output().find("mount: /data -> file://"), std::string::npos) << up_.output();

  auto cat = Shoal({"cat", "--config", config_, "/data/train/small.txt"});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "hello shoal\n");

  auto big = Shoal({"cat", "--config", config_, "/data/train/big.bin"});
  EXPECT_EQ(big.exit_code, 0) << big.err;
  EXPECT_TRUE(big.out == big_);

  // A reader that goes away (`shoal cat big | head -c 1`) ends cat as it ends
  // cat(1): by SIGPIPE, with nothing on stderr.
  std::string piped = "set -o pipefail; '" + ShoalBinary() + "' cat --config '" + config_ +
                      "' /data/train/big.bin 2>'" + dir_ + "/pipe.err' | head -c 1 >/dev/null";
  int rc = std::system(("bash -c \"" + piped + "\"").c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << rc;
  EXPECT_EQ(WEXITSTATUS(rc), 128 + SIGPIPE);
  EXPECT_EQ(Slurp(dir_ + "/pipe.err"), "");

  auto cp = Shoal({"cp", "--config", config_, "file://" + ufs_ + "/train/big.bin", dir_ + "/copy.bin"});
  EXPECT_EQ(cp.exit_code, 0) << cp.err;
  EXPECT_TRUE(Slurp(dir_ + "/copy.bin") == big_);

  auto ls = Shoal({"ls", "--config", config_, "/data/train"});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out, "big.bin\nsmall.txt\n");

  auto stat = Shoal({"stat", "--config", config_, "/data/train/big.bin"});
  EXPECT_EQ(stat.exit_code, 0) << stat.err;
  EXPECT_NE(stat.out.find("size:    " + std::to_string(big_.size())), std::string::npos) << stat.out;

  auto status = Shoal({"status", "--config", config_});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find(" up "), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("%"), std::string::npos) << status.out;

  auto mounts = Shoal({"mount", "list", "--config", config_});
  EXPECT_EQ(mounts.exit_code, 0);
  EXPECT_NE(mounts.out.find("/data"), std::string::npos);
  EXPECT_NE(mounts.out.find("ttl=1m"), std::string::npos) << mounts.out;

  auto refresh = Shoal({"refresh", "--config", config_, "-r", "--data", "/data/train"});
  EXPECT_EQ(refresh.exit_code, 0) << refresh.err;

  // SHOAL_CONFIG works in place of --config.
  setenv("SHOAL_CONFIG", config_.c_str(), 1);
  auto env = Shoal({"cat", "/data/train/small.txt"});
  unsetenv("SHOAL_CONFIG");
  EXPECT_EQ(env.out, "hello shoal\n") << env.err;

  // A second `shoal up` on the same state dir is refused, clearly.
  auto second = Shoal({"up", "--ufs", ufs_, "--state-dir", state_});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("another `shoal up` is running"), std::string::npos) << second.err;

  // SIGTERM stops everything: exit 0, and the workers no longer answer.
  auto cfg = LoadConfig(config_);
  ASSERT_TRUE(cfg);
  up_.Signal(SIGTERM);
  int st = up_.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(st)) << st;
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_NE(up_.output().find("stopped"), std::string::npos);
  for (const auto& w : cfg->cluster.workers) {
    auto c = WorkerConnection::Connect(w.address, std::chrono::steady_clock::now() + std::chrono::seconds(2));
    EXPECT_FALSE(c) << "worker " << w.address << " still accepts connections after shoal up stopped";
  }
}

TEST_F(CliTest, ErrorsAreOneClearLineAndAnExitCode) {
  StartUp();
  auto missing = Shoal({"cat", "--config", config_, "/data/train/nope.bin"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(missing.err, "shoal: error: no such file or directory: /data/train/nope.bin\n");

  auto outside = Shoal({"stat", "--config", config_, "/elsewhere/x"});
  EXPECT_EQ(outside.exit_code, 3);
  EXPECT_NE(outside.err.find("outside every mount"), std::string::npos) << outside.err;
  EXPECT_NE(outside.err.find("/data -> file://"), std::string::npos) << outside.err;

  auto traversal = Shoal({"cat", "--config", config_, "/data/../etc/passwd"});
  EXPECT_EQ(traversal.exit_code, 2);
  EXPECT_NE(traversal.err.find("'..'"), std::string::npos) << traversal.err;

  // A config error names the file, line and key.
  std::string bad = dir_ + "/bad.yaml";
  ASSERT_TRUE(WriteFile(bad, "cluster:\n  workers: [127.0.0.1:1]\nclient:\n  timeout: soon\n").ok());
  auto cfgerr = Shoal({"ls", "--config", bad, "/data"});
  EXPECT_EQ(cfgerr.exit_code, 2);
  EXPECT_NE(cfgerr.err.find("bad.yaml:4"), std::string::npos) << cfgerr.err;
  EXPECT_NE(cfgerr.err.find("client.timeout"), std::string::npos) << cfgerr.err;
  EXPECT_EQ(std::count(cfgerr.err.begin(), cfgerr.err.end(), '\n'), 1) << cfgerr.err;

  auto noconfig = Shoal({"ls", "/data"});
  EXPECT_EQ(noconfig.exit_code, 2);
  EXPECT_NE(noconfig.err.find("SHOAL_CONFIG"), std::string::npos) << noconfig.err;
  // A config file that does not exist is a config error too (README: exit 2).
  auto nofile = Shoal({"ls", "--config", dir_ + "/nonexistent.yaml", "/data"});
  EXPECT_EQ(nofile.exit_code, 2) << nofile.err;
  EXPECT_NE(nofile.err.find("nonexistent.yaml"), std::string::npos) << nofile.err;

  // Worker unreachable with the UFS fallback off: a clear error, quickly.
  auto cfg = LoadConfig(config_);
  ASSERT_TRUE(cfg);
  cfg->client.ufs_fallback = false;
  cfg->client.timeout = std::chrono::seconds(2);
  up_.Stop();
  std::string nofb = dir_ + "/nofallback.yaml";
  ASSERT_TRUE(WriteFile(nofb, ToYaml(*cfg)).ok());
  auto down = Shoal({"cat", "--config", nofb, "/data/train/small.txt"});
  EXPECT_EQ(down.exit_code, 5) << down.err;
  // The one line names the worker, why it failed, and what to do.
  EXPECT_NE(down.err.find("unreachable"), std::string::npos) << down.err;
  EXPECT_NE(down.err.find("client.ufs_fallback is off"), std::string::npos) << down.err;
  // Exactly the one error line; -v shows the warning about the worker first.
  EXPECT_EQ(std::count(down.err.begin(), down.err.end(), '\n'), 1) << down.err;
  EXPECT_TRUE(down.err.starts_with("shoal: error: ")) << down.err;
  auto verbose = Shoal({"cat", "-v", "--config", nofb, "/data/train/small.txt"});
  EXPECT_EQ(verbose.exit_code, 5) << verbose.err;
  EXPECT_NE(verbose.err.find("[warning]"), std::string::npos) << verbose.err;
  EXPECT_NE(verbose.err.find("unreachable"), std::string::npos) << verbose.err;
  EXPECT_NE(verbose.err.find("shoal: error: "), std::string::npos) << verbose.err;
  setenv("SHOAL_LOG", "warn", 1);  // SHOAL_LOG still decides when set
  auto logged = Shoal({"cat", "--config", nofb, "/data/train/small.txt"});
  unsetenv("SHOAL_LOG");
  EXPECT_NE(logged.err.find("[warning]"), std::string::npos) << logged.err;
  auto status = Shoal({"status", "--config", nofb});
  EXPECT_EQ(status.exit_code, 5);
  EXPECT_NE(status.out.find("down"), std::string::npos) << status.out;

  auto badufs = Shoal({"up", "--ufs", dir_ + "/no-such-dir", "--state-dir", dir_ + "/s2"});
  EXPECT_EQ(badufs.exit_code, 3);
  EXPECT_NE(badufs.err.find("is not a directory"), std::string::npos) << badufs.err;
  auto scheme = Shoal({"up", "--ufs", "ftp://x/y", "--state-dir", dir_ + "/s3"});
  EXPECT_EQ(scheme.exit_code, 2);
  EXPECT_NE(scheme.err.find("unknown under-store scheme"), std::string::npos) << scheme.err;
}

// Expects `r` to have failed with exit code `code` and one line on stderr,
// "shoal: error: ...", holding each of `expect`.
void ExpectOneLineError(const Run& r, int code, const std::vector<std::string>& expect) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_TRUE(r.err.starts_with("shoal: error: ")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& e : expect) EXPECT_NE(r.err.find(e), std::string::npos) << "no '" << e << "' in: " << r.err;
}

// Every command-line error of every subcommand goes through one place: exit 2
// (README) and one line that says what was wrong and where --help is.
TEST_F(CliTest, CommandLineErrorsAreExit2AndOneLineNamingWhatToFix) {
  ExpectOneLineError(Shoal({"up", "--ufs", ufs_, "--workers", "abc"}), 2,
                     {"--workers takes INT, not 'abc'", "see 'shoal up --help'"});
  ExpectOneLineError(Shoal({"up", "--ufs", ufs_, "--page-store", "bogus"}), 2, {"--page-store", "bogus", "files"});
  ExpectOneLineError(Shoal({"up", "--ufs", ufs_, "--wokers", "2"}), 2,
                     {"unknown option --wokers (did you mean '--workers'?)"});
  ExpectOneLineError(Shoal({"up", "--workers", "2"}), 2, {"--ufs is required", "see 'shoal up --help'"});
  ExpectOneLineError(Shoal({"cat", "--config"}), 2, {"--config", "see 'shoal cat --help'"});
  ExpectOneLineError(Shoal({"stat", "--config", config_, "/data/a", "/data/b"}), 2, {"'/data/b'"});
  ExpectOneLineError(Shoal({}), 2, {"see 'shoal --help'"});
  // An unknown subcommand is named, with the nearest real one.
  ExpectOneLineError(Shoal({"frobnicate"}), 2,
                     {"unknown command 'frobnicate' (the nearest is '", "see 'shoal --help'"});
  ExpectOneLineError(Shoal({"stauts", "--config", config_}), 2, {"unknown command 'stauts' (did you mean 'status'?)"});
  ExpectOneLineError(Shoal({"mount", "lsit"}), 2,
                     {"unknown command 'lsit' (did you mean 'list'?)", "see 'shoal mount --help'"});
  // --help still prints to stdout and exits 0.
  auto help = Shoal({"up", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("--workers"), std::string::npos) << help.out;
}

TEST_F(CliTest, VersionPrintsTheVersionCommitAndBuildType) {
  auto v = Shoal({"--version"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(v.out.starts_with("shoal " SHOAL_VERSION " (commit ")) << v.out;
  // The commit the build was configured from (or "unknown" outside git), and the build type.
  EXPECT_TRUE(
      std::regex_match(v.out, std::regex(R"(shoal \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,40}|unknown), \w+ build\)\n)")))
      << v.out;
}

// Whether this process may make a private mount namespace (root may).
bool CanMountPrivately() { return Command({"unshare", "-m", "--propagation", "private", "true"}).exit_code == 0; }

// `shoal ARGS...` in a private mount namespace where `dir` is a read-only
// tmpfs: as root, a read-only file system is what refuses a write. The mount
// goes with the namespace when the command ends.
Run ShoalOnReadOnlyDir(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"unshare",
                                   "-m",
                                   "--propagation",
                                   "private",
                                   "sh",
                                   "-c",
                                   "mount -t tmpfs -o ro shoal-ro \"$0\" && exec \"$@\"",
                                   dir,
                                   ShoalBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Command(argv, std::chrono::seconds(60));
}

// A cache dir a worker could never write is refused before any worker starts:
// exit 4 (README: permission denied or read-only) naming the path.
TEST_F(CliTest, ACacheDirThatCannotBeWrittenIsRefusedNamingIt) {
  if (!CanMountPrivately()) GTEST_SKIP() << "needs a private mount namespace (run as root)";
  const std::string ro = dir_ + "/ro";
  fs::create_directories(ro);
  auto up = ShoalOnReadOnlyDir(ro, {"up", "--ufs", ufs_, "--workers", "1", "--state-dir", state_, "--cache-dir",
                                    ro + "/cache", "--cache-size", "64MiB"});
  ExpectOneLineError(up, 4, {"'" + ro + "/cache", "Read-only file system"});
  EXPECT_EQ(up.out.find("ready:"), std::string::npos) << up.out;

  std::string config = dir_ + "/worker.yaml";
  ASSERT_TRUE(WriteFile(config, "mounts:\n  - path: /data\n    ufs: file://" + ufs_ + "/\n").ok());
  auto worker = ShoalOnReadOnlyDir(ro, {"worker", "--config", config, "--cache-dir", ro, "--listen", "127.0.0.1:0"});
  ExpectOneLineError(worker, 4, {"cache dir '" + ro + "' cannot be written", "Read-only file system"});
  EXPECT_EQ(worker.out.find("listening:"), std::string::npos) << worker.out;

  // A file where the cache dir belongs is a bad argument: exit 2.
  ASSERT_TRUE(WriteFile(dir_ + "/a-file", "x").ok());
  auto file = Shoal({"worker", "--config", config, "--cache-dir", dir_ + "/a-file", "--listen", "127.0.0.1:0"});
  ExpectOneLineError(file, 2, {"'" + dir_ + "/a-file' is not a directory"});
}

TEST_F(CliTest, RefreshOfAPathThatExistsNowhereIsNotFound) {
  StartUp();
  auto nope = Shoal({"refresh", "--config", config_, "/data/nope"});
  EXPECT_EQ(nope.exit_code, 3) << nope.out << nope.err;
  EXPECT_NE(nope.err.find("/data/nope"), std::string::npos) << nope.err;
  EXPECT_EQ(std::count(nope.err.begin(), nope.err.end(), '\n'), 1) << nope.err;
  // Checked after the drop: a file that appeared since is found.
  auto cached = Shoal({"stat", "--config", config_, "/data/train/late.txt"});
  EXPECT_EQ(cached.exit_code, 3);
  ASSERT_TRUE(WriteFile(ufs_ + "/train/late.txt", "late\n").ok());
  auto late = Shoal({"refresh", "--config", config_, "/data/train/late.txt"});
  EXPECT_EQ(late.exit_code, 0) << late.err;
  auto dir = Shoal({"refresh", "--config", config_, "-r", "/data/train"});
  EXPECT_EQ(dir.exit_code, 0) << dir.err;
}

// Starts `shoal up` with `args` and expects it to stop with exit code 2 and one
// error line holding each of `expect`, without ever printing `ready:`.
void ExpectUpRefuses(const std::vector<std::string>& args, const std::string& err_file,
                     const std::vector<std::string>& expect) {
  auto up = LaunchUp(args, err_file);
  std::string err = up.err();
  EXPECT_FALSE(up.ready) << "shoal up printed ready: with " << ::testing::PrintToString(args);
  EXPECT_EQ(up.exit_code, 2) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(err.starts_with("shoal: error: ")) << err;
  for (const auto& e : expect) EXPECT_NE(err.find(e), std::string::npos) << "no '" << e << "' in: " << err;
}

TEST_F(CliTest, UpRefusesMountOptionsItCannotUseBeforeReady) {
  // A closed loopback port: nothing may ever be asked of it.
  const std::string dead = "http://127.0.0.1:1";
  int n = 0;
  auto run = [&](std::vector<std::string> args, const std::vector<std::string>& expect) {
    std::string s = dir_ + "/s" + std::to_string(n++);
    args.insert(args.end(), {"--workers", "1", "--state-dir", s, "--cache-size", "64MiB"});
    ExpectUpRefuses(args, s + ".err", expect);
  };
  run({"--ufs", ufs_, "-o", "bogus_key=1"}, {"unknown file:// option 'bogus_key'", "take no options"});
  run({"--ufs", "s3://bucket/p/", "-o", "endpiont=" + dead},
      {"mount /data: unknown s3:// option 'endpiont'; did you mean 'endpoint'?", "endpoint, region, access_key_id"});
  run({"--ufs", "s3://bucket/p/", "-o", "=foo"}, {"'=foo'", "no option name"});
  run({"--ufs", "s3://bucket/p/", "-o", "endpoint=" + dead, "-o", "max_retries=abc"},
      {"mount /data: option max_retries='abc': expected a whole number from 0 to 100"});
  run({"--ufs", "az://ctr/p/", "-o", "endpoint=" + dead + "/devstoreaccount1", "-o", "account=devstoreaccount1", "-o",
       "key=not-base64!"},
      {"mount /data:", "not valid base64"});
  run({"--ufs", "s3://Bad_Bucket!/p/", "-o", "endpoint=" + dead}, {"invalid S3 bucket name 'Bad_Bucket!'"});
  run({"--ufs", "az://Bad_Container/p/", "-o", "endpoint=" + dead + "/devstoreaccount1", "-o", "account=devstoreaccount1"},
      {"invalid Azure container name 'Bad_Container'"});
  run({"--ufs", "s3://bucket/p/", "-o", "endpoint=" + dead, "-o", "access_key_id=AKONLY"},
      {"access_key_id and secret_access_key"});
  // A message never names a source file, nor the mount twice.
  auto again = Shoal({"up", "--ufs", "s3://bucket/p/", "--state-dir", dir_ + "/s-last", "-o", "endpiont=" + dead});
  EXPECT_EQ(again.err.find(".h "), std::string::npos) << again.err;
  EXPECT_EQ(again.err.find("mount /data: mount /data"), std::string::npos) << again.err;
}

TEST_F(CliTest, WorkerRefusesMountOptionsItCannotUseBeforeListening) {
  std::string config = dir_ + "/worker.yaml";
  ASSERT_TRUE(WriteFile(config, "mounts:\n  - path: /data\n    ufs: s3://bucket/p/\n    options: {endpiont: 'http://127.0.0.1:1'}\n").ok());
  auto w = Shoal({"worker", "--config", config, "--cache-dir", dir_ + "/wcache", "--listen", "127.0.0.1:0"},
                 std::chrono::seconds(30));
  EXPECT_EQ(w.exit_code, 2) << w.out << w.err;
  EXPECT_EQ(w.out.find("listening:"), std::string::npos) << w.out;
  EXPECT_NE(w.err.find("worker.yaml: mount /data: unknown s3:// option 'endpiont'; did you mean 'endpoint'?"),
            std::string::npos)
      << w.err;
}

// `shoal s3` holds page files its workers leased, up to an eighth of
// RLIMIT_NOFILE: started with a low soft limit, it raises it to the hard one
// (at most 65536).
TEST_F(CliTest, TheS3EndpointRaisesItsSoftLimitOnOpenFiles) {
  rlimit nofile{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
  if (nofile.rlim_max <= 256) GTEST_SKIP() << "the hard limit on open files is " << nofile.rlim_max;
  const rlim_t want = std::min<rlim_t>(nofile.rlim_max, 65536);
  ASSERT_NO_FATAL_FAILURE(StartUp());
  const std::string keys = dir_ + "/s3.keys";
  ASSERT_TRUE(WriteFile(keys, "AKLIMITTEST secretlimittest\n").ok());
  ASSERT_EQ(::chmod(keys.c_str(), 0600), 0);
  Subprocess::Options o;
  // The shell lowers the soft limit, then becomes `shoal s3` (same pid).
  o.argv = {"/bin/sh", "-c",
            "ulimit -Sn 256 && exec \"$0\" s3 --config \"$1\" --credentials \"$2\" --listen 127.0.0.1:0",
            ShoalBinary(), config_, keys};
  o.stderr_file = dir_ + "/s3.err";
  auto s3 = Subprocess::Start(o);
  ASSERT_TRUE(s3) << s3.error().ToString();
  auto line = s3->WaitForLine("s3: endpoint=", std::chrono::seconds(60));
  ASSERT_TRUE(line) << line.error().ToString() << Slurp(dir_ + "/s3.err");
  std::string limits = Slurp("/proc/" + std::to_string(s3->pid()) + "/limits");
  auto at = limits.find("Max open files");
  ASSERT_NE(at, std::string::npos) << limits;
  std::istringstream fields(limits.substr(at + std::strlen("Max open files")));
  uint64_t soft = 0;
  fields >> soft;
  EXPECT_EQ(soft, want) << limits.substr(at, 80);
  s3->Stop();
}

// `shoal up --cache-size` and `shoal worker --cache-dir` without a size get the same capacity.
TEST_F(CliTest, CacheSizeHasOneDefault) {
  auto up = LaunchUp({"--ufs", ufs_, "--workers", "1", "--state-dir", state_}, dir_ + "/up1.err");
  ASSERT_TRUE(up.ready) << up.err();
  auto status = Shoal({"status", "--json", "--config", up.config});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("\"cache_capacity_bytes\":2147483648"), std::string::npos) << status.out;

  Subprocess::Options o;
  o.argv = {ShoalBinary(), "worker", "--config", state_ + "/worker.yaml", "--listen", "127.0.0.1:0", "--cache-dir",
            dir_ + "/lone-cache"};
  o.stderr_file = dir_ + "/lone.err";
  auto w = Subprocess::Start(o);
  ASSERT_TRUE(w) << w.error().ToString();
  auto line = w->WaitForLine("listening:", std::chrono::seconds(60));
  ASSERT_TRUE(line) << line.error().ToString() << Slurp(dir_ + "/lone.err");
  auto entry = ParseListeningLine(*line);
  ASSERT_TRUE(entry) << entry.error().ToString();
  // The config `shoal up` wrote carries its cluster secret: the worker asks for it.
  auto worker_cfg = LoadConfig(state_ + "/worker.yaml");
  ASSERT_TRUE(worker_cfg) << worker_cfg.error().ToString();
  EXPECT_FALSE(worker_cfg->cluster.secret.empty()) << "shoal up must protect its workers with a secret";
  EXPECT_FALSE(WorkerGet(entry->address, "/v1/status").has_value()) << "served without the cluster secret";
  auto body = WorkerGet(entry->address, "/v1/status", worker_cfg->cluster.secret);
  ASSERT_TRUE(body) << body.error().ToString();
  EXPECT_NE(body->find("\"cache_capacity_bytes\":2147483648"), std::string::npos) << *body;
  w->Stop();
}

// `shoal up --eviction NAME` gives every worker that policy; a name no policy
// has fails before anything starts, listing the ones there are.
TEST_F(CliTest, UpEvictionPicksTheWorkersPolicyAndRefusesUnknownNames) {
  auto bad = Shoal({"up", "--ufs", ufs_, "--workers", "1", "--state-dir", state_ + "-bad", "--eviction", "lruu"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--eviction"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("s3fifo"), std::string::npos) << "the error should list the policies: " << bad.err;

  auto up = LaunchUp({"--ufs", ufs_, "--workers", "1", "--state-dir", state_, "--eviction", "sieve"}, dir_ + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  auto worker_cfg = LoadConfig(state_ + "/worker.yaml");
  ASSERT_TRUE(worker_cfg) << worker_cfg.error().ToString();
  EXPECT_EQ(worker_cfg->worker.eviction, "sieve");
  auto cat = Shoal({"cat", "/data/train/small.txt", "--config", up.config});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "hello shoal\n");
}

// Item 8: secrets given with -o end up only in private files, and a ${NAME}
// reference is kept as written while the workers use the variable's value.
TEST_F(CliTest, SecretOptionsStayPrivateAndReferencesStayReferences) {
  auto s3 = S3rverProcess::Start();
  ASSERT_TRUE(s3) << s3.error().ToString();
  ASSERT_TRUE(s3->CreateBucket("secrets").ok());
  MountConfig direct;
  direct.path = "/data";
  direct.ufs = "s3://secrets/p/";
  direct.options = {{"endpoint", s3->endpoint()}, {"credentials", "anonymous"}};
  auto store = OpenUnderStore(direct);
  ASSERT_TRUE(store) << store.error().ToString();
  ASSERT_TRUE((*store)->Write("hello.txt", std::string_view("hello from s3\n")).ok());

  // A state dir left world-readable by an older run is made private.
  ASSERT_TRUE(fs::create_directories(state_));
  fs::permissions(state_, fs::perms(0755));
  const std::string secret = "not-in-any-file-" + std::to_string(::getpid());
  ::setenv("SHOAL_TEST_S3_SECRET", secret.c_str(), 1);
  auto up = LaunchUp({"--ufs", "s3://secrets/p/", "--workers", "1", "--state-dir", state_, "--cache-size", "64MiB", "-o",
                     "endpoint=" + s3->endpoint(), "-o", "access_key_id=" + std::string(S3rverProcess::kAccessKeyId),
                     "-o", "secret_access_key=${SHOAL_TEST_S3_SECRET}", "-o", "session_token=direct-token-value"},
                    dir_ + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  auto cat = Shoal({"cat", "--config", up.config, "/data/hello.txt"});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "hello from s3\n");
  // The worker read the store itself (the client did not fall back to it).
  auto cfg = LoadConfig(up.config);
  ASSERT_TRUE(cfg) << cfg.error().ToString();
  EXPECT_EQ(cfg->mounts.at(0).options.at("secret_access_key"), secret) << "expanded when loaded";
  auto read = WorkerMetricSum({cfg->cluster.workers.at(0).address}, "shoal_ufs_read_bytes_total");
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_GT(*read, 0);

  auto mode = [](const std::string& p) { return static_cast<int>(fs::status(p).permissions() & fs::perms::all); };
  EXPECT_EQ(mode(state_), 0700);
  for (const auto& f : {state_ + "/worker.yaml", state_ + "/shoal.yaml"}) {
    EXPECT_EQ(mode(f), 0600) << f;
    std::string text = Slurp(f);
    EXPECT_EQ(text.find(secret), std::string::npos) << f << " holds the secret's value:\n" << text;
    EXPECT_NE(text.find("${SHOAL_TEST_S3_SECRET}"), std::string::npos) << f << ":\n" << text;
    EXPECT_NE(text.find("direct-token-value"), std::string::npos) << f << ": a value given directly is copied";
  }
  up.proc.Stop();
  ::unsetenv("SHOAL_TEST_S3_SECRET");
}

TEST_F(CliTest, UpChecksThatAnS3StoreAnswersBeforeReady) {
  auto s3 = S3rverProcess::Start();
  ASSERT_TRUE(s3) << s3.error().ToString();
  ASSERT_TRUE(s3->CreateBucket("present").ok());
  int n = 0;
  auto up = [&](std::string ufs, std::vector<std::string> extra) {
    std::string s = dir_ + "/s" + std::to_string(n++);
    std::vector<std::string> args = {"--ufs", ufs, "--workers", "1", "--state-dir", s, "--cache-size", "64MiB"};
    if (ufs.starts_with("s3://")) args.insert(args.end(), {"-o", "credentials=anonymous"});  // s3rver's public buckets
    args.insert(args.end(), extra.begin(), extra.end());
    return LaunchUp(args, s + ".err");
  };
  auto expect_exit = [](Up& u, int code, const std::string& what) {
    std::string err = u.err();
    EXPECT_FALSE(u.ready) << "printed ready: though " << what;
    EXPECT_EQ(u.exit_code, code) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("--no-check"), std::string::npos) << err;
    return err;
  };
  // Refused connections: unreachable, exit 5, quickly.
  auto start = std::chrono::steady_clock::now();
  auto refused = up("s3://present/p/", {"-o", "endpoint=http://127.0.0.1:1"});
  expect_exit(refused, 5, "the endpoint refuses connections");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  // A bucket that does not exist: not found, exit 3, naming it.
  auto missing = up("s3://absent-bucket/p/", {"-o", "endpoint=" + s3->endpoint()});
  EXPECT_NE(expect_exit(missing, 3, "the bucket does not exist").find("absent-bucket"), std::string::npos);
  // A bucket that exists (an empty prefix is fine): ready.
  auto fine = up("s3://present/not-yet-written/", {"-o", "endpoint=" + s3->endpoint()});
  EXPECT_TRUE(fine.ready) << fine.err();
  fine.proc.Stop();
  // --no-check starts without asking: an offline start.
  auto offline = up("s3://present/p/", {"-o", "endpoint=http://127.0.0.1:1", "--no-check"});
  EXPECT_TRUE(offline.ready) << offline.err();
  offline.proc.Stop();
  // file:// too: a directory that does not exist is not found.
  auto nodir = up("file://" + dir_ + "/no-such-dir/", {});
  EXPECT_NE(expect_exit(nodir, 3, "the directory does not exist").find("no-such-dir"), std::string::npos);
}

TEST_F(CliTest, UpChecksThatAnAzureContainerAnswersBeforeReady) {
  auto az = AzuriteProcess::Start();
  ASSERT_TRUE(az) << az.error().ToString();
  ASSERT_TRUE(az->CreateContainer("present").ok());
  int n = 0;
  auto up = [&](std::string ufs, std::string key) {
    std::string s = dir_ + "/s" + std::to_string(n++);
    return LaunchUp({"--ufs", ufs, "--workers", "1", "--state-dir", s, "--cache-size", "64MiB", "-o",
                    "endpoint=" + az->blob_endpoint(), "-o", "account=" + std::string(AzuriteProcess::kAccount), "-o",
                    "key=" + key},
                   s + ".err");
  };
  // A well-formed key that is not the account's: denied, exit 4.
  std::string wrong = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmc=";
  auto denied = up("az://present/p/", wrong);
  std::string err = denied.err();
  EXPECT_FALSE(denied.ready);
  EXPECT_EQ(denied.exit_code, 4) << err;
  EXPECT_NE(err.find("permission denied"), std::string::npos) << err;
  EXPECT_EQ(err.find(wrong), std::string::npos) << "the key is never repeated: " << err;
  // A container that does not exist: exit 3, naming it.
  auto missing = up("az://absent/p/", AzuriteProcess::kKey);
  err = missing.err();
  EXPECT_FALSE(missing.ready);
  EXPECT_EQ(missing.exit_code, 3) << err;
  EXPECT_NE(err.find("container 'absent'"), std::string::npos) << err;
  auto fine = up("az://present/p/", AzuriteProcess::kKey);
  EXPECT_TRUE(fine.ready) << fine.err();
  fine.proc.Stop();
}

}  // namespace
}  // namespace shoal::testing
