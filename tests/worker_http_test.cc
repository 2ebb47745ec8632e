// A worker no client can crash or hang (issue 8): clients that leave mid-read,
// stop reading, trickle their headers or hoard idle connections; and the
// handshake every answer carries, with 102 heartbeats while the worker waits
// on its under-store. Real `shoal worker` processes, raw sockets, no sleeps:
// every wait is on a socket, a metric or a process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/file_text.h"
#include "tests/harness/raw_http.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kProtocolHeader = "X-Shoal-Protocol: 1\r\n";

class WorkerHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ufs_ = MakeTempDir("http");
    ASSERT_FALSE(ufs_.empty());
  }
  void TearDown() override {
    cluster_.reset();
    fs::remove_all(ufs_);
  }

  void Start(std::function<void(WorkerConfig&)> worker, std::vector<MountConfig> mounts = {}) {
    ShoalCluster::Options o;
    o.workers = 1;
    o.mounts = mounts.empty() ? std::vector<MountConfig>{FileMount(ufs_)} : mounts;
    o.worker = std::move(worker);
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    addr_ = cluster_->addresses()[0];
    id_ = cluster_->workers()[0].id;
  }

  // The 102 interim answer of this worker, byte for byte (docs/protocol.md).
  std::string Heartbeat() const {
    return "HTTP/1.1 102 Processing\r\nX-Shoal-Protocol: 1\r\nX-Shoal-Worker: " + id_ + "\r\n\r\n";
  }

  double Metric(const std::string& name) {
    auto v = cluster_->MetricSum(name);
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  }
  double Closed(const std::string& reason) {
    return Metric("shoal_http_connections_closed_total{reason=\"" + reason + "\"}");
  }

  // Polls `done` (a metric, a process) until it holds or `timeout` passes.
  static bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 60s) {
    auto deadline = Clock::now() + timeout;
    while (!done()) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  std::string VersionOf(const std::string& path) {
    auto body = cluster_->Get(0, "/v1/stat?path=" + path);
    EXPECT_TRUE(body) << body.error().ToString();
    if (!body) return "";
    auto v = body->find("\"version\":\"");
    return body->substr(v + 11, body->find('"', v + 11) - v - 11);
  }

  // A sparse file of `size` bytes in the UFS, its whole range read once so
  // every page is cached; returns the request for all of it.
  std::string CachedRange(const std::string& name, uint64_t size) {
    std::string path = ufs_ + "/" + name;
    int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    ::close(fd);
    std::string v = VersionOf("/data/" + name);
    std::string req = HttpGet("/v1/read?path=/data/" + name + "&version=" + v + "&size=" + std::to_string(size) +
                              "&offset=0&length=" + std::to_string(size));
    auto c = RawConnection::Connect(addr_);
    EXPECT_TRUE(c && c->Send(req));
    auto r = c ? c->ReadResponse(120s) : std::nullopt;
    EXPECT_TRUE(r && r->status == 200 && r->body.size() == size) << "warming the cache failed";
    return req;
  }

  size_t FdCount() {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator("/proc/" + std::to_string(cluster_->pid(0)) + "/fd", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    return n;
  }

  void ExpectHealthy() {
    EXPECT_TRUE(cluster_->running(0)) << "the worker died";
    auto h = cluster_->Get(0, "/v1/health");
    EXPECT_TRUE(h) << h.error().ToString();
  }

  std::string ufs_, addr_, id_;
  std::unique_ptr<ShoalCluster> cluster_;
};

// Issue 8 item A: `curl -s "$URL" | head -c 1` on a cached range killed the
// worker with SIGPIPE from sendfile. A reset from a client that had already
// half-closed its end (FIN, then RST) makes the worker's next write fail with
// EPIPE, which raises SIGPIPE; a plain reset fails with ECONNRESET, which
// does not. Both kinds, and a client killed mid-read.
TEST_F(WorkerHttpTest, ClientsLeavingMidReadDoNotKillTheWorker) {
  Start(nullptr);
  std::string req = CachedRange("big", 48ull << 20);
  for (int round = 0; round < 4; ++round) {
    auto c = RawConnection::Connect(addr_);
    ASSERT_TRUE(c && c->Send(req));
    if (round % 2 == 0) c->ShutdownWrite();
    ASSERT_TRUE(c->ReadUntil("\r\n\r\n", 30s));
    c->Close();  // megabytes unread: the worker's next write meets a reset
    EXPECT_TRUE(WaitUntil([&] { return !cluster_->running(0) || Metric("shoal_http_connections") <= 1; }));
    ASSERT_TRUE(cluster_->running(0)) << "the worker died when a client left mid-read (round " << round << ")";
  }
  // A client killed mid-read. The connection is made before the fork, so the
  // child only makes system calls.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  auto killed = RawConnection::Connect(addr_);
  ASSERT_TRUE(killed);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char byte;
    if (::send(killed->fd(), req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()) &&
        ::shutdown(killed->fd(), SHUT_WR) == 0 && ::recv(killed->fd(), &byte, 1, 0) == 1) {
      (void)!::write(ready[1], "r", 1);
    }
    for (;;) ::pause();  // until SIGKILL
  }
  killed->Close();  // the child holds the only descriptor now
  ::close(ready[1]);
  char r = 0;
  EXPECT_EQ(::read(ready[0], &r, 1), 1) << "the child never received a byte";
  ::close(ready[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  EXPECT_TRUE(WaitUntil([&] { return !cluster_->running(0) || Metric("shoal_http_connections") <= 1; }));
  ExpectHealthy();
  // And it still serves the range whole.
  auto c = RawConnection::Connect(addr_);
  ASSERT_TRUE(c && c->Send(req));
  auto whole = c->ReadResponse(120s);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->body.size(), 48ull << 20);
}

// A client that stops reading (its socket buffer full) loses the connection
// after worker.write_timeout, and the worker lets go of its page files.
TEST_F(WorkerHttpTest, ClientThatStopsReadingIsCutOffAndPageFilesAreReleased) {
  Start([](WorkerConfig& w) { w.write_timeout = 500ms; });
  std::string req = CachedRange("big", 48ull << 20);
  // Read warm once more: the page store now holds the page files open
  // between reads (PageStore::Options::open_page_files, far more than these
  // pages), and they count in `before`; the connection's own must all go.
  {
    auto warm = RawConnection::Connect(addr_);
    ASSERT_TRUE(warm && warm->Send(req));
    auto r = warm->ReadResponse(120s);
    ASSERT_TRUE(r && r->body.size() == 48ull << 20);
  }
  ExpectHealthy();
  size_t before = FdCount();
  auto c = RawConnection::Connect(addr_);
  ASSERT_TRUE(c && c->Send(req));  // and never read
  EXPECT_TRUE(WaitUntil([&] { return Closed("write_timeout") >= 1; }));
  // The connection's socket and its page fds are gone (a metrics request may
  // still hold one connection for a moment).
  EXPECT_TRUE(WaitUntil([&] { return FdCount() <= before + 1; })) << FdCount() << " fds, " << before << " before";
  EXPECT_TRUE(c->WaitClosed(60s));
  ExpectHealthy();
}

// sendfile(2) does not copy: the socket keeps the page cache pages it sent
// until the peer has read them. A block-file slot evicted and written with
// another page while its bytes still waited in a reader's socket changed
// those bytes under the reader. A block page is sent from the checked copy.
TEST_F(WorkerHttpTest, ABlockSlotReusedWhileItsBytesWaitInASocketDoesNotChangeThem) {
  Start([](WorkerConfig& w) { w.page_store = "blocks"; });
  const size_t size = 48 * 1024;  // one page, whole in the reader's receive buffer
  const std::string a(size, 'a'), b(size, 'b');
  ASSERT_TRUE(WriteFile(ufs_ + "/a", a).ok());
  ASSERT_TRUE(WriteFile(ufs_ + "/b", b).ok());
  auto read_request = [&](const std::string& name) {
    return HttpGet("/v1/read?path=/data/" + name + "&version=" + VersionOf("/data/" + name) +
                   "&size=" + std::to_string(size) + "&offset=0&length=" + std::to_string(size));
  };
  const std::string req_a = read_request("a");
  {
    auto warm = RawConnection::Connect(addr_);
    ASSERT_TRUE(warm && warm->Send(req_a));
    auto r = warm->ReadResponse(120s);
    ASSERT_TRUE(r && r->body == a);
  }
  ASSERT_TRUE(WaitUntil([&] { return Metric("shoal_cache_pages") == 1; })) << "a was not cached";

  // The cached page of a, sent to a reader that does not read it yet.
  auto held = RawConnection::Connect(addr_);
  ASSERT_TRUE(held && held->Send(req_a));
  ASSERT_TRUE(WaitUntil([&] {
    int queued = 0;
    return ::ioctl(held->fd(), FIONREAD, &queued) == 0 && static_cast<size_t>(queued) > size;
  })) << "the answer never reached the reader's socket";
  // a's slot freed, and b written into it (the free list gives back the slot freed last).
  {
    auto free = RawConnection::Connect(addr_);
    ASSERT_TRUE(free && free->Send("POST /v1/free?path=/data/a HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n"));
    auto r = free->ReadResponse(60s);
    ASSERT_TRUE(r && r->status == 200) << (r ? r->head + r->body : "no answer");
  }
  ASSERT_TRUE(WaitUntil([&] { return Metric("shoal_cache_pages") == 0; }));
  {
    const std::string req_b = read_request("b");  // its stat reads (and caches) its one page
    auto cold = RawConnection::Connect(addr_);
    ASSERT_TRUE(cold && cold->Send(req_b));
    auto r = cold->ReadResponse(120s);
    ASSERT_TRUE(r && r->body == b);
  }
  ASSERT_TRUE(WaitUntil([&] { return Metric("shoal_cache_pages") == 1; })) << "b was not cached";

  auto r = held->ReadResponse(120s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  ASSERT_EQ(r->body.size(), size);
  EXPECT_TRUE(r->body == a) << "the reader got " << std::count(r->body.begin(), r->body.end(), 'b')
                            << " bytes of the page written into the slot after its answer was sent";
}

// Issue 8 item C: slowloris connections stayed open for good.
TEST_F(WorkerHttpTest, SlowlorisIsCutOffAtTheHeaderDeadline) {
  Start([](WorkerConfig& w) { w.header_timeout = 500ms; });
  auto c = RawConnection::Connect(addr_);
  ASSERT_TRUE(c && c->Send("GET /v1/health HTTP/1.1\r\nHo"));
  bool closed = false;
  auto start = Clock::now();
  while (!closed && Clock::now() - start < 60s) {
    closed = c->WaitClosed(100ms);
    if (!closed) c->Send("s");  // a byte at a time: the head never completes
  }
  EXPECT_TRUE(closed) << "the slow client is still connected";
  EXPECT_GE(Closed("header_timeout"), 1);
  ExpectHealthy();
}

TEST_F(WorkerHttpTest, IdleConnectionIsClosedAfterTheIdleTimeout) {
  Start([](WorkerConfig& w) { w.idle_timeout = 500ms; });
  auto c = RawConnection::Connect(addr_);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->WaitClosed(60s));
  EXPECT_GE(Closed("idle_timeout"), 1);
  EXPECT_EQ(Closed("header_timeout"), 0);
}

// Idle connections beyond worker.max_connections: the oldest go first, and
// new clients (health, metrics) are still answered.
TEST_F(WorkerHttpTest, OverTheCapTheOldestIdleConnectionsAreClosed) {
  Start([](WorkerConfig& w) { w.max_connections = 8; });
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 20; ++i) {
    idle.push_back(RawConnection::Connect(addr_));
    ASSERT_TRUE(idle.back());
  }
  EXPECT_TRUE(idle.front()->WaitClosed(60s)) << "the oldest idle connection is still open";
  // The newest still serves.
  ASSERT_TRUE(idle.back()->Send(HttpGet("/v1/health")));
  auto r = idle.back()->ReadResponse(30s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  ExpectHealthy();
  EXPECT_GE(Closed("evicted_idle"), 12);
  EXPECT_LE(Metric("shoal_http_connections"), 9);
}

// 19,990 idle connections exhausted the worker's descriptors (ulimit -n
// 20000) and health timed out. Here the limit is 256 and the default cap
// (derived from it) keeps the worker answering.
TEST_F(WorkerHttpTest, IdleConnectionsCannotExhaustDescriptors) {
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_GE(old.rlim_cur, 1024u) << "this test needs 1024 descriptors of its own";
  rlimit low = old;
  low.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  Start(nullptr);  // the worker inherits the low limit
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 400; ++i) {
    idle.push_back(RawConnection::Connect(addr_));
    ASSERT_TRUE(idle.back());
  }
  ExpectHealthy();
  EXPECT_GE(Closed("evicted_idle"), 1);
  EXPECT_LE(Metric("shoal_http_connections"), 97);  // (256 - 64) / 2, and the one asking
}

