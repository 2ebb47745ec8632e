#include "worker/worker.h"

#include <sys/sendfile.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "cache/page_format.h"
#include "common/metrics.h"
#include "ufs/uri.h"
#include "worker/http_status.h"
#include "worker/local_server.h"
#include "worker/worker_service.h"

namespace shoal {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
using Json = nlohmann::json;
using Request = http::request<http::string_body>;

namespace {

constexpr auto kTuple = asio::as_tuple(use_awaitable);
constexpr auto kIdleTimeout = std::chrono::minutes(2);
constexpr int kSendBuffer = 4 << 20;

// Query string of a request target, percent-decoded.
struct Query {
  std::map<std::string, std::string> params;
  std::string error;

  static Query Parse(std::string_view q) {
    Query out;
    while (!q.empty()) {
      auto amp = q.find('&');
      auto part = q.substr(0, amp);
      q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
      if (part.empty()) continue;
      auto eq = part.find('=');
      auto k = PercentDecode(part.substr(0, eq));
      auto v = PercentDecode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
      if (!k || !v) {
        out.error = "malformed query string: " + (k ? v.error() : k.error()).message();
        return out;
      }
      out.params[*k] = *v;
    }
    return out;
  }

  const std::string* Get(const std::string& k) const {
    auto it = params.find(k);
    return it == params.end() ? nullptr : &it->second;
  }
  bool Flag(const std::string& k) const {
    auto v = Get(k);
    return v && (*v == "1" || *v == "true" || v->empty());
  }
  Result<uint64_t> Number(const std::string& k) const {
    auto v = Get(k);
    if (!v) return Err(Code::kInvalidArgument, "missing query parameter '" + k + "'");
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size()) {
      return Err(Code::kInvalidArgument, "query parameter '" + k + "' must be a non-negative integer, not '" + *v + "'");
    }
    return n;
  }
};

Json InfoJson(const FileInfo& f, const std::string& ns_path) {
  return Json{{"path", ns_path},       {"is_dir", f.is_dir}, {"size", f.size},
              {"mtime_ns", f.mtime_ns}, {"version", f.is_dir ? std::string() : f.Version()}};
}

template <typename A, typename B>
Json ObjectJson(std::string_view k1, A a, std::string_view k2, B b) {
  Json j = Json::object();
  j[std::string(k1)] = std::move(a);
  j[std::string(k2)] = std::move(b);
  return j;
}

bool IsKnownRoute(std::string_view r) {
  static const std::set<std::string_view> kRoutes = {"/v1/read",   "/v1/open", "/v1/stat", "/v1/list", "/v1/refresh",
                                                     "/v1/health", "/health",  "/metrics", "/v1/status"};
  return kRoutes.contains(r);
}

std::string ChildPath(const ResolvedPath& parent, const FileInfo& entry) {
  const std::string& mp = parent.mount->path;
  return (mp == "/" ? "" : mp) + "/" + entry.key;
}

}  // namespace

class Worker::Impl {
 public:
  explicit Impl(const Config& c) : config_(c), ufs_pool_(static_cast<size_t>(c.worker.ufs_threads)), acceptor_(ioc_) {}

  ~Impl() {
    Stop();
    Wait();
  }

  Status Init(bool handle_signals) {
    auto svc = WorkerService::Create(config_, [this](std::function<void()> f) { asio::post(ufs_pool_, std::move(f)); });
    if (!svc) return svc.error();
    svc_ = std::move(*svc);

    auto colon = config_.worker.listen.rfind(':');
    if (colon == std::string::npos) {
      return Status(Code::kInvalidArgument, "worker.listen '" + config_.worker.listen + "' is not host:port");
    }
    std::string host = config_.worker.listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    unsigned long port = std::strtoul(config_.worker.listen.c_str() + colon + 1, nullptr, 10);
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(host, ec);
    if (ec) return Status(Code::kInvalidArgument, "worker.listen: '" + host + "' is not an IP address");
    tcp::endpoint ep(addr, static_cast<unsigned short>(port));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status(Code::kUnavailable, "cannot listen on " + config_.worker.listen + ": " + ec.message() +
                                            " (is another worker using the port?)");
    }
    auto bound = acceptor_.local_endpoint();
    address_ = (bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string()) +
               ":" + std::to_string(bound.port());

