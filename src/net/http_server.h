// HttpServer: the one HTTP/1.1 server of a Shoal process.
//
// It owns everything about HTTP that is not an API: the accept loop, one
// strand per connection, request parsing limits, deadlines, connection
// accounting, interim (102) heartbeats, the sendfile path and the errors it
// answers itself. It knows no route: an API is a Router, a table of
// (method, path) -> Handler, and a server serves one or more of them (the
// worker's native API today; an S3 endpoint later, on the same server).
//
//   net::Router api;
//   api.Add("GET", "/v1/health", [](const net::HttpRequest&, net::Responder r) {
//     r.Respond(net::HttpResponse::Text(200, "ok\n", "text/plain"));
//   });
//   net::ServerOptions o;
//   o.listen = "127.0.0.1:0";
//   auto server = net::HttpServer::Bind(o);   // listening; server->address() is known
//   (*server)->Serve({std::move(api)});       // I/O threads start answering
//
// Handlers run on the connection's strand (an I/O thread) and must not block:
// blocking work goes to the caller's own threads, which answer through the
// Responder (from any thread) when they are done. Until then the server waits,
// sending `102 Processing` heartbeats to requests that ask for them.
//
// Connection lifecycle and limits (ServerOptions):
//   idle      waiting for a request's first byte: closed after idle_timeout
//             ("idle_timeout"), or sooner when the server is at
//             max_connections and a new connection arrives: the oldest idle
//             connection goes first ("evicted_idle");
//   reading   a request's head and body must arrive within header_timeout of
//             its first byte ("header_timeout"); over header_limit -> 431,
//             over body_limit -> 413. A route table that streams bodies
//             (Router::StreamBodies) gets the head only: its handler reads the
//             body through HttpRequest::body_stream, and every read must see
//             a byte within body_read_timeout ("body_timeout");
//   busy      waiting for the handler (heartbeats), then writing the answer;
//             every wait for the peer to take more bytes is bounded by
//             write_timeout ("write_timeout").
//   A new connection when every connection is busy or reading is answered 503
//   and closed ("over_limit"). Deadlines are enforced by a sweep every quarter
//   of the shortest timeout (10 ms to 1 s), so they hold to within that.
// Metrics: shoal_http_connections (gauge), shoal_http_connections_closed_total{reason}.
//
// This header is light on purpose (no Asio, no Beast): include it freely.
//
// Thread safety: HttpServer's methods are safe from any thread. A Router is
// immutable once handed to Serve.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/status.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace shoal::net {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The body of a request whose route table streams bodies
// (Router::StreamBodies), read by the handler in pieces, so that a large
// upload never sits whole in memory.
//
// Thread safety: one reader at a time, from the handler's own threads (Read
// blocks; never call it on an I/O thread, i.e. inside the handler itself).
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Up to out.size() bytes of the body (fewer when fewer have arrived): the
  // count, 0 at the end of the body, or why it cannot go on: no byte within
  // body_read_timeout (the connection is then closed), the peer left, a
  // malformed body, the body over the route table's limit, or the answer was
  // already given. Answers `100 Continue` first when the client asked for it.
  virtual Result<size_t> Read(std::span<char> out) = 0;
  // The next bytes of the body as the connection read them, without a copy
  // into the caller's buffer (at most 1 MiB; fewer when fewer have
  // arrived); empty at the end of the body. Fails as Read does. Hand the
  // piece back with ReturnPiece once done with it, for the next read to reuse.
  virtual Result<std::string> TakePiece();
  virtual void ReturnPiece(std::string piece) { (void)piece; }
};

// What the connection a request came on proves: set by the server for every request.
struct TransportInfo {
  bool tls = false;
  // The name a verified TLS client certificate carries (URI SAN, else
  // subject CN); "" without one.
  std::string peer_name;
  // The client's address, "ip:port" ("" when unknown): for audit lines.
  std::string peer_address;
};

