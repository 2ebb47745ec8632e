// The HTTP server on Asio + Beast (C++20 coroutines). The only file besides
// asio_impl.cc that includes Asio or Beast.
//
// Every connection runs one coroutine on its own strand; its timer shares the
// strand, so nothing touches a socket from two threads at once. A request's
// answer arrives through a detail::Event that any thread may set; the
// coroutine waits for it on a steady_timer that the event's wake function
// cancels (waits that cannot be cancelled never enter an awaitable operator).
//
// Deadlines are not timers: a connection stores its current phase's deadline
// (two stores per phase), and one sweep per server closes the connections
// past theirs. The request path then costs no timer syscalls or wake-ups.
#include "net/http_server.h"

#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "common/metrics.h"
#include "net/beast_request.h"
#include "net/pending_response.h"
#include "net/tls_front.h"

// g++ 12 reports Asio's coroutine frames (aligned_alloc, then the frame's
// operator delete, which frees it) as mismatched; they are not.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace shoal::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// Room for a few pages in flight, so sendfile rarely waits for the reader.
constexpr int kSendBuffer = 4 << 20;
// One sendfile(2) call moves at most this much (the kernel caps it near 2 GiB).
constexpr uint64_t kMaxSendfile = 1ull << 30;

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

enum class CloseReason {
  kNone,
  kHeaderTimeout,
  kIdleTimeout,
  kEvictedIdle,
  kOverLimit,
  kWriteTimeout,
  kBodyTimeout,
  kCount
};
constexpr const char* kReasonNames[] = {"",           "header_timeout", "idle_timeout", "evicted_idle",
                                        "over_limit", "write_timeout",  "body_timeout"};
// One streamed-body read moves at most this much through the connection's buffer.
constexpr size_t kMaxStreamRead = 1 << 20;
// Room made in a connection's buffer for each read of a streamed body (Beast
// reads at most 64 KiB at once).
constexpr size_t kBodyReadRoom = 64 << 10;
// Pieces of kMaxStreamRead a streamed body keeps for reuse once copied out.
constexpr size_t kSpareReads = 2;
// How far the strand reads a streamed body ahead of its reader.
constexpr size_t kStreamReadAhead = 4 << 20;
// Closing a connection while a request body is still arriving makes the
// kernel reset it, and a reset can destroy the answer before the client has
// read it (an S3 PUT refused before its body, sent in a second segment, got a
// connection error instead of its 404). So such a close lingers: what the
// client still sends is read and dropped until it closes, for at most this
// long and this many bytes.
constexpr std::chrono::milliseconds kLingerTime{2000};
constexpr size_t kLingerBytes = 4 << 20;

}  // namespace

// ---- the server ----

class Connection;

// What every connection shares: options, routes, the table of open and idle
// connections, metrics. Outlives the io_context (and so every connection).
struct ServerCore {
  ServerOptions opts;
  std::vector<Router> routers;
  size_t max_connections = 0;
  std::string interim;  // the 102 Processing response, headers included

  std::mutex mu;
  size_t open = 0;
  std::list<std::weak_ptr<Connection>> all;   // every admitted connection, for the deadline sweep
  std::list<std::weak_ptr<Connection>> idle;  // oldest first

  Gauge* connections = nullptr;
  Counter* closed[static_cast<int>(CloseReason::kCount)] = {};

  void CountClose(CloseReason r) { closed[static_cast<int>(r)]->Add(1); }

  // The body limit of a streaming route table serving (method, path); 0 when
  // the body is read whole.
  uint64_t StreamLimit(std::string_view method, std::string_view path) const {
    const Handler* handler = nullptr;
    for (const auto& r : routers) {
      auto m = r.Find(method, path, &handler);
      if (m == Router::Match::kFound) return r.stream_limit();
    }
    return 0;
  }

  HttpResponse Error(int http_status, const Status& st) const {
    return opts.error_response ? opts.error_response(http_status, st) : DefaultErrorResponse(http_status, st);
  }

  std::string Head(int status, const Headers& headers, uint64_t length, bool keep) const {
    std::string h = "HTTP/1.1 " + std::to_string(status) + " ";
    auto reason = http::obsolete_reason(static_cast<http::status>(status));
    h.append(reason.data(), reason.size());
    h += "\r\nServer: shoal\r\n";
    for (const auto& [k, v] : opts.response_headers) h += k + ": " + v + "\r\n";
    for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
    h += "Content-Length: " + std::to_string(length) + "\r\n";
    if (!keep) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
  }
};

