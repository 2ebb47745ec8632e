// The short-circuit pair: LocalServer (worker side) and LocalReader (client
// side) over a real UNIX socket, with a handler standing in for the page store
// that serves real page files (cache/page_format.h).
#include "worker/local_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/page_format.h"
#include "client/local_reader.h"
#include "common/metrics.h"
#include "common/shared_epoch.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kPage = 4096;
constexpr uint32_t kChunk = 1024;

class LocalServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-local-test.XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    dir_ = tmpl;
    socket_ = dir_ + "/w.sock";
    // The test file as page files of kPage bytes.
    data_.resize(3 * kPage + 123);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>('a' + i % 23);
    for (uint64_t p = 0; p * kPage < data_.size(); ++p) {
      std::string page = data_.substr(p * kPage, kPage);
      std::string header = page_format::EncodeHeader(PageKey{"/data/f", "v1", p * kPage}, page, kChunk);
      header_lens_.push_back(header.size());
      std::ofstream(PageFile(p), std::ios::binary) << header << page;
      int fd = ::open(PageFile(p).c_str(), O_RDONLY | O_CLOEXEC);
      ids_.push_back(page_format::IdentityOf(fd));  // as the worker's check of the whole page would record it
      ::close(fd);
    }
  }
  std::string PageFile(uint64_t p) const { return dir_ + "/page-" + std::to_string(p); }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  // Serves the first `cached_pages_` pages of the range from the page file.
  local_wire::Reply Handle(const local_wire::Request& r, std::vector<PageRef>* pages) {
    // A client holding pages reports in now and then (kLeaseContact); not a request for bytes.
    if (r.kind == local_wire::Kind::kTouch) return {};
    ++requests_;
    local_wire::Reply out;
    if (lease_) {  // as the worker leases a read answer (local_wire.h, "Leases")
      out.epoch = epoch_.value();
      out.lease_ns = 1'000'000'000;
    }
    if (r.path != "/data/f") {
      out.code = static_cast<int32_t>(Code::kNotFound);
      out.message = "no such file";
      return out;
    }
    uint64_t end = std::min(r.offset + r.length, static_cast<uint64_t>(data_.size()));
    for (uint64_t pos = r.offset; pos < end && pos < cached_pages_ * kPage;) {
      uint64_t page = pos / kPage, len = std::min(end, (page + 1) * kPage) - pos;
      uint64_t header = header_lens_[page];
      int fd = ::open(PageFile(page).c_str(), O_RDONLY | O_CLOEXEC);
      pages->emplace_back(fd, header + pos % kPage, static_cast<uint32_t>(len));
      const uint64_t page_len = std::min<uint64_t>(kPage, data_.size() - page * kPage);
      local_wire::Segment seg{header + pos % kPage, len, static_cast<uint32_t>(header),
                              lease_ ? static_cast<uint32_t>(page_len) : 0u};
      if (lease_) {  // the identity under which the page "checked" (ids_), as worker.verify: once passes it
        seg.verified_dev = ids_[page].dev;
        seg.verified_ino = ids_[page].ino;
        seg.verified_ctime_ns = ids_[page].ctime_ns;
        seg.verified_size = ids_[page].size;
      }
      out.segments.push_back(seg);
      pos += len;
    }
    return out;
  }

  void StartServer(const std::string& token, std::chrono::milliseconds hello_deadline = 5s) {
    auto s = LocalServer::Start(
        socket_, token, [this](const local_wire::Request& r, std::vector<PageRef>* p) { return Handle(r, p); },
        epoch_.fd(), hello_deadline);
    ASSERT_TRUE(s) << s.error().ToString();
    server_ = std::move(*s);
  }

  // What the client does with a worker's /v1/status answer.
  void Discover(const std::string& socket, const std::string& token, const std::string& worker = "w") {
    ASSERT_TRUE(reader_.ClaimDiscovery(worker));
    reader_.Discovered(worker, socket, token);
  }

  uint64_t Read(uint64_t offset, std::string* out, const std::string& path = "/data/f",
                const std::string& worker = "w") {
    return reader_.Read(worker, path, "v1", data_.size(), offset, std::span<char>(out->data(), out->size()));
  }

  std::string dir_, socket_, data_;
  std::vector<uint64_t> header_lens_;
  std::vector<page_format::FileIdentity> ids_;
  uint64_t cached_pages_ = 4;
  bool lease_ = false;  // read answers carry the epoch and a lease
  SharedEpoch epoch_;
  std::atomic<int> requests_{0};
  std::unique_ptr<LocalServer> server_;
  LocalReader reader_{2s, 30s};
};

