// Cached-only opens (OpenCachedOnly, local_wire kOpenCached), which
// the S3 endpoint makes on its I/O threads: answered by a worker on this host
// from what it holds at that moment, never from the under-store (s3rver
// here), and bounded when the worker does not answer; a changed object is
// still seen once the mount's ttl has passed (/ttl; /data is immutable).
// Answers the worker leases are held by the client and used again without
// asking it, until anything changes there (its epoch moves), the worker is
// gone, or the lease ends; the reads served from them reach the worker as hits.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/client_internal.h"
#include "client/local_reader.h"
#include "common/local_wire.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

using namespace std::chrono_literals;

class CachedOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s3 = S3rverProcess::Start();
    ASSERT_TRUE(s3) << s3.error().ToString();
    s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
    ASSERT_TRUE(s3_->CreateBucket("cached").ok());
    MountConfig m;
    m.path = "/data";
    m.ufs = "s3://cached/data/";
    m.options = s3_->MountOptions();
    m.consistency = Consistency::kImmutable;
    auto ufs = OpenUnderStore(m);
    ASSERT_TRUE(ufs) << ufs.error().ToString();
    ufs_ = *ufs;
    // The same objects under /ttl, revalidated after 1 s.
    MountConfig ttl = m;
    ttl.path = "/ttl";
    ttl.consistency = Consistency::kTtl;
    ttl.ttl = 1s;
    ShoalCluster::Options o;
    o.workers = 1;  // on this host: every open can short-circuit
    o.mounts = {m, ttl};
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    auto cl = cluster_->NewClient();
    ASSERT_TRUE(cl) << cl.error().ToString();
    client_ = std::move(*cl);
  }

  void TearDown() override {
    client_.reset();
    cluster_.reset();
    s3_.reset();
  }

  void Put(const std::string& key, const std::string& data) { ASSERT_TRUE(ufs_->Write(key, data).ok()); }

  // A write through Shoal from another client (another process's, as it were).
  void WriteThroughShoal(const std::string& path, const std::string& data) {
    auto writer = cluster_->NewClient();
    ASSERT_TRUE(writer) << writer.error().ToString();
    auto w = (*writer)->Create(path);
    ASSERT_TRUE(w) << w.error().ToString();
    ASSERT_TRUE((*w)->Write(data).ok());
    ASSERT_TRUE((*w)->Close());
  }

  double Metric(const std::string& name) {
    auto v = cluster_->MetricSum(name);
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  }

  // The whole file through a usual open (which asks the store when it must).
  std::string Read(const std::string& path) { return ReadWhole(*client_, path); }

  // The whole file through a cached-only open, or "<error: ...>".
  std::string ReadCached(const std::string& path, Code* code = nullptr) {
    return ReadWhole(OpenCachedOnly(*client_, path), code);
  }

  // The worker's short-circuit socket and token, from its status.
  std::pair<std::string, std::string> LocalEndpoint() {
    auto status = cluster_->Get(0, "/v1/status");
    EXPECT_TRUE(status) << status.error().ToString();
    if (!status) return {};
    auto j = nlohmann::json::parse(*status);
    EXPECT_FALSE(j.value("local_socket", "").empty()) << *status;
    return {j.value("local_socket", ""), j.value("local_token", "")};
  }

  // A raw connection to the short-circuit socket (no hello sent), or -1.
  static int ConnectLocal(const std::string& socket) {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    if (fd < 0) return -1;
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, socket.data(), std::min(socket.size(), sizeof a.sun_path - 1));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ADD_FAILURE() << "connect " << socket << ": " << std::strerror(errno);
      ::close(fd);
      return -1;
    }
    return fd;
  }

  std::unique_ptr<S3rverProcess> s3_;
  std::shared_ptr<UnderStore> ufs_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

const std::string kOpensCached = "shoal_short_circuit_requests_total{kind=\"open_cached\"}";