class StreamingBody;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ServerCore& core, tcp::socket sock, std::shared_ptr<const TransportInfo> transport)
      : core_(core), sock_(std::move(sock)), wake_(sock_.get_executor()), transport_(std::move(transport)) {}

  ~Connection() {
    std::lock_guard lock(core_.mu);
    if (in_idle_list_) core_.idle.erase(idle_pos_);
    if (!admitted_) return;
    core_.all.erase(all_pos_);
    --core_.open;
    core_.connections->Add(-1);
  }

  asio::any_io_executor executor() { return sock_.get_executor(); }
  tcp::socket& socket() { return sock_; }

  // Called by the acceptor under core.mu: counts the new connection and puts
  // it on the idle list at once (it is idle until its first byte), so that a
  // burst of connections can evict each other before their sessions start.
  void AdmitLocked() {
    admitted_ = true;
    ++core_.open;
    core_.connections->Add(1);
    core_.all.push_back(weak_from_this());
    all_pos_ = std::prev(core_.all.end());
    core_.idle.push_back(weak_from_this());
    idle_pos_ = std::prev(core_.idle.end());
    in_idle_list_ = true;
  }

  // The session: requests one after another until the peer leaves, a limit
  // cuts it off or the server stops. `self` keeps the connection alive.
  static awaitable<void> Run(std::shared_ptr<Connection> self);

  // On the strand: closes the connection if it is still idle.
  void EvictIfIdle() {
    if (state_ == State::kIdle) CloseFor(CloseReason::kEvictedIdle);
  }

  // Any thread: whether the current phase's deadline has passed (the sweep
  // then calls CloseIfExpired on the strand, which looks again).
  bool Expired(int64_t now) const { return deadline_.load(std::memory_order_relaxed) <= now; }
  // On the strand.
  void CloseIfExpired() {
    if (Expired(Now())) CloseFor(deadline_reason_);
  }
  static int64_t Now() { return Clock::now().time_since_epoch().count(); }

  // Called by the acceptor under core.mu: takes this connection off the idle list.
  void TakeOffIdleListLocked() {
    if (!in_idle_list_) return;
    core_.idle.erase(idle_pos_);
    in_idle_list_ = false;
  }

 private:
  friend class StreamingBody;
  enum class State { kIdle, kReading, kBusy };

  void EnterIdle() {
    state_ = State::kIdle;
    std::lock_guard lock(core_.mu);
    if (in_idle_list_) return;  // admitted and not yet active
    core_.idle.push_back(weak_from_this());
    idle_pos_ = std::prev(core_.idle.end());
    in_idle_list_ = true;
  }
  void LeaveIdle(State next) {
    state_ = next;
    std::lock_guard lock(core_.mu);
    TakeOffIdleListLocked();
  }

  // The deadline of the current phase: once it has passed, the server's
  // sweep closes the connection for `reason`. One at a time. Two stores, no
  // timer: a phase change costs nothing on the request path.
  void Arm(std::chrono::milliseconds d, CloseReason reason) {
    deadline_reason_ = reason;
    deadline_.store(Now() + std::chrono::duration_cast<Clock::duration>(d).count(), std::memory_order_relaxed);
  }
  void Disarm() { deadline_.store(kNoDeadline, std::memory_order_relaxed); }
  static constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

  void CloseFor(CloseReason reason) {
    if (closed_ != CloseReason::kNone) return;
    closed_ = reason;
    core_.CountClose(reason);
    boost::system::error_code ignored;
    sock_.close(ignored);  // pending waits complete with operation_aborted
  }

  awaitable<bool> Serve(HttpRequest& req, bool keep);
  awaitable<bool> Await(detail::Event& ev, bool heartbeat);
  awaitable<bool> Send(HttpResponse& res, bool head_only, bool keep);
  awaitable<bool> SendParts(std::vector<BodyPart>& parts);
  awaitable<bool> Write(std::string_view a, std::string_view b, bool more);
  awaitable<bool> SendFile(int fd, uint64_t offset, uint64_t len);
  awaitable<bool> WaitWritable();

  ServerCore& core_;
  tcp::socket sock_;
  asio::steady_timer wake_;  // waits for answers and deferred body parts
  std::shared_ptr<const TransportInfo> transport_;  // null on a plain connection
  std::atomic<int64_t> deadline_{kNoDeadline};  // steady_clock ticks; written on the strand
  CloseReason deadline_reason_ = CloseReason::kNone;  // strand only
  State state_ = State::kIdle;
  CloseReason closed_ = CloseReason::kNone;
  std::string target_;  // of the request being served, for log lines
  beast::flat_buffer buf_;  // bytes read from the socket and not parsed yet
  // Guarded by core_.mu.
  bool admitted_ = false;
  bool in_idle_list_ = false;
  std::list<std::weak_ptr<Connection>>::iterator idle_pos_, all_pos_;
};

Result<std::string> BodyReader::TakePiece() {
  std::string piece;
  piece.resize_and_overwrite(kMaxStreamRead, [](char*, size_t n) { return n; });
  auto n = Read(piece);
  if (!n) return Err(n.error());
  piece.resize(*n);
  return piece;
}

// A streamed request body: the handler's threads ask for bytes, and the
// connection's strand reads them from the socket (through Beast's parser, so
// chunked transfer coding is undone) into a buffer of its own, which the
// reader copies out: a reader that gives up never leaves the strand writing
// into memory it no longer owns. The strand reads ahead of the reader, up to
// kStreamReadAhead bytes, so that the body keeps arriving while the handler
// works on what it has: a reader that had to ask for each piece and wait for
// the strand (two thread wake-ups, milliseconds each on a loaded machine)
// made uploads 10x slower than s3rver (issue 32).
class StreamingBody : public BodyReader, public std::enable_shared_from_this<StreamingBody> {
 public:
  using Parser = http::request_parser<http::buffer_body>;

  StreamingBody(std::shared_ptr<Connection> conn, std::unique_ptr<Parser> parser, bool expect_continue)
      : conn_(std::move(conn)), parser_(std::move(parser)), expect_continue_(expect_continue) {}

