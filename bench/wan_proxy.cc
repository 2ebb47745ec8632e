#include "bench/wan_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <thread>
#include <vector>

namespace shoal::bench {

using Clock = std::chrono::steady_clock;

std::string WanProxyStats::ToLine() const {
  return "connections=" + std::to_string(connections) + " active=" + std::to_string(active_connections) +
         " upstream_failures=" + std::to_string(upstream_failures) + " requests=" + std::to_string(requests) +
         " bytes_up=" + std::to_string(bytes_to_upstream) + " bytes_down=" + std::to_string(bytes_from_upstream);
}

TokenBucket::TokenBucket(uint64_t bytes_per_sec, uint64_t burst)
    : rate_(bytes_per_sec), burst_(static_cast<double>(burst)), tokens_(static_cast<double>(burst)), last_(Clock::now()) {}

void TokenBucket::Acquire(uint64_t n) { std::this_thread::sleep_until(Reserve(n)); }

Clock::time_point TokenBucket::Reserve(uint64_t n) {
  if (rate_ == 0) return Clock::time_point::min();
  std::lock_guard lock(mu_);
  auto now = Clock::now();
  double dt = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + dt * static_cast<double>(rate_));
  tokens_ -= static_cast<double>(n);
  if (tokens_ >= 0) return now;
  return now + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(-tokens_ / static_cast<double>(rate_)));
}

// A burst of 20 ms worth of bytes (16 KiB..1 MiB) keeps the cap tight over
// short transfers without making every 64 KiB chunk wait.
static uint64_t BurstFor(uint64_t rate) { return std::clamp<uint64_t>(rate / 50, 16 * 1024, 1024 * 1024); }

namespace {

constexpr size_t kChunk = 64 * 1024;

// One proxied client connection and its upstream connection.
struct Conn {
  Conn(uint64_t rate) : up_bucket(rate, BurstFor(rate)), down_bucket(rate, BurstFor(rate)) {}

  int client_fd = -1;
  int server_fd = -1;
  std::mutex mu;  // guards the fds' lifetime (Stop may shut them down) and the phase
  enum class Phase { kIdle, kRequest, kResponse } phase = Phase::kIdle;
  Clock::time_point request_start;
  TokenBucket up_bucket, down_bucket;
  std::thread thread;
  std::atomic<bool> finished{false};

  // Wakes both pumps: they see EOF or an error and end.
  void ShutdownBoth() {
    std::lock_guard lock(mu);
    if (client_fd >= 0) ::shutdown(client_fd, SHUT_RDWR);
    if (server_fd >= 0) ::shutdown(server_fd, SHUT_RDWR);
  }
};

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

class WanProxy::Impl {
 public:
  explicit Impl(const WanProxyOptions& o)
      : opts_(o),
        total_up_(o.total_bytes_per_sec, BurstFor(o.total_bytes_per_sec)),
        total_down_(o.total_bytes_per_sec, BurstFor(o.total_bytes_per_sec)) {}

  ~Impl() { Stop(); }

  Status Listen() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return Status(Code::kIo, std::string("wan_proxy: socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(opts_.listen_port);
    if (::inet_pton(AF_INET, opts_.listen_host.c_str(), &a.sin_addr) != 1)
      return Status(Code::kInvalidArgument, "wan_proxy: listen host must be an IPv4 address: " + opts_.listen_host);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 512) != 0)
      return Status(Code::kIo, "wan_proxy: cannot listen on " + opts_.listen_host + ":" +
                                   std::to_string(opts_.listen_port) + ": " + std::strerror(errno));
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    upstream_.sin_family = AF_INET;
    upstream_.sin_port = htons(opts_.upstream_port);
    if (::inet_pton(AF_INET, opts_.upstream_host.c_str(), &upstream_.sin_addr) != 1)
      return Status(Code::kInvalidArgument, "wan_proxy: upstream host must be an IPv4 address: " + opts_.upstream_host);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
    return Status::Ok();
  }

  void Stop() {
    if (stopped_.exchange(true)) return;
    if (wake_fd_ >= 0) {
      uint64_t one = 1;
      [[maybe_unused]] auto r = ::write(wake_fd_, &one, sizeof one);
    }
    if (accept_thread_.joinable()) accept_thread_.join();
    std::list<std::unique_ptr<Conn>> conns;
    {
      std::lock_guard lock(conns_mu_);
      conns.swap(conns_);
    }
    for (auto& c : conns) c->ShutdownBoth();
    for (auto& c : conns) c->thread.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    listen_fd_ = wake_fd_ = -1;
  }

  uint16_t port() const { return port_; }

  WanProxyStats stats() const {
    WanProxyStats s;
    s.connections = connections_.load();
    s.active_connections = active_.load();
    s.upstream_failures = upstream_failures_.load();
    s.requests = requests_.load();
    s.bytes_to_upstream = bytes_up_.load();
    s.bytes_from_upstream = bytes_down_.load();
    return s;
  }