// With a cap above what the descriptors allow, accept runs out of them: it
// closes the oldest idle connection to make room, and never spins.
TEST_F(WorkerHttpTest, RunningOutOfDescriptorsClosesIdleConnections) {
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_GE(old.rlim_cur, 1024u) << "this test needs 1024 descriptors of its own";
  rlimit low = old;
  low.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  Start([](WorkerConfig& w) { w.max_connections = 100'000; });
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 400; ++i) {
    idle.push_back(RawConnection::Connect(addr_));
    ASSERT_TRUE(idle.back());
  }
  ExpectHealthy();
  EXPECT_TRUE(idle.front()->WaitClosed(60s)) << "the oldest idle connection is still open";
}

// Every answer names the protocol and the worker: success, error, the
// server's own errors.
TEST_F(WorkerHttpTest, EveryAnswerCarriesTheHandshakeHeaders) {
  ASSERT_TRUE(WriteFile(ufs_ + "/f", "0123456789").ok());
  Start(nullptr);
  std::string v = VersionOf("/data/f");
  for (const std::string& request :
       {HttpGet("/v1/health"), HttpGet("/v1/stat?path=/data/f"), HttpGet("/v1/stat?path=/data/nope"),
        HttpGet("/v1/read?path=/data/f&version=" + v + "&size=10&offset=2&length=3"), HttpGet("/no/such/route"),
        std::string("DELETE /v1/stat HTTP/1.1\r\nHost: x\r\n\r\n"), std::string("GARBAGE\r\n\r\n")}) {
    auto c = RawConnection::Connect(addr_);
    ASSERT_TRUE(c && c->Send(request));
    auto r = c->ReadResponse(30s);
    ASSERT_TRUE(r) << request;
    EXPECT_EQ(r->Header("X-Shoal-Protocol"), "1") << r->head;
    EXPECT_EQ(r->Header("X-Shoal-Worker"), id_) << r->head;
  }
}

// A worker's routes are reachable by anyone who can reach its port. With
// cluster.secret set (`shoal up` always sets one), only requests that carry it
// are served: reads, stats, page pushes, load jobs. Health and metrics stay
// open for probes and scrapers.
TEST_F(WorkerHttpTest, WithAClusterSecretOnlyRequestsThatCarryItAreServed) {
  const std::string secret = "6b1f0c4a9e2d47f3a8c5b0e1d2f3a4b5";
  ASSERT_TRUE(WriteFile(ufs_ + "/f", "0123456789").ok());
  ShoalCluster::Options o;
  o.workers = 1;
  o.mounts = {FileMount(ufs_)};
  o.secret = secret;
  auto c = ShoalCluster::Start(o);
  ASSERT_TRUE(c) << c.error().ToString();
  cluster_ = std::move(*c);
  addr_ = cluster_->addresses()[0];

  // The cluster's own client carries the secret: it reads.
  auto client = cluster_->NewClient();
  ASSERT_TRUE(client) << client.error().ToString();
  auto st = (*client)->Stat("/data/f");
  ASSERT_TRUE(st) << st.error().ToString();
  const std::string v = st->version;

  auto answer = [&](const std::string& request) {
    auto conn = RawConnection::Connect(addr_);
    EXPECT_TRUE(conn && conn->Send(request));
    auto r = conn ? conn->ReadResponse(30s) : std::nullopt;
    EXPECT_TRUE(r) << request;
    return r ? *r : RawConnection::Response{};
  };
  const std::string read = "/v1/read?path=/data/f&version=" + v + "&size=10&offset=0&length=10";
  const std::string wrong = "Authorization: Bearer " + std::string(secret.size(), 'x') + "\r\n";
  for (const std::string& target : {read, std::string("/v1/stat?path=/data/f"), std::string("/v1/status"),
                                    std::string("/v1/load")}) {
    for (const std::string& extra : {std::string(), wrong, std::string("Authorization: Bearer short\r\n"),
                                     "Authorization: Basic " + secret + "\r\n"}) {
      auto r = answer(HttpGet(target, extra));
      EXPECT_EQ(r.status, 403) << target << " with '" << extra << "': " << r.head;
      EXPECT_NE(r.body.find("cluster.secret"), std::string::npos) << r.body;
      EXPECT_EQ(r.body.find(secret), std::string::npos) << "an answer must not show the secret";
    }
  }
  // A page push without the secret is refused before its body is looked at.
  auto push = answer("POST /v1/page?path=/data/f&version=" + v +
                     "&size=10&offset=0 HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nAAAAAAAAAA");
  EXPECT_EQ(push.status, 403) << push.head;
  EXPECT_GE(Metric("shoal_auth_refused_total"), 17);

  // With it, the same raw request is served.
  auto ok = answer(HttpGet(read, "Authorization: Bearer " + secret + "\r\n"));
  EXPECT_EQ(ok.status, 200) << ok.head << ok.body;
  EXPECT_EQ(ok.body, "0123456789");
  for (const std::string target : {"/v1/health", "/health", "/metrics"}) {
    EXPECT_EQ(answer(HttpGet(target)).status, 200) << target;
  }

  // A client configured with another secret gets an error that says what to fix.
  std::string yaml = cluster_->ClientYaml();
  auto at = yaml.find(secret);
  ASSERT_NE(at, std::string::npos) << yaml;
  yaml.replace(at, secret.size(), std::string(secret.size(), '0'));
  auto stranger = Client::FromYaml(yaml, "stranger");
  ASSERT_TRUE(stranger) << stranger.error().ToString();
  auto denied = (*stranger)->Stat("/data/g");
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code(), Code::kPermissionDenied) << denied.error().ToString();
  EXPECT_NE(denied.error().message().find("cluster.secret"), std::string::npos) << denied.error().ToString();
}