  Result<size_t> Read(std::span<char> out) override {
    if (out.empty()) return size_t{0};
    std::unique_lock lock(mu_);
    if (Status st = WaitForBytes(lock); !st.ok()) return Err(st);
    if (Buffered() == 0) return size_t{0};
    size_t n = 0;
    while (n < out.size() && !chunks_.empty()) {
      const std::string& front = chunks_.front();
      const size_t take = std::min(out.size() - n, front.size() - front_at_);
      std::memcpy(out.data() + n, front.data() + front_at_, take);
      n += take;
      front_at_ += take;
      if (front_at_ == front.size()) {
        // A full-size piece is kept for the strand's next read: fresh memory
        // for every MiB received was page faults on both sides of the copy.
        if (front.capacity() >= kMaxStreamRead && spare_.size() < kSpareReads)
          spare_.push_back(std::move(chunks_.front()));
        chunks_.pop_front();
        front_at_ = 0;
      }
    }
    buffered_ -= n;
    if (!done_ && !failed_) StartReading();  // keep the strand ahead
    return n;
  }

  Result<std::string> TakePiece() override {
    std::unique_lock lock(mu_);
    if (Status st = WaitForBytes(lock); !st.ok()) return Err(st);
    if (Buffered() == 0) return std::string();
    std::string piece;
    if (front_at_ == 0) {
      piece = std::move(chunks_.front());  // the bytes as the strand read them
    } else {
      piece.assign(chunks_.front(), front_at_);
      front_at_ = 0;
    }
    chunks_.pop_front();
    buffered_ -= piece.size();
    if (!done_ && !failed_) StartReading();
    return piece;
  }

  void ReturnPiece(std::string piece) override {
    std::lock_guard lock(mu_);
    if (piece.capacity() >= kMaxStreamRead && spare_.size() < kSpareReads) spare_.push_back(std::move(piece));
  }

  // On the strand (Run), before the handler has the request.
  const Parser::value_type& header() const { return parser_->get(); }

  // On the strand, once the answer is out: whether the connection may serve
  // another request (the body was read to its end and no read is running).
  bool Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    return done_ && !reading_ && !failed_;
  }
  // After Close: the socket is this connection's again (no read of the body under way).
  bool Idle() {
    std::lock_guard lock(mu_);
    return !reading_;
  }

 private:
  size_t Buffered() const { return buffered_; }

  // REQUIRES: mu_ held (in `lock`). Waits until bytes are buffered or the
  // body ended (OK either way: Buffered() tells which), or why not.
  Status WaitForBytes(std::unique_lock<std::mutex>& lock) {
    if (closed_) return Status(Code::kInvalidArgument, "the request body cannot be read once the answer is given");
    if (Buffered() > 0) return {};
    if (failed_) return *failed_;
    if (done_) return {};
    StartReading();
    // The strand's reads are bounded by body_read_timeout (the sweep closes
    // the connection); this wait only guards against a stopped server.
    auto limit = conn_->core_.opts.body_read_timeout * 2 + std::chrono::seconds(5);
    if (!cv_.wait_for(lock, limit, [this] { return Buffered() > 0 || failed_ || done_; })) {
      failed_ = Status(Code::kTimeout, "the request body stopped arriving (the server is stopping?)");
      return *failed_;
    }
    if (Buffered() == 0 && failed_) return *failed_;
    return {};
  }

  // REQUIRES: mu_ held. Starts the strand's reading unless it runs already
  // or the buffer is full.
  void StartReading() {
    if (reading_ || Buffered() >= kStreamReadAhead) return;
    reading_ = true;
    asio::co_spawn(conn_->executor(), ReadOnStrand(shared_from_this()), asio::detached);
  }

  // Reads until the buffer holds kStreamReadAhead bytes, the body ends, the
  // answer is given, or a read fails.
  static awaitable<void> ReadOnStrand(std::shared_ptr<StreamingBody> self) {
    Connection& c = *self->conn_;
    if (self->expect_continue_) {
      self->expect_continue_ = false;
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      if (!co_await c.Write(kContinue, std::string_view(), false)) {
        self->Finish(Status(Code::kUnavailable, "the client left before sending the request body"), {}, false);
        co_return;
      }
    }
    Parser& p = *self->parser_;
    // Beast reads into what the connection's buffer has room for: after a
    // small head that was some hundred bytes per recv (62,000 for 40 MiB).
    if (c.buf_.capacity() - c.buf_.size() < kBodyReadRoom) c.buf_.reserve(c.buf_.size() + kBodyReadRoom);
    for (;;) {
      {
        std::lock_guard lock(self->mu_);
        if (self->closed_) {
          self->reading_ = false;
          if (!self->done_)
            self->failed_ = Status(Code::kInvalidArgument, "the answer was given before the body was read");
          self->cv_.notify_all();
          co_return;
        }
        if (self->Buffered() >= kStreamReadAhead) {
          self->reading_ = false;
          co_return;
        }
      }
      // Waits for the first bytes, then takes whatever else has arrived
      // without waiting, up to kMaxStreamRead: one hand-off per piece.
      // Not zeroed first: Beast writes every byte that is kept (a memset of
      // 1 MiB per read was 5% of an upload's CPU).
      std::string data;
      {
        std::lock_guard lock(self->mu_);
        if (!self->spare_.empty()) {
          data = std::move(self->spare_.back());
          self->spare_.pop_back();
        }
      }
      data.resize_and_overwrite(kMaxStreamRead, [](char*, size_t n) { return n; });
      c.Arm(c.core_.opts.body_read_timeout, CloseReason::kBodyTimeout);
      boost::system::error_code ec;
      size_t got = 0;
      while (!p.is_done() && got < data.size()) {
        if (got > 0) {
          boost::system::error_code aec;
          if (c.buf_.size() == 0 && c.sock_.available(aec) == 0) break;
        }
        p.get().body().data = data.data() + got;
        p.get().body().size = data.size() - got;
        p.get().body().more = true;
        auto [rec, n] = co_await http::async_read_some(c.sock_, c.buf_, p, kTuple);
        got = data.size() - p.get().body().size;
        if (rec == http::error::need_buffer) rec = {};
        if (rec) {
          ec = rec;
          break;
        }
      }
      c.Disarm();
      data.resize(got);
      if (got < data.capacity() / 2) data.shrink_to_fit();  // what is kept ahead is its bytes, not 1 MiB per read
      if (ec) {
        std::string why;
        if (c.closed_ == CloseReason::kBodyTimeout) {
          why = "no byte of the request body arrived within " + std::to_string(c.core_.opts.body_read_timeout.count()) +
                " ms (" + c.core_.opts.settings_prefix + ".body_read_timeout); the connection is closed";
        } else if (ec == http::error::body_limit) {
          why = "the request body is over the limit of this endpoint";
        } else {
          why = "the request body could not be read: " + ec.message();
        }
        self->Finish(Status(ec == http::error::body_limit ? Code::kOutOfRange : Code::kUnavailable, why), {}, false);
        co_return;
      }
      const bool done = p.is_done();
      self->Finish({}, std::move(data), done, /*more=*/!done);
      if (done) co_return;
    }
  }

  // Appends what the strand read; with `more` the strand goes on reading.
  void Finish(Status st, std::string data, bool done, bool more = false) {
    {
      std::lock_guard lock(mu_);
      reading_ = more;
      if (!st.ok()) failed_ = std::move(st);
      if (!data.empty()) {
        buffered_ += data.size();
        chunks_.push_back(std::move(data));
      }
      done_ = done_ || done;
    }
    cv_.notify_all();
  }

  std::shared_ptr<Connection> conn_;
  std::unique_ptr<Parser> parser_;  // used on the strand only
  bool expect_continue_;            // strand only
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false, reading_ = false, done_ = false;
  std::optional<Status> failed_;
  std::deque<std::string> chunks_;  // bytes read and not yet copied out (the first from front_at_)
  std::vector<std::string> spare_;  // pieces copied out, for the strand to read into again
  size_t front_at_ = 0;
  size_t buffered_ = 0;  // bytes in chunks_ not yet copied out
};