TEST_F(LocalServerTest, ReaderGetsCachedBytesThroughPassedFds) {
  StartServer("tok");
  Discover(socket_, "tok");
  EXPECT_FALSE(reader_.ClaimDiscovery("w")) << "discovery claimed twice";
  // A range crossing pages, from the middle of one.
  std::string buf(2 * kPage + 10, '\0');
  ASSERT_EQ(Read(1000, &buf), buf.size());
  EXPECT_EQ(buf, data_.substr(1000, buf.size()));
  // The tail of the file: the last page is short.
  std::string tail(500, '\0');
  ASSERT_EQ(Read(data_.size() - 100, &tail), 100u);
  EXPECT_EQ(tail.substr(0, 100), data_.substr(data_.size() - 100));
  // Only a cached prefix is served: the caller reads the rest elsewhere.
  cached_pages_ = 1;
  std::string two(2 * kPage, '\0');
  EXPECT_EQ(Read(0, &two), kPage);
  EXPECT_EQ(two.substr(0, kPage), data_.substr(0, kPage));
  cached_pages_ = 0;
  EXPECT_EQ(Read(0, &two), 0u);
}

TEST_F(LocalServerTest, ReaderStopsBeforeAPageThatFailsItsChecksum) {
  StartServer("tok");
  Discover(socket_, "tok");
  // One bit of page 2's data changes on disk.
  {
    std::fstream f(PageFile(2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(header_lens_[2] + 1500));
    char c = static_cast<char>(f.get() ^ 0x04);
    f.seekp(static_cast<std::streamoff>(header_lens_[2] + 1500));
    f.put(c);
  }
  std::string buf(data_.size(), '\0');
  // Pages 0 and 1 are read and checked; page 2 is left to the caller (over TCP).
  ASSERT_EQ(Read(0, &buf), 2 * kPage);
  EXPECT_EQ(buf.substr(0, 2 * kPage), data_.substr(0, 2 * kPage));
  EXPECT_EQ(reader_.corrupt_reads(), 1u);
  // A read that touches only other chunks of page 2 is fine; one touching the bad chunk is not.
  std::string small(100, '\0');
  ASSERT_EQ(Read(2 * kPage + 10, &small), small.size());
  EXPECT_EQ(small, data_.substr(2 * kPage + 10, small.size()));
  EXPECT_EQ(Read(2 * kPage + 1024 + 1000, &small), 0u);
  EXPECT_EQ(reader_.corrupt_reads(), 2u);
  // The channel stays up: a corrupt page is not a broken worker.
  ASSERT_EQ(Read(kPage, &small), small.size());
  // A reader with the checks off (client.verify_checksums: false) returns what is on disk.
  LocalReader unchecked(2s, 30s, /*verify=*/false);
  ASSERT_TRUE(unchecked.ClaimDiscovery("w"));
  unchecked.Discovered("w", socket_, "tok");
  ASSERT_EQ(unchecked.Read("w", "/data/f", "v1", data_.size(), 0, std::span<char>(buf.data(), buf.size())), data_.size());
  EXPECT_NE(buf, data_);
  EXPECT_EQ(unchecked.corrupt_reads(), 0u);
}

TEST_F(LocalServerTest, HeldPagesServeAgainUntilTheEpochMoves) {
  lease_ = true;
  StartServer("tok");
  Discover(socket_, "tok");
  std::string buf(2 * kPage + 10, '\0');
  ASSERT_EQ(Read(1000, &buf), buf.size());
  ASSERT_EQ(buf, data_.substr(1000, buf.size()));
  const int asked = requests_.load();
  // The same pages, a part of one, and the whole of them: from the held fds.
  std::string again(buf.size(), '\0');
  ASSERT_EQ(Read(1000, &again), again.size());
  EXPECT_EQ(again, buf);
  std::string part(100, '\0');
  ASSERT_EQ(Read(kPage + 5, &part), part.size());
  EXPECT_EQ(part, data_.substr(kPage + 5, part.size()));
  std::string pages(3 * kPage, '\0');
  ASSERT_EQ(Read(0, &pages), pages.size());
  EXPECT_EQ(pages, data_.substr(0, pages.size()));
  EXPECT_EQ(requests_.load(), asked) << "a held page was asked for again";
  EXPECT_EQ(reader_.held_page_reads(), 7u);
  // Past the held pages: the rest is asked for, and then held too.
  std::string all(data_.size(), '\0');
  ASSERT_EQ(Read(0, &all), all.size());
  EXPECT_EQ(all, data_);
  EXPECT_EQ(requests_.load(), asked + 1);
  // The worker evicts page 1 and caches it again in a new file: the epoch
  // moves, the held fds go, and the next read asks and reads the new file.
  fs::remove(PageFile(1));
  {
    std::string page = data_.substr(kPage, kPage);
    std::ofstream(PageFile(1), std::ios::binary)
        << page_format::EncodeHeader(PageKey{"/data/f", "v1", kPage}, page, kChunk) << page;
  }
  epoch_.Bump();
  const uint64_t held = reader_.held_page_reads();
  ASSERT_EQ(Read(1000, &again), again.size());
  EXPECT_EQ(again, buf);
  EXPECT_EQ(requests_.load(), asked + 2) << "a held page was used after the worker's epoch moved";
  EXPECT_EQ(reader_.held_page_reads(), held);
}

TEST_F(LocalServerTest, AHeldPageWhoseFileChangedGoesBackToTheWorker) {
  lease_ = true;
  StartServer("tok");
  Discover(socket_, "tok");
  std::string buf(data_.size(), '\0');
  ASSERT_EQ(Read(0, &buf), buf.size());
  const int asked = requests_.load();
  // One bit of page 2's data changes on disk, in the file whose fd is held,
  // and the file grows by a byte (so its identity changes within any clock tick).
  {
    std::fstream f(PageFile(2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(header_lens_[2] + 1500));
    char c = static_cast<char>(f.get() ^ 0x04);
    f.seekp(static_cast<std::streamoff>(header_lens_[2] + 1500));
    f.put(c);
    f.seekp(0, std::ios::end);
    f.put('x');
  }
  // Pages 0 and 1 come from their held fds; page 2 is not trusted any more,
  // so it is let go and asked for (where a worker checks it before handing
  // it out): this stand-in hands it out still, the reader checks it, finds
  // the bad chunk and leaves the page to the caller (TCP).
  ASSERT_EQ(Read(0, &buf), 2 * kPage);
  EXPECT_EQ(buf.substr(0, 2 * kPage), data_.substr(0, 2 * kPage));
  EXPECT_EQ(requests_.load(), asked + 1) << "the changed page was not asked for again";
  EXPECT_EQ(reader_.corrupt_reads(), 1u) << "the held fd of a changed file was read";
}

TEST_F(LocalServerTest, PagesOfAnotherFileOrOffsetAreNotUsed) {
  StartServer("tok");
  Discover(socket_, "tok");
  std::string buf(100, '\0');
  // The handler serves /data/f's pages: asked for version v2, their headers say v1.
  EXPECT_EQ(reader_.Read("w", "/data/f", "v2", data_.size(), 0, std::span<char>(buf.data(), buf.size())), 0u);
  EXPECT_EQ(reader_.corrupt_reads(), 0u) << "a mismatch is not corruption";
}

TEST_F(LocalServerTest, WrongTokenIsRefused) {
  StartServer("right");
  Discover(socket_, "wrong");  // another worker's socket at this path
  std::string buf(100, '\0');
  EXPECT_EQ(Read(0, &buf), 0u);
  EXPECT_EQ(requests_.load(), 0) << "a read reached the handler without the right token";
  EXPECT_FALSE(reader_.ClaimDiscovery("w")) << "rediscovery should wait for the retry interval";
}

TEST_F(LocalServerTest, MissingSocketMeansAnotherHost) {
  Discover(dir_ + "/nothing.sock", "tok");
  std::string buf(100, '\0');
  EXPECT_EQ(Read(0, &buf), 0u);
  // A worker whose status names no socket at all.
  Discover("", "", "other");
  EXPECT_EQ(Read(0, &buf, "/data/f", "other"), 0u);
}

TEST_F(LocalServerTest, ErrorsFromTheWorkerLeaveTheChannelUp) {
  StartServer("tok");
  Discover(socket_, "tok");
  std::string buf(100, '\0');
  EXPECT_EQ(Read(0, &buf, "/data/nope"), 0u);
  EXPECT_EQ(Read(0, &buf), buf.size());
  EXPECT_EQ(buf, data_.substr(0, buf.size()));
}

TEST_F(LocalServerTest, StoppedServerTurnsTheShortCircuitOff) {
  StartServer("tok");
  Discover(socket_, "tok");
  std::string buf(100, '\0');
  ASSERT_EQ(Read(0, &buf), buf.size());
  server_.reset();  // closes its connections and removes the socket file
  EXPECT_FALSE(fs::exists(socket_));
  EXPECT_EQ(Read(0, &buf), 0u);
  EXPECT_EQ(Read(0, &buf), 0u);
}

TEST_F(LocalServerTest, StaleSocketIsReplacedLiveOneIsNot) {
  // A socket file nobody listens on, as a killed worker leaves it.
  {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, socket_.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  StartServer("tok");
  auto second = LocalServer::Start(socket_, "other", [](const local_wire::Request&, std::vector<PageRef>*) {
    return local_wire::Reply{};
  });
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), Code::kAlreadyExists) << second.error().ToString();
  EXPECT_NE(second.error().message().find("live worker"), std::string::npos) << second.error().message();
  // A regular file at the path is never deleted.
  std::ofstream(dir_ + "/file") << "x";
  auto third = LocalServer::Start(dir_ + "/file", "t", [](const local_wire::Request&, std::vector<PageRef>*) {
    return local_wire::Reply{};
  });
  ASSERT_FALSE(third);
  EXPECT_TRUE(fs::exists(dir_ + "/file"));
}

TEST_F(LocalServerTest, OtherUsersCannotConnect) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  StartServer("tok");
  ::chmod(dir_.c_str(), 0755);  // let the other user reach the socket file itself
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    LocalReader reader(2s, 30s);
    reader.ClaimDiscovery("w");
    reader.Discovered("w", socket_, "tok");
    std::string buf(100, '\0');
    ::_exit(reader.Read("w", "/data/f", "v1", data_.size(), 0, std::span<char>(buf.data(), buf.size())) == 0 ? 0 : 10);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "could not become uid 65534";
  EXPECT_NE(WEXITSTATUS(status), 10) << "another user read pages through the socket";
  EXPECT_EQ(requests_.load(), 0);
}

