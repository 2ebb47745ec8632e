// The TLS side of a listener's connections (internal to src/net; includes Asio).
//
// An accepted TCP connection goes through ServeTls: its first byte must open
// a TLS handshake (else it is answered `400` in plain HTTP at once and
// closed), and the handshake must finish before the deadline. Then the
// connection is relayed: ServeTls makes a socketpair, hands one end to the
// HTTP server as if it were the client's socket (so the server's reads,
// writes and sendfile stay as they are) and moves bytes between the other end
// and the TLS session until either side closes. Every wait on the client is
// bounded: the handshake by its deadline, a client that stops reading by
// write_timeout; the server's own deadlines close its end, which ends the relay.
#pragma once

#include <boost/asio.hpp>

#include <functional>
#include <memory>

#include "net/http_server.h"

namespace shoal::net::detail {

struct TlsFrontOptions {
  std::shared_ptr<SSL_CTX> context;
  std::chrono::milliseconds handshake_timeout;
  std::chrono::milliseconds write_timeout;
  // The plain HTTP answer to a client that does not speak TLS.
  std::string plaintext_answer;
};

// Called on the connection's strand once the handshake is done: `plain` is
// the server's end of the relay.
using TlsReady =
    std::function<void(boost::asio::ip::tcp::socket plain, std::shared_ptr<const TransportInfo> transport)>;

// "ip:port" of the socket's peer ("" when it has none, e.g. already closed).
inline std::string EndpointText(const boost::asio::ip::tcp::socket& sock) {
  boost::system::error_code ec;
  auto ep = sock.remote_endpoint(ec);
  if (ec) return "";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

// Makes the handshake counters (all results, at 0) so they are served from the
// start, TLS on or off: a rate over them needs no special case.
void RegisterTlsMetrics();

boost::asio::awaitable<void> ServeTls(boost::asio::ip::tcp::socket sock, TlsFrontOptions options, TlsReady ready);

}  // namespace shoal::net::detail