 private:
  void AcceptLoop() {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    while (!stopped_.load()) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents) break;
      if (!(fds[0].revents & POLLIN)) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      SetNoDelay(fd);
      connections_++;
      active_++;
      auto conn = std::make_unique<Conn>(opts_.conn_bytes_per_sec);
      conn->client_fd = fd;
      Conn* c = conn.get();
      std::lock_guard lock(conns_mu_);
      ReapFinishedLocked();
      conns_.push_back(std::move(conn));
      c->thread = std::thread([this, c] { Serve(c); });
    }
  }

  void ReapFinishedLocked() {
    for (auto it = conns_.begin(); it != conns_.end();) {
      if ((*it)->finished.load()) {
        (*it)->thread.join();
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void Serve(Conn* c) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && ::connect(s, reinterpret_cast<const sockaddr*>(&upstream_), sizeof upstream_) == 0) {
      SetNoDelay(s);
      {
        std::lock_guard lock(c->mu);
        c->server_fd = s;
      }
      if (stopped_.load()) c->ShutdownBoth();
      std::thread down([this, c] { Pump(c, /*to_client=*/true); });
      Pump(c, /*to_client=*/false);
      down.join();
    } else {
      // The client sees its connection closed, as it would if the store were down.
      upstream_failures_++;
      if (s >= 0) ::close(s);
    }
    {
      std::lock_guard lock(c->mu);
      ::close(c->client_fd);
      if (c->server_fd >= 0) ::close(c->server_fd);
      c->client_fd = c->server_fd = -1;
    }
    active_--;
    c->finished.store(true);
  }

  // Copies one direction until EOF or error. EOF is passed on as a half-close,
  // an error (reset) tears down both directions, so a backend that closes or
  // fails is seen by the client the same way.
  void Pump(Conn* c, bool to_client) {
    int src = to_client ? c->server_fd : c->client_fd;
    int dst = to_client ? c->client_fd : c->server_fd;
    TokenBucket& conn_bucket = to_client ? c->down_bucket : c->up_bucket;
    TokenBucket& total_bucket = to_client ? total_down_ : total_up_;
    auto& counter = to_client ? bytes_down_ : bytes_up_;
    std::vector<char> buf(kChunk);
    for (;;) {
      ssize_t n = ::recv(src, buf.data(), buf.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) {
        ::shutdown(dst, SHUT_WR);
        return;
      }
      if (n < 0) {
        c->ShutdownBoth();
        return;
      }
      // Counted as read, so the counters are final once the peer got the bytes.
      counter += static_cast<uint64_t>(n);
      Clock::time_point release = Clock::time_point::min();
      {
        std::lock_guard lock(c->mu);
        if (!to_client && c->phase != Conn::Phase::kRequest) {
          c->phase = Conn::Phase::kRequest;
          c->request_start = Clock::now();
          requests_++;
        } else if (to_client && c->phase == Conn::Phase::kRequest) {
          c->phase = Conn::Phase::kResponse;
          release = c->request_start + opts_.first_byte_delay;
        }
      }
      release = std::max({release, conn_bucket.Reserve(static_cast<uint64_t>(n)),
                          total_bucket.Reserve(static_cast<uint64_t>(n))});
      if (release > Clock::now()) std::this_thread::sleep_until(release);
      if (!WriteAll(dst, buf.data(), static_cast<size_t>(n))) {
        c->ShutdownBoth();
        return;
      }
    }
  }

  const WanProxyOptions opts_;
  TokenBucket total_up_, total_down_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  uint16_t port_ = 0;
  sockaddr_in upstream_{};
  std::atomic<bool> stopped_{false};
  std::thread accept_thread_;
  std::mutex conns_mu_;
  std::list<std::unique_ptr<Conn>> conns_;
  std::atomic<uint64_t> connections_{0}, active_{0}, upstream_failures_{0}, requests_{0}, bytes_up_{0},
      bytes_down_{0};
};

Result<std::unique_ptr<WanProxy>> WanProxy::Start(const WanProxyOptions& options) {
  if (options.upstream_port == 0) return Err(Code::kInvalidArgument, "wan_proxy: no upstream port given (--upstream HOST:PORT)");
  auto impl = std::make_unique<Impl>(options);
  SHOAL_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<WanProxy>(new WanProxy(std::move(impl)));
}

WanProxy::WanProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WanProxy::~WanProxy() { Stop(); }
uint16_t WanProxy::port() const { return impl_->port(); }
WanProxyStats WanProxy::stats() const { return impl_->stats(); }
void WanProxy::Stop() { impl_->Stop(); }

}  // namespace shoal::bench