TEST(LocalServerAutoPath, IsPrivateAndNamedByPort) {
  auto p = LocalServer::AutoPath(4242);
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_TRUE(p->ends_with("/worker-4242.sock")) << *p;
  auto st = fs::status(fs::path(*p).parent_path());
  EXPECT_EQ(st.permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
}

// A raw connection to the server's socket (-1 on failure), greeted with
// `token` when it is not empty; it waits at most 20 s for anything.
int RawConnect(const std::string& socket, const std::string& token = "") {
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, socket.data(), socket.size());
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  if (token.empty()) return fd;
  local_wire::Request hello;
  hello.kind = local_wire::Kind::kHello;
  hello.path = token;
  std::string bytes;
  std::vector<int> fds;
  if (!local_wire::SendRecord(fd, local_wire::EncodeRequest(hello), {}).ok() ||
      !local_wire::RecvRecord(fd, &bytes, &fds).ok()) {
    ::close(fd);
    return -1;
  }
  for (int f : fds) ::close(f);
  return fd;
}

double Closed(const std::string& reason) {
  return static_cast<double>(MetricsRegistry::Global()
                                 .GetCounter("shoal_short_circuit_connections_closed_total", "", {{"reason", reason}})
                                 .value());
}

TEST_F(LocalServerTest, AConnectionThatNeverSaysHelloIsClosedAtTheDeadline) {
  StartServer("tok", 200ms);
  const double before = Closed("hello_timeout");
  int fd = RawConnect(socket_);
  ASSERT_GE(fd, 0);
  char c;
  // The worker closes it (0: the end) long before the test's own 20 s receive deadline.
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0) << "the silent connection was not closed";
  ::close(fd);
  EXPECT_EQ(Closed("hello_timeout"), before + 1);
  // A greeted client is not held to the deadline between its requests.
  Discover(socket_, "tok");
  std::string buf(100, '\0');
  ASSERT_EQ(Read(0, &buf), buf.size());
  std::this_thread::sleep_for(400ms);  // idle past the hello deadline (not a synchronisation)
  ASSERT_EQ(Read(0, &buf), buf.size());
  EXPECT_EQ(buf, data_.substr(0, 100));
}