awaitable<void> Connection::Run(std::shared_ptr<Connection> self) {
  Connection& c = *self;
  const ServerOptions& o = c.core_.opts;
  beast::flat_buffer& buf = c.buf_;
  bool linger = false;  // closing with a request body maybe still arriving
  for (;;) {
    if (c.closed_ != CloseReason::kNone) break;  // evicted before its session began
    if (buf.size() == 0) {
      // Idle until the next request's first byte.
      c.EnterIdle();
      c.Arm(o.idle_timeout, CloseReason::kIdleTimeout);
      auto [ec] = co_await c.sock_.async_wait(tcp::socket::wait_read, kTuple);
      c.Disarm();
      c.LeaveIdle(State::kReading);
      if (ec || c.closed_ != CloseReason::kNone) break;
    } else {
      c.state_ = State::kReading;  // a pipelined request is already here
    }
    // The whole request (head, and body if any) within header_timeout of its
    // first byte; a streamed body's reads have deadlines of their own.
    c.Arm(o.header_timeout, CloseReason::kHeaderTimeout);
    http::request_parser<http::empty_body> head;
    LimitHead(head, o.header_limit);  // the body's limit is checked below, once the route is known
    // What has arrived is parsed at once (the socket is non-blocking: this
    // never waits); only a request still on its way goes through the reactor.
    boost::system::error_code ec;
    http::read_header(c.sock_, buf, head, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      auto [aec, n] = co_await http::async_read_header(c.sock_, buf, head, kTuple);
      ec = aec;
    }
    uint64_t stream_limit = 0;
    if (!ec && !head.is_done()) {
      std::string_view method(head.get().method_string().data(), head.get().method_string().size());
      std::string_view target(head.get().target().data(), head.get().target().size());
      stream_limit = c.core_.StreamLimit(method, target.substr(0, target.find('?')));
    }
    const uint64_t body_limit = stream_limit > 0 ? stream_limit : o.body_limit;
    if (!ec && head.content_length() && *head.content_length() > body_limit) ec = http::error::body_limit;
    std::shared_ptr<StreamingBody> stream;
    http::request_parser<http::string_body> parser(std::move(head));
    if (!ec && stream_limit > 0) {
      auto sp = std::make_unique<StreamingBody::Parser>(std::move(parser));
      sp->body_limit(stream_limit);
      const auto& h = sp->get();
      auto expect = h.find(http::field::expect);
      bool cont = expect != h.end() && beast::iequals(expect->value(), "100-continue");
      stream = std::make_shared<StreamingBody>(self, std::move(sp), cont);
    } else if (!ec) {
      parser.body_limit(o.body_limit);
      http::read(c.sock_, buf, parser, ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        auto [aec, n] = co_await http::async_read(c.sock_, buf, parser, kTuple);
        ec = aec;
      }
    }
    c.Disarm();
    if (c.closed_ != CloseReason::kNone) break;
    c.state_ = State::kBusy;
    if (ec) {
      if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
          ec == asio::error::operation_aborted) {
        break;
      }
      int status = RequestErrorStatus(ec);
      std::string msg = "malformed HTTP request: " + ec.message();
      if (status == 431) msg += " (the request head is limited to " + std::to_string(o.header_limit) + " bytes)";
      if (status == 413) msg += " (a request body is limited to " + std::to_string(body_limit) + " bytes)";
      Status st(Code::kInvalidArgument, msg);
      HttpResponse err = c.core_.Error(status, st);
      co_await c.Send(err, false, false);
      linger = true;
      break;
    }
    HttpRequest req;
    bool keep;
    if (stream) {
      keep = TakeHead(stream->header(), &req);
    } else {
      keep = TakeHead(parser.get(), &req);
    }
    if (stream) {
      req.body_stream = stream;
    } else {
      req.body = std::move(parser.get().body());
    }
    bool ok = co_await c.Serve(req, keep);
    // A body the handler did not read to its end is still on its way: the
    // connection cannot serve another request.
    if (stream && !stream->Close()) {
      keep = false;
      linger = ok && stream->Idle();
    }
    if (!ok || !keep) break;
  }
  boost::system::error_code ignored;
  c.sock_.shutdown(tcp::socket::shutdown_send, ignored);
  if (linger && c.closed_ == CloseReason::kNone) {
    c.Arm(kLingerTime, CloseReason::kBodyTimeout);
    char scratch[16 << 10];
    for (size_t dropped = 0; dropped < kLingerBytes;) {
      auto [ec, n] = co_await c.sock_.async_read_some(asio::buffer(scratch), kTuple);
      if (ec) break;  // the client closed (eof), or the time is up
      dropped += n;
    }
    c.Disarm();
  }
  c.sock_.close(ignored);
}