    StartLocalServer(bound.port());

    if (handle_signals) {
      signals_ = std::make_unique<asio::signal_set>(ioc_, SIGINT, SIGTERM);
      signals_->async_wait([this](const boost::system::error_code& e, int) {
        if (!e) Stop();
      });
    }
    asio::co_spawn(ioc_, Listen(), asio::detached);
    for (int i = 0; i < config_.worker.io_threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
    return {};
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
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    local_.reset();
    ufs_pool_.stop();
    ufs_pool_.join();
  }

  const std::string& address() const { return address_; }

 private:
  // Short-circuit reads for clients on this host. Without it (switched off, or
  // the socket cannot be made) those clients simply read over TCP.
  void StartLocalServer(unsigned port) {
    const std::string& setting = config_.worker.local_socket;
    if (setting == "off" || setting.empty()) return;
    auto path = setting == "auto" ? LocalServer::AutoPath(port) : Result<std::string>(setting);
    if (!path) {
      spdlog::warn("short-circuit reads are off: {}", path.error().message());
      return;
    }
    std::random_device rd;
    local_token_ = fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
    auto server = LocalServer::Start(*path, local_token_, [this](const local_wire::Request& r, std::vector<PageRef>* pages) {
      return ServeLocal(r, pages);
    });
    if (!server) {
      spdlog::warn("short-circuit reads are off: {}", server.error().message());
      return;
    }
    local_ = std::move(*server);
  }

  // A short-circuit request: the fds of the cached pages covering a prefix of
  // the range (and for an open, the stat first). Runs on the local server's
  // connection thread, where blocking on a stat is fine.
  local_wire::Reply ServeLocal(const local_wire::Request& r, std::vector<PageRef>* pages) {
    auto started = std::chrono::steady_clock::now();
    local_wire::Reply out;
    auto fail = [&out](const Status& s) {
      out.code = static_cast<int32_t>(s.code());
      out.message = s.message();
      return out;
    };
    auto rp = svc_->mounts().Resolve(r.path);
    if (!rp) return fail(rp.error());
    FileRef file{*rp, r.version, r.size};
    uint64_t offset = r.offset;
    if (r.kind == local_wire::Kind::kOpen) {
      auto st = svc_->Stat(*rp);
      if (!st) return fail(st.error());
      out.message = InfoJson(*st, rp->ns_path).dump();
      if (st->is_dir) return out;
      file.version = st->Version();
      file.size = st->size;
      offset = 0;
    }
    if (file.version.empty()) return fail(Status(Code::kInvalidArgument, "short-circuit read without a version"));
    if (offset > file.size) {
      return fail(Status(Code::kOutOfRange, "offset " + std::to_string(offset) + " is past the end of " +
                                                rp->ns_path + " (size " + std::to_string(file.size) + ")"));
    }
    uint64_t end = offset + std::min(r.length, file.size - offset);
    if (end == offset) return out;
    uint64_t hit = 0;
    for (auto& seg : svc_->CachedPrefix(file, offset, end, local_wire::kMaxSegments)) {
      out.segments.push_back(
          {seg.page->data_offset() + seg.skip, seg.length, static_cast<uint32_t>(seg.page->data_offset())});
      hit += seg.length;
      pages->push_back(std::move(*seg.page));
    }
    if (hit) {
      short_circuit_bytes_->Add(hit);
      svc_->CountServed(hit, 0, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    return out;
  }

  awaitable<void> Listen() {
    for (;;) {
      // Each connection runs on its own strand, so its idle timer and its
      // coroutine never touch the socket from two threads at once.
      asio::any_io_executor strand = asio::make_strand(ioc_);
      auto [ec, sock] = co_await acceptor_.async_accept(strand, kTuple);
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
        continue;
      }
      boost::system::error_code ignored;
      sock.set_option(tcp::no_delay(true), ignored);
      // Room for a few pages in flight, so sendfile rarely has to wait for the reader.
      sock.set_option(asio::socket_base::send_buffer_size(kSendBuffer), ignored);
      asio::any_io_executor ex = sock.get_executor();
      asio::co_spawn(ex, Session(std::move(sock)), [](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          spdlog::error("connection dropped by an exception (a bug): {}", ex.what());
        }
      });
    }
  }