// 300 silent connections (more than the 256 the worker keeps) must not lock
// a real client out: the oldest silent ones make room.
TEST_F(LocalServerTest, SilentConnectionsBeyondTheCapNeverLockAClientOut) {
  StartServer("tok");
  const double before = Closed("cap");
  std::vector<int> silent;
  for (int i = 0; i < 300; ++i) {
    int fd = RawConnect(socket_);
    ASSERT_GE(fd, 0) << i;
    silent.push_back(fd);
  }
  Discover(socket_, "tok");
  std::string buf(2 * kPage, '\0');
  EXPECT_EQ(Read(0, &buf), buf.size()) << "the client lost the short circuit";
  EXPECT_EQ(buf, data_.substr(0, buf.size()));
  EXPECT_GE(Closed("cap"), before + 300 - 256 + 1);
  for (int fd : silent) ::close(fd);
}

// The client's pooled connection, closed by the worker to make room, is
// replaced at its next read: the short circuit stays on.
TEST_F(LocalServerTest, AClientWhoseIdleConnectionWasClosedConnectsAgain) {
  StartServer("tok");
  Discover(socket_, "tok");
  std::string buf(kPage, '\0');
  ASSERT_EQ(Read(0, &buf), buf.size());  // its connection now idles in the pool, the oldest
  std::vector<int> greeted;
  for (int i = 0; i < 257; ++i) {
    int fd = RawConnect(socket_, "tok");
    ASSERT_GE(fd, 0) << i;
    greeted.push_back(fd);
  }
  const int before = requests_.load();
  EXPECT_EQ(Read(0, &buf), buf.size());
  EXPECT_EQ(buf, data_.substr(0, kPage));
  EXPECT_EQ(requests_.load(), before + 1) << "the read did not go through the short circuit";
  for (int fd : greeted) ::close(fd);
}

}  // namespace
}  // namespace shoal