awaitable<bool> Connection::Serve(HttpRequest& req, bool keep) {
  target_ = req.target;
  req.transport = transport_;
  bool head_only = req.method == "HEAD";
  const Handler* handler = nullptr;
  Router::Match match = Router::Match::kNone;
  for (const auto& r : core_.routers) {
    auto m = r.Find(req.method, req.path(), &handler);
    if (m == Router::Match::kFound) {
      match = m;
      break;
    }
    if (m == Router::Match::kWrongMethod) match = m;
  }
  if (match != Router::Match::kFound) {
    std::string route(req.path());
    Status st = match == Router::Match::kWrongMethod
                    ? Status(Code::kInvalidArgument, "method " + req.method + " not allowed on " + route)
                    : Status(Code::kNotFound, "unknown route '" + route + "'" +
                                                  (core_.opts.unknown_route_hint.empty()
                                                       ? std::string()
                                                       : " (" + core_.opts.unknown_route_hint + ")"));
    HttpResponse err = core_.Error(match == Router::Match::kWrongMethod ? 405 : 404, st);
    co_return co_await Send(err, head_only, keep);
  }

  auto pending = std::make_shared<detail::PendingResponse>();
  try {
    Responder responder(pending);
    (*handler)(req, std::move(responder));
  } catch (const std::exception& e) {
    // A handler that throws has a bug; its Responder (destroyed by now) answers 500.
    spdlog::error("BUG: the handler of {} threw: {}", target_, e.what());
  }
  const std::string* beat = core_.opts.heartbeat_header.empty() ? nullptr : req.Header(core_.opts.heartbeat_header);
  bool heartbeat = beat && *beat == core_.opts.heartbeat_value;
  if (!co_await Await(pending->event, heartbeat)) co_return false;
  if (pending->dropped) {
    spdlog::error("BUG: the handler of {} dropped the request without answering", target_);
    Status st(Code::kInternal, "the server dropped this request without an answer (a bug; please report it with the server log)");
    pending->response = core_.Error(500, st);
  }
  if (core_.opts.on_answer) core_.opts.on_answer(req, pending->response);
  co_return co_await Send(pending->response, head_only, keep);
}

awaitable<bool> Connection::Await(detail::Event& ev, bool heartbeat) {
  if (ev.is_set()) co_return true;
  ev.Arm([self = shared_from_this()] { asio::post(self->wake_.get_executor(), [self] { self->wake_.cancel(); }); });
  struct DisarmOnExit {
    detail::Event& ev;
    ~DisarmOnExit() { ev.Disarm(); }
  } disarm{ev};
  const auto interval = core_.opts.heartbeat_interval;
  auto next_beat = Clock::now() + interval;
  // A stale wake (of an earlier wait) only costs one more turn of this loop.
  while (!ev.is_set()) {
    wake_.expires_at(heartbeat ? next_beat : Clock::now() + std::chrono::hours(24));
    [[maybe_unused]] auto [ec] = co_await wake_.async_wait(kTuple);
    if (ev.is_set()) break;
    if (closed_ != CloseReason::kNone) co_return false;
    if (heartbeat && Clock::now() >= next_beat) {
      if (!co_await Write(core_.interim, std::string_view(), false)) co_return false;
      next_beat = Clock::now() + interval;
    }
  }
  co_return true;
}

