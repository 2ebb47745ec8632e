#include "client/worker_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace shoal {
namespace {

int RemainingMs(Deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::steady_clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

WorkerConnection::~WorkerConnection() {
  if (fd_ >= 0) ::close(fd_);
}

Status WorkerConnection::Fail(Code code, const std::string& what) {
  reusable_ = false;
  return Status(code, "worker " + address_ + ": " + what);
}

Result<std::unique_ptr<WorkerConnection>> WorkerConnection::Connect(const std::string& address, Deadline deadline) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return Err(Code::kInvalidArgument, "worker address '" + address + "' is not host:port");
  std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Err(Code::kUnavailable, "worker " + address + ": cannot resolve host: " + gai_strerror(rc));
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return Err(Code::kIo, std::string("socket: ") + std::strerror(errno));
  }
  int rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  std::unique_ptr<WorkerConnection> c(new WorkerConnection(fd, address));
  if (rc != 0 && errno != EINPROGRESS) {
    return Err(Code::kUnavailable, "worker " + address + " unreachable: " + std::strerror(errno));
  }
  if (rc != 0) {
    SHOAL_RETURN_IF_ERROR(c->WaitFor(POLLOUT, deadline));
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return Err(Code::kUnavailable, "worker " + address + " unreachable: " + std::strerror(err));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // From here on the socket blocks, with SO_RCVTIMEO/SO_SNDTIMEO bounding each
  // call by the deadline: one syscall per receive instead of poll + recv.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return c;
}

Status WorkerConnection::ArmTimeout(Deadline deadline) {
  int ms = RemainingMs(deadline);
  if (ms == 0) return Fail(Code::kTimeout, "no answer before the deadline (client.timeout)");
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Fail(Code::kIo, std::string("setsockopt: ") + std::strerror(errno));
  }
  return {};
}

Status WorkerConnection::WaitFor(short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd_, events, 0};
    int ms = RemainingMs(deadline);
    if (ms == 0) return Fail(Code::kTimeout, "no answer before the deadline (client.timeout)");
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return {};
    if (rc == 0) return Fail(Code::kTimeout, "no answer before the deadline (client.timeout)");
    if (errno != EINTR) return Fail(Code::kIo, std::string("poll: ") + std::strerror(errno));
  }
}

Status WorkerConnection::SendRequest(std::string_view method, std::string_view target, Deadline deadline) {
  reusable_ = false;
  SHOAL_RETURN_IF_ERROR(ArmTimeout(deadline));
  std::string req;
  req.reserve(target.size() + 64);
  req.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ").append(address_).append("\r\n\r\n");
  size_t sent = 0;
  while (sent < req.size()) {
    ssize_t n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      SHOAL_RETURN_IF_ERROR(WaitFor(POLLOUT, deadline));
      continue;
    }
    return Fail(Code::kUnavailable, std::string("send failed: ") + std::strerror(errno));
  }
  return {};
}

Result<ResponseHead> WorkerConnection::ReadHead(Deadline deadline) {
  SHOAL_RETURN_IF_ERROR(ArmTimeout(deadline));
  std::string head = std::move(buffered_);
  buffered_.clear();
  size_t end;
  while ((end = head.find("\r\n\r\n")) == std::string::npos) {
    if (head.size() > 64 * 1024) return Err(Fail(Code::kIo, "response head too large"));
    char buf[8192];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      head.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return Err(Fail(Code::kUnavailable, "connection closed before a response"));
    if (errno == EAGAIN || errno == EINTR) {
      SHOAL_RETURN_IF_ERROR(WaitFor(POLLIN, deadline));
      continue;
    }
    return Err(Fail(Code::kUnavailable, std::string("recv failed: ") + std::strerror(errno)));
  }
  buffered_ = head.substr(end + 4);
  head.resize(end);
  ResponseHead h;
  // "HTTP/1.1 200 OK"
  if (head.size() < 12 || head.compare(0, 5, "HTTP/") != 0) return Err(Fail(Code::kIo, "malformed status line"));
  h.status = std::atoi(head.c_str() + 9);
  bool has_length = false;
  size_t pos = head.find("\r\n");
  while (pos != std::string::npos && pos < head.size()) {
    size_t next = head.find("\r\n", pos + 2);
    std::string_view line(head.data() + pos + 2, (next == std::string::npos ? head.size() : next) - pos - 2);
    auto colon = line.find(':');
    if (colon != std::string_view::npos) {
      auto name = line.substr(0, colon);
      auto value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (IEquals(name, "content-length")) {
        h.content_length = std::strtoull(std::string(value).c_str(), nullptr, 10);
        has_length = true;
      } else if (IEquals(name, "x-shoal-stat")) {
        h.shoal_stat = std::string(value);
      } else if (IEquals(name, "connection") && IEquals(value, "close")) {
        h.keep_alive = false;
      }
    }
    pos = next;
  }
  if (!has_length) return Err(Fail(Code::kIo, "response without Content-Length"));
  return h;
}

Status WorkerConnection::ReadBody(std::span<char> out, Deadline deadline) {
  size_t got = std::min(out.size(), buffered_.size());
  std::memcpy(out.data(), buffered_.data(), got);
  buffered_.erase(0, got);
  if (got < out.size()) SHOAL_RETURN_IF_ERROR(ArmTimeout(deadline));
  while (got < out.size()) {
    // MSG_WAITALL: one wake-up for the whole body rather than one per segment
    // batch (SO_RCVTIMEO still bounds it; a partial count comes back then).
    ssize_t n = ::recv(fd_, out.data() + got, out.size() - got, MSG_WAITALL);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return Fail(Code::kUnavailable, "connection closed after " + std::to_string(got) + " of " +
                                          std::to_string(out.size()) + " body bytes");
    }
    if (errno == EAGAIN || errno == EINTR) {
      SHOAL_RETURN_IF_ERROR(WaitFor(POLLIN, deadline));
      continue;
    }
    return Fail(Code::kUnavailable, std::string("recv failed: ") + std::strerror(errno));
  }
  reusable_ = true;
  return {};
}

Result<std::string> WorkerConnection::ReadBodyString(uint64_t length, Deadline deadline) {
  if (length > (256ull << 20)) return Err(Fail(Code::kIo, "response body too large"));
  std::string s(length, '\0');
  SHOAL_RETURN_IF_ERROR(ReadBody(std::span<char>(s.data(), s.size()), deadline));
  return s;
}

Result<std::unique_ptr<WorkerConnection>> ConnectionPool::Acquire(const std::string& address, Deadline deadline) {
  {
    std::lock_guard lock(mu_);
    auto& v = idle_[address];
    if (!v.empty()) {
      auto c = std::move(v.back());
      v.pop_back();
      return c;
    }
  }
  return WorkerConnection::Connect(address, deadline);
}

void ConnectionPool::Release(std::unique_ptr<WorkerConnection> conn) {
  if (!conn || !conn->reusable()) return;
  std::lock_guard lock(mu_);
  auto& v = idle_[conn->address()];
  if (v.size() < max_idle_) v.push_back(std::move(conn));
}

void ConnectionPool::Forget(const std::string& address) {
  std::lock_guard lock(mu_);
  idle_.erase(address);
}

}  // namespace shoal