// Issue 30: an error a worker answers (a refusal here) is one log line and
// one recent error that carry the request id the client sent, so the user's
// error, the worker's log and `shoal status` name the same request.
TEST_F(WorkerHttpTest, ErrorAnswersCarryTheClientsRequestIdToTheLogAndTheStatus) {
  const std::string secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
  ShoalCluster::Options o;
  o.workers = 1;
  o.mounts = {FileMount(ufs_)};
  o.secret = secret;
  auto c = ShoalCluster::Start(o);
  ASSERT_TRUE(c) << c.error().ToString();
  cluster_ = std::move(*c);
  auto conn = RawConnection::Connect(cluster_->addresses()[0]);
  ASSERT_TRUE(conn && conn->Send(HttpGet("/v1/stat?path=/data/f", "X-Shoal-Request-Id: rid-7a3f\r\n")));
  auto r = conn->ReadResponse(30s);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 403);

  auto status = cluster_->Get(0, "/v1/status");
  ASSERT_TRUE(status) << status.error().ToString();
  auto j = nlohmann::json::parse(*status);
  ASSERT_GE(j["recent_errors"].size(), 1u) << *status;
  const auto& e = j["recent_errors"][0];
  EXPECT_EQ(e["request_id"], "rid-7a3f");
  EXPECT_EQ(e["kind"], "refused");
  EXPECT_NE(e["message"].get<std::string>().find("GET /v1/stat: HTTP 403"), std::string::npos) << e.dump();
  EXPECT_GE(j["errors_total"].get<uint64_t>(), 1u);
  ASSERT_EQ(j["cache_dirs"].size(), 1u) << *status;
  EXPECT_GT(j["cache_dirs"][0]["capacity_bytes"].get<uint64_t>(), 0u);

  const std::string log = (fs::path(cluster_->client_config_path()).parent_path() / "worker-0.log").string();
  auto text = [&] { return ReadFileText(log).value_or(""); };
  EXPECT_TRUE(WaitUntil([&] { return text().find("[request rid-7a3f]") != std::string::npos; }))
      << "no log line names the request: " << text();
  // A flood of refusals (a scanner without the secret) is one log line per
  // 10 s; each is still counted among the recent errors.
  for (int i = 0; i < 20; ++i) {
    auto again = RawConnection::Connect(cluster_->addresses()[0]);
    ASSERT_TRUE(again && again->Send(HttpGet("/v1/stat?path=/data/f", "X-Shoal-Request-Id: flood\r\n")));
    auto answer = again->ReadResponse(30s);
    ASSERT_TRUE(answer && answer->status == 403);
  }
  auto after = nlohmann::json::parse(cluster_->Get(0, "/v1/status").value_or("{}"));
  EXPECT_GE(after.value("errors_total", uint64_t{0}), 21u);
  size_t lines = 0;
  for (size_t at = 0; (at = text().find("refused GET /v1/stat", at)) != std::string::npos; ++at) ++lines;
  EXPECT_LE(lines, 2u) << text();
}

