// Failure handling end to end (issue 8): hung workers, foreign servers at a
// worker's address, a stalled under-store. Real `shoal worker` processes,
// s3rver, and the `shoal` CLI on loopback.
//
// Timings are asserted loosely (these run on loaded 2-core machines): what is
// checked is behaviour, e.g. that the first call fails over well before the
// call's deadline and that later calls never touch a frozen worker. The
// figures themselves come from bench/failover_bench.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cluster/hash_ring.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// An HTTP server that is not a Shoal worker: it answers every request with
// `404 Not Found` (no Shoal handshake) and closes the connection.
class ForeignServer {
 public:
  ForeignServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd_, 64);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    address_ = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
    thread_ = std::thread([this] { Loop(); });
  }
  ~ForeignServer() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    ::close(fd_);
  }
  const std::string& address() const { return address_; }
  int requests() const { return requests_.load(); }

 private:
  void Loop() {
    for (;;) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      timeval tv{5, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      ++requests_;
      static const std::string kReply =
          "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nNot Found";
      [[maybe_unused]] auto w = ::send(c, kReply.data(), kReply.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }

  int fd_;
  std::string address_;
  std::thread thread_;
  std::atomic<int> requests_{0};
};

struct CliRun {
  int exit_code = -1;
  std::string out, err;
  Clock::duration took{};
};

CliRun RunShoal(std::vector<std::string> args, const std::string& scratch) {
  static int n = 0;
  std::string errfile = scratch + "/cli-err-" + std::to_string(n++);
  Subprocess::Options o;
  o.argv = {ShoalBinary()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stderr_file = errfile;
  CliRun r;
  auto start = Clock::now();
  auto p = Subprocess::Start(o);
  if (!p) return r;
  int st = p->Wait(std::chrono::seconds(180));
  r.took = Clock::now() - start;
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = p->output();
  std::ifstream in(errfile);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

size_t CountLines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

// Waits (polling) until done() holds or `limit` passes.
template <typename F>
bool WaitUntil(F done, Clock::duration limit = 60s) {
  auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

// Captures the client's log lines (spdlog's default logger) while alive.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() {
    spdlog::default_logger()->flush();
    return out_.str();
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("failover");
    ASSERT_FALSE(dir_.empty());
    ufs_ = dir_ + "/ufs";
    fs::create_directories(ufs_);
  }
  void TearDown() override {
    client_.reset();
    cluster_.reset();
    s3_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  const std::string& AddFile(const std::string& rel, size_t n, uint64_t seed) {
    auto& data = files_[rel] = RandomBytes(n, seed);
    EXPECT_TRUE(WriteFile(ufs_ + "/" + rel, data).ok());
    return data;
  }

  void StartCluster(int workers, ClientConfig client, MountConfig mount) {
    ShoalCluster::Options o;
    o.workers = workers;
    o.mounts = {std::move(mount)};
    o.client = client;
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    auto cl = cluster_->NewClient();
    ASSERT_TRUE(cl) << cl.error().ToString();
    client_ = std::move(*cl);
  }

  // An s3rver with bucket "data", mounted at /data.
  MountConfig StartS3() {
    auto s3 = S3rverProcess::Start();
    EXPECT_TRUE(s3) << s3.error().ToString();
    if (!s3) return {};
    s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
    EXPECT_TRUE(s3_->CreateBucket("data").ok());
    MountConfig m;
    m.path = "/data";
    m.ufs = "s3://data/";
    m.options = {{"endpoint", s3_->endpoint()},
                 {"region", "us-east-1"},
                 {"access_key_id", S3rverProcess::kAccessKeyId},
                 {"secret_access_key", S3rverProcess::kSecretAccessKey}};
    return m;
  }

  // The files (of files_) whose metadata, and so first shard, `worker` owns.
  std::vector<std::string> OwnedBy(const std::vector<WorkerEntry>& workers, size_t worker) {
    std::vector<std::string> ids;
    for (const auto& w : workers) ids.push_back(w.id);
    HashRing ring(ids);
    std::vector<std::string> out;
    for (const auto& [rel, data] : files_) {
      if (ring.Owner(HashRing::MetaKey("/data/" + rel)) == worker) out.push_back(rel);
    }
    return out;
  }

  // A client over `workers` in place of the cluster's own list.
  std::unique_ptr<Client> ClientOver(const std::vector<WorkerEntry>& workers, const ClientConfig& cc) {
    auto config = ParseConfig(cluster_->ClientYaml(cc), "test");
    EXPECT_TRUE(config) << config.error().ToString();
    config->cluster.workers = workers;
    auto c = Client::FromYaml(ToYaml(*config), "test");
    EXPECT_TRUE(c) << c.error().ToString();
    return c ? std::move(*c) : nullptr;
  }

  std::string WriteConfig(const std::string& name, const std::vector<WorkerEntry>& workers, const ClientConfig& cc) {
    auto config = ParseConfig(cluster_->ClientYaml(cc), "test");
    EXPECT_TRUE(config);
    config->cluster.workers = workers;
    std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteFile(path, ToYaml(*config)).ok());
    return path;
  }

  static Result<std::string> ReadAll(Client& c, const std::string& path) {
    auto f = c.OpenFile(path);
    if (!f) return Err(f.error());
    std::string out((*f)->status().size, '\0');
    auto n = (*f)->Pread(0, std::span<char>(out.data(), out.size()));
    if (!n) return Err(n.error());
    out.resize(*n);
    return out;
  }

  std::string dir_, ufs_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<S3rverProcess> s3_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

// D: a hung worker costs the first call about one response timeout (not the
// call's deadline), and then nothing: calls skip it until a probe sees it again.
TEST_F(FailoverTest, FrozenWorkerIsSkippedUntilItAnswersAgain) {
  for (int i = 0; i < 30; ++i) AddFile("f" + std::to_string(i), 100'000 + 1000 * i, 100 + i);
  ClientConfig cc;  // client.timeout 30s, response_timeout 1.5s
  cc.down_backoff = 300ms;
  StartCluster(3, cc, FileMount(ufs_));
  auto owned = OwnedBy(cluster_->workers(), 0);
  ASSERT_GE(owned.size(), 3u) << "too few files owned by worker 0 for this test";
  // Warm: every worker has been used (short circuits discovered, pages cached).
  for (const auto& [rel, data] : files_) {
    auto got = ReadAll(*client_, "/data/" + rel);
    ASSERT_TRUE(got) << got.error().ToString();
  }
  ASSERT_EQ(client_->stats().worker_failures, 0u);

  ASSERT_TRUE(cluster_->Freeze(0));
  auto start = Clock::now();
  auto first = ReadAll(*client_, "/data/" + owned[0]);
  auto took = Clock::now() - start;
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_TRUE(*first == files_[owned[0]]);
  EXPECT_LT(took, cc.timeout / 2) << "the first call waited for the call's deadline, not the response timeout";
  const uint64_t failures = client_->stats().worker_failures;
  EXPECT_GE(failures, 1u);
  const uint64_t fallback = client_->stats().fallback_read_bytes;
  EXPECT_GT(fallback, 0u);

  // Later calls (reads, stats, a listing, a fresh client's worth of calls) never contact it.
  for (size_t i = 1; i < owned.size(); ++i) {
    auto got = ReadAll(*client_, "/data/" + owned[i]);
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_TRUE(*got == files_[owned[i]]);
    auto st = client_->Stat("/data/" + owned[i]);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->size, files_[owned[i]].size());
  }
  auto list = client_->List("/data");
  ASSERT_TRUE(list) << list.error().ToString();
  EXPECT_EQ(list->size(), files_.size());
  // Past several (failing) probes, calls still skip it.
  for (auto until = Clock::now() + 4 * cc.down_backoff; Clock::now() < until;) {
    ASSERT_TRUE(client_->Stat("/data/" + owned[1]));
  }
  EXPECT_EQ(client_->stats().worker_failures, failures) << "a later call contacted the frozen worker";
  EXPECT_GT(client_->stats().fallback_read_bytes, fallback);
  auto status = client_->ClusterStatus();
  ASSERT_EQ(status.size(), 3u);
  EXPECT_FALSE(status[0].up);
  EXPECT_NE(status[0].error.find("down"), std::string::npos) << status[0].error;
  EXPECT_TRUE(status[1].up && status[2].up);

  // Thawed, it is used again once the background probe has seen it.
  cluster_->Thaw(0);
  const std::string& probe_file = owned[0];
  bool served_by_worker = WaitUntil([&] {
    uint64_t before = client_->stats().fallback_read_bytes;
    auto got = ReadAll(*client_, "/data/" + probe_file);
    return got && *got == files_[probe_file] && client_->stats().fallback_read_bytes == before;
  });
  EXPECT_TRUE(served_by_worker) << "the thawed worker was not used again";
  EXPECT_EQ(client_->stats().worker_failures, failures);
}

// E: a foreign HTTP server at a worker's address is not a worker: its 404 is
// never passed through as "Not Found"; reads fall back to the store, or fail
// saying what is at that address.
TEST_F(FailoverTest, ForeignServerAtAWorkerAddressIsNotAWorker) {
  for (int i = 0; i < 12; ++i) AddFile("g" + std::to_string(i), 50'000 + i, 200 + i);
  StartCluster(1, {}, FileMount(ufs_));
  ForeignServer foreign;
  std::vector<WorkerEntry> workers = cluster_->workers();
  workers.push_back(WorkerEntry{foreign.address(), foreign.address()});
  auto owned = OwnedBy(workers, 1);
  ASSERT_GE(owned.size(), 1u);
  const std::string path = "/data/" + owned[0];
  const std::string expected = foreign.address() + " is not a Shoal worker (it answered HTTP 404 without the Shoal handshake)";

  // Fallback on: every read succeeds, from the store for the foreign server's share.
  auto client = ClientOver(workers, {});
  ASSERT_TRUE(client);
  for (const auto& [rel, data] : files_) {
    auto got = ReadAll(*client, "/data/" + rel);
    ASSERT_TRUE(got) << rel << ": " << got.error().ToString();
    EXPECT_TRUE(*got == data) << rel;
  }
  EXPECT_GT(client->stats().fallback_read_bytes, 0u);
  EXPECT_EQ(client->stats().worker_failures, 1u) << "the foreign server is down after one answer";
  auto st = client->Stat(path);
  ASSERT_TRUE(st) << st.error().ToString();
  auto list = client->List("/data");
  ASSERT_TRUE(list) << list.error().ToString();
  EXPECT_EQ(list->size(), files_.size());

  // Fallback off: the error says what is at that address.
  ClientConfig off;
  off.ufs_fallback = false;
  auto strict = ClientOver(workers, off);
  ASSERT_TRUE(strict);
  auto f = strict->OpenFile(path);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code(), Code::kUnavailable) << f.error().ToString();
  EXPECT_NE(f.error().message().find(expected), std::string::npos) << f.error().message();

  // And so does the CLI: one line, exit 5 (unreachable), not "Not Found" and 3.
  auto cat = RunShoal({"cat", "--config", WriteConfig("foreign-off.yaml", workers, off), path}, dir_);
  EXPECT_EQ(cat.exit_code, 5) << cat.err;
  EXPECT_EQ(CountLines(cat.err, "shoal: error: "), 1u) << cat.err;
  EXPECT_NE(cat.err.find(expected), std::string::npos) << cat.err;
  auto ok = RunShoal({"cat", "--config", WriteConfig("foreign-on.yaml", workers, {}), path}, dir_);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(ok.out == files_[owned[0]]);
}

// E: a Shoal worker answering at an address the config gives to another id
// (say a worker restarted on another's port) is not used either.
TEST_F(FailoverTest, WorkerWithAnotherIdIsNotUsed) {
  for (int i = 0; i < 12; ++i) AddFile("h" + std::to_string(i), 40'000 + i, 300 + i);
  StartCluster(2, {}, FileMount(ufs_));
  std::vector<WorkerEntry> workers = cluster_->workers();
  const std::string real_id = workers[1].id;
  workers[1].id = "somebody-else";
  auto owned = OwnedBy(workers, 1);
  ASSERT_GE(owned.size(), 1u);
  ClientConfig off;
  off.ufs_fallback = false;
  auto strict = ClientOver(workers, off);
  ASSERT_TRUE(strict);
  auto f = strict->OpenFile("/data/" + owned[0]);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code(), Code::kUnavailable);
  EXPECT_NE(f.error().message().find(workers[1].address + " is worker " + real_id + ", not somebody-else"),
            std::string::npos)
      << f.error().message();
  auto client = ClientOver(workers, {});
  ASSERT_TRUE(client);
  auto got = ReadAll(*client, "/data/" + owned[0]);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_TRUE(*got == files_[owned[0]]);
  EXPECT_GT(client->stats().fallback_read_bytes, 0u);
}

// 5: workers waiting on a stalled store heartbeat; they are not blamed, the
// store is not read twice, and every byte arrives once the store is back.
TEST_F(FailoverTest, StalledStoreIsWaitedForNotBlamedOrReadTwice) {
  MountConfig mount = StartS3();
  ASSERT_TRUE(s3_);
  const std::string data = RandomBytes(24 << 20, 5);
  {
    auto store = OpenUnderStore(mount);
    ASSERT_TRUE(store) << store.error().ToString();
    ASSERT_TRUE((*store)->Write("big.bin", data).ok());
  }
  ClientConfig cc;  // 30 s deadline: longer than the stall
  StartCluster(3, cc, mount);

  ASSERT_TRUE(s3_->Freeze());
  constexpr int kReaders = 8;
  std::atomic<int> good{0};
  std::vector<std::string> errors(kReaders);
  std::vector<std::jthread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      auto got = ReadAll(*client_, "/data/big.bin");
      if (!got) {
        errors[r] = got.error().ToString();
      } else if (*got == data) {
        ++good;
      } else {
        errors[r] = "wrong bytes";
      }
    });
  }
  std::this_thread::sleep_for(3500ms);  // the stall itself (readers are blocked on it), not synchronisation
  s3_->Thaw();
  readers.clear();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(good.load(), kReaders);
  EXPECT_EQ(client_->stats().worker_failures, 0u) << "a worker waiting on the store was blamed";
  EXPECT_EQ(client_->stats().fallback_read_bytes, 0u);
  auto ufs = cluster_->MetricSum("shoal_ufs_read_bytes_total");
  ASSERT_TRUE(ufs) << ufs.error().ToString();
  double store_bytes = *ufs + static_cast<double>(client_->stats().fallback_read_bytes);
  EXPECT_LE(store_bytes, 1.05 * static_cast<double>(data.size())) << "the store was read " << store_bytes << " bytes";
  for (const auto& w : client_->ClusterStatus()) EXPECT_TRUE(w.up) << w.address << ": " << w.error;
}