awaitable<bool> Connection::Send(HttpResponse& res, bool head_only, bool keep) {
  bool valid = true;
  for (const auto& [k, v] : res.headers) valid = valid && !HasLineBreak(k) && !HasLineBreak(v);
  if (!valid) {
    spdlog::error("BUG: the answer to {} has a header with a line break; answering 500 instead", target_);
    if (res.on_done) res.on_done(false);
    Status st(Code::kInternal, "the server built an invalid response header (a bug; please report it with the server log)");
    res = core_.Error(500, st);
  }
  uint64_t length = res.body.size();
  if (!res.parts.empty()) {
    length = 0;
    for (const auto& p : res.parts) length += p.length();
  }
  std::string head = core_.Head(res.status, res.headers, length, keep);
  bool ok;
  if (head_only || res.parts.empty()) {
    std::string_view body = head_only ? std::string_view() : std::string_view(res.body);
    ok = co_await Write(head, body, false);
  } else {
    // The head leaves in one segment with the first page (MSG_MORE), when
    // that page is ready, or in one write with the first bytes in memory.
    const BodyPart& first = res.parts.front();
    if (first.kind_ == BodyPart::Kind::kBytes) {
      ok = co_await Write(head, std::string_view(first.data_, first.length_), false);
      if (ok) res.parts.erase(res.parts.begin());
    } else {
      bool more = first.kind_ == BodyPart::Kind::kFile && first.length_ > 0;
      ok = co_await Write(head, std::string_view(), more);
    }
    if (ok) ok = co_await SendParts(res.parts);
  }
  if (res.on_done) res.on_done(ok);
  co_return ok;
}

awaitable<bool> Connection::SendParts(std::vector<BodyPart>& parts) {
  std::deque<BodyPart> queue(std::make_move_iterator(parts.begin()), std::make_move_iterator(parts.end()));
  parts.clear();
  while (!queue.empty()) {
    BodyPart p = std::move(queue.front());
    queue.pop_front();  // a part's owner (page fd, fetched bytes) goes as soon as it is sent
    if (p.kind_ == BodyPart::Kind::kFile) {
      if (!co_await SendFile(p.fd_, p.offset_, p.length_)) co_return false;
      continue;
    }
    if (p.kind_ == BodyPart::Kind::kBytes) {
      std::string_view bytes(p.data_, p.length_);
      if (!co_await Write(bytes, std::string_view(), false)) co_return false;
      continue;
    }
    auto ev = std::make_shared<detail::Event>();
    p.wait_([ev] { ev->Set(); });
    if (!co_await Await(*ev, false)) co_return false;
    auto more = p.take_();
    if (!more) {
      spdlog::warn("answer to {} cut short after its head was sent: {}", target_, more.error().ToString());
      co_return false;
    }
    uint64_t sum = 0;
    for (const auto& m : *more) sum += m.length_;
    if (sum != p.length_) {
      spdlog::error("BUG: a deferred body part of {} promised {} bytes and gave {}", target_, p.length_, sum);
      co_return false;
    }
    for (auto it = more->rbegin(); it != more->rend(); ++it) queue.push_front(std::move(*it));
  }
  co_return true;
}

// Sends a then b. Non-blocking sendmsg(MSG_NOSIGNAL): a peer that left is an
// error, never a signal; a full socket buffer waits at most write_timeout.
awaitable<bool> Connection::Write(std::string_view a, std::string_view b, bool more) {
  size_t total = a.size() + b.size(), done = 0;
  while (done < total) {
    iovec iov[2];
    int count = 0;
    if (done < a.size()) {
      iov[count++] = {const_cast<char*>(a.data() + done), a.size() - done};
      if (!b.empty()) iov[count++] = {const_cast<char*>(b.data()), b.size()};
    } else {
      iov[count++] = {const_cast<char*>(b.data() + (done - a.size())), total - done};
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = ::sendmsg(sock_.native_handle(), &m, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!co_await WaitWritable()) co_return false;
      continue;
    }
    co_return false;  // the peer went away (EPIPE, ECONNRESET), or the connection was closed
  }
  co_return true;
}

// sendfile(2) from a page file. The socket is non-blocking (set at accept).
awaitable<bool> Connection::SendFile(int fd, uint64_t offset, uint64_t len) {
  off_t off = static_cast<off_t>(offset);
  while (len > 0) {
    ssize_t n = ::sendfile(sock_.native_handle(), fd, &off, std::min(len, kMaxSendfile));
    if (n > 0) {
      len -= static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!co_await WaitWritable()) co_return false;
      continue;
    }
    if (n == 0) {
      spdlog::warn("answer to {}: file shorter than promised at offset {} ({} bytes left)", target_, off, len);
    } else if (errno != EPIPE && errno != ECONNRESET && errno != EBADF) {
      spdlog::warn("answer to {}: sendfile failed at offset {}: {}", target_, off, std::strerror(errno));
    }
    co_return false;
  }
  co_return true;
}

awaitable<bool> Connection::WaitWritable() {
  Arm(core_.opts.write_timeout, CloseReason::kWriteTimeout);
  auto [ec] = co_await sock_.async_wait(tcp::socket::wait_write, kTuple);
  Disarm();
  co_return !ec && closed_ == CloseReason::kNone;
}

class HttpServer::Impl {
 public:
  explicit Impl(ServerOptions o)
      : ioc_(std::max(1, o.io_threads)), acceptor_(ioc_), backoff_(ioc_), sweep_(ioc_) {
    core_.opts = std::move(o);
  }

  ~Impl() {
    Stop();
    Wait();
  }