TEST_F(CachedOpenTest, AnswersNotCachedForAColdObjectAndNeverAsksTheStore) {
  const std::string warm = RandomBytes(130 * 1024 + 7, 1), cold = RandomBytes(120 * 1024, 2);
  Put("warm.bin", warm);
  Put("cold.bin", cold);
  // A usual open finds the worker's short circuit and caches warm.bin.
  ASSERT_TRUE(Read("/data/warm.bin") == warm);
  const double ufs0 = Metric("shoal_ufs_requests_total"), asked0 = Metric(kOpensCached);

  Code code = Code::kOk;
  EXPECT_EQ(ReadCached("/data/cold.bin", &code).substr(0, 8), "<error: ");
  EXPECT_EQ(code, Code::kUnavailable);
  EXPECT_EQ(ReadCached("/data/no-such.bin", &code).substr(0, 8), "<error: ");
  EXPECT_EQ(code, Code::kUnavailable);
  EXPECT_EQ(Metric(kOpensCached) - asked0, 2) << "the worker was not asked";
  EXPECT_EQ(Metric("shoal_ufs_requests_total"), ufs0) << "a cached-only open asked the store";

  // Within the ttl the cached object comes whole, from the worker's page, with no store request.
  const uint64_t local0 = client_->stats().local_read_bytes;
  EXPECT_TRUE(ReadCached("/data/warm.bin", &code) == warm);
  EXPECT_EQ(code, Code::kOk);
  EXPECT_EQ(client_->stats().local_read_bytes - local0, warm.size());
  EXPECT_EQ(Metric("shoal_ufs_requests_total"), ufs0);

  // The cold object is served the usual way, and then cached-only too.
  EXPECT_TRUE(Read("/data/cold.bin") == cold);
  EXPECT_TRUE(ReadCached("/data/cold.bin", &code) == cold);
}

TEST_F(CachedOpenTest, AChangedObjectIsSeenOnceTheTtlHasPassed) {
  const std::string v1 = RandomBytes(100 * 1024, 3), v2 = RandomBytes(110 * 1024, 4);
  Put("x.bin", v1);
  ASSERT_TRUE(Read("/ttl/x.bin") == v1);
  Put("x.bin", v2);
  const auto changed = std::chrono::steady_clock::now();
  // The worker's stat of v1 is at most 1 s old by now. Cached-only opens may
  // give v1 until it is 1 s old, then must answer "not cached" (its stat is
  // no longer fresh); they never give anything else.
  Code code = Code::kOk;
  const auto deadline = changed + 60s;
  for (;;) {
    const auto before = std::chrono::steady_clock::now();
    std::string got = ReadCached("/ttl/x.bin", &code);
    if (code != Code::kOk) break;
    EXPECT_TRUE(got == v1) << "a cached-only open gave bytes of neither version";
    ASSERT_LT(before - changed, 1s) << "v1 was served past the mount's ttl";
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(20ms);  // pacing of the poll, not synchronisation
  }
  EXPECT_EQ(code, Code::kUnavailable);
  // The usual open revalidates and sees v2; cached-only opens then give v2
  // (polled: on a loaded machine the new stat too may age past 1 s between the two).
  for (;;) {
    ASSERT_TRUE(Read("/ttl/x.bin") == v2);
    std::string got = ReadCached("/ttl/x.bin", &code);
    if (code == Code::kOk) {
      EXPECT_TRUE(got == v2) << "a cached-only open gave v1 after the usual open saw v2";
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
  }
}

TEST_F(CachedOpenTest, AHungWorkerDoesNotHoldACachedOnlyOpen) {
  const std::string data = RandomBytes(64 * 1024, 5);
  Put("h.bin", data);
  ASSERT_TRUE(Read("/data/h.bin") == data);
  ASSERT_TRUE(cluster_->Freeze(0));
  const auto start = std::chrono::steady_clock::now();
  Code code = Code::kOk;
  ReadCached("/data/h.bin", &code);
  const auto took = std::chrono::steady_clock::now() - start;
  cluster_->Thaw(0);
  EXPECT_EQ(code, Code::kUnavailable);
  // The answer is bounded by LocalReader::kCachedOpenTimeout (250 ms), far
  // below client.timeout; the margin is for a loaded machine.
  EXPECT_LT(took, 10s);
  // After the pause the worker answers cached-only opens again (the poll waits out the pause).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string got;
  while ((got = ReadCached("/data/h.bin", &code)) != data) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << got.substr(0, 200);
    std::this_thread::sleep_for(50ms);
  }
  // Usual reads were never switched off by the timeout.
  EXPECT_TRUE(Read("/data/h.bin") == data);
}

