#include "net/tls_front.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <vector>

#include "common/metrics.h"
#include "net/cert_name.h"

#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace shoal::net::detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using asio::awaitable;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr size_t kUpBuffer = 64 << 10;
constexpr size_t kDownBuffer = 256 << 10;
constexpr int kPairBuffer = 4 << 20;

Counter& Handshakes(const char* result) {
  return MetricsRegistry::Global().GetCounter(
      "shoal_tls_handshakes_total", "TLS handshakes on the server's listeners, by result", {{"result", result}});
}

}  // namespace

void RegisterTlsMetrics() {
  for (const char* r : {"ok", "failed", "plaintext", "timeout", "closed"}) Handshakes(r);
}

namespace {

std::string ErrorText() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

// The name a verified client certificate carries (CertificateName).
std::string PeerName(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string name = SSL_get_verify_result(ssl) == X509_V_OK ? CertificateName(cert) : std::string();
  X509_free(cert);
  return name;
}

// One relayed connection: the client's TCP socket with its TLS session, and
// our end of the socketpair. Lives while either direction runs.
struct Relay {
  Relay(tcp::socket s, std::chrono::milliseconds write_timeout)
      : net(std::move(s)), plain(net.get_executor()), watchdog(net.get_executor()), write_timeout(write_timeout) {}
  ~Relay() {
    if (ssl != nullptr) SSL_free(ssl);
  }

  void Close() {
    boost::system::error_code ignored;
    net.close(ignored);
    plain.close(ignored);
    watchdog.cancel();
  }

  // Waits for the client's socket; a wait to write is bounded by write_timeout.
  awaitable<bool> WaitNet(int ssl_error) {
    if (ssl_error == SSL_ERROR_WANT_READ) {
      auto [ec] = co_await net.async_wait(tcp::socket::wait_read, kTuple);
      co_return !ec;
    }
    if (ssl_error != SSL_ERROR_WANT_WRITE) co_return false;
    watchdog.expires_after(write_timeout);
    watchdog.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      boost::system::error_code ignored;
      net.close(ignored);
    });
    auto [ec] = co_await net.async_wait(tcp::socket::wait_write, kTuple);
    watchdog.cancel();
    co_return !ec && net.is_open();
  }

  tcp::socket net;
  tcp::socket plain;  // an AF_UNIX socket in a tcp::socket: only its descriptor and waits are used
  asio::steady_timer watchdog;
  std::chrono::milliseconds write_timeout;
  SSL* ssl = nullptr;
};

// Client to server: decrypted bytes into the socketpair.
awaitable<void> Up(std::shared_ptr<Relay> r) {
  std::vector<char> buf(kUpBuffer);
  for (;;) {
    ERR_clear_error();
    int n = SSL_read(r->ssl, buf.data(), static_cast<int>(buf.size()));
    if (n <= 0) {
      int err = SSL_get_error(r->ssl, n);
      if (!co_await r->WaitNet(err)) break;
      continue;
    }
    size_t off = 0;
    bool ok = true;
    while (ok && off < static_cast<size_t>(n)) {
      ssize_t w =
          ::send(r->plain.native_handle(), buf.data() + off, static_cast<size_t>(n) - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        off += static_cast<size_t>(w);
      } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        auto [ec] = co_await r->plain.async_wait(tcp::socket::wait_write, kTuple);
        ok = !ec;
      } else {
        ok = false;
      }
    }
    if (!ok) break;
  }
  // The server sees the end of the client's requests.
  ::shutdown(r->plain.native_handle(), SHUT_WR);
}

// Server to client: the socketpair's bytes, encrypted.
awaitable<void> Down(std::shared_ptr<Relay> r) {
  std::vector<char> buf(kDownBuffer);
  for (;;) {
    ssize_t n = ::recv(r->plain.native_handle(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      auto [ec] = co_await r->plain.async_wait(tcp::socket::wait_read, kTuple);
      if (ec) break;
      continue;
    }
    if (n <= 0) break;
    size_t off = 0;
    bool ok = true;
    while (ok && off < static_cast<size_t>(n)) {
      ERR_clear_error();
      int w = SSL_write(r->ssl, buf.data() + off, static_cast<int>(static_cast<size_t>(n) - off));
      if (w > 0) {
        off += static_cast<size_t>(w);
      } else {
        ok = co_await r->WaitNet(SSL_get_error(r->ssl, w));
      }
    }
    if (!ok) break;
  }
  if (r->net.is_open()) {
    SSL_shutdown(r->ssl);  // close_notify, best effort (non-blocking)
    boost::system::error_code ignored;
    r->net.shutdown(tcp::socket::shutdown_send, ignored);
  }
  r->Close();
}

}  // namespace

