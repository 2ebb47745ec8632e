// The short-circuit pair: LocalServer (worker side) and LocalReader (client
// side) over a real UNIX socket, with a handler standing in for the page store.
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

#include "client/local_reader.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kHeader = 100;  // bytes before the data in the fake page file
constexpr uint64_t kPage = 4096;

class LocalServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-local-test.XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    dir_ = tmpl;
    socket_ = dir_ + "/w.sock";
    // One "page file" holding the whole test file after a header.
    data_.resize(3 * kPage + 123);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>('a' + i % 23);
    std::ofstream(dir_ + "/pages", std::ios::binary) << std::string(kHeader, 'H') << data_;
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  // Serves the first `cached_pages_` pages of the range from the page file.
  local_wire::Reply Handle(const local_wire::Request& r, std::vector<PageRef>* pages) {
    ++requests_;
    local_wire::Reply out;
    if (r.path != "/data/f") {
      out.code = static_cast<int32_t>(Code::kNotFound);
      out.message = "no such file";
      return out;
    }
    uint64_t end = std::min(r.offset + r.length, static_cast<uint64_t>(data_.size()));
    for (uint64_t pos = r.offset; pos < end && pos < cached_pages_ * kPage;) {
      uint64_t len = std::min(end, (pos / kPage + 1) * kPage) - pos;
      int fd = ::open((dir_ + "/pages").c_str(), O_RDONLY | O_CLOEXEC);
      pages->emplace_back(fd, kHeader + pos, static_cast<uint32_t>(len));
      out.segments.push_back({kHeader + pos, len});
      pos += len;
    }
    return out;
  }

  void StartServer(const std::string& token) {
    auto s = LocalServer::Start(socket_, token, [this](const local_wire::Request& r, std::vector<PageRef>* p) {
      return Handle(r, p);
    });
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
  uint64_t cached_pages_ = 4;
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

}  // namespace
}  // namespace shoal