// The length of a cached-only open is the client's word: nothing, one byte
// short of the file, the file, one past it, the most a uint64 holds; and a
// file whose pages are one more than a reply carries (local_wire::kMaxSegments
// pages of the harness's 256 KiB) is "not cached", one exactly that big is
// served whole. A client that leaves before its answer changes nothing.
TEST_F(CachedOpenTest, EveryLengthIsAnsweredWithinTheReplysBounds) {
  const uint64_t page = 256 * 1024, most = local_wire::kMaxSegments * page;
  const std::string small = RandomBytes(100 * 1024 + 7, 6), full = RandomBytes(most, 7), over = RandomBytes(most + 1, 8);
  Put("small.bin", small);
  Put("full.bin", full);
  Put("over.bin", over);
  ASSERT_TRUE(Read("/data/small.bin") == small);
  ASSERT_TRUE(Read("/data/full.bin") == full);
  ASSERT_TRUE(Read("/data/over.bin") == over);

  const auto [socket, token] = LocalEndpoint();
  ASSERT_FALSE(socket.empty());
  LocalReader reader(30s, 1s);
  const std::string worker = cluster_->addresses()[0];
  ASSERT_TRUE(reader.ClaimDiscovery(worker));
  reader.Discovered(worker, socket, token);

  const double ufs0 = Metric("shoal_ufs_requests_total");
  const uint64_t n = small.size();
  for (uint64_t length : {uint64_t{0}, n - 1, n, n + 1, std::numeric_limits<uint64_t>::max()}) {
    auto o = reader.OpenCached(worker, "/data/small.bin", length);
    ASSERT_TRUE(o) << "length " << length;
    EXPECT_EQ(o->prefix.size(), std::min(length, n)) << "length " << length;
    EXPECT_TRUE(small.starts_with(o->prefix)) << "length " << length;
  }
  auto whole = reader.OpenCached(worker, "/data/full.bin", std::numeric_limits<uint64_t>::max());
  ASSERT_TRUE(whole);
  EXPECT_TRUE(whole->prefix == full);
  EXPECT_FALSE(reader.OpenCached(worker, "/data/over.bin", std::numeric_limits<uint64_t>::max()))
      << "a reply of more pages than it may carry";
  EXPECT_EQ(Metric("shoal_ufs_requests_total"), ufs0) << "a cached-only open asked the store";

  // A client that asks and leaves before the answer: the worker goes on serving.
  for (int i = 0; i < 3; ++i) {
    int fd = ConnectLocal(socket);
    ASSERT_GE(fd, 0);
    local_wire::Request hello;
    hello.kind = local_wire::Kind::kHello;
    hello.path = token;
    local_wire::Request ask;
    ask.kind = local_wire::Kind::kOpenCached;
    ask.path = "/data/full.bin";
    ask.length = most;
    ASSERT_TRUE(local_wire::SendRecord(fd, local_wire::EncodeRequest(hello), {}).ok());
    ASSERT_TRUE(local_wire::SendRecord(fd, local_wire::EncodeRequest(ask), {}).ok());
    ::close(fd);
  }
  EXPECT_TRUE(cluster_->running(0));
  EXPECT_TRUE(ReadCached("/data/small.bin") == small);
}

const std::string kTouches = "shoal_short_circuit_requests_total{kind=\"touch\"}";

