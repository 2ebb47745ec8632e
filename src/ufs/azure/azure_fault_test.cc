// AzureStore against a scripted HTTP server on loopback: retries of busy
// answers, and truncated or short bodies, which must be errors and never data.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "common/config.h"
#include "ufs/azure/azure_store.h"

namespace shoal {
namespace {

// Answers the n-th request with responses[min(n, last)], one request per
// connection ("Connection: close"). An empty response means: read the request,
// answer nothing, and hold the connection until the server stops.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::string> responses) : responses_(std::move(responses)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int requests() const { return requests_; }

 private:
  void Serve() {
    std::vector<int> held;
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;  // wakes up to notice stop_
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      const std::string& resp = responses_[std::min<size_t>(requests_++, responses_.size() - 1)];
      if (resp.empty()) {
        held.push_back(c);
        continue;
      }
      (void)!::write(c, resp.data(), resp.size());
      ::close(c);
    }
    for (int c : held) ::close(c);
  }

  std::vector<std::string> responses_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string Response(int status, const std::string& extra_headers, const std::string& body, size_t content_length) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nConnection: close\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n" + extra_headers + "\r\n" + body;
}
std::string Response(int status, const std::string& extra_headers = "", const std::string& body = "") {
  return Response(status, extra_headers, body, body.size());
}

std::shared_ptr<UnderStore> StoreAt(int port, std::map<std::string, std::string> extra = {}) {
  MountConfig m;
  m.path = "/faulty";
  m.ufs = "az://ctr/p";
  m.options = {{"endpoint", "http://127.0.0.1:" + std::to_string(port) + "/devstoreaccount1"},
               {"account", "devstoreaccount1"},
               {"key", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="}};
  m.options.merge(extra);
  auto s = OpenUnderStore(m);
  EXPECT_TRUE(s) << s.error().ToString();
  return s ? *s : nullptr;
}

TEST(AzureFaults, RetriesServerBusyThenReads) {
  ScriptedServer server({Response(503), Response(500), Response(206, "Content-Range: bytes 0-4/10\r\n", "hello")});
  auto store = StoreAt(server.port());
  char buf[5];
  auto n = store->Read("k", 0, buf);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(std::string(buf, *n), "hello");
  EXPECT_EQ(server.requests(), 3);
}

TEST(AzureFaults, PersistentFailureIsUnavailableAfterMaxRetries) {
  ScriptedServer server({Response(503)});
  auto store = StoreAt(server.port(), {{"max_retries", "2"}});
  char buf[5];
  auto n = store->Read("k", 0, buf);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code(), Code::kUnavailable) << n.error().ToString();
  EXPECT_EQ(server.requests(), 3);
}

TEST(AzureFaults, BodyShorterThanItsRangeIsIoError) {
  // A complete HTTP answer whose body holds fewer bytes than its Content-Range claims.
  ScriptedServer server({Response(206, "Content-Range: bytes 0-99/1000\r\n", std::string(50, 'x'))});
  auto store = StoreAt(server.port());
  std::string buf(100, '\0');
  auto n = store->Read("k", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_FALSE(n) << "a short body must not be returned as data";
  EXPECT_EQ(n.error().code(), Code::kIo) << n.error().ToString();
}

TEST(AzureFaults, ConnectionCutMidBodyIsNeverData) {
  // Content-Length promises 100 bytes; the connection closes after 50.
  ScriptedServer server({Response(206, "Content-Range: bytes 0-99/1000\r\n", std::string(50, 'x'), 100)});
  auto store = StoreAt(server.port(), {{"max_retries", "1"}});
  std::string buf(100, '\0');
  auto n = store->Read("k", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_FALSE(n) << "a truncated body must not be returned as data";
  EXPECT_EQ(server.requests(), 2);  // retried once
}

TEST(AzureFaults, SilentServerHitsTheRequestDeadline) {
  ScriptedServer server({""});
  auto store = StoreAt(server.port(), {{"request_timeout", "500ms"}});
  char buf[5];
  auto n = store->Read("k", 0, buf);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code(), Code::kTimeout) << n.error().ToString();
}

}  // namespace
}  // namespace shoal