struct HttpRequest {
  std::string method;  // "GET", "HEAD", "POST", ... (a HEAD is routed as a GET and answered without body)
  std::string target;  // as sent: "/v1/read?path=%2Fdata%2Fx&offset=0"
  Headers headers;     // as sent (names in their original case)
  std::string body;    // empty when body_stream is set
  // Set instead of `body` by a route table that streams bodies; it stays
  // readable until the handler answers. A handler that answers before the
  // end of the body gets the connection closed after its answer.
  std::shared_ptr<BodyReader> body_stream;
  // The connection's transport: TLS or not, the peer's name and address.
  std::shared_ptr<const TransportInfo> transport;

  std::string_view path() const;   // the target up to '?', not decoded
  std::string_view query() const;  // after '?' ("" if none), not decoded
  // The first header named `name` (case-insensitive), or nullptr.
  const std::string* Header(std::string_view name) const;
};

// One piece of a response body. The server sends the pieces in order.
class BodyPart {
 public:
  using Ready = std::function<void()>;

  // `length` bytes of the open file `fd` from `offset`, sent with sendfile(2).
  // `owner` keeps the fd open (and the bytes unchanged) until they are sent.
  static BodyPart File(int fd, uint64_t offset, uint64_t length, std::shared_ptr<const void> owner);
  // Bytes in memory that `owner` keeps alive until they are sent.
  static BodyPart Bytes(std::string_view bytes, std::shared_ptr<const void> owner);
  static BodyPart Bytes(std::string bytes);
  // `length` bytes that are not ready (or not known) yet. On reaching this part
  // the server calls wait(ready); ready() must then be called once, from any
  // thread, when take() may be called. take() returns the parts to send in its
  // place, exactly `length` bytes in total (they may be deferred again), or why
  // the body cannot go on: the head is out by then, so the server logs it and
  // closes the connection, and the client sees a short body.
  static BodyPart Deferred(uint64_t length, std::function<void(Ready)> wait,
                           std::function<Result<std::vector<BodyPart>>()> take);

  uint64_t length() const { return length_; }

 private:
  friend class Connection;
  enum class Kind { kFile, kBytes, kDeferred };
  BodyPart() = default;

  Kind kind_ = Kind::kBytes;
  uint64_t length_ = 0;
  int fd_ = -1;
  uint64_t offset_ = 0;
  const char* data_ = nullptr;
  std::shared_ptr<const void> owner_;
  std::function<void(Ready)> wait_;
  std::function<Result<std::vector<BodyPart>>()> take_;
};

struct HttpResponse {
  int status = 200;
  // Besides Content-Length, Connection and ServerOptions::response_headers,
  // which the server writes. Values must not contain CR or LF (a response that
  // has them is replaced by a 500: that is a bug in the handler).
  Headers headers;
  // The body: `body`, or when `parts` is not empty, the parts in order.
  std::string body;
  std::vector<BodyPart> parts;
  // Called once when the server is done with the response, on its I/O thread:
  // `complete` when every byte reached the kernel. Keep it short.
  std::function<void(bool complete)> on_done;

  static HttpResponse Text(int status, std::string body, std::string_view content_type);
};

namespace detail {
struct PendingResponse;
struct ResponderState;
}  // namespace detail

// The handle through which a handler answers: Respond() once, from any
// thread. Copies share one answer (so a Responder fits in a std::function);
// when the last copy goes without an answer, the server answers 500 (a bug in
// the handler, but the client is not left waiting).
class Responder {
 public:
  explicit Responder(std::shared_ptr<detail::PendingResponse> pending);

  void Respond(HttpResponse response) const;

 private:
  std::shared_ptr<detail::ResponderState> state_;
};

// Runs on the connection's strand; `request` lives until the handler returns.
using Handler = std::function<void(const HttpRequest& request, Responder responder)>;

// A route table: exact (method, path) routes, and optionally a fallback for
// every path no route names (an S3 endpoint's /bucket/key space).
class Router {
 public:
  void Add(std::string method, std::string path, Handler handler);
  void SetFallback(Handler handler);