// A batch of reads served from held answers (kTouch) is a client's word:
// garbage is refused and the connection goes on; paths outside the mounts or
// not cached count nothing; counts and lengths at their maxima add no more
// than the bytes the worker holds of the file, once per entry and path; a
// client that leaves without its answer changes nothing.
TEST_F(CachedOpenTest, TouchBatchesAreCheckedAndBounded) {
  const std::string data = RandomBytes(70 * 1024 + 1, 17);
  Put("t.bin", data);
  ASSERT_TRUE(Read("/data/t.bin") == data);
  const auto [socket, token] = LocalEndpoint();
  ASSERT_FALSE(socket.empty());
  // One request and its reply (the fds that came with it closed).
  auto ask = [](int fd, const local_wire::Request& r) -> Result<local_wire::Reply> {
    SHOAL_RETURN_IF_ERROR(local_wire::SendRecord(fd, local_wire::EncodeRequest(r), {}));
    std::string bytes;
    std::vector<int> fds;
    Status st = local_wire::RecvRecord(fd, &bytes, &fds);
    for (int f : fds) ::close(f);
    if (!st.ok()) return Err(st);
    return local_wire::DecodeReply(bytes);
  };
  auto touch = [](std::vector<local_wire::Touch> t) {
    local_wire::Request r;
    r.kind = local_wire::Kind::kTouch;
    r.path = local_wire::EncodeTouches(t);
    return r;
  };
  int fd = ConnectLocal(socket);
  ASSERT_GE(fd, 0);
  local_wire::Request hello;
  hello.kind = local_wire::Kind::kHello;
  hello.path = token;
  auto greeted = ask(fd, hello);
  ASSERT_TRUE(greeted && greeted->code == 0);
  EXPECT_EQ(greeted->segments.size(), 1u) << "the hello passes the worker's epoch";

  const double hits0 = Metric("shoal_cache_hit_bytes_total");
  local_wire::Request garbage;
  garbage.kind = local_wire::Kind::kTouch;
  garbage.path = "not a batch";
  auto refused = ask(fd, garbage);
  ASSERT_TRUE(refused) << refused.error().ToString();
  EXPECT_NE(refused->code, 0);
  auto nothing = ask(fd, touch({{"/nomount/x", 1, 1}, {"/data/never-read.bin", 1 << 20, 5}}));
  ASSERT_TRUE(nothing) << "the connection goes on after a refused batch: " << nothing.error().ToString();
  EXPECT_EQ(nothing->code, 0);
  EXPECT_EQ(Metric("shoal_cache_hit_bytes_total"), hits0) << "reads of what is not cached counted";
  auto most = ask(fd, touch({{"/data/t.bin", UINT64_MAX, UINT32_MAX}}));
  ASSERT_TRUE(most) << most.error().ToString();
  EXPECT_EQ(most->code, 0);
  EXPECT_EQ(Metric("shoal_cache_hit_bytes_total") - hits0, static_cast<double>(data.size()))
      << "a client's count adds at most the bytes the worker holds of the file, once";
  // 1,000 entries of one path with the largest count (the review's case): still the file's bytes, once.
  const double hits1 = Metric("shoal_cache_hit_bytes_total");
  auto many = ask(fd, touch(std::vector<local_wire::Touch>(1000, {"/data/t.bin", UINT64_MAX, UINT32_MAX})));
  ASSERT_TRUE(many) << many.error().ToString();
  EXPECT_EQ(Metric("shoal_cache_hit_bytes_total") - hits1, static_cast<double>(data.size()));
  // A client that sends a batch and leaves without its answer.
  ASSERT_TRUE(local_wire::SendRecord(fd, local_wire::EncodeRequest(touch({{"/data/t.bin", 1, 1}})), {}).ok());
  ::close(fd);
  EXPECT_TRUE(cluster_->running(0));
  EXPECT_TRUE(ReadCached("/data/t.bin") == data);
}

TEST_F(CachedOpenTest, AHeldAnswerServesAgainWithoutAskingTheWorkerAndItsReadsCountAsHits) {
  const std::string data = RandomBytes(130 * 1024 + 3, 11);
  Put("held.bin", data);
  ASSERT_TRUE(Read("/data/held.bin") == data);
  const double asked0 = Metric(kOpensCached), hits0 = Metric("shoal_cache_hit_bytes_total");
  ASSERT_TRUE(ReadCached("/data/held.bin") == data);
  EXPECT_EQ(Metric(kOpensCached) - asked0, 1);
  constexpr int kAgain = 20;
  for (int i = 0; i < kAgain; ++i) ASSERT_TRUE(ReadCached("/data/held.bin") == data) << i;
  EXPECT_EQ(Metric(kOpensCached) - asked0, 1) << "a held answer was asked for again";
  // The reads from the held answer reach the worker (at the latest when the client goes).
  client_.reset();
  EXPECT_GE(Metric(kTouches), 1);
  // The held reads count as hits, though a client's report adds a file's bytes once per batch entry, not per read.
  EXPECT_GE(Metric("shoal_cache_hit_bytes_total") - hits0, 2 * static_cast<double>(data.size()));
  EXPECT_LE(Metric("shoal_cache_hit_bytes_total") - hits0, (kAgain + 1) * static_cast<double>(data.size()));
}

