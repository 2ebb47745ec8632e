#include "client/worker_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <random>

#include "common/end_user.h"
#include "security/tls_context.h"

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
  if (ssl_ != nullptr) {
    // Kept for the next connection to this worker: it resumes in one round trip.
    SSL_SESSION* session = SSL_get_session(ssl_);
    if (tls_ != nullptr && session != nullptr && SSL_SESSION_is_resumable(session)) {
      tls_->PutSession(address_, SSL_get1_session(ssl_));
    }
    SSL_free(ssl_);
  }
  if (fd_ >= 0) ::close(fd_);
}

Status WorkerConnection::Handshake(security::TlsContext* tls, Deadline deadline) {
  std::shared_ptr<SSL_CTX> ctx = tls->Current();
  ssl_ = SSL_new(ctx.get());  // holds its own reference to the context
  if (ssl_ == nullptr) return Fail(Code::kInternal, "cannot start TLS: " + security::OpenSslError());
  tls_ = tls;
  SSL_set_fd(ssl_, fd_);
  SHOAL_RETURN_IF_ERROR(security::ExpectServerName(ssl_, address_));
  if (SSL_SESSION* s = tls->TakeSession(address_)) {
    SSL_set_session(ssl_, s);
    SSL_SESSION_free(s);
  }
  for (;;) {
    ERR_clear_error();
    int rc = SSL_connect(ssl_);
    if (rc == 1) return {};
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (!WaitFor(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline).ok()) {
        return Fail(Code::kUnavailable, "no TLS handshake within client.connect_timeout (is it a TLS port?)",
                    Failure::kNotShoal);
      }
      continue;
    }
    std::string why = security::OpenSslError();
    long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
      why = std::string("its certificate does not verify: ") + X509_verify_cert_error_string(verify) +
            " (check client.tls.ca_file: it must hold the CA that signed the workers' certificates)";
    } else if (why.empty()) {
      why =
          "the worker closed the connection during the handshake (not a TLS port, or it wants a client "
          "certificate: set client.tls.cert_file and key_file)";
    }
    return Fail(Code::kUnavailable, "TLS handshake failed: " + why, Failure::kNotShoal);
  }
}

ssize_t WorkerConnection::Send(const char* data, size_t len) {
  if (ssl_ == nullptr) return ::send(fd_, data, len, MSG_NOSIGNAL);
  ERR_clear_error();
  errno = 0;
  int n = SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(len, 1 << 30)));
  if (n > 0) return n;
  int err = SSL_get_error(ssl_, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
  } else if (err != SSL_ERROR_SYSCALL || errno == 0) {
    errno = ECONNRESET;
  }
  return -1;
}

ssize_t WorkerConnection::Recv(char* data, size_t len, bool wait_all) {
  if (ssl_ == nullptr) return ::recv(fd_, data, len, wait_all ? MSG_WAITALL : 0);
  size_t got = 0;
  while (got < len) {
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(ssl_, data + got, static_cast<int>(std::min<size_t>(len - got, 1 << 30)));
    if (n > 0) {
      got += static_cast<size_t>(n);
      if (!wait_all) break;
      continue;
    }
    int err = SSL_get_error(ssl_, n);
    if (got > 0) break;  // what arrived; the next call reports the error
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      errno = EAGAIN;
    } else if (err == SSL_ERROR_SYSCALL && errno == 0) {
      return 0;  // the peer closed without close_notify
    } else if (err != SSL_ERROR_SYSCALL) {
      errno = EPROTO;
    }
    return -1;
  }
  return static_cast<ssize_t>(got);
}

Status WorkerConnection::Fail(Code code, const std::string& what, Failure kind) {
  reusable_ = false;
  failure_ = kind;
  return Status(code, "worker " + address_ + ": " + what);
}

Result<std::unique_ptr<WorkerConnection>> WorkerConnection::Connect(const std::string& address, Deadline deadline,
                                                                    security::TlsContext* tls) {
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
    if (!c->WaitFor(POLLOUT, deadline).ok()) {
      return Err(Code::kUnavailable, "worker " + address + " unreachable: no connection within client.connect_timeout");
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return Err(Code::kUnavailable, "worker " + address + " unreachable: " + std::strerror(err));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (tls != nullptr) {
    if (Status st = c->Handshake(tls, deadline); !st.ok()) return Err(st);
  }
  // From here on the socket blocks, with SO_RCVTIMEO/SO_SNDTIMEO bounding each
  // call: one syscall per receive instead of poll + recv.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return c;
}

Status WorkerConnection::Arm(const Limits& limits) {
  int left = RemainingMs(limits.deadline);
  if (left == 0) return Fail(Code::kTimeout, "no answer before the call's deadline (client.timeout)", Failure::kDeadline);
  auto silence = std::min<int64_t>(limits.silence.count(), 1 << 30);
  armed_for_deadline_ = left <= silence;
  std::chrono::milliseconds t(armed_for_deadline_ ? left : silence);
  if (t == armed_) return {};  // the silence limit, as set for the previous step
  timeval tv{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>((t.count() % 1000) * 1000)};
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Fail(Code::kIo, std::string("setsockopt: ") + std::strerror(errno));
  }
  armed_ = t;
  return {};
}

