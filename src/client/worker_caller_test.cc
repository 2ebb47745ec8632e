#include "client/worker_caller.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A stand-in worker for fault injection: it answers health at once (unless
// frozen) and answers a read in pieces with pauses between them, as a worker
// starved of CPU on a loaded machine does (no heartbeat either).
class SlowWorker {
 public:
  struct Behaviour {
    bool frozen = false;                        // answers nothing at all (SIGSTOP)
    std::chrono::milliseconds pause{0};         // before each piece of a read's answer
    std::vector<std::string> pieces;            // the read's answer, sent piece by piece
  };
  explicit SlowWorker(Behaviour b) : b_(std::move(b)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd_, 16);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    address_ = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
    accept_ = std::thread([this] { AcceptLoop(); });
  }
  ~SlowWorker() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    if (accept_.joinable()) accept_.join();
    for (auto& t : conns_) t.join();
    ::close(fd_);
  }
  const std::string& address() const { return address_; }
  int health_probes() const { return health_.load(); }

 private:
  void AcceptLoop() {
    for (;;) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0 || stop_) {
        if (c >= 0) ::close(c);
        return;
      }
      conns_.emplace_back([this, c] { Serve(c); });
    }
  }
  // Waits up to `d` for stop; false when stopping.
  bool Pause(std::chrono::milliseconds d) {
    auto until = Clock::now() + d;
    while (Clock::now() < until) {
      if (stop_) return false;
      std::this_thread::sleep_for(10ms);  // the injected stall itself, not synchronisation
    }
    return !stop_;
  }
  void Serve(int c) {
    const std::string ok_head = "HTTP/1.1 200 OK\r\nX-Shoal-Protocol: 1\r\nX-Shoal-Worker: w1\r\n";
    for (;;) {
      std::string req;
      while (req.find("\r\n\r\n") == std::string::npos) {
        pollfd p{c, POLLIN, 0};
        if (::poll(&p, 1, 50) == 0) {
          if (stop_) break;
          continue;
        }
        char buf[4096];
        auto n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      if (req.find("\r\n\r\n") == std::string::npos || b_.frozen) break;
      if (req.starts_with("GET /v1/health ")) {
        ++health_;
        std::string a = ok_head + "Content-Length: 3\r\n\r\nok\n";
        [[maybe_unused]] auto w = ::send(c, a.data(), a.size(), MSG_NOSIGNAL);
        continue;
      }
      for (const auto& piece : b_.pieces) {
        if (!Pause(b_.pause)) break;
        [[maybe_unused]] auto w = ::send(c, piece.data(), piece.size(), MSG_NOSIGNAL);
      }
    }
    while (b_.frozen && !stop_) Pause(50ms);
    ::close(c);
  }

  Behaviour b_;
  int fd_;
  std::string address_;
  std::atomic<bool> stop_{false};
  std::atomic<int> health_{0};
  std::thread accept_;
  std::vector<std::thread> conns_;  // touched by the accept thread only until it is joined
};

WorkerCaller::Options Opts() {
  WorkerCaller::Options o;
  o.connect_timeout = 1s;
  o.response_timeout = 200ms;
  return o;
}

TEST(WorkerCallerTest, ALiveWorkerSilentForLongerThanTheResponseTimeoutIsWaitedFor) {
  // Each piece of the answer comes after 3 silent periods: the head split, the body split.
  const std::string head = "HTTP/1.1 200 OK\r\nX-Shoal-Protocol: 1\r\nX-Shoal-Worker: w1\r\nContent-Length: 10\r\n\r\n";
  SlowWorker w({.frozen = false, .pause = 600ms, .pieces = {head.substr(0, 20), head.substr(20) + "01234", "56789"}});
  WorkerCaller caller(Opts());
  const WorkerEntry entry{"w1", w.address()};
  char out[10];
  auto r = caller.Call(entry, "GET", "/v1/read?path=/x", Clock::now() + 30s, "/x", out);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.worker_failed);
  EXPECT_EQ(std::string(out, 10), "0123456789");
  EXPECT_GE(caller.slow_waits(), 3u);
  EXPECT_GE(w.health_probes(), 1);
  EXPECT_EQ(caller.failures(), 0u);

  // The same with the answer read into a string (no caller buffer).
  auto s = caller.Call(entry, "GET", "/v1/stat?path=/x", Clock::now() + 30s, "/x");
  EXPECT_TRUE(s.status.ok()) << s.status.ToString();
  EXPECT_EQ(s.body, "0123456789");
}

TEST(WorkerCallerTest, AFrozenWorkerFailsAfterOneSilenceAndAShortProbe) {
  SlowWorker w({.frozen = true, .pause = 0ms, .pieces = {}});
  WorkerCaller caller(Opts());
  const auto started = Clock::now();
  char out[10];
  auto r = caller.Call(WorkerEntry{"w1", w.address()}, "GET", "/v1/read?path=/x", Clock::now() + 30s, "/x", out);
  const auto took = Clock::now() - started;
  EXPECT_TRUE(r.worker_failed);
  EXPECT_EQ(r.status.code(), Code::kUnavailable) << r.status.ToString();
  EXPECT_NE(r.status.message().find("taken as hung"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(caller.slow_waits(), 0u);
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 20s) << "a frozen worker must not be waited for until the call's deadline";
}

TEST(WorkerCallerTest, TheCallsDeadlineStillBoundsALiveSlowWorker) {
  const std::string answer = "HTTP/1.1 200 OK\r\nX-Shoal-Protocol: 1\r\nX-Shoal-Worker: w1\r\nContent-Length: 0\r\n\r\n";
  SlowWorker w({.frozen = false, .pause = 30s, .pieces = {answer}});
  WorkerCaller caller(Opts());
  auto r = caller.Call(WorkerEntry{"w1", w.address()}, "GET", "/v1/stat?path=/x", Clock::now() + 1500ms, "/x");
  EXPECT_FALSE(r.worker_failed) << "alive and slow is not failed";
  EXPECT_EQ(r.status.code(), Code::kTimeout) << r.status.ToString();
  EXPECT_GE(caller.slow_waits(), 1u);
}

}  // namespace
}  // namespace shoal
