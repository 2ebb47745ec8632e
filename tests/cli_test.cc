// The `shoal` command line, end to end: `shoal up` with real workers, the client
// commands against it, and the one-line errors with their exit codes.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include "client/worker_connection.h"
#include "common/subprocess.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Run Shoal(std::vector<std::string> args) {
  static int n = 0;
  std::string errfile = fs::temp_directory_path() / ("shoal-cli-err-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  Subprocess::Options o;
  o.argv = {ShoalBinary()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stderr_file = errfile;
  Run r;
  auto p = Subprocess::Start(o);
  if (!p) return r;
  int st = p->Wait(std::chrono::seconds(120));
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = p->output();
  std::ifstream in(errfile);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  fs::remove(errfile);
  return r;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

  void StartUp(std::vector<std::string> extra = {}) {
    Subprocess::Options o;
    o.argv = {ShoalBinary(), "up", "--ufs", ufs_, "--workers", "2", "--state-dir", state_, "--cache-size", "64MiB"};
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

TEST_F(CliTest, UpServesClientCommandsAndStopsCleanly) {
  StartUp();
  EXPECT_NE(up_.output().find("mount: /data -> file://"), std::string::npos) << up_.output();

  auto cat = Shoal({"cat", "--config", config_, "/data/train/small.txt"});
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "hello shoal\n");

  auto big = Shoal({"cat", "--config", config_, "/data/train/big.bin"});
  EXPECT_EQ(big.exit_code, 0) << big.err;
  EXPECT_TRUE(big.out == big_);

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
  EXPECT_NE(down.err.find("unreachable"), std::string::npos) << down.err;
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

}  // namespace
}  // namespace shoal::testing