Status WorkerConnection::TimedOut(const char* doing) {
  if (armed_for_deadline_) {
    return Fail(Code::kTimeout, std::string("no answer before the call's deadline (client.timeout) while ") + doing,
                Failure::kDeadline);
  }
  return Fail(Code::kUnavailable,
              "sent nothing for " + std::to_string(armed_.count()) + " ms while " + doing +
                  " (client.response_timeout): taken as hung",
              Failure::kSilent);
}

Status WorkerConnection::WaitFor(short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd_, events, 0};
    int ms = RemainingMs(deadline);
    if (ms == 0) return Fail(Code::kTimeout, "no answer before the deadline", Failure::kDeadline);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return {};
    if (rc == 0) return Fail(Code::kTimeout, "no answer before the deadline", Failure::kDeadline);
    if (errno != EINTR) return Fail(Code::kIo, std::string("poll: ") + std::strerror(errno));
  }
}

Status WorkerConnection::SendRequest(std::string_view method, std::string_view target, Limits limits,
                                     std::string_view body) {
  reusable_ = false;
  failure_ = Failure::kNone;
  interim_ = 0;
  std::string req;
  req.reserve(target.size() + 128);
  req.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ").append(address_);
  if (!body.empty()) req.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  if (!secret_.empty()) req.append("\r\nAuthorization: Bearer ").append(secret_);
  if (!on_behalf_.empty()) req.append("\r\nX-Shoal-On-Behalf-Of: ").append(on_behalf_);
  req.append("\r\nX-Shoal-Door: ").append(DoorName());
  // An id per request, which the worker's audit line and refusals carry.
  thread_local std::mt19937_64 ids{std::random_device{}()};
  char id[17];
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t v = ids();
  for (int i = 15; i >= 0; --i, v >>= 4) id[i] = kHex[v & 15];
  id[16] = '\0';
  req.append("\r\nX-Shoal-Request-Id: ").append(id);
  request_id_.assign(id, 16);
  req.append("\r\nX-Shoal-Protocol: 1\r\n\r\n");
  const size_t total = req.size() + body.size();
  size_t sent = 0;
  while (sent < total) {
    SHOAL_RETURN_IF_ERROR(Arm(limits));
    // The head, then the body from the caller's buffer (no copy).
    const char* from = sent < req.size() ? req.data() + sent : body.data() + (sent - req.size());
    size_t len = sent < req.size() ? req.size() - sent : total - sent;
    ssize_t n = Send(from, len);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return TimedOut("sending a request");
    return Fail(Code::kUnavailable, std::string("send failed: ") + std::strerror(errno), Failure::kClosed);
  }
  return {};
}