  Status Bind() {
    ServerOptions& o = core_.opts;
    if (o.io_threads < 1) o.io_threads = 1;
    core_.max_connections = o.max_connections ? o.max_connections : DefaultMaxConnections();
    core_.interim = "HTTP/1.1 102 Processing\r\n";
    for (const auto& [k, v] : o.response_headers) {
      if (HasLineBreak(k) || HasLineBreak(v)) return Status(Code::kInvalidArgument, "response header '" + k + "' has a line break");
      core_.interim += k + ": " + v + "\r\n";
    }
    core_.interim += "\r\n";
    auto& m = MetricsRegistry::Global();
    core_.connections = &m.GetGauge("shoal_http_connections", "Open HTTP connections");
    for (int r = 1; r < static_cast<int>(CloseReason::kCount); ++r) {
      core_.closed[r] = &m.GetCounter("shoal_http_connections_closed_total",
                                      "HTTP connections the server closed, by reason", {{"reason", kReasonNames[r]}});
    }

    const std::string& listen = o.listen;
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return Status(Code::kInvalidArgument, o.settings_prefix + ".listen '" + listen + "' is not host:port");
    }
    std::string host = listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    unsigned long port = std::strtoul(listen.c_str() + colon + 1, nullptr, 10);
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(host, ec);
    if (ec || port > 65535) {
      return Status(Code::kInvalidArgument, o.settings_prefix + ".listen '" + listen + "': '" + host +
                                                "' is not an IP address or the port is not 0-65535");
    }
    tcp::endpoint ep(addr, static_cast<unsigned short>(port));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status(Code::kUnavailable,
                    "cannot listen on " + listen + ": " + ec.message() + " (is another process using the port?)");
    }
    auto bound = acceptor_.local_endpoint();
    port_ = bound.port();
    address_ = (bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string()) +
               ":" + std::to_string(bound.port());
    return {};
  }

  void Serve(std::vector<Router> routers) {
    core_.routers = std::move(routers);
    if (core_.opts.handle_signals) {
      signals_ = std::make_unique<asio::signal_set>(ioc_, SIGINT, SIGTERM);
      signals_->async_wait([this](const boost::system::error_code& e, int) {
        if (!e) Stop();
      });
    }
    asio::co_spawn(ioc_, Accept(), asio::detached);
    asio::co_spawn(ioc_, Sweep(), asio::detached);
    for (int i = 0; i < core_.opts.io_threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }

  void Stop() {
    if (stopped_.exchange(true)) return;
    asio::post(ioc_, [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
      if (signals_) signals_->cancel(ec);
    });
    ioc_.stop();
  }

  void Wait() {
    std::lock_guard lock(wait_mu_);
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  const std::string& address() const { return address_; }
  uint16_t port() const { return port_; }
  size_t max_connections() const { return core_.max_connections; }

 private:
  // Admits a new connection: under the cap, or by evicting the oldest idle
  // connection (returned, to be closed on its strand). false: at the cap with
  // none idle.
  bool Admit(Connection& conn, std::shared_ptr<Connection>* victim) {
    std::lock_guard lock(core_.mu);
    if (core_.open >= core_.max_connections) {
      *victim = TakeOldestIdleLocked();
      if (!*victim) return false;
    }
    conn.AdmitLocked();
    return true;
  }

  // REQUIRES: core_.mu held. Entries whose connection is being destroyed are
  // left for its destructor to erase.
  std::shared_ptr<Connection> TakeOldestIdleLocked() {
    for (auto& weak : core_.idle) {
      if (auto c = weak.lock()) {
        c->TakeOffIdleListLocked();
        return c;
      }
    }
    return nullptr;
  }

  static void Evict(std::shared_ptr<Connection> victim) {
    asio::any_io_executor ex = victim->executor();
    asio::post(ex, [victim] { victim->EvictIfIdle(); });
  }

  // Answers 503 on a connection over the cap, and closes it.
  void Reject(tcp::socket& sock) {
    core_.CountClose(CloseReason::kOverLimit);
    const std::string& p = core_.opts.settings_prefix;
    Status st(Code::kUnavailable, "too many connections: the limit (" + p + ".max_connections) is " +
                                      std::to_string(core_.max_connections) +
                                      " and none is idle; retry later, or raise " + p +
                                      ".max_connections (and the open-files limit, ulimit -n)");
    HttpResponse err = core_.Error(503, st);
    std::string out = core_.Head(err.status, err.headers, err.body.size(), false) + err.body;
    [[maybe_unused]] ssize_t n = ::send(sock.native_handle(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    char scratch[4096];  // a request already here is read, so that closing sends FIN rather than RST
    while (::recv(sock.native_handle(), scratch, sizeof scratch, MSG_DONTWAIT) > 0) {
    }
    boost::system::error_code ignored;
    sock.shutdown(tcp::socket::shutdown_send, ignored);
    sock.close(ignored);
  }

  // Closes the connections whose phase deadline has passed, every quarter of
  // the shortest timeout (10 ms to 1 s): deadlines hold to within a tick.
  awaitable<void> Sweep() {
    const ServerOptions& o = core_.opts;
    auto shortest = std::min({o.header_timeout, o.idle_timeout, o.write_timeout, o.body_read_timeout});
    auto tick = std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(10),
                                                      std::chrono::milliseconds(1000));
    std::vector<std::shared_ptr<Connection>> alive;
    for (;;) {
      sweep_.expires_after(tick);
      auto [ec] = co_await sweep_.async_wait(kTuple);
      if (ec) co_return;
      int64_t now = Connection::Now();
      {
        std::lock_guard lock(core_.mu);
        alive.reserve(core_.all.size());
        for (auto& weak : core_.all) {
          if (auto c = weak.lock()) alive.push_back(std::move(c));
        }
      }
      // Outside the lock: dropping the last reference destroys a connection,
      // which takes the lock.
      for (auto& c : alive) {
        if (!c->Expired(now)) continue;
        asio::any_io_executor ex = c->executor();
        asio::post(ex, [c] { c->CloseIfExpired(); });
      }
      alive.clear();
    }
  }

  awaitable<void> Accept() {
    for (;;) {
      asio::any_io_executor strand = asio::make_strand(ioc_);
      auto [ec, sock] = co_await acceptor_.async_accept(strand, kTuple);
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
        if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec.value() == ENOBUFS ||
            ec.value() == ENOMEM) {
          // Out of descriptors: free one by closing the oldest idle connection,
          // or wait for one to free; never spin on the pending connection.
          std::shared_ptr<Connection> victim;
          {
            std::lock_guard lock(core_.mu);
            victim = TakeOldestIdleLocked();
          }
          if (victim) Evict(victim);
          if (++accept_errors_ % 100 == 1) {
            size_t open = 0;
            {
              std::lock_guard lock(core_.mu);
              open = core_.open;
            }
            spdlog::warn("cannot accept a connection: {} ({} connections open; lower {}.max_connections or raise "
                         "the open-files limit, ulimit -n)",
                         ec.message(), open, core_.opts.settings_prefix);
          }
          backoff_.expires_after(std::chrono::milliseconds(victim ? 10 : 100));
          co_await backoff_.async_wait(kTuple);
        }
        continue;
      }
      boost::system::error_code ignored;
      sock.set_option(tcp::no_delay(true), ignored);
      if (core_.opts.tls_context) {
        StartTls(std::move(sock));
        continue;
      }
      Start(std::move(sock), nullptr);
    }
  }

  // A TLS connection: the handshake first, then the HTTP session on the
  // server's end of its relay (net/tls_front.h).
  void StartTls(tcp::socket sock) {
    detail::TlsFrontOptions t;
    t.context = core_.opts.tls_context();
    t.handshake_timeout = core_.opts.tls_handshake_timeout;
    t.write_timeout = core_.opts.write_timeout;
    Status st(Code::kInvalidArgument,
              "this port speaks HTTPS only: use https:// (and the cluster's CA, "
              "client.tls.ca_file)");
    HttpResponse err = core_.Error(400, st);
    t.plaintext_answer = core_.Head(err.status, err.headers, err.body.size(), false) + err.body;
    asio::any_io_executor ex = sock.get_executor();
    asio::co_spawn(ex,
                   detail::ServeTls(std::move(sock), std::move(t),
                                    [this](tcp::socket plain, std::shared_ptr<const TransportInfo> transport) {
                                      Start(std::move(plain), std::move(transport));
                                    }),
                   [](std::exception_ptr e) {
                     if (!e) return;
                     try {
                       std::rethrow_exception(e);
                     } catch (const std::exception& ex) {
                       spdlog::error("TLS connection dropped by an exception (a bug): {}", ex.what());
                     }
                   });
  }

  // Admits a connection (plain, or the server's end of a TLS relay) and starts its session.
  void Start(tcp::socket sock, std::shared_ptr<const TransportInfo> transport) {
    boost::system::error_code ignored;
    sock.set_option(asio::socket_base::send_buffer_size(kSendBuffer), ignored);
    sock.non_blocking(true, ignored);  // synchronous reads and writes never wait on an I/O thread
    if (!transport) {
      auto plain = std::make_shared<TransportInfo>();
      plain->peer_address = detail::EndpointText(sock);
      transport = std::move(plain);
    }
    auto conn = std::make_shared<Connection>(core_, std::move(sock), std::move(transport));
    std::shared_ptr<Connection> victim;
    if (!Admit(*conn, &victim)) {
      Reject(conn->socket());
      return;
    }
    if (victim) Evict(std::move(victim));
    asio::any_io_executor ex = conn->executor();
    asio::co_spawn(ex, Connection::Run(std::move(conn)), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::error("connection dropped by an exception (a bug): {}", ex.what());
      }
    });
  }

  ServerCore core_;  // first: outlives the io_context and every connection in it
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  asio::steady_timer backoff_;
  asio::steady_timer sweep_;
  std::unique_ptr<asio::signal_set> signals_;
  std::vector<std::thread> threads_;
  std::mutex wait_mu_;
  std::string address_;
  uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
  uint64_t accept_errors_ = 0;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(ServerOptions options) {
  IgnoreSigpipe();
  detail::RegisterTlsMetrics();
  auto impl = std::make_unique<Impl>(std::move(options));
  SHOAL_RETURN_IF_ERROR(impl->Bind());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Serve(std::vector<Router> routers) { impl_->Serve(std::move(routers)); }
const std::string& HttpServer::address() const { return impl_->address(); }
uint16_t HttpServer::port() const { return impl_->port(); }
size_t HttpServer::max_connections() const { return impl_->max_connections(); }
void HttpServer::Stop() { impl_->Stop(); }
void HttpServer::Wait() { impl_->Wait(); }

}  // namespace shoal::net