  // The handlers of this table read request bodies themselves
  // (HttpRequest::body_stream), up to `max_body` bytes each (the stream fails
  // past it); ServerOptions::body_limit does not apply to them.
  void StreamBodies(uint64_t max_body) { stream_limit_ = max_body; }
  // 0 when bodies arrive whole.
  uint64_t stream_limit() const { return stream_limit_; }

  enum class Match { kFound, kWrongMethod, kNone };
  // The handler for (method, path); HEAD finds GET routes.
  Match Find(std::string_view method, std::string_view path, const Handler** handler) const;

 private:
  struct Route {
    std::string method, path;
    Handler handler;
  };
  std::vector<Route> routes_;
  Handler fallback_;
  uint64_t stream_limit_ = 0;
};

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  int io_threads = 2;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds idle_timeout{120'000};
  std::chrono::milliseconds write_timeout{60'000};
  // Each read of a streamed body (Router::StreamBodies) waits at most this
  // long for a byte: a client that stalls mid-body cannot hold a thread.
  std::chrono::milliseconds body_read_timeout{30'000};
  std::chrono::milliseconds heartbeat_interval{300};
  size_t max_connections = 0;  // 0: DefaultMaxConnections()
  size_t header_limit = 16 * 1024;
  size_t body_limit = 1 << 20;
  // Written on every response, interim and final, success and error.
  Headers response_headers;
  // Requests carrying this header with this value get `102 Processing`
  // interim responses every heartbeat_interval while their answer is not
  // ready. An empty name: never.
  std::string heartbeat_header;
  std::string heartbeat_value;
  // SIGINT and SIGTERM stop the server.
  bool handle_signals = false;
  // The config section the limits come from, for messages ("worker" names
  // worker.max_connections).
  std::string settings_prefix = "server";
  // TLS: when set, every connection is TLS, with the context this returns at
  // its accept (so renewed certificates apply to new connections). A first
  // byte that is not a TLS handshake is answered `400` in plain HTTP at once
  // and the connection closed; a handshake must finish within
  // tls_handshake_timeout. The verified client certificate's name reaches
  // handlers in HttpRequest::transport.
  std::function<std::shared_ptr<SSL_CTX>()> tls_context;
  std::chrono::milliseconds tls_handshake_timeout{10'000};
  // Appended to the message of a 404 for an unknown route: where the routes are documented.
  std::string unknown_route_hint;
  // Renders an error the server answers itself (malformed request, unknown
  // route, over the connection limit, a handler that dropped its request).
  // Default: JSON {"code": CodeName, "message": ...}.
  std::function<HttpResponse(int http_status, const Status& status)> error_response;
  // When set, sees each routed request with its handler's answer just before
  // the answer is sent, on the connection's strand (keep it short): for
  // error logs and tallies.
  std::function<void(const HttpRequest& request, const HttpResponse& response)> on_answer;
};

class HttpServer {
 public:
  // Binds and listens (connections wait in the backlog until Serve). Ignores
  // SIGPIPE process-wide: a peer that goes away mid-sendfile must not kill
  // the process.
  static Result<std::unique_ptr<HttpServer>> Bind(ServerOptions options);
  // Starts the I/O threads serving these route tables, consulted in order.
  // REQUIRES: called once.
  void Serve(std::vector<Router> routers);
  ~HttpServer();  // Stop() and Wait()

  // The bound address, "127.0.0.1:40123" ("[::1]:40123" for IPv6).
  const std::string& address() const;
  uint16_t port() const;
  // The connection cap in force (options.max_connections or the default).
  size_t max_connections() const;

  // Stops at once: no new connections, and requests in progress are abandoned.
  void Stop();
  // Returns once stopped and the I/O threads have finished.
  void Wait();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The connection cap derived from RLIMIT_NOFILE: half of the descriptors left
// after a reserve for the process's own files and under-store sockets; the
// other half is for the page files that responses hold open.
size_t DefaultMaxConnections();

// Ignores SIGPIPE for the whole process: writes to a socket whose peer is gone
// then fail with EPIPE instead of killing the process. Idempotent.
void IgnoreSigpipe();

}  // namespace shoal::net