Result<ResponseHead> WorkerConnection::ReadHead(Limits limits) {
  for (;;) {
    std::string head = std::move(buffered_);
    buffered_.clear();
    size_t end;
    while ((end = head.find("\r\n\r\n")) == std::string::npos) {
      if (head.size() > 64 * 1024) return Err(Fail(Code::kIo, "response head too large"));
      SHOAL_RETURN_IF_ERROR(Arm(limits));
      char buf[8192];
      ssize_t n = Recv(buf, sizeof buf, false);
      if (n > 0) {
        head.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) return Err(Fail(Code::kUnavailable, "connection closed before a response", Failure::kClosed));
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        buffered_ = std::move(head);  // kept: a caller that finds the worker alive reads on
        return Err(TimedOut(interim_ ? "waiting for its answer after a heartbeat" : "waiting for a response"));
      }
      return Err(Fail(Code::kUnavailable, std::string("recv failed: ") + std::strerror(errno), Failure::kClosed));
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
        while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
        if (IEquals(name, "content-length")) {
          h.content_length = std::strtoull(std::string(value).c_str(), nullptr, 10);
          has_length = true;
        } else if (IEquals(name, "x-shoal-stat")) {
          h.shoal_stat = std::string(value);
        } else if (IEquals(name, "x-shoal-protocol")) {
          h.shoal_protocol = std::string(value);
        } else if (IEquals(name, "x-shoal-worker")) {
          h.shoal_worker = std::string(value);
        } else if (IEquals(name, "x-shoal-hot")) {
          // A hint: anything but a small number is ignored.
          uint32_t n = 0;
          auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
          if (ec == std::errc() && p == value.data() + value.size() && n <= 64) h.shoal_hot = n;
        } else if (IEquals(name, "connection") && IEquals(value, "close")) {
          h.keep_alive = false;
        }
      }
      pos = next;
    }
    if (expect_handshake_ && responses_ == 0 && interim_ == 0) SHOAL_RETURN_IF_ERROR(CheckHandshake(h));
    if (h.status >= 100 && h.status < 200 && h.status != 101) {
      // An interim response (a heartbeat): no body; the final one follows.
      if (++interim_ > kMaxInterim) {
        return Err(Fail(Code::kIo, "more than " + std::to_string(kMaxInterim) + " interim responses to one request"));
      }
      continue;
    }
    if (!has_length) return Err(Fail(Code::kIo, "response without Content-Length (HTTP " + std::to_string(h.status) + ")"));
    ++responses_;
    h.interim = interim_;
    return h;
  }
}

void WorkerConnection::ExpectHandshake(std::string id) {
  expect_handshake_ = true;
  expected_id_ = std::move(id);
}

Status WorkerConnection::CheckHandshake(const ResponseHead& h) {
  auto fail = [this](std::string msg) {
    reusable_ = false;
    failure_ = Failure::kNotShoal;
    return Status(Code::kUnavailable, std::move(msg) + "; check cluster.workers in the config");
  };
  if (h.shoal_protocol.empty() || h.shoal_worker.empty()) {
    return fail(address_ + " is not a Shoal worker (it answered HTTP " + std::to_string(h.status) +
                " without the Shoal handshake)");
  }
  if (h.shoal_protocol != "1") {
    return fail(address_ + " speaks Shoal protocol " + h.shoal_protocol + ", not 1: upgrade the older of the two");
  }
  if (!expected_id_.empty() && h.shoal_worker != expected_id_) {
    return fail(address_ + " is worker " + h.shoal_worker + ", not " + expected_id_);
  }
  return {};
}

Status WorkerConnection::ReadBody(std::span<char> out, Limits limits) {
  body_received_ = 0;
  size_t got = std::min(out.size(), buffered_.size());
  std::memcpy(out.data(), buffered_.data(), got);
  buffered_.erase(0, got);
  while (got < out.size()) {
    SHOAL_RETURN_IF_ERROR(Arm(limits));
    // MSG_WAITALL: one wake-up for the whole body rather than one per segment
    // batch. SO_RCVTIMEO still bounds it; a partial count comes back then, and
    // the next round allows the silence limit again (bytes did arrive).
    ssize_t n = Recv(out.data() + got, out.size() - got, true);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return Fail(Code::kUnavailable,
                  "connection closed after " + std::to_string(got) + " of " + std::to_string(out.size()) + " body bytes",
                  Failure::kClosed);
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      body_received_ = got;
      return TimedOut("sending a response body");
    }
    return Fail(Code::kUnavailable, std::string("recv failed: ") + std::strerror(errno), Failure::kClosed);
  }
  reusable_ = true;
  return {};
}

Result<std::string> WorkerConnection::ReadBodyString(uint64_t length, Limits limits) {
  if (length > (256ull << 20)) return Err(Fail(Code::kIo, "response body too large"));
  std::string s(length, '\0');
  SHOAL_RETURN_IF_ERROR(ReadBody(std::span<char>(s.data(), s.size()), limits));
  return s;
}

std::unique_ptr<WorkerConnection> ConnectionPool::TakeIdle(const std::string& address) {
  std::lock_guard lock(mu_);
  auto it = idle_.find(address);
  if (it == idle_.end() || it->second.empty()) return nullptr;
  auto c = std::move(it->second.back());
  it->second.pop_back();
  return c;
}

Result<std::unique_ptr<WorkerConnection>> ConnectionPool::Acquire(const std::string& address, Deadline deadline,
                                                                  security::TlsContext* tls) {
  if (auto c = TakeIdle(address)) return c;
  return WorkerConnection::Connect(address, deadline, tls);
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