// Issue 8 item 5: a worker waiting on its store is alive. Clients that speak
// the protocol get 102 heartbeats until the answer; others get none.
TEST_F(WorkerHttpTest, HeartbeatsWhileTheUnderStoreIsSlow) {
  std::string object = RandomBytes(600'000, 8);
  HeldS3 s3(object);
  Start(
      [](WorkerConfig& w) {
        w.heartbeat_interval = 50ms;
        w.readahead = 0;
      },
      {s3.Mount("/s3")});

  // A stat held by the store: the plain client waits in silence...
  auto plain = RawConnection::Connect(addr_);
  ASSERT_TRUE(plain && plain->Send(HttpGet("/v1/stat?path=/s3/obj")));
  ASSERT_TRUE(s3.WaitForRequests(1, 60s));
  // ...while one that speaks the protocol hears heartbeats.
  auto speaking = RawConnection::Connect(addr_);
  ASSERT_TRUE(speaking && speaking->Send(HttpGet("/v1/stat?path=/s3/obj", kProtocolHeader)));
  ASSERT_TRUE(speaking->ReadUntil(Heartbeat(), 60s, 2)) << speaking->received();
  s3.Release();
  auto first = plain->ReadResponse(60s);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200) << "a client without X-Shoal-Protocol got an interim answer";
  std::optional<RawConnection::Response> r;
  int beats = 0;
  while ((r = speaking->ReadResponse(60s)) && r->status == 102) ++beats;
  ASSERT_TRUE(r);
  EXPECT_GE(beats, 2);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, first->body);
  auto v = first->body.find("\"version\":\"");
  ASSERT_NE(v, std::string::npos) << first->body;
  std::string version = first->body.substr(v + 11, first->body.find('"', v + 11) - v - 11);

  // A read that needs the store: heartbeats until every byte is at hand.
  s3.Hold();
  size_t seen = s3.requests();
  std::string read = HttpGet("/v1/read?path=/s3/obj&version=" + version + "&size=600000&offset=0&length=600000",
                             kProtocolHeader);
  auto reader = RawConnection::Connect(addr_);
  ASSERT_TRUE(reader && reader->Send(read));
  ASSERT_TRUE(s3.WaitForRequests(seen + 1, 60s));
  ASSERT_TRUE(reader->ReadUntil(Heartbeat(), 60s, 2)) << reader->received();
  s3.Release();
  while ((r = reader->ReadResponse(60s)) && r->status == 102) {
  }
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body == object);

  // A fetch that fails is an error status, not a 200 with a short body.
  std::string other_version = VersionOf("/s3/other");  // caches its first page only
  s3.Fail(true);
  auto failing = RawConnection::Connect(addr_);
  ASSERT_TRUE(failing && failing->Send(HttpGet("/v1/read?path=/s3/other&version=" + other_version +
                                                    "&size=600000&offset=0&length=600000",
                                                kProtocolHeader)));
  while ((r = failing->ReadResponse(60s)) && r->status == 102) {
  }
  ASSERT_TRUE(r) << "the answer broke off: " << failing->received().substr(0, 300);
  EXPECT_GE(r->status, 500) << r->head;
  EXPECT_NE(r->body.find("\"code\""), std::string::npos) << r->body;
  EXPECT_EQ(r->Header("X-Shoal-Worker"), id_);
}