  awaitable<void> Session(tcp::socket sock) {
    beast::flat_buffer buf(16 * 1024);
    asio::steady_timer idle(sock.get_executor());
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(16 * 1024);
      parser.body_limit(1 << 20);
      // A connection that sends no complete request for kIdleTimeout is closed
      // (idle keep-alive connections, and clients that trickle their headers).
      idle.expires_after(kIdleTimeout);
      idle.async_wait([&sock](const boost::system::error_code& e) {
        if (e) return;  // cancelled: the request arrived (or the session ended)
        boost::system::error_code ignored;
        sock.close(ignored);
      });
      auto [ec, n] = co_await http::async_read(sock, buf, parser, kTuple);
      idle.cancel();
      if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
          ec == asio::error::operation_aborted) {
        co_return;
      }
      if (ec) {
        int status = ec == http::error::header_limit ? 431 : ec == http::error::body_limit ? 413 : 400;
        std::string msg = "malformed HTTP request: " + ec.message();
        co_await SendError(sock, status, "InvalidArgument", msg, false);
        co_return;
      }
      Request req = parser.release();
      bool keep = req.keep_alive();
      bool ok = co_await Dispatch(sock, req, keep);
      if (!ok || !keep) {
        boost::system::error_code ignored;
        sock.shutdown(tcp::socket::shutdown_send, ignored);
        co_return;
      }
    }
  }

  // Every argument is an lvalue or trivially destructible: g++ 12 destroys
  // non-trivial temporaries in a co_await expression twice, so the handlers
  // below never pass a std::string, Json or closure temporary to a coroutine.
  awaitable<bool> Send(tcp::socket& s, int status, std::string_view body, std::string_view type, bool keep) {
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::server, "shoal");
    res.set(http::field::content_type, type);
    res.keep_alive(keep);
    res.body().assign(body.data(), body.size());
    res.prepare_payload();
    auto [ec, n] = co_await http::async_write(s, res, kTuple);
    co_return !ec;
  }

  awaitable<bool> SendJson(tcp::socket& s, const Json& j, bool keep) {
    std::string body = j.dump() + "\n";
    co_return co_await Send(s, 200, body, "application/json", keep);
  }

  awaitable<bool> SendError(tcp::socket& s, int status, std::string_view code, std::string_view msg, bool keep) {
    std::string body = ObjectJson("code", std::string(code), "message", std::string(msg)).dump() + "\n";
    co_return co_await Send(s, status, body, "application/json", keep);
  }

  awaitable<bool> SendStatus(tcp::socket& s, const Status& st, bool keep) {
    co_return co_await SendError(s, HttpStatusFor(st.code()), CodeName(st.code()), st.message(), keep);
  }

  // Runs blocking `f` on the UFS pool and resumes the calling coroutine on its
  // own executor with the result. Written without a coroutine frame of its own:
  // g++ 12 destroys closure-typed coroutine parameters twice.
  template <typename R>
  auto Blocking(std::function<R()> f) {
    return asio::async_initiate<decltype(use_awaitable), void(R)>(
        [this](auto handler, std::function<R()> fn) {
          auto h = std::make_shared<decltype(handler)>(std::move(handler));
          asio::post(ufs_pool_, [h, fn = std::move(fn)]() mutable {
            auto r = std::make_shared<R>(fn());
            auto ex = asio::get_associated_executor(*h);
            asio::post(ex, [h, r]() mutable { std::move(*h)(std::move(*r)); });
          });
        },
        use_awaitable, std::move(f));
  }

  // Completes (on the caller's executor) once `f` has finished. Not a coroutine.
  static auto WaitFetch(std::shared_ptr<Fetch> f) {
    return asio::async_initiate<decltype(use_awaitable), void()>(
        [](auto handler, std::shared_ptr<Fetch> fetch) {
          auto ex = asio::get_associated_executor(handler);
          auto h = std::make_shared<decltype(handler)>(std::move(handler));
          fetch->OnDone([h, ex] { asio::post(ex, [h]() mutable { std::move(*h)(); }); });
        },
        use_awaitable, std::move(f));
  }

  // sendfile(2) on the non-blocking socket, waiting for writability as needed.
  awaitable<bool> SendFile(tcp::socket& s, int fd, uint64_t offset, uint64_t len) {
    if (!s.native_non_blocking()) s.native_non_blocking(true);
    off_t off = static_cast<off_t>(offset);
    while (len > 0) {
      ssize_t n = ::sendfile(s.native_handle(), fd, &off, len);
      if (n > 0) {
        len -= static_cast<uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        auto [ec] = co_await s.async_wait(tcp::socket::wait_write, kTuple);
        if (ec) co_return false;
        continue;
      }
      // A peer that went away, or a page file shorter than its header says.
      {
        spdlog::warn("sendfile of a cached page failed at offset {} with {} bytes left: {}", off, len,
                     n == 0 ? "page file too short" : std::strerror(errno));
      }
      co_return false;
    }
    co_return true;
  }

  // ---- Checked sending of cached pages (docs/page-format.md) -------------
  // No byte of a cached page is sent before its chunk has been checked: the
  // segment goes in batches of about kSendBatch bytes (whole chunks, so no
  // chunk is read twice), each read into memory and checked against the
  // page's chunk checksums, then sent with sendfile(2) from the page file.
  //
  // Writing the checked copy instead would send exactly the bytes checked,
  // but measured over TCP (bench/core_bench; docs/page-format.md, "What the
  // checks cost") it costs the worker 1.5x the CPU of check-then-sendfile and
  // lost 47% of the unchecked throughput against 17%.
  // The price of sendfile: it reads the page cache again, microseconds after
  // the check. A byte can change in between only if, in that window, the
  // page is evicted and read back from a failing disk, or some process writes
  // into the page file (Shoal never does; files are renamed into place); a
  // change before the check, or after the batch is in the socket (which then
  // holds the page cache pages), is caught or harmless.
  //
  // A page that fails is dropped, fetched again from the under-store, and the
  // rest of the segment is sent from that fetch: the reader gets the right
  // bytes and the response keeps its length. The reads run on the I/O
  // thread, as sendfile's own reads do.
  static constexpr uint64_t kSendBatch = 256 * 1024;

  awaitable<bool> SendPage(tcp::socket& s, const FileRef& file, const Segment& seg) {
    const PageRef& page = *seg.page;
    if (!config_.worker.verify_checksums) {
      co_return co_await SendFile(s, page.fd(), page.data_offset() + seg.skip, seg.length);
    }
    page_format::PageFileReader reader;
    Status st = reader.Begin(page.fd(), static_cast<uint32_t>(page.data_offset()));
    const uint64_t batch = st.ok() ? std::max<uint64_t>(kSendBatch, reader.header().chunk_size()) : 0;
    auto buf = std::make_unique_for_overwrite<char[]>(batch);
    uint64_t sent = 0;
    while (st.ok() && sent < seg.length) {
      const uint64_t begin = seg.skip + sent;
      const uint64_t n = reader.NextStop(begin, batch, seg.skip + seg.length) - begin;
      st = reader.Read(begin, std::span<char>(buf.get(), n));
      if (!st.ok()) break;
      if (!co_await SendFile(s, page.fd(), page.data_offset() + begin, n)) co_return false;
      sent += n;
    }
    if (st.ok()) co_return true;
    std::shared_ptr<Fetch> fetch = svc_->RefetchCorruptPage(file, seg.offset - seg.skip, page.fd(), st);
    co_await WaitFetch(fetch);
    const auto& data = fetch->result();
    if (!data) {
      // Too late for a status line: close, and the client sees a short body.
      spdlog::warn("refetch of a corrupt page of {} failed mid-response: {}", file.resolved.ns_path,
                   data.error().ToString());
      co_return false;
    }
    const uint64_t from = seg.offset + sent, left = seg.length - sent;  // file offset and count not sent yet
    if (from < fetch->start() || from - fetch->start() + left > data->size()) {
      spdlog::error("BUG: refetched page [{}, +{}) outside fetch [{}, {}) holding {} bytes", from, left,
                    fetch->start(), fetch->end(), data->size());
      co_return false;
    }
    auto [ec, written] = co_await asio::async_write(s, asio::buffer(data->data() + (from - fetch->start()), left), kTuple);
    co_return !ec;
  }
  // ---- end of checked sending ---------------------------------------------

  // JSON is built outside coroutines: g++ 12 miscompiles initializer lists of
  // string literals inside a coroutine body ("array used as initializer").
  Json StatusJson() const {
    auto st = svc_->pages().stats();
    auto t = svc_->totals();
    return Json{{"address", address_},
                {"cache_used_bytes", st.used_bytes},
                {"cache_capacity_bytes", st.capacity_bytes},
                {"pages", st.pages},
                {"hit_bytes", t.hit_bytes},
                {"miss_bytes", t.miss_bytes},
                {"ufs_read_bytes", t.ufs_read_bytes},
                {"evicted_bytes", st.evicted_bytes},
                {"local_socket", local_ ? local_->path() : std::string()},
                {"local_token", local_ ? local_token_ : std::string()}};
  }

  Result<ResolvedPath> ResolveParam(const Query& q) {
    auto p = q.Get("path");
    if (!p) return Err(Code::kInvalidArgument, "missing query parameter 'path'");
    return svc_->mounts().Resolve(*p);
  }

  awaitable<bool> Dispatch(tcp::socket& s, const Request& req, bool keep) {
    std::string_view target(req.target().data(), req.target().size());
    auto qpos = target.find('?');
    std::string_view route = target.substr(0, qpos);
    Query q = Query::Parse(qpos == std::string_view::npos ? std::string_view() : target.substr(qpos + 1));
    if (!q.error.empty()) co_return co_await SendError(s, 400, "InvalidArgument", q.error, keep);
    bool get = req.method() == http::verb::get || req.method() == http::verb::head;

    if (route == "/v1/read" && get) co_return co_await HandleRead(s, q, keep);
    if (route == "/v1/open" && get) co_return co_await HandleOpen(s, q, keep);
    if (route == "/v1/stat" && get) {
      auto rp = ResolveParam(q);
      if (!rp) co_return co_await SendStatus(s, rp.error(), keep);
      // Closures are named locals, never temporaries in a co_await: g++ 12
      // destroys such temporaries twice.
      std::function<Result<FileInfo>()> work = [this, rp = *rp] { return svc_->Stat(rp); };
      auto st = co_await Blocking(std::move(work));
      if (!st) co_return co_await SendStatus(s, st.error(), keep);
      Json j = InfoJson(*st, rp->ns_path);
      co_return co_await SendJson(s, j, keep);
    }
    if (route == "/v1/list" && get) {
      auto rp = ResolveParam(q);
      if (!rp) co_return co_await SendStatus(s, rp.error(), keep);
      std::function<Result<std::vector<FileInfo>>()> work = [this, rp = *rp] { return svc_->List(rp); };
      auto list = co_await Blocking(std::move(work));
      if (!list) co_return co_await SendStatus(s, list.error(), keep);
      Json entries = Json::array();
      for (const auto& e : *list) entries.push_back(InfoJson(e, ChildPath(*rp, e)));
      Json j = ObjectJson("path", rp->ns_path, "entries", std::move(entries));
      co_return co_await SendJson(s, j, keep);
    }
    if (route == "/v1/refresh" && req.method() == http::verb::post) {
      auto p = q.Get("path");
      if (!p) co_return co_await SendError(s, 400, "InvalidArgument", "missing query parameter 'path'", keep);
      auto norm = svc_->mounts().Resolve(*p);
      std::string ns = norm ? norm->ns_path : std::string();
      if (!norm) {
        auto n = MountTable::NormalisePath(*p);  // "/" and other paths above the mounts are fine here
        if (!n) co_return co_await SendStatus(s, n.error(), keep);
        ns = *n;
      }
      bool recursive = q.Flag("recursive"), data = q.Flag("data");
      std::function<size_t()> work = [this, ns, recursive, data] { return svc_->Refresh(ns, recursive, data); };
      size_t dropped = co_await Blocking(std::move(work));
      Json j = ObjectJson("path", ns, "dropped", dropped);
      co_return co_await SendJson(s, j, keep);
    }
    if ((route == "/v1/health" || route == "/health") && get) co_return co_await Send(s, 200, "ok\n", "text/plain", keep);
    if (route == "/metrics" && get) {
      std::string text = MetricsRegistry::Global().RenderPrometheus();
      co_return co_await Send(s, 200, text, "text/plain; version=0.0.4", keep);
    }
    if (route == "/v1/status" && get) {
      Json j = StatusJson();
      co_return co_await SendJson(s, j, keep);
    }
    if (IsKnownRoute(route)) {
      std::string msg = "method " + std::string(req.method_string()) + " not allowed on " + std::string(route);
      co_return co_await SendError(s, 405, "InvalidArgument", msg, keep);
    }
    std::string msg = "unknown route '" + std::string(route) + "' (see docs/protocol.md for the worker API)";
    co_return co_await SendError(s, 404, "NotFound", msg, keep);
  }

  awaitable<bool> HandleRead(tcp::socket& s, const Query& q, bool keep) {
    auto started = std::chrono::steady_clock::now();
    auto rp = ResolveParam(q);
    if (!rp) co_return co_await SendStatus(s, rp.error(), keep);
    auto version = q.Get("version");
    if (!version || version->empty()) {
      co_return co_await SendError(s, 400, "InvalidArgument", "missing query parameter 'version'", keep);
    }
    auto size = q.Number("size");
    auto offset = q.Number("offset");
    auto length = q.Number("length");
    if (!size) co_return co_await SendStatus(s, size.error(), keep);
    if (!offset) co_return co_await SendStatus(s, offset.error(), keep);
    if (!length) co_return co_await SendStatus(s, length.error(), keep);
    if (*offset > *size) {
      std::string msg = "offset " + std::to_string(*offset) + " is past the end of " + rp->ns_path + " (size " +
                        std::to_string(*size) + ")";
      co_return co_await SendError(s, 416, "OutOfRange", msg, keep);
    }
    uint64_t end = *offset + std::min(*length, *size - *offset);
    FileRef file{*rp, *version, *size};
    std::string no_headers;
    co_return co_await SendRange(s, file, *offset, end, keep, no_headers, started);
  }

  // GET /v1/open?path=P&length=L: the stat (in an X-Shoal-Stat header) and the
  // first L bytes of its version, in one round trip: a small file is opened and
  // read with one request to its owner.
  awaitable<bool> HandleOpen(tcp::socket& s, const Query& q, bool keep) {
    auto started = std::chrono::steady_clock::now();
    auto rp = ResolveParam(q);
    if (!rp) co_return co_await SendStatus(s, rp.error(), keep);
    auto length = q.Number("length");
    if (!length) co_return co_await SendStatus(s, length.error(), keep);
    std::function<Result<FileInfo>()> work = [this, rp = *rp] { return svc_->Stat(rp); };
    auto st = co_await Blocking(std::move(work));
    if (!st) co_return co_await SendStatus(s, st.error(), keep);
    std::string stat_header = "X-Shoal-Stat: " + InfoJson(*st, rp->ns_path).dump() + "\r\n";
    FileRef file{*rp, st->is_dir ? std::string() : st->Version(), st->size};
    uint64_t end = st->is_dir ? 0 : std::min(*length, st->size);
    co_return co_await SendRange(s, file, 0, end, keep, stat_header, started);
  }

  // Streams [offset, end) of `file` (pages by sendfile, fetched bytes from
  // memory) after a 200 head carrying `extra_headers` (complete lines).
  awaitable<bool> SendRange(tcp::socket& s, const FileRef& file, uint64_t offset, uint64_t end, bool keep,
                            const std::string& extra_headers, std::chrono::steady_clock::time_point started) {
    const ResolvedPath* rp = &file.resolved;
    std::vector<Segment> segs;
    if (end > offset) segs = svc_->PlanRead(file, offset, end);
    // Errors can still be reported as a status until the first byte is due.
    if (!segs.empty() && segs.front().fetch) {
      co_await WaitFetch(segs.front().fetch);
      if (!segs.front().fetch->result()) co_return co_await SendStatus(s, segs.front().fetch->result().error(), keep);
    }
    std::string head = "HTTP/1.1 200 OK\r\nServer: shoal\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                       std::to_string(end - offset) + "\r\n" + extra_headers + (keep ? "" : "Connection: close\r\n") +
                       "\r\n";
    auto [ec, n] = co_await asio::async_write(s, asio::buffer(head), kTuple);
    if (ec) co_return false;
    uint64_t hit = 0, miss = 0;
    for (auto& seg : segs) {
      if (seg.page) {
        if (!co_await SendPage(s, file, seg)) co_return false;
        hit += seg.length;
        continue;
      }
      co_await WaitFetch(seg.fetch);
      const auto& data = seg.fetch->result();
      if (!data) {
        // Too late for a status line: close, and the client sees a short body.
        spdlog::warn("read of {} failed mid-response: {}", rp->ns_path, data.error().ToString());
        co_return false;
      }
      if (seg.offset < seg.fetch->start() || seg.offset - seg.fetch->start() + seg.length > data->size()) {
        spdlog::error("BUG: segment [{}, +{}) outside fetch [{}, {}) holding {} bytes", seg.offset, seg.length,
                      seg.fetch->start(), seg.fetch->end(), data->size());
        co_return false;
      }
      auto [wec, wn] = co_await asio::async_write(
          s, asio::buffer(data->data() + (seg.offset - seg.fetch->start()), seg.length), kTuple);
      if (wec) {
        spdlog::warn("write failed: {}", wec.message());
        co_return false;
      }
      miss += seg.length;
    }
    svc_->CountServed(hit, miss, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    co_return true;
  }

  Config config_;
  std::unique_ptr<WorkerService> svc_;
  asio::io_context ioc_;
  asio::thread_pool ufs_pool_;
  tcp::acceptor acceptor_;
  std::unique_ptr<asio::signal_set> signals_;
  std::vector<std::thread> threads_;
  std::string address_;
  std::atomic<bool> stopped_{false};
  std::unique_ptr<LocalServer> local_;
  std::string local_token_;
  Counter* short_circuit_bytes_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_bytes_total", "Cached bytes handed to clients on this host as page files (short-circuit reads)");
};

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

Result<std::unique_ptr<Worker>> Worker::Start(const Config& config, bool handle_signals) {
  auto impl = std::make_unique<Impl>(config);
  SHOAL_RETURN_IF_ERROR(impl->Init(handle_signals));
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

const std::string& Worker::address() const { return impl_->address(); }
void Worker::Stop() { impl_->Stop(); }
void Worker::Wait() { impl_->Wait(); }

}  // namespace shoal