TEST_F(CachedOpenTest, AWriteThroughShoalEndsTheHeldAnswerAtOnce) {
  const std::string v1 = RandomBytes(120 * 1024, 12), v2 = RandomBytes(125 * 1024, 13);
  Put("w.bin", v1);
  ASSERT_TRUE(Read("/data/w.bin") == v1);
  ASSERT_TRUE(ReadCached("/data/w.bin") == v1);
  ASSERT_TRUE(ReadCached("/data/w.bin") == v1);  // held by now
  ASSERT_NO_FATAL_FAILURE(WriteThroughShoal("/data/w.bin", v2));
  // The write is acknowledged: no open of any kind may give v1 now.
  Code code = Code::kOk;
  std::string got = ReadCached("/data/w.bin", &code);
  EXPECT_TRUE(code != Code::kOk || got == v2) << "a held answer outlived a write through Shoal";
  EXPECT_TRUE(Read("/data/w.bin") == v2);
  EXPECT_TRUE(ReadCached("/data/w.bin") == v2);
}

TEST_F(CachedOpenTest, ARefreshEndsTheHeldAnswer) {
  const std::string data = RandomBytes(100 * 1024, 14);
  Put("d.bin", data);
  ASSERT_TRUE(Read("/data/d.bin") == data);
  ASSERT_TRUE(ReadCached("/data/d.bin") == data);
  const double asked0 = Metric(kOpensCached);
  ASSERT_TRUE(client_->Refresh("/data/d.bin", false, /*data=*/true).ok());
  Code code = Code::kOk;
  ReadCached("/data/d.bin", &code);
  EXPECT_EQ(code, Code::kUnavailable) << "the page file held by the client served a page the worker dropped with its stat";
  EXPECT_EQ(Metric(kOpensCached) - asked0, 1);
}

// Reads through the short circuit hold the pages their answers leased
// (local_wire.h, kRead): read again, they ask the worker nothing; once the
// worker drops the pages (its epoch moves), the held fds are not used again
// and the bytes still come right.
TEST_F(CachedOpenTest, HeldReadPagesServeAgainUntilTheWorkerDropsThem) {
  const std::string kReads = "shoal_short_circuit_requests_total{kind=\"read\"}";
  const std::string data = RandomBytes(3 * 1024 * 1024 + 5, 21);
  Put("big.bin", data);
  ASSERT_TRUE(Read("/data/big.bin") == data);  // cached by this read
  // Pages are held once the worker has checked them whole under a settled
  // identity (1 s after their write): read until a read asks nothing.
  bool held = false;
  for (auto deadline = std::chrono::steady_clock::now() + 30s; !held && std::chrono::steady_clock::now() < deadline;) {
    const double reads0 = Metric(kReads);
    ASSERT_TRUE(Read("/data/big.bin") == data);
    held = Metric(kReads) == reads0;
    if (!held) std::this_thread::sleep_for(100ms);  // polling: a page settles 1 s after its write
  }
  ASSERT_TRUE(held) << "no read was served from held pages";
  const double reads0 = Metric(kReads);
  ASSERT_TRUE(client_->Refresh("/data/big.bin", false, /*data=*/true).ok());
  ASSERT_TRUE(Read("/data/big.bin") == data);
  EXPECT_GE(Metric(kReads) - reads0, 1) << "pages the worker dropped were read from held fds";
}

TEST_F(CachedOpenTest, AHeldAnswerDoesNotOutliveItsWorker) {
  const std::string v1 = RandomBytes(90 * 1024, 15), v2 = RandomBytes(95 * 1024, 16);
  Put("r.bin", v1);
  ASSERT_TRUE(Read("/data/r.bin") == v1);
  ASSERT_TRUE(ReadCached("/data/r.bin") == v1);
  ASSERT_TRUE(ReadCached("/data/r.bin") == v1);  // held
  // The worker restarts (same port, same pages on disk, a new epoch) and
  // takes a write: the held answer, whose epoch nobody moves any more, must
  // not give v1. (A worker gone within LocalReader::kLeaseContact of its last
  // answer is the window this bounds: the wait below runs past it.)
  ASSERT_TRUE(cluster_->Restart(0).ok());
  ASSERT_NO_FATAL_FAILURE(WriteThroughShoal("/data/r.bin", v2));
  const auto past = std::chrono::steady_clock::now() + LocalReader::kLeaseContact;
  while (std::chrono::steady_clock::now() < past) std::this_thread::sleep_for(10ms);  // a bound in time, not a sync
  Code code = Code::kOk;
  std::string got = ReadCached("/data/r.bin", &code);
  EXPECT_TRUE(code != Code::kOk || got == v2) << "a held answer outlived its worker";
  EXPECT_TRUE(Read("/data/r.bin") == v2);
}

}  // namespace
}  // namespace shoal::testing