// At the cap with every connection busy, a new one is answered 503 at once.
TEST_F(WorkerHttpTest, NewConnectionOverTheCapWithNoneIdleIsAnswered503) {
  HeldS3 s3(RandomBytes(1000, 9));
  Start(
      [](WorkerConfig& w) {
        w.max_connections = 3;
        w.heartbeat_interval = 50ms;
      },
      {s3.Mount("/s3")});
  std::vector<std::unique_ptr<RawConnection>> busy;
  for (int i = 0; i < 3; ++i) {
    busy.push_back(RawConnection::Connect(addr_));
    ASSERT_TRUE(busy.back() && busy.back()->Send(HttpGet("/v1/stat?path=/s3/obj", kProtocolHeader)));
    ASSERT_TRUE(busy.back()->ReadUntil(Heartbeat(), 60s)) << "request " << i << " is not being served";
  }
  auto extra = RawConnection::Connect(addr_);
  ASSERT_TRUE(extra);
  auto r = extra->ReadResponse(60s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("worker.max_connections"), std::string::npos) << r->body;
  EXPECT_EQ(r->Header("X-Shoal-Worker"), id_);
  s3.Release();
  for (auto& c : busy) {
    std::optional<RawConnection::Response> answer;
    while ((answer = c->ReadResponse(60s)) && answer->status == 102) {
    }
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200);
  }
  busy.clear();
  EXPECT_GE(Closed("over_limit"), 1);
}

TEST(WorkerLimitsConfig, ParseRoundTripAndRejectZero) {
  auto c = ParseConfig(
      "worker:\n  header_timeout: 2s\n  idle_timeout: 30s\n  write_timeout: 5s\n  heartbeat_interval: 100ms\n"
      "  max_connections: 64\n",
      "limits.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->worker.header_timeout, 2s);
  EXPECT_EQ(c->worker.idle_timeout, 30s);
  EXPECT_EQ(c->worker.write_timeout, 5s);
  EXPECT_EQ(c->worker.heartbeat_interval, 100ms);
  EXPECT_EQ(c->worker.max_connections, 64u);
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(ToYaml(*again), ToYaml(*c));
  auto zero = ParseConfig("worker:\n  heartbeat_interval: 0s\n", "zero.yaml");
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message().find("worker.heartbeat_interval"), std::string::npos) << zero.error().message();
}

}  // namespace
}  // namespace shoal::testing
