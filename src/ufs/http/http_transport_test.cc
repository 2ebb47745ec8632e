// PerformHttp against a small keep-alive HTTP server on loopback that sends
// bodies in paced pieces, cuts them short, or answers tiny ones: the receive
// path (the socket low-water mark set while a body is still coming, and reset
// before the connection is reused) must deliver every byte and never wait for
// bytes that will not come.
#include "ufs/http/http_transport.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/harness/harness_util.h"

namespace shoal {
namespace {

using namespace std::chrono_literals;

constexpr size_t kBig = 300 * 1024;
constexpr size_t kCut = 100 * 1024;

char PatternByte(size_t i) { return static_cast<char>('a' + (i * 7 + i / 4096) % 26); }

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = PatternByte(i);
  return s;
}

using shoal::testing::LoopbackListener;

// Serves GET /big (kBig bytes: 16 KiB with the head, then 64 KiB pieces
// written 5 ms apart, like a store across a network), /small ("hello"), and
// /short (declares kBig, sends kCut, closes), several requests per
// connection, one connection at a time.
class PacedServer {
 public:
  PacedServer() {
    if (listener_.port() == 0) ADD_FAILURE() << "cannot listen on 127.0.0.1";
  }

  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(listener_.port()) + path; }
  int connections() const { return connections_.load(); }

 private:
  // Waits up to `ms` for the stop pipe: a pause between pieces; true when stopping.
  bool Stopping(int ms) {
    pollfd p{listener_.stop_fd(), POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }

  bool SendAll(int c, std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(c, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Requests on one connection until the client closes it.
  void Serve(int c) {
    std::string in;
    char buf[4096];
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        pollfd p[2] = {{c, POLLIN, 0}, {listener_.stop_fd(), POLLIN, 0}};
        if (::poll(p, 2, -1) < 0 || p[1].revents) return;
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      std::string line = in.substr(0, in.find("\r\n"));
      in.erase(0, end + 4);
      const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: ";
      if (line.starts_with("GET /small ")) {
        if (!SendAll(c, head + "5\r\n\r\nhello")) return;
      } else if (line.starts_with("GET /big ")) {
        const std::string body = Pattern(kBig);
        if (!SendAll(c, head + std::to_string(kBig) + "\r\n\r\n" + body.substr(0, 16 * 1024))) return;
        for (size_t off = 16 * 1024; off < kBig; off += 64 * 1024) {
          if (Stopping(5) || !SendAll(c, std::string_view(body).substr(off, 64 * 1024))) return;
        }
      } else if (line.starts_with("GET /short ")) {
        const std::string body = Pattern(kCut);
        if (!SendAll(c, head + std::to_string(kBig) + "\r\n\r\n" + body.substr(0, 16 * 1024))) return;
        if (Stopping(5)) return;
        SendAll(c, std::string_view(body).substr(16 * 1024));
        return;  // closed with the body cut short
      } else {
        SendAll(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
      }
    }
  }

  std::atomic<int> connections_{0};
  LoopbackListener listener_{[this](int c) {  // last: stops first
    ++connections_;
    Serve(c);
  }};
};

HttpRequest Get(const std::string& url) {
  HttpRequest r;
  r.url = url;
  r.timeout = 60s;  // a body waited for in vain would end in kTimeout, failing the test
  return r;
}

TEST(HttpTransport, PacedBodiesArriveWholeAndTheConnectionIsReused) {
  PacedServer server;
  std::string page(1 << 20, '\0');
  for (int round = 0; round < 3; ++round) {
    // Into the caller's buffer (the worker's first-page read)...
    HttpRequest big = Get(server.url("/big"));
    big.body_out = std::span<char>(page.data(), page.size());
    auto r = PerformHttp(big);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    ASSERT_EQ(r->body_out_size, kBig);
    EXPECT_EQ(page.substr(0, kBig), Pattern(kBig));

    // ...then a tiny answer on the same connection: a low-water mark left
    // from the big body would hold it back until the timeout...
    auto small = PerformHttp(Get(server.url("/small")));
    ASSERT_TRUE(small) << small.error().ToString();
    EXPECT_EQ(small->body, "hello");

    // ...and a big one into the response's own string.
    auto big_string = PerformHttp(Get(server.url("/big")));
    ASSERT_TRUE(big_string) << big_string.error().ToString();
    EXPECT_EQ(big_string->body, Pattern(kBig));
  }
  EXPECT_EQ(server.connections(), 1) << "every request should have reused the first connection";
}

TEST(HttpTransport, ABodyCutShortFailsWhenTheServerCloses) {
  PacedServer server;
  auto r = PerformHttp(Get(server.url("/short")));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kUnavailable) << r.error().ToString();

  std::string page(1 << 20, '\0');
  HttpRequest partial = Get(server.url("/short"));
  partial.body_out = std::span<char>(page.data(), page.size());
  partial.accept_partial = true;
  auto p = PerformHttp(partial);
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_TRUE(p->truncated);
  EXPECT_EQ(p->body_out_size, kCut);
  EXPECT_EQ(page.substr(0, kCut), Pattern(kCut));

  // The next request opens a new connection and is served whole.
  auto small = PerformHttp(Get(server.url("/small")));
  ASSERT_TRUE(small) << small.error().ToString();
  EXPECT_EQ(small->body, "hello");
}

}  // namespace
}  // namespace shoal
