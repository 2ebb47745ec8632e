// `shoal up` as a supervisor: workers that crash come back (every time, each
// restart logged), and a cluster stopped and started again on the same state
// and cache dirs comes back warm, on its old ports or on new ones.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "tests/cli_helpers.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Polls `done` every 20 ms until it holds or `timeout` passes.
template <typename F>
bool WaitFor(F done, std::chrono::seconds timeout = std::chrono::seconds(60)) {
  auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The pid of the `shoal worker` caching in `cache_dir`, or -1.
pid_t WorkerPid(const std::string& cache_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::string cmdline = Slurp(e.path() / "cmdline");
    std::vector<std::string> args;
    for (size_t i = 0, j; i < cmdline.size(); i = j + 1) {
      j = cmdline.find('\0', i);
      if (j == std::string::npos) j = cmdline.size();
      args.push_back(cmdline.substr(i, j - i));
    }
    bool worker = std::find(args.begin(), args.end(), "worker") != args.end();
    auto dir = std::find(args.begin(), args.end(), "--cache-dir");
    if (worker && dir != args.end() && dir + 1 != args.end() && *(dir + 1) == cache_dir) return std::stoi(name);
  }
  return -1;
}

class UpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("up");
    ASSERT_FALSE(dir_.empty());
    ufs_ = dir_ + "/ufs";
    state_ = dir_ + "/state";
  }
  void TearDown() override {
    up_.proc.Stop();
    fs::remove_all(dir_);
  }

  void AddFile(const std::string& name, size_t size, uint64_t seed) {
    files_[name] = RandomBytes(size, seed);
    ASSERT_TRUE(WriteFile(ufs_ + "/" + name, files_[name]).ok());
  }

  void Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--ufs",      ufs_,    "--workers",   "3",      "--state-dir", state_,
                                     "--cache-size", "256MiB", "--page-size", "256KiB", "--shard-size", "1MiB"};
    args.insert(args.end(), extra.begin(), extra.end());
    up_ = LaunchUp(args, dir_ + "/up-" + std::to_string(starts_++) + ".err");
    ASSERT_TRUE(up_.ready) << up_.err();
    auto cfg = LoadConfig(up_.config);
    ASSERT_TRUE(cfg) << cfg.error().ToString();
    started_ = cfg->cluster.workers;
    ASSERT_EQ(started_.size(), 3u) << up_.proc.output();
  }

  void Stop() {
    up_.proc.Signal(SIGTERM);
    int st = up_.proc.Wait(std::chrono::seconds(60));
    ASSERT_TRUE(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) << st << up_.err();
  }

  std::vector<std::string> Addresses() const {
    std::vector<std::string> out;
    for (const auto& w : started_) out.push_back(w.address);
    return out;
  }

  // Reads every file through a client of the running cluster.
  void ReadEverything() {
    auto c = Client::Open(up_.config);
    ASSERT_TRUE(c) << c.error().ToString();
    for (const auto& [name, data] : files_) {
      auto f = (*c)->OpenFile("/data/" + name);
      ASSERT_TRUE(f) << name << ": " << f.error().ToString();
      std::string got(data.size() + 1, '\0');
      size_t done = 0;
      while (done < got.size()) {
        auto n = (*f)->Read(std::span<char>(got.data() + done, got.size() - done));
        ASSERT_TRUE(n) << name << ": " << n.error().ToString();
        if (*n == 0) break;
        done += *n;
      }
      got.resize(done);
      EXPECT_TRUE(got == data) << name << " read back different bytes";
    }
  }

  // Waits until every page read has reached the workers' disks (small files'
  // first pages are written at idle priority, after the read returns).
  void WaitForCacheFill() {
    uint64_t total = 0;
    for (const auto& [name, data] : files_) total += data.size();
    auto c = Client::Open(up_.config);
    ASSERT_TRUE(c) << c.error().ToString();
    EXPECT_TRUE(WaitFor([&] {
      uint64_t used = 0;
      for (const auto& w : (*c)->ClusterStatus()) used += w.cache_used_bytes;
      return used >= total;
    })) << "the cache never held the " << total << " bytes read";
  }

  // Started, read, stopped, `between` run, started again, read again:
  // returns the under-store bytes the workers read for the second round.
  // `extra`: more `shoal up` flags, both times.
  double ReadAfterRestart(const std::function<void()>& between, const std::vector<std::string>& extra = {}) {
    AddFile("big.bin", 5 * 1024 * 1024 + 4321, 1);
    for (int i = 0; i < 12; ++i) AddFile("small/f" + std::to_string(i), 1000 + i * 23'456, 10 + i);
    Start(extra);
    ReadEverything();
    WaitForCacheFill();
    auto first = WorkerMetricSum(Addresses(), "shoal_ufs_read_bytes_total");
    EXPECT_TRUE(first && *first > 0) << "the first round must read the under-store";
    before_ = started_;
    Stop();
    between();
    Start(extra);
    EXPECT_EQ(started_.size(), before_.size());
    for (size_t i = 0; i < started_.size() && i < before_.size(); ++i) {
      EXPECT_EQ(started_[i].id, before_[i].id) << "worker " << i << " lost its id";
    }
    ReadEverything();
    auto second = WorkerMetricSum(Addresses(), "shoal_ufs_read_bytes_total");
    EXPECT_TRUE(second) << second.error().ToString();
    return second ? *second : -1;
  }

  std::string dir_, ufs_, state_;
  std::map<std::string, std::string> files_;
  Up up_;
  std::vector<WorkerEntry> started_, before_;  // cluster.workers of the client config
  int starts_ = 0;
};