// 5: a worker that heartbeats until the call's deadline is still a healthy
// worker: the call fails with a timeout naming the store, without a fallback.
TEST_F(FailoverTest, WorkerStillWaitingAtTheDeadlineIsNotFailedOver) {
  MountConfig mount = StartS3();
  ASSERT_TRUE(s3_);
  const std::string data = RandomBytes(3 << 20, 6);
  {
    auto store = OpenUnderStore(mount);
    ASSERT_TRUE(store) << store.error().ToString();
    ASSERT_TRUE((*store)->Write("slow.bin", data).ok());
  }
  ClientConfig cc;
  cc.timeout = 4s;
  StartCluster(1, cc, mount);
  auto f = client_->OpenFile("/data/slow.bin");
  ASSERT_TRUE(f) << f.error().ToString();

  ASSERT_TRUE(s3_->Freeze());
  std::string buf(1 << 20, '\0');
  auto start = Clock::now();
  auto n = (*f)->Pread(1 << 20, std::span<char>(buf.data(), buf.size()));  // past the bytes the open brought
  auto took = Clock::now() - start;
  s3_->Thaw();
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code(), Code::kTimeout) << n.error().ToString();
  EXPECT_NE(n.error().message().find("still waiting on the under-store for /data/slow.bin"), std::string::npos)
      << n.error().message();
  EXPECT_LT(took, cc.timeout + 10s);
  EXPECT_EQ(client_->stats().worker_failures, 0u);
  EXPECT_EQ(client_->stats().fallback_read_bytes, 0u) << "the store was read directly as well";
  // The worker was not marked down: once the store is back it serves the read.
  auto again = (*f)->Pread(1 << 20, std::span<char>(buf.data(), buf.size()));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_TRUE(buf == data.substr(1 << 20, 1 << 20));
  EXPECT_EQ(client_->stats().fallback_read_bytes, 0u);
}

