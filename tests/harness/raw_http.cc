#include "tests/harness/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace shoal::testing {

namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t Count(std::string_view hay, std::string_view needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace

std::unique_ptr<RawConnection> RawConnection::Connect(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return nullptr;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<RawConnection>(new RawConnection(fd));
}

RawConnection::~RawConnection() { Close(); }

void RawConnection::ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }

void RawConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawConnection::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawConnection::RecvSome(Clock::time_point deadline) {
  if (closed_ || fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, MillisLeft(deadline)) <= 0) return false;
  char buf[65536];
  ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) {
    closed_ = true;
    return false;
  }
  in_.append(buf, static_cast<size_t>(n));
  return true;
}

bool RawConnection::ReadUntil(std::string_view needle, Millis timeout, size_t count) {
  auto deadline = Clock::now() + timeout;
  while (Count(in_, needle) < count) {
    if (!RecvSome(deadline) && (closed_ || Clock::now() >= deadline)) return Count(in_, needle) >= count;
  }
  return true;
}

std::optional<RawConnection::Response> RawConnection::ReadResponse(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  size_t end;
  while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
    if (!RecvSome(deadline) && (closed_ || Clock::now() >= deadline)) return std::nullopt;
  }
  Response r;
  r.head = in_.substr(0, end + 2);
  if (r.head.size() < 12 || !r.head.starts_with("HTTP/1.1 ")) return std::nullopt;
  r.status = std::atoi(r.head.c_str() + 9);
  size_t length = 0;
  if (r.status >= 200) length = std::strtoull(r.Header("Content-Length").c_str(), nullptr, 10);
  while (in_.size() < end + 4 + length) {
    if (!RecvSome(deadline) && (closed_ || Clock::now() >= deadline)) return std::nullopt;
  }
  r.body = in_.substr(end + 4, length);
  in_.erase(0, end + 4 + length);
  return r;
}

bool RawConnection::WaitClosed(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (!closed_) {
    if (!RecvSome(deadline) && !closed_ && Clock::now() >= deadline) return false;
  }
  return true;
}

std::string RawConnection::Response::Header(std::string_view name) const {
  std::string want = "\r\n" + Lower(name) + ":";
  std::string lower = Lower(head);
  auto at = lower.find(want);
  if (at == std::string::npos) return "";
  auto start = head.find_first_not_of(' ', at + want.size());
  auto stop = head.find("\r\n", start);
  return head.substr(start, stop - start);
}

std::string HttpGet(const std::string& target, const std::string& extra) {
  return "GET " + target + " HTTP/1.1\r\nHost: test\r\n" + extra + "\r\n";
}

// ---- HeldS3 ----

HeldS3::HeldS3(std::string object) : object_(std::move(object)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(listen_fd_, 64) == 0 &&
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port_ = ntohs(a.sin_port);
  }
  if (::pipe(stop_) != 0) stop_[0] = stop_[1] = -1;
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

HeldS3::~HeldS3() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    held_ = false;
  }
  cv_.notify_all();
  (void)!::write(stop_[1], "x", 1);
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(connections_);
  }
  for (auto& t : threads) t.join();
  ::close(listen_fd_);
  ::close(stop_[0]);
  ::close(stop_[1]);
}

MountConfig HeldS3::Mount(const std::string& path) const {
  MountConfig m;
  m.path = path;
  m.ufs = "s3://bucket/prefix/";
  m.options = {{"endpoint", "http://127.0.0.1:" + std::to_string(port_)},
               {"access_key_id", "AKIDTEST"},
               {"secret_access_key", "test-secret"},
               {"region", "us-east-1"},
               {"max_retries", "0"},
               {"request_timeout", "60s"}};
  return m;
}

bool HeldS3::WaitForRequests(size_t n, Millis timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.load() >= n; });
}

void HeldS3::Hold() {
  std::lock_guard lock(mu_);
  held_ = true;
}

void HeldS3::Release() {
  {
    std::lock_guard lock(mu_);
    held_ = false;
  }
  cv_.notify_all();
}

void HeldS3::Fail(bool fail) {
  std::lock_guard lock(mu_);
  fail_ = fail;
}

void HeldS3::AcceptLoop() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[1].revents) return;
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::lock_guard lock(mu_);
    connections_.emplace_back([this, c] { Serve(c); });
  }
}

void HeldS3::Serve(int fd) {
  std::string in;
  char buf[65536];
  size_t end;
  while ((end = in.find("\r\n\r\n")) == std::string::npos) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 || p[1].revents) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  if (end != std::string::npos) {
    std::string out;
    {
      std::unique_lock lock(mu_);
      ++requests_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !held_; });
      out = Answer(in.substr(0, end));
    }
    for (size_t off = 0; off < out.size();) {
      ssize_t n = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  }
  ::close(fd);
}

// REQUIRES: mu_ held.
std::string HeldS3::Answer(const std::string& request) {
  auto reply = [](int status, const std::string& body, const std::string& headers) {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n" + headers + "\r\n" + body;
  };
  if (fail_) {
    return reply(500, "<?xml version=\"1.0\"?><Error><Code>InternalError</Code><Message>HeldS3 fails</Message></Error>",
                 "");
  }
  std::string lower = Lower(request);
  auto at = lower.find("\r\nrange: bytes=");
  if (at == std::string::npos) return reply(200, object_, "ETag: \"v1\"\r\n");
  size_t a = std::strtoull(request.c_str() + at + 15, nullptr, 10);
  size_t b = std::strtoull(request.c_str() + request.find('-', at + 15) + 1, nullptr, 10);
  if (a >= object_.size()) return reply(416, "", "Content-Range: bytes */" + std::to_string(object_.size()) + "\r\n");
  b = std::min(b, object_.size() - 1);
  return reply(206, object_.substr(a, b - a + 1),
               "Content-Range: bytes " + std::to_string(a) + "-" + std::to_string(b) + "/" +
                   std::to_string(object_.size()) + "\r\nETag: \"v1\"\r\n");
}

}  // namespace shoal::testing