// Item A: six crashes used to leave a worker down for good.
TEST_F(UpTest, CrashedWorkerComesBackEveryTimeAndEachRestartIsLogged) {
  ASSERT_TRUE(WriteFile(ufs_ + "/hello.txt", "hello\n").ok());
  Start({"--max-restart-delay", "1s"});
  const std::string cache0 = state_ + "/cache/worker-0";
  const std::string address = started_[0].address;
  pid_t pid = WorkerPid(cache0);
  constexpr int kCrashes = 7;
  for (int k = 1; k <= kCrashes; ++k) {
    ASSERT_GT(pid, 1) << "no worker 0 before crash " << k;
    ASSERT_EQ(::kill(pid, SIGKILL), 0) << "crash " << k;
    // Back: a new process for worker 0, serving on its address.
    pid_t next = -1;
    ASSERT_TRUE(WaitFor([&] {
      next = WorkerPid(cache0);
      return next > 1 && next != pid && WorkerGet(address, "/v1/health").has_value();
    })) << "worker 0 did not come back after crash " << k << ":\n" << up_.err();
    pid = next;
    std::string back = "worker 0 is back (restart " + std::to_string(k) + "): " + started_[0].id + "@" + address +
                       ", pid " + std::to_string(pid);
    EXPECT_TRUE(WaitFor([&] { return up_.err().find(back) != std::string::npos; }, std::chrono::seconds(10)))
        << "no '" << back << "' in:\n" << up_.err();
  }
  std::string err = up_.err();
  EXPECT_EQ(CountLines(err, "was killed by signal 9 (SIGKILL); restarting it in"), kCrashes) << err;
  EXPECT_EQ(CountLines(err, "log: " + state_ + "/worker-0.log"), kCrashes) << err;
  EXPECT_EQ(CountLines(err, "worker 1"), 0) << "only worker 0 crashed:\n" << err;
  auto cat = Shoal({"cat", "--config", up_.config, "/data/hello.txt"});
  EXPECT_EQ(cat.out, "hello\n") << cat.err;
}

// Item G: stopped and started again on the same state dir, the workers take
// their old ports and the cluster is warm: no byte comes from the under-store.
TEST_F(UpTest, StartedAgainOnTheSameStateDirTakesItsPortsAndIsWarm) {
  double ufs_bytes = ReadAfterRestart([] {});
  for (size_t i = 0; i < started_.size(); ++i) {
    EXPECT_EQ(started_[i].address, before_[i].address) << "worker " << i << " changed its port";
  }
  EXPECT_EQ(ufs_bytes, 0) << "the restarted cluster read the under-store again";
}

// With `--page-store blocks` the pages sit in block files (no page file is
// created), and a restart rebuilds the index from the slot headers: warm.
TEST_F(UpTest, WithBlockFilesARestartIsWarmAndNoPageFileIsCreated) {
  double ufs_bytes = ReadAfterRestart([] {}, {"--page-store", "blocks"});
  EXPECT_EQ(ufs_bytes, 0) << "the restarted cluster read the under-store again";
  size_t page_files = 0, block_files = 0;
  for (const auto& e : fs::recursive_directory_iterator(state_ + "/cache")) {
    if (e.path().extension() == ".pg") ++page_files;
    if (e.path().extension() == ".blk") ++block_files;
  }
  EXPECT_EQ(page_files, 0u);
  EXPECT_GT(block_files, 0u);
}

// The same with the old ports taken by someone else: the workers get new
// ports, but keep their ids, so the ring and the cache still match.
TEST_F(UpTest, StartedAgainWithItsPortsTakenIsStillWarm) {
  std::vector<int> holders;
  double ufs_bytes = ReadAfterRestart([&] {
    for (const auto& w : before_) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(std::stoi(w.address.substr(w.address.rfind(':') + 1))));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << w.address << ": " << std::strerror(errno);
      EXPECT_EQ(::listen(fd, 1), 0);
      holders.push_back(fd);
    }
  });
  for (size_t i = 0; i < started_.size(); ++i) {
    EXPECT_NE(started_[i].address, before_[i].address) << "worker " << i << " got a taken port";
  }
  EXPECT_EQ(ufs_bytes, 0) << "the restarted cluster read the under-store again";
  EXPECT_NE(up_.err().find("using a free port"), std::string::npos) << up_.err();
  for (int fd : holders) ::close(fd);
}

}  // namespace
}  // namespace shoal::testing