awaitable<void> ServeTls(tcp::socket sock, TlsFrontOptions o, TlsReady ready) {
  auto r = std::make_shared<Relay>(std::move(sock), o.write_timeout);
  // The handshake's deadline: the socket is closed when it passes, which ends every wait below.
  auto expired = std::make_shared<bool>(false);
  const bool& timed_out = *expired;
  r->watchdog.expires_after(o.handshake_timeout);
  r->watchdog.async_wait([r, expired](const boost::system::error_code& ec) {
    if (ec) return;
    *expired = true;
    boost::system::error_code ignored;
    r->net.close(ignored);
  });
  struct CancelOnExit {
    Relay& r;
    ~CancelOnExit() { r.watchdog.cancel(); }
  } cancel{*r};

  // A client that speaks plain HTTP to this port gets an answer it can read, at once.
  auto [wec] = co_await r->net.async_wait(tcp::socket::wait_read, kTuple);
  unsigned char first = 0;
  if (wec || ::recv(r->net.native_handle(), &first, 1, MSG_PEEK) != 1) {
    Handshakes(timed_out ? "timeout" : "closed").Add(1);
    r->Close();
    co_return;
  }
  if (first != 0x16) {  // a TLS record of type handshake
    Handshakes("plaintext").Add(1);
    [[maybe_unused]] ssize_t n = ::send(r->net.native_handle(), o.plaintext_answer.data(), o.plaintext_answer.size(),
                                        MSG_NOSIGNAL | MSG_DONTWAIT);
    char scratch[4096];  // what the client sent is read, so that closing sends FIN rather than RST
    while (::recv(r->net.native_handle(), scratch, sizeof scratch, MSG_DONTWAIT) > 0) {
    }
    boost::system::error_code ignored;
    r->net.shutdown(tcp::socket::shutdown_send, ignored);
    r->Close();
    co_return;
  }

  r->ssl = SSL_new(o.context.get());
  if (r->ssl == nullptr) {
    spdlog::error("cannot start a TLS session: {}", ErrorText());
    r->Close();
    co_return;
  }
  SSL_set_fd(r->ssl, r->net.native_handle());
  SSL_set_accept_state(r->ssl);
  for (;;) {
    ERR_clear_error();
    int rc = SSL_do_handshake(r->ssl);
    if (rc == 1) break;
    int err = SSL_get_error(r->ssl, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      auto [ec] = co_await r->net.async_wait(
          err == SSL_ERROR_WANT_READ ? tcp::socket::wait_read : tcp::socket::wait_write, kTuple);
      if (!ec && !timed_out) continue;
    }
    std::string why = timed_out ? "no handshake within the deadline" : ErrorText();
    Handshakes(timed_out ? "timeout" : "failed").Add(1);
    spdlog::debug("TLS handshake refused: {}", why.empty() ? "the client closed the connection" : why);
    r->Close();
    co_return;
  }
  r->watchdog.cancel();
  Handshakes("ok").Add(1);

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    spdlog::warn("cannot relay a TLS connection: socketpair: {}", std::strerror(errno));
    r->Close();
    co_return;
  }
  for (int fd : fds) {
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kPairBuffer, sizeof kPairBuffer);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kPairBuffer, sizeof kPairBuffer);
  }
  boost::system::error_code ec;
  r->plain.assign(tcp::v4(), fds[0], ec);
  tcp::socket server_end(r->net.get_executor());
  server_end.assign(tcp::v4(), fds[1], ec);
  auto transport = std::make_shared<TransportInfo>();
  transport->tls = true;
  transport->peer_name = PeerName(r->ssl);
  transport->peer_address = EndpointText(r->net);
  ready(std::move(server_end), std::move(transport));
  asio::co_spawn(r->net.get_executor(), Down(r), asio::detached);
  co_await Up(std::move(r));
}

}  // namespace shoal::net::detail
