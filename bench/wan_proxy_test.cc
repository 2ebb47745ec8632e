// Tests of the WAN emulator against a tiny line-protocol backend in-process.
// Timing checks are generous (this machine is small and shared): they prove the
// delay and caps are applied, not that they are precise.
#include "bench/wan_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <list>
#include <string>
#include <thread>

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

int ListenAny(uint16_t* port, bool listen = true) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (listen) {
    EXPECT_EQ(::listen(fd, 64), 0);
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// Backend: reads lines "GET <n>" (answers n bytes 'x') or "CLOSE <n>" (answers
// n bytes, then closes), one per request, on any number of connections.
class Backend {
 public:
  Backend() {
    fd_ = ListenAny(&port_);
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::lock_guard lock(mu_);
        conns_.emplace_back([c] { Serve(c); });
      }
    });
  }
  ~Backend() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    for (auto& t : conns_) t.join();
  }
  uint16_t port() const { return port_; }

 private:
  static void Serve(int c) {
    std::string buf;
    char tmp[4096];
    for (;;) {
      auto nl = buf.find('\n');
      if (nl == std::string::npos) {
        ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
        if (n <= 0) break;
        buf.append(tmp, static_cast<size_t>(n));
        continue;
      }
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      bool close_after = line.rfind("CLOSE ", 0) == 0;
      size_t size = std::stoul(line.substr(line.find(' ') + 1));
      std::string body(size, 'x');
      if (::send(c, body.data(), body.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(body.size())) break;
      if (close_after) break;
    }
    ::close(c);
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::list<std::thread> conns_;
};

int Connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{20, 0};  // a hung proxy fails the test instead of hanging it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Sends one request; returns (time to first byte, bytes received). Stops after
// `expect` bytes or at EOF.
std::pair<Clock::duration, size_t> Request(int fd, const std::string& line, size_t expect) {
  auto t0 = Clock::now();
  // A failed send shows up as fewer bytes received.
  [[maybe_unused]] auto sent = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  Clock::duration ttfb{};
  size_t got = 0;
  char buf[65536];
  while (got < expect) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    if (got == 0) ttfb = Clock::now() - t0;
    got += static_cast<size_t>(n);
  }
  return {ttfb, got};
}

std::unique_ptr<WanProxy> StartProxy(uint16_t upstream, std::chrono::microseconds delay, uint64_t conn_rate,
                                     uint64_t total_rate) {
  WanProxyOptions o;
  o.upstream_port = upstream;
  o.first_byte_delay = delay;
  o.conn_bytes_per_sec = conn_rate;
  o.total_bytes_per_sec = total_rate;
  auto p = WanProxy::Start(o);
  EXPECT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_NE((*p)->port(), 0);
  return std::move(*p);
}

TEST(WanProxy, DelaysTheFirstByteOfEveryRequest) {
  Backend backend;
  auto proxy = StartProxy(backend.port(), 100ms, 0, 0);
  int fd = Connect(proxy->port());
  for (int i = 0; i < 3; i++) {
    auto [ttfb, got] = Request(fd, "GET 1000\n", 1000);
    EXPECT_EQ(got, 1000u);
    EXPECT_GE(ttfb, 100ms) << "request " << i;
    EXPECT_LT(ttfb, 2100ms) << "request " << i;
  }
  ::close(fd);
  EXPECT_EQ(proxy->stats().requests, 3u);
}

TEST(WanProxy, ZeroDelayAndNoCapPassesThrough) {
  Backend backend;
  auto proxy = StartProxy(backend.port(), 0us, 0, 0);
  int fd = Connect(proxy->port());
  auto [ttfb, got] = Request(fd, "GET 5000000\n", 5'000'000);
  EXPECT_EQ(got, 5'000'000u);
  ::close(fd);
}

TEST(WanProxy, PerConnectionCap) {
  Backend backend;
  constexpr uint64_t kRate = 2'000'000, kBytes = 1'000'000;  // ideal: 0.5 s
  auto proxy = StartProxy(backend.port(), 0us, kRate, 0);
  int fd = Connect(proxy->port());
  auto t0 = Clock::now();
  auto [ttfb, got] = Request(fd, "GET " + std::to_string(kBytes) + "\n", kBytes);
  auto took = Clock::now() - t0;
  EXPECT_EQ(got, kBytes);
  EXPECT_GE(took, 400ms);  // 80% of ideal
  ::close(fd);
}

TEST(WanProxy, AggregateCapIsShared) {
  Backend backend;
  constexpr uint64_t kRate = 2'000'000, kBytes = 1'000'000;  // two streams: ideal 1 s
  auto proxy = StartProxy(backend.port(), 0us, 0, kRate);
  auto t0 = Clock::now();
  std::atomic<size_t> total{0};
  std::thread a([&] {
    int fd = Connect(proxy->port());
    total += Request(fd, "GET 1000000\n", kBytes).second;
    ::close(fd);
  });
  std::thread b([&] {
    int fd = Connect(proxy->port());
    total += Request(fd, "GET 1000000\n", kBytes).second;
    ::close(fd);
  });
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * kBytes);
  EXPECT_GE(Clock::now() - t0, 800ms);
}

TEST(WanProxy, CountersAreExact) {
  Backend backend;
  auto proxy = StartProxy(backend.port(), 0us, 0, 0);
  uint64_t up = 0, down = 0;
  for (int c = 0; c < 3; c++) {
    int fd = Connect(proxy->port());
    for (int i = 0; i < 4; i++) {
      std::string line = "GET " + std::to_string(1000 * (c + 1) + i) + "\n";
      size_t n = 1000 * (c + 1) + i;
      EXPECT_EQ(Request(fd, line, n).second, n);
      up += line.size();
      down += n;
    }
    ::close(fd);
  }
  auto s = proxy->stats();
  EXPECT_EQ(s.connections, 3u);
  EXPECT_EQ(s.requests, 12u);
  EXPECT_EQ(s.bytes_to_upstream, up);
  EXPECT_EQ(s.bytes_from_upstream, down);
}

TEST(WanProxy, BackendCloseReachesTheClient) {
  Backend backend;
  auto proxy = StartProxy(backend.port(), 10ms, 0, 0);
  int fd = Connect(proxy->port());
  // More is expected than is sent: Request returns only because of the EOF.
  auto [ttfb, got] = Request(fd, "CLOSE 123\n", 1'000'000);
  EXPECT_EQ(got, 123u);
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0) << "expected EOF after the backend closed";
  ::close(fd);
}

TEST(WanProxy, UnreachableBackendClosesTheClient) {
  uint16_t dead_port = 0;
  int dead = ListenAny(&dead_port, /*listen=*/false);  // bound, not listening: refused
  auto proxy = StartProxy(dead_port, 0ms, 0, 0);
  int fd = Connect(proxy->port());
  auto [ttfb, got] = Request(fd, "GET 10\n", 10);
  EXPECT_EQ(got, 0u);
  ::close(fd);
  ::close(dead);
  EXPECT_EQ(proxy->stats().upstream_failures, 1u);
}

TEST(TokenBucket, LimitsManyThreadsTogether) {
  TokenBucket bucket(4'000'000, 16 * 1024);
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; i++)
    ts.emplace_back([&] {
      for (int j = 0; j < 16; j++) bucket.Acquire(32 * 1024);
    });
  for (auto& t : ts) t.join();
  // 2 MiB at 4 MB/s: ideal 0.52 s.
  EXPECT_GE(Clock::now() - t0, 400ms);
}

}  // namespace
}  // namespace shoal::bench