// 4: with the worker dead and the store stalled, a read fails within about the
// call's deadline with one clear message naming the store, and the worker's
// failure is logged once, not once per piece or call.
TEST_F(FailoverTest, DeadWorkerAndStalledStoreFailWithinTheDeadline) {
  MountConfig mount = StartS3();
  ASSERT_TRUE(s3_);
  const std::string data = RandomBytes(4 << 20, 7);
  {
    auto store = OpenUnderStore(mount);
    ASSERT_TRUE(store) << store.error().ToString();
    ASSERT_TRUE((*store)->Write("x.bin", data).ok());
    ASSERT_TRUE((*store)->Write("y.bin", "small").ok());
  }
  ClientConfig cc;
  cc.timeout = 4s;
  StartCluster(1, cc, mount);
  auto f = client_->OpenFile("/data/x.bin");
  ASSERT_TRUE(f) << f.error().ToString();
  const std::string dead = cluster_->workers()[0].address;
  cluster_->Kill(0);
  ASSERT_TRUE(s3_->Freeze());

  {
    LogCapture log;
    std::string buf(3 << 20, '\0');  // three pieces, read in parallel
    auto start = Clock::now();
    auto n = (*f)->Pread(1 << 20, std::span<char>(buf.data(), buf.size()));
    auto took = Clock::now() - start;
    ASSERT_FALSE(n);
    EXPECT_EQ(n.error().code(), Code::kTimeout) << n.error().ToString();
    EXPECT_LT(took, cc.timeout + 3s) << n.error().ToString();
    EXPECT_NE(n.error().message().find(s3_->endpoint()), std::string::npos) << n.error().message();
    EXPECT_NE(n.error().message().find("under-store"), std::string::npos) << n.error().message();
    EXPECT_EQ(n.error().message().find('\n'), std::string::npos);
    auto st = client_->Stat("/data/y.bin");  // a second call: the worker is known down, no new warning
    EXPECT_FALSE(st);
    // One warning about the worker (short-circuit notices aside), however many pieces and calls failed over.
    size_t about_worker = 0;
    std::istringstream lines(log.text());
    for (std::string line; std::getline(lines, line);) {
      about_worker += line.find("warn") != std::string::npos && line.find(dead) != std::string::npos &&
                      line.find("short-circuit") == std::string::npos;
    }
    EXPECT_EQ(about_worker, 1u) << log.text();
  }

  // The CLI: one error line naming the store, within about client.timeout.
  std::string config = WriteConfig("dead.yaml", cluster_->workers(), cc);
  auto cat = RunShoal({"cat", "--config", config, "/data/y.bin"}, dir_);
  s3_->Thaw();
  EXPECT_EQ(cat.exit_code, 5) << cat.err;
  EXPECT_LT(cat.took, cc.timeout + 10s);
  EXPECT_EQ(CountLines(cat.err, "shoal: error: "), 1u) << cat.err;
  EXPECT_NE(cat.err.find(s3_->endpoint()), std::string::npos) << cat.err;
  EXPECT_LE(CountLines(cat.err, "is down"), 1u) << cat.err;
  EXPECT_LE(std::count(cat.err.begin(), cat.err.end(), '\n'), 2) << cat.err;
}

}  // namespace
}  // namespace shoal::testing
