#include "worker/worker.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>

#include "authz/authorizer.h"
#include "cache/page_format.h"
#include "cache/scrubber.h"
#include "client/status_document.h"
#include "client/worker_caller.h"
#include "cluster/etcd_membership.h"
#include "cluster/hash_ring.h"
#include "common/end_user.h"
#include "common/metrics.h"
#include "common/repeat_limiter.h"
#include "net/http_server.h"
#include "s3/s3_endpoint.h"
#include "security/request_guard.h"
#include "security/tls_context.h"
#include "shoal/client.h"
#include "ufs/cloud/credential_cache.h"
#include "ufs/uri.h"
#include "worker/advertise.h"
#include "worker/hot_reads.h"
#include "worker/http_status.h"
#include "worker/load_job.h"
#include "worker/local_server.h"
#include "worker/page_put.h"
#include "worker/peer_fetch.h"
#include "worker/peer_stat.h"
#include "worker/query.h"
#include "worker/recent_errors.h"
#include "worker/status_page.h"
#include "worker/worker_id.h"
#include "worker/worker_service.h"
#include "worker/writeback_journal.h"

namespace shoal {

namespace {

// The door a client declared (X-Shoal-Door), one of the known names: the
// `client` label of the per-client read metrics. A string_view into
// kClientDoors, so it outlives the request.
std::string_view ClientDoorOf(const net::HttpRequest& req) {
  const std::string* d = req.Header(kDoorHeader);
  return d ? kClientDoors[ClientDoorIndex(*d)] : std::string_view("native");
}

using Json = nlohmann::json;
using net::BodyPart;
using net::HttpRequest;
using net::HttpResponse;
using net::Responder;
using Clock = std::chrono::steady_clock;

// The protocol contract (docs/protocol.md): a read of at most this many bytes
// is answered only once every byte of it is at hand, so its body never stalls
// on the under-store and a failed fetch is an error status, not a short body.
constexpr uint64_t kWholeAnswerBytes = 16ull << 20;
// Longer reads stream, planned (page files opened, fetches started) this much
// at a time: one request holds a bounded number of page fds and fetched bytes
// however long its range.
constexpr uint64_t kWindowBytes = 16ull << 20;
// How long a client may hold the pages of a short-circuit read answer
// (docs/protocol.md, "Held read pages"). Short: reads from held pages are not
// reported, so the eviction policy and the hit counters see a page again only
// once its lease has ended.
constexpr uint64_t kReadLeaseNs = 1'000'000'000;

// JSON text for the wire. Strings from requests (paths) may be any bytes:
// invalid UTF-8 is replaced, never thrown over.
std::string JsonText(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

Json InfoJson(const FileInfo& f, const std::string& ns_path) {
  Json j{{"path", ns_path},
         {"is_dir", f.is_dir},
         {"size", f.size},
         {"mtime_ns", f.mtime_ns},
         {"version", f.is_dir ? std::string() : f.Version()}};
  if (f.mode != 0) j["mode"] = f.mode;  // only where the store keeps modes
  if (f.ctime_ns != 0) j["ctime_ns"] = f.ctime_ns;
  if (f.uid >= 0) j["uid"] = f.uid;  // only where the store keeps owners
  if (f.gid >= 0) j["gid"] = f.gid;
  return j;
}

template <typename A, typename B>
Json ObjectJson(std::string_view k1, A a, std::string_view k2, B b) {
  Json j = Json::object();
  j[std::string(k1)] = std::move(a);
  j[std::string(k2)] = std::move(b);
  return j;
}

HttpResponse JsonAnswer(const Json& j) { return HttpResponse::Text(200, JsonText(j), "application/json"); }

// Every error body: {"code": "NotFound", "message": "..."}.
HttpResponse ErrorAnswer(int http_status, const Status& st) {
  return HttpResponse::Text(http_status, JsonText(ObjectJson("code", std::string(CodeName(st.code())), "message", st.message())),
                            "application/json");
}
HttpResponse ErrorAnswer(const Status& st) { return ErrorAnswer(HttpStatusFor(st.code()), st); }

std::string ChildPath(const ResolvedPath& parent, const FileInfo& entry) {
  const std::string& mp = parent.mount->path;
  return (mp == "/" ? "" : mp) + "/" + entry.key;
}

// The threads that run blocking work (under-store calls, page writes). Stop()
// drops what has not started (nobody waits for it once the server is down)
// and joins what has.
class BlockingPool {
 public:
  explicit BlockingPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~BlockingPool() { Stop(); }

  void Post(std::function<void()> f) {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      queue_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

  void Stop() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
      dropped.swap(queue_);
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopped_ || !queue_.empty(); });
        if (stopped_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        job();
      } catch (const std::exception& e) {
        spdlog::error("BUG: blocking work threw: {}", e.what());  // its Responder, if any, answers 500
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

// The largest body of a streamed route (a write-back append): read in
// pieces, so this bounds a request, not memory.
constexpr uint64_t kMaxStreamedBody = 64ull << 20;

// Bytes served by one answer, counted once it is complete.
struct Tally {
  std::atomic<uint64_t> hit{0}, miss{0};
};

}  // namespace

class Worker::Impl {
 public:
  explicit Impl(const Config& c)
      : config_(c),
        pool_(static_cast<size_t>(c.worker.ufs_threads)),
        append_pool_(static_cast<size_t>(c.worker.ufs_threads)) {}

  ~Impl() {
    Stop();
    Wait();
  }

  // The write-back journal in the first cache dir (worker/writeback_journal.h).
  Status StartWriteback() {
    WritebackJournal::Options o;
    o.dir = config_.worker.cache_dirs.at(0).path + "/writeback";
    o.self_id = id_;
    o.max_pending = config_.worker.write_back_max_pending;
    if (o.max_pending == 0)
      o.max_pending = std::max<uint64_t>(config_.worker.cache_dirs.at(0).capacity / 4, 64ull << 20);
    o.takeover = config_.worker.write_back_takeover;
    WritebackJournal::Hooks h;
    h.store_for = [this](const std::string& path, std::string* key) -> Result<std::shared_ptr<UnderStore>> {
      auto rp = svc_->mounts().Resolve(path);
      if (!rp) return Err(rp.error().WithContext("write-back of " + path + " (is its mount still configured?)"));
      *key = rp->key;
      return svc_->Store(*rp);
    };
    h.uploaded = [this](const std::string& path) { svc_->Refresh(path, false, false); };
    // A new version to read: no answer a same-host client holds from before stands.
    h.committed = [this](const std::string&) { svc_->epoch().Bump(); };
    h.cache_uploaded = [this](const WritebackCommit& c, const FileInfo& as, int fd) { CacheUploaded(c, as, fd); };
    h.call_peer = [this](const WorkerEntry& peer, const std::string& target) {
      return peers_.Call(peer, "POST", target, Clock::now() + std::chrono::seconds(10), "write-back").status;
    };
    h.get_peer = [this](const WorkerEntry& peer, const std::string& target) -> Result<std::string> {
      auto r = peers_.Call(peer, "GET", target, Clock::now() + std::chrono::seconds(10), "write-back");
      if (!r.status.ok()) return Err(r.status);
      return r.body;
    };
    auto j = WritebackJournal::Open(std::move(o), std::move(h));
    if (!j) return j.error().WithContext("write-back journal");
    wb_ = std::move(*j);
    return {};
  }

  // After a write-back upload, before readers switch to the store's version
  // `as`: every page of the data file (`fd`) goes to its shard's owner under
  // that version, so a restore right after the switch is a cache hit. The
  // first shard lives with the path's metadata (HashRing::DataKey), on this
  // worker, the primary; the others are pushed (POST /v1/page, which checks
  // the version) to the owners on the ring peer fetch follows (none without
  // it: only the first shard is cached). Best effort: a shard whose owner
  // fails is left to be read from the store.
  void CacheUploaded(const WritebackCommit& c, const FileInfo& as, int fd) {
    const uint64_t page = config_.worker.page_size, shard = config_.cluster.shard_size;
    const std::string version = as.Version();
    PeerFetch* ring = peer_fetch_.load();
    std::string buf(page, '\0');
    for (uint64_t off = 0; off < as.size;) {
      std::optional<WorkerEntry> owner;  // nullopt: this worker
      if (off >= shard) {
        if (!ring) return;
        owner = ring->Owner(HashRing::DataKey(c.path, version, off / shard));
        if (!owner) return;
        if (owner->id == id_) owner.reset();
      }
      if (!owner && !svc_->pages().Admits(c.path)) {
        off = (off / shard + 1) * shard;
        continue;
      }
      const uint64_t len = std::min<uint64_t>(page, as.size - off);
      if (::pread(fd, buf.data(), len, static_cast<off_t>(off)) != static_cast<ssize_t>(len)) return;
      const std::span<const char> bytes(buf.data(), len);
      Status st = !owner ? svc_->pages().Put(PageKey{c.path, version, off}, bytes)
                         : peers_
                               .Call(*owner, "POST",
                                     "/v1/page?path=" + PercentEncode(c.path, true) +
                                         "&version=" + PercentEncode(version, false) +
                                         "&size=" + std::to_string(as.size) + "&offset=" + std::to_string(off),
                                     Clock::now() + std::chrono::seconds(10), c.path, {},
                                     std::string_view(bytes.data(), bytes.size()))
                               .status;
      if (!st.ok()) {
        if (st.code() != Code::kNoSpace)
          spdlog::warn("caching {} at {} after its upload: {}", c.path, off, st.ToString());
        off = (off / shard + 1) * shard;  // the rest of this shard is read from the store
        continue;
      }
      off += len;
    }
  }

  Status Init(bool handle_signals) {
    auto svc = WorkerService::Create(config_, [this](std::function<void()> f) { pool_.Post(std::move(f)); });
    if (!svc) return svc.error();
    svc_ = std::move(*svc);
    if (config_.worker.id.empty()) {
      auto id = LoadOrCreateWorkerId(config_.worker.cache_dirs.at(0).path);
      if (!id) return id.error();
      id_ = *id;
    } else {
      id_ = config_.worker.id;
    }
    SHOAL_RETURN_IF_ERROR(StartWriteback());
    hot_ = std::make_unique<HotReads>(config_, &svc_->pages(), id_);
    scrubber_ = std::make_unique<Scrubber>(
        svc_->pages(), Scrubber::Options{.rate = config_.worker.scrub_rate, .interval = config_.worker.scrub_interval});

    SHOAL_RETURN_IF_ERROR(StartSecurity());
    const WorkerConfig& w = config_.worker;
    net::ServerOptions o;
    o.listen = w.listen;
    SetTls(&o);
    o.io_threads = w.io_threads;
    o.header_timeout = w.header_timeout;
    o.idle_timeout = w.idle_timeout;
    o.write_timeout = w.write_timeout;
    o.heartbeat_interval = w.heartbeat_interval;
    o.max_connections = w.max_connections;
    // A pushed page (POST /v1/page) is one page of body.
    o.body_limit = std::max<size_t>(o.body_limit, w.page_size);
    // The handshake (docs/protocol.md): every answer names the protocol and
    // this worker; clients that speak it get heartbeats while they wait.
    o.response_headers = {{"X-Shoal-Protocol", "1"}, {"X-Shoal-Worker", id_}};
    o.heartbeat_header = "X-Shoal-Protocol";
    o.heartbeat_value = "1";
    o.handle_signals = handle_signals;
    o.settings_prefix = "worker";
    o.unknown_route_hint = "see docs/protocol.md for the worker API";
    o.error_response = [](int http_status, const Status& st) { return ErrorAnswer(http_status, st); };
    o.on_answer = [this](const HttpRequest& req, const HttpResponse& res) { NoteErrorAnswer(req, res); };
    auto server = net::HttpServer::Bind(o);
    if (!server) return server.error().WithContext("worker.listen");
    server_ = std::move(*server);
    auto advertised = AdvertisedAddress(w.advertise, server_->address(), server_->port(),
                                        w.advertise.empty() ? HostAddresses() : std::vector<std::string>{});
    if (!advertised) {
      server_->Stop();
      return advertised.error();
    }
    address_ = std::move(*advertised);
    if (address_ != server_->address()) {
      spdlog::info("worker {} listens on {} and gives other hosts {} (worker.advertise)", id_, server_->address(),
                   address_);
    }
    loads_ = std::make_unique<LoadJobs>(svc_.get(), std::vector<std::string>{id_, address_});
    // Before serving: /v1/status reports the local socket.
    StartLocalServer(server_->port());
    server_->Serve(Routes());
    if (!w.metrics_listen.empty()) {
      if (Status st = StartMetricsListener(o); !st.ok()) {
        server_->Stop();
        return st;
      }
    }
    spdlog::info("worker {} accepts up to {} connections (worker.max_connections)", id_, server_->max_connections());
    if (!w.s3_listen.empty()) {
      if (Status st = StartS3(handle_signals); !st.ok()) {
        server_->Stop();
        return st;
      }
    }
    // Serving first: a client routed here by the new ring finds it answering.
    if (config_.worker.peer_fetch) {
      // The ring as clients see it, to find who held a shard before (peer_fetch.h).
      auto membership = OpenMembership(config_);
      if (!membership) {
        server_->Stop();
        return membership.error().WithContext("peer fetch (worker.peer_fetch: false turns it off)");
      }
      hot_->SetMembership(*membership);
      loads_->SetMembership(*membership);
      auto peer_fetch = std::make_unique<PeerFetch>(config_, std::move(*membership), id_);
      peer_fetch_ = peer_fetch.get();
      svc_->SetPeerFetch(std::move(peer_fetch));
    }
    if (!config_.cluster.etcd.endpoints.empty()) {
      uint64_t capacity = 0;
      for (const auto& d : config_.worker.cache_dirs) capacity += d.capacity;
      auto reg = EtcdRegistration::Start(config_.cluster.etcd, {id_, address_}, capacity);
      if (!reg) {
        server_->Stop();
        return reg.error();
      }
      registration_ = std::move(*reg);
    }
    return {};
  }

  void Stop() {
    if (metrics_server_) metrics_server_->Stop();
    if (s3_server_) s3_server_->Stop();
    if (server_) server_->Stop();
  }

  void Wait() {
    if (server_) server_->Wait();
    // The S3 listener, then its endpoint, then the client it reads through.
    if (s3_server_) {
      s3_server_->Stop();
      s3_server_->Wait();
    }
    s3_server_.reset();
    if (metrics_server_) {
      metrics_server_->Stop();
      metrics_server_->Wait();
    }
    s3_.reset();
    cluster_client_.reset();
    registration_.reset();  // leaves the ring: deletes its etcd key
    local_.reset();
    loads_.reset();  // before the pool: its jobs wait for fetches the pool runs
    append_pool_.Stop();
    pool_.Stop();
    wb_.reset();  // after the pool (its jobs use it); its uploader uses the service's stores
  }

  const std::string& address() const { return address_; }
  const std::string& id() const { return id_; }
  const std::string& s3_address() const { return s3_address_; }

 private:
  // A client of the whole cluster, for the S3 listener and the status page:
  // opened at its first use (in `shoal up` and the tests the members are
  // known only once every worker runs) from s3.client_config, else from this
  // worker's own config when it names the cluster.
  Result<Client*> ClusterClient() {
    std::lock_guard lock(cluster_client_mu_);
    if (cluster_client_) return cluster_client_.get();
    Result<std::unique_ptr<Client>> c = Err(Code::kInvalidArgument, "");
    if (!config_.s3.client_config.empty()) {
      c = Client::Open(config_.s3.client_config);
    } else if (!config_.cluster.workers.empty() || !config_.cluster.etcd.endpoints.empty()) {
      c = Client::FromYaml(ToYaml(config_), config_.source.empty() ? "worker config" : config_.source);
    } else {
      return Err(Code::kUnavailable,
                 "the worker's config names no cluster (cluster.workers or cluster.etcd); set s3.client_config "
                 "to the cluster's client config");
    }
    if (!c) return Err(c.error());
    cluster_client_ = std::move(*c);
    return cluster_client_.get();
  }

  // worker.s3_listen: the S3 API on a second listener of the same server
  // code, with the S3 route table. It reads through a client over the
  // cluster (opened at the first request: in `shoal up` and the tests the
  // members are known only once every worker runs) and sends the pages this
  // worker holds itself with sendfile.
  Status StartS3(bool handle_signals) {
    s3::S3Hooks hooks;
    hooks.self_id = id_;
    hooks.client = [this]() -> Result<Client*> {
      auto c = ClusterClient();
      if (!c) return Err(c.error().WithContext("worker.s3_listen"));
      return c;
    };
    hooks.local_pages = [this](const FileStatus& st, uint64_t offset, uint64_t end) {
      return S3LocalPages(st, offset, end);
    };
    std::vector<std::string> mounts;
    for (const auto& m : svc_->mounts().Current()->mounts()) mounts.push_back(m.path);
    auto endpoint = s3::S3Endpoint::Create(std::move(hooks), mounts, config_.s3);
    if (!endpoint) return endpoint.error().WithContext("worker.s3_listen");
    s3_ = std::move(*endpoint);
    net::ServerOptions o = s3::S3Endpoint::ServerOptionsFor(config_.worker.s3_listen);
    o.io_threads = config_.worker.io_threads;
    o.idle_timeout = config_.worker.idle_timeout;
    o.write_timeout = config_.worker.write_timeout;
    o.body_read_timeout = config_.worker.body_read_timeout;
    o.max_connections = config_.worker.max_connections;
    o.settings_prefix = "worker";
    SetTls(&o);
    (void)handle_signals;  // the native listener takes the signals and stops both
    auto server = net::HttpServer::Bind(o);
    if (!server) return server.error().WithContext("worker.s3_listen");
    s3_server_ = std::move(*server);
    s3_address_ = s3_server_->address();
    s3_server_->Serve({s3_->Routes()});
    spdlog::info("worker {} serves the S3 API on {} ({} mode)", id_, s3_address_, config_.s3.mode);
    return {};
  }

  // Transport security and identity (src/security/): the TLS context of the
  // listeners (tls:) and the one access check of the routes.
  Status StartSecurity() {
    if (!config_.tls.cert_file.empty()) {
      auto tls = security::TlsContext::Create(security::TlsContext::Side::kServer, config_.tls, "tls");
      if (!tls) return tls.error();
      tls_ = std::move(*tls);
      if (security::KernelHasTls()) {
        spdlog::info("worker TLS: certificate {} (client_auth {})", tls_->subject(), config_.tls.client_auth);
      } else {
        spdlog::info("worker TLS: certificate {} (client_auth {}; the kernel has no tls module: no kTLS)",
                     tls_->subject(), config_.tls.client_auth);
      }
    }
    security::RequestGuard::Options g;
    g.cluster_secret = config_.cluster.secret;
    g.required = config_.security.required;
    g.proxy_users = config_.security.proxy_users;
    if (!config_.security.token_key_file.empty()) {
      auto keys = security::TokenKeys::Load(config_.security.token_key_file, config_.security.previous_token_key_files);
      if (!keys) return keys.error();
      g.tokens = std::make_shared<const security::TokenKeys>(std::move(*keys));
    }
    guard_ = std::make_unique<security::RequestGuard>(std::move(g));
    authz::RegisterMetrics();
    if (config_.authz.enabled()) {
      auto a = authz::Authorizer::Start(config_.authz, config_.worker.cache_dirs.at(0).path, id_,
                                        [this] { svc_->epoch().Bump(); });
      if (!a) return a.error().WithContext("authz");
      authz_ = std::move(*a);
    }
    return {};
  }

  void SetTls(net::ServerOptions* o) {
    if (!tls_) return;
    o->tls_context = [tls = tls_] { return tls->Current(); };
    o->tls_handshake_timeout = std::min(config_.worker.header_timeout, std::chrono::milliseconds(10'000));
  }

  // worker.metrics_listen: /metrics and health in plain HTTP, for scrapers,
  // when the API itself is TLS-only.
  Status StartMetricsListener(net::ServerOptions o) {
    o.listen = config_.worker.metrics_listen;
    o.tls_context = nullptr;
    o.handle_signals = false;
    o.io_threads = 1;
    auto server = net::HttpServer::Bind(o);
    if (!server) return server.error().WithContext("worker.metrics_listen");
    metrics_server_ = std::move(*server);
    net::Router r;
    r.Add("GET", "/metrics", [this](const HttpRequest& req, Responder res) { HandleMetrics(req, std::move(res)); });
    r.Add("GET", "/health", [this](const HttpRequest& req, Responder res) { HandleHealth(req, std::move(res)); });
    metrics_server_->Serve({std::move(r)});
    spdlog::info("worker {} serves /metrics in plain HTTP on {}", id_, metrics_server_->address());
    return {};
  }

  // The pages of [offset, end) of `st` this worker holds, from `offset` on,
  // as checked sendfile parts (the same sending as /v1/read); none when the
  // first page is not here. Stops at the end of offset's shard (the next one
  // may be another worker's).
  std::vector<BodyPart> S3LocalPages(const FileStatus& st, uint64_t offset, uint64_t end) {
    std::vector<BodyPart> parts;
    // Only for the shards this worker owns: asking the page store about
    // another's would start read-ahead into this cache for a sequential reader.
    auto owner =
        cluster_client_ ? cluster_client_->OwnerOf(st, offset) : Result<RingMember>(Err(Code::kUnavailable, ""));
    if (!owner || owner->id != id_) return parts;
    const uint64_t shard = config_.cluster.shard_size;
    end = std::min(end, (offset / shard + 1) * shard);
    auto rp = svc_->mounts().Resolve(st.path);
    if (!rp || st.version.empty()) return parts;
    auto file = std::make_shared<const FileRef>(FileRef{*rp, st.version, st.size});
    if (!svc_->CheckClaims(*file).ok() || offset >= std::min(end, st.size)) return parts;
    uint64_t hit = 0, miss = 0;
    for (auto& seg : svc_->CachedPrefix(*file, offset, std::min(end, st.size), 64)) {
      Count(*file, seg, &hit, &miss);
      parts.push_back(PagePart(file, seg));
    }
    if (hit + miss) svc_->CountServed(file->resolved, hit, miss, -1, WorkerService::Door::kS3, "s3");
    return parts;
  }

  // The worker's native API (docs/protocol.md) as one table: each route
  // names the access it needs, and the guard checks it before the handler
  // runs (security/request_guard.h); nothing else decides access. The routes
  // that read their bodies as they arrive (`streams`) are served from a
  // second route table, whose bodies are streamed.
  std::vector<net::Router> Routes() {
    using security::Access;
    using Handle = void (Impl::*)(const HttpRequest&, Responder);
    struct Route {
      const char* method;
      const char* path;
      Access access;
      authz::Need need;  // what the request's end user needs on its `path` (authz/authorizer.h)
      Handle handle;
      bool streams = false;  // the handler reads the body (HttpRequest::body_stream), up to kMaxStreamedBody
    };
    using N = authz::Need;
    static const Route kRoutes[] = {
        {"GET", "/v1/health", Access::kPublic, N::kNone, &Impl::HandleHealth},
        {"GET", "/health", Access::kPublic, N::kNone, &Impl::HandleHealth},
        // With authz.status_open false, an admin group (scrape from worker.metrics_listen instead).
        {"GET", "/metrics", Access::kMetrics, N::kStatus, &Impl::HandleMetrics},
        {"GET", "/v1/read", Access::kRead, N::kReadData, &Impl::HandleRead},
        {"GET", "/v1/open", Access::kRead, N::kReadData, &Impl::HandleOpen},
        {"GET", "/v1/stat", Access::kRead, N::kStat, &Impl::HandleStat},
        {"GET", "/v1/list", Access::kRead, N::kList, &Impl::HandleList},
        {"GET", "/v1/status", Access::kRead, N::kStatus, &Impl::HandleStatus},
        // The status page (status_page.h) and its document: what an operator looks at, as
        // open as /metrics (closed with security.required).
        {"GET", "/", Access::kMetrics, N::kStatus, &Impl::HandleClusterStatus},
        {"GET", "/ui", Access::kMetrics, N::kStatus, &Impl::HandleClusterStatus},
        {"GET", "/v1/cluster/status", Access::kMetrics, N::kStatus, &Impl::HandleClusterStatus},
        {"GET", "/v1/whoami", Access::kRead, N::kNone, nullptr},  // the identity the guard found (shoal whoami)
        {"GET", "/v1/policy/check", Access::kRead, N::kAdminOnly, &Impl::HandlePolicyCheck},
        {"GET", "/v1/load", Access::kRead, N::kStatus, &Impl::HandleLoad},
        {"GET", "/v1/rules", Access::kRead, N::kStatus, &Impl::HandleRules},
        {"GET", "/v1/scrub", Access::kRead, N::kStatus, &Impl::HandleScrub},
        {"GET", "/v1/wb/state", Access::kRead, N::kNone, &Impl::HandleWriteback},
        {"POST", "/v1/refresh", Access::kWrite, N::kWrite, &Impl::HandleRefresh},
        {"POST", "/v1/wb/begin", Access::kWrite, N::kWrite, &Impl::HandleWriteback},
        // A stream begun is the writer's (its id is a 128-bit capability): its steps need no path.
        {"POST", "/v1/wb/append", Access::kWrite, N::kNone, &Impl::HandleWriteback, true},
        {"POST", "/v1/wb/commit", Access::kWrite, N::kNone, &Impl::HandleWriteback},
        {"POST", "/v1/wb/put", Access::kWrite, N::kWrite, &Impl::HandleWriteback},
        {"POST", "/v1/wb/abort", Access::kWrite, N::kNone, &Impl::HandleWriteback},
        {"POST", "/v1/page", Access::kPeer, N::kNone, &Impl::HandlePagePush},
        {"POST", "/v1/wb/done", Access::kPeer, N::kNone, &Impl::HandleWriteback},
        {"POST", "/v1/wb/pause", Access::kPeer, N::kNone, &Impl::HandleWriteback},
        {"POST", "/v1/load", Access::kAdmin, N::kManage, &Impl::HandleLoad},
        {"POST", "/v1/load/stop", Access::kAdmin, N::kAdminOnly, &Impl::HandleLoad},
        {"POST", "/v1/free", Access::kAdmin, N::kManage, &Impl::HandleLoad},
        {"POST", "/v1/rules", Access::kAdmin, N::kManage, &Impl::HandleRules},
        {"POST", "/v1/rules/rm", Access::kAdmin, N::kManage, &Impl::HandleRules},
        {"POST", "/v1/scrub", Access::kAdmin, N::kAdminOnly, &Impl::HandleScrub},
    };
    net::Router whole, streamed;
    streamed.StreamBodies(kMaxStreamedBody);
    for (const Route& route : kRoutes) {
      (route.streams ? streamed : whole)
          .Add(route.method, route.path, [this, route](const HttpRequest& req, Responder res) {
            auto who = guard_->Admit(req, route.access);
            if (!who) {
              auth_refused_->Add();
              res.Respond(ErrorAnswer(who.error().http_status, who.error().status));
              return;
            }
            if (!who->anonymous()) NoteCaller(*who);
            if (authz_ && route.need != authz::Need::kNone) {
              if (auto refused = Authorize(req, *who, route.need, route.path)) return res.Respond(std::move(*refused));
            }
            if (route.handle == nullptr) return res.Respond(JsonAnswer(WhoAmIJson(*who)));
            (this->*route.handle)(req, std::move(res));
          });
    }
    std::vector<net::Router> out;
    out.push_back(std::move(whole));
    out.push_back(std::move(streamed));
    return out;
  }

  // The one authorization check (authz/authorizer.h) of a routed request: the
  // refusal to send, or nullopt to go on. The path is the request's `path`
  // parameter, normalized as the handlers will see it; a route that needs a
  // path and has none is refused (its handler would answer 400 anyway).
  std::optional<HttpResponse> Authorize(const HttpRequest& req, const security::Identity& who, authz::Need need,
                                        std::string_view action) {
    std::string path;
    if (need != authz::Need::kStatus && need != authz::Need::kAdminOnly) {
      Query q = Query::Parse(req.query());
      const std::string* p = q.error.empty() ? q.Get("path") : nullptr;
      auto norm = p ? MountTable::NormalisePath(*p) : Result<std::string>(std::string());
      if (!p || !norm) {
        return ErrorAnswer(Status(Code::kInvalidArgument, "a valid query parameter 'path' is needed"));
      }
      path = *norm;
    }
    const std::string* door = req.Header(kDoorHeader);
    const std::string* rid = req.Header(kRequestIdHeader);
    if (rid != nullptr && (rid->empty() || rid->size() > 64)) rid = nullptr;  // a client's claim: bounded
    auto answer = authz_->Check(
        {.who = &who,
         .need = need,
         .path = path,
         .door = door ? std::string_view(*door) : std::string_view("native"),
         .client_address = req.transport ? std::string_view(req.transport->peer_address) : std::string_view(),
         .request_id = rid ? std::string_view(*rid) : std::string_view(),
         .action = action});
    if (answer.allowed) return std::nullopt;
    // The request id ties the refusal the user sees to the audit line.
    if (rid == nullptr) return ErrorAnswer(answer.refusal);
    return ErrorAnswer(Status(answer.refusal.code(), answer.refusal.message() + " [request " + *rid + "]"));
  }

  // GET /v1/policy/check?user=U&groups=A,B&path=P&access=read: the decision the
  // policies this worker enforces make, without audit (shoal policy check).
  void HandlePolicyCheck(const HttpRequest& req, Responder res) {
    Query q = Query::Parse(req.query());
    if (!q.error.empty()) return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, q.error)));
    if (!authz_) {
      return res.Respond(ErrorAnswer(Status(Code::kNotSupported,
                                            "this worker enforces no policies (authz.policy_file and "
                                            "authz.ranger_url are not set)")));
    }
    const std::string* user = q.Get("user");
    const std::string* path = q.Get("path");
    const std::string* access = q.Get("access");
    if (!user || !path || !access) {
      return res.Respond(
          ErrorAnswer(Status(Code::kInvalidArgument, "needs the query parameters user, path and access")));
    }
    auto type = authz::ParseAccessType(*access);
    if (!type) return res.Respond(ErrorAnswer(type.error()));
    std::vector<std::string> groups;
    if (const std::string* g = q.Get("groups")) {
      for (size_t at = 0; at <= g->size() && groups.size() < 256;) {
        size_t comma = std::min(g->find(',', at), g->size());
        if (comma > at) groups.push_back(g->substr(at, comma - at));
        at = comma + 1;
      }
    }
    auto e = authz_->Explain(*user, groups, *path, *type);
    res.Respond(HttpResponse::Text(200, authz::ExplanationJson(e), "application/json"));
  }

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
    auto server = LocalServer::Start(
        *path, local_token_,
        [this](const local_wire::Request& r, std::vector<PageRef>* pages) { return ServeLocal(r, pages); },
        svc_->epoch().fd());
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
    auto started = Clock::now();
    (r.kind == local_wire::Kind::kRead         ? short_circuit_reads_
     : r.kind == local_wire::Kind::kOpen       ? short_circuit_opens_
     : r.kind == local_wire::Kind::kOpenCached ? short_circuit_cached_opens_
                                               : short_circuit_touches_)
        ->Add();
    local_wire::Reply out;
    auto fail = [&out](const Status& s) {
      out.code = static_cast<int32_t>(s.code());
      out.message = s.message();
      return out;
    };
    if (r.kind == local_wire::Kind::kTouch) return ServeLocalTouch(r.path, r.door);
    // Who asks: this worker's own user (the only one the socket admits,
    // SO_PEERCRED), for itself or for the end user the request names.
    security::Identity who{LocalUser(), {}, security::Proof::kPeerCredentials, ""};
    if (!r.on_behalf.empty()) {
      auto end = security::RequestGuard::ParseEndUser(r.on_behalf);
      if (!end) {
        return fail(Status(Code::kInvalidArgument,
                           "a short-circuit request's end user must be USER or "
                           "USER;groups=A,B of header-safe names"));
      }
      end->proof = security::Proof::kPeerCredentials;
      end->acting_for_by = who.user;
      who = std::move(*end);
    }
    NoteCaller(who);
    auto rp = svc_->mounts().Resolve(r.path);
    if (!rp) return fail(rp.error());
    // An end user named on the socket is authorized before any descriptor is
    // handed out; the worker's own user holds every page file already.
    if (authz_ && !r.on_behalf.empty()) {
      auto answer = authz_->Check({.who = &who,
                                   .need = authz::Need::kReadData,
                                   .path = rp->ns_path,
                                   .door = "short-circuit",
                                   .client_address = "unix",
                                   .request_id = {},
                                   .action = "short-circuit read"});
      if (!answer.allowed) return fail(answer.refusal);
    }
    if (r.kind == local_wire::Kind::kOpenCached) return ServeLocalCached(*rp, r.length, pages, r.door);
    FileRef file{*rp, r.version, r.size};
    uint64_t offset = r.offset;
    if (r.version.starts_with(kWritebackVersionPrefix)) return ServeLocalPending(*rp, r, pages);
    if (r.kind == local_wire::Kind::kOpen) {
      if (auto pending = wb_->Pending(rp->ns_path)) {
        out.message = JsonText(PendingJson(*pending));
        out.message.pop_back();
        return out;  // its bytes are read over HTTP
      }
      // A cold file's first page, read by the stat, is written at once on
      // this thread and passed like any cached page (no idle-writer hand-off,
      // no second request for its bytes).
      auto st = svc_->Stat(*rp, {.write_first_page = true});
      if (!st) return fail(st.error());
      out.message = JsonText(InfoJson(*st, rp->ns_path));
      out.message.pop_back();  // the newline
      if (st->is_dir) return out;
      file.version = st->Version();
      file.size = st->size;
      offset = 0;
    }
    if (file.version.empty()) return fail(Status(Code::kInvalidArgument, "short-circuit read without a version"));
    if (auto s = svc_->CheckClaims(file); !s.ok()) return fail(s);
    if (offset > file.size) {
      return fail(Status(Code::kOutOfRange, "offset " + std::to_string(offset) + " is past the end of " +
                                                rp->ns_path + " (size " + std::to_string(file.size) + ")"));
    }
    uint64_t end = offset + std::min(r.length, file.size - offset);
    if (end == offset) return out;
    // Read before the lookup, as for a cached-only open: a page removed
    // after it moves the epoch past it, and the client lets the page go.
    if (r.kind == local_wire::Kind::kRead && svc_->epoch().fd() >= 0) {
      out.epoch = svc_->epoch().value();
      out.lease_ns = kReadLeaseNs;
    }
    uint64_t hit = 0, miss = 0;
    // A first page that another reader's stat read is written here if the
    // idle writer has not yet (write_fetched).
    for (auto& seg : svc_->CachedPrefix(file, offset, end, local_wire::kMaxSegments, /*write_fetched=*/true)) {
      if (!CheckedForLocal(*seg.page)) break;  // the client reads the rest over TCP
      out.segments.push_back(LocalSegment(*seg.page, seg.skip, seg.length));
      Count(file, seg, &hit, &miss);
      pages->push_back(std::move(*seg.page));
    }
    if (hit + miss) {
      short_circuit_bytes_->Add(hit + miss);
      svc_->CountServed(file.resolved, hit, miss, std::chrono::duration<double>(Clock::now() - started).count(),
                        WorkerService::Door::kShortCircuit, r.door);
    }
    return out;
  }

  // A short-circuit open answered from what this worker holds now
  // (local_wire.h, kOpenCached): the fresh cached stat and the cached pages of
  // all of the first `length` bytes, or "not cached". Never asks the
  // under-store and never waits on a fetch: the S3 endpoint asks this from
  // its I/O threads.
  local_wire::Reply ServeLocalCached(const ResolvedPath& rp, uint64_t length, std::vector<PageRef>* pages,
                                     std::string_view client) {
    auto started = Clock::now();
    local_wire::Reply out;
    auto not_cached = [&out] {
      out.code = static_cast<int32_t>(Code::kUnavailable);
      out.message = "not cached: open it the usual way";
      out.segments.clear();
      out.lease_ns = 0;
      return out;
    };
    // Read before the lookups: a change after this read moves the epoch
    // past it, and the client no longer holds the answer (local_wire.h).
    const uint64_t epoch = svc_->epoch().value();
    if (wb_->Pending(rp.ns_path)) return not_cached();  // its bytes are read over HTTP
    auto cached = svc_->CachedStat(rp);
    if (!cached || cached->info.is_dir) return not_cached();
    // Held no longer than the stat stays fresh under the mount's rule.
    out.epoch = epoch;
    out.lease_ns = static_cast<uint64_t>(
        std::min<std::chrono::nanoseconds>(cached->fresh_for, std::chrono::nanoseconds(local_wire::kMaxLeaseNs))
            .count());
    const FileRef file{rp, cached->info.Version(), cached->info.size};
    const uint64_t end = std::min(length, file.size);
    // Bounded before any lookup: the reply carries at most kMaxSegments pages.
    if (end > local_wire::kMaxSegments * config_.worker.page_size) return not_cached();
    if (end > 0) {
      auto range = svc_->CachedRange(file, 0, end);
      if (!range || range->size() > local_wire::kMaxSegments) return not_cached();
      for (auto& seg : *range) {
        if (!CheckedForLocal(*seg.page)) return not_cached();
      }
      uint64_t hit = 0, miss = 0;
      for (auto& seg : *range) {
        Count(file, seg, &hit, &miss);
        out.segments.push_back(LocalSegment(*seg.page, seg.skip, seg.length));
        pages->push_back(std::move(*seg.page));
      }
      short_circuit_bytes_->Add(end);
      svc_->CountServed(file.resolved, hit, miss, std::chrono::duration<double>(Clock::now() - started).count(),
                        WorkerService::Door::kShortCircuit, client);
    }
    out.message = JsonText(InfoJson(cached->info, rp.ns_path));
    out.message.pop_back();  // the newline
    return out;
  }

  // Under worker.verify: once, a page handed to a client on this host is
  // checked whole first unless it is trusted already, so that the client
  // (and every later one) reads it without checks while its file is
  // unchanged. False: the page failed (dropped; read over TCP, which fetches
  // it again).
  // An answer of 5xx or a refusal: one log line and one recent error, with
  // the request id the client sent, so the user's error, this worker's log,
  // the status page and the audit line name the same request.
  void NoteErrorAnswer(const HttpRequest& req, const HttpResponse& res) {
    if (res.status < 500 && res.status != 401 && res.status != 403) return;
    std::string rid;
    if (const std::string* h = req.Header(kRequestIdHeader); h && h->size() <= 64) {
      for (char c : *h) rid += std::isprint(static_cast<unsigned char>(c)) ? c : '?';  // a client's claim
    }
    std::string message;
    auto j = Json::parse(res.body, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) message = j["message"].get<std::string>();
    constexpr size_t kMaxPath = 256;  // a client's target may be 16 KiB
    std::string path(req.path().substr(0, kMaxPath));
    std::string what =
        req.method + " " + path + ": HTTP " + std::to_string(res.status) + (message.empty() ? "" : " " + message);
    const bool refused = res.status < 500;
    // One log line per kind and status each 10 s (a scanner without the
    // secret, or a store outage, must not flood the log); every one is kept
    // among the recent errors.
    std::optional<uint64_t> held;
    {
      std::lock_guard lock(error_log_mu_);
      held = error_log_limit_.Admit(std::to_string(res.status), std::chrono::steady_clock::now());
    }
    if (held) {
      std::string line = what + (rid.empty() ? "" : " [request " + rid + "]");
      if (*held > 0) line = "(" + std::to_string(*held) + " more like it held back) " + line;
      if (refused) {
        spdlog::info("refused {}", line);
      } else {
        spdlog::warn("failed {}", line);
      }
    }
    recent_errors_.Add(refused ? "refused" : "server error", std::move(what), std::move(rid));
  }

  bool CheckedForLocal(PageRef& page) {
    if (config_.worker.verify != "once") return true;
    if (page.Trusted()) {
      trusted_reads_->Add();
      return true;
    }
    thread_local std::string scratch;
    auto id = svc_->pages().Verify(page, scratch);
    if (!id) {
      spdlog::warn("{}; dropped the page, reading it again from the under-store", id.error().message());
      recent_errors_.Add("corrupt page", id.error().message() + "; dropped, read again from the under-store");
      svc_->pages().DropCorrupt(page.key(), page);
      return false;
    }
    page.SetVerified(*id);
    return true;
  }

  // The short-circuit segment of bytes [skip, skip + length) of a page's data.
  // It carries the identity under which the page checked only under
  // worker.verify: once (with "always" the client checks every read too).
  local_wire::Segment LocalSegment(const PageRef& page, uint64_t skip, uint64_t length) const {
    const auto v = config_.worker.verify == "once" ? page.verified() : page_format::FileIdentity{};
    return {page.data_offset() + skip,
            length,
            page.header_len(),
            page.length(),
            page.page_offset(),
            page.generation(),
            v.dev,
            v.ino,
            v.ctime_ns,
            v.size};
  }

  // A batch of reads that clients on this host served from leased answers
  // (local_wire.h, kTouch): the pages' policy sees them and they count as
  // hits. Entries outside the mounts, or no longer cached, are skipped.
  local_wire::Reply ServeLocalTouch(const std::string& batch, std::string_view client) {
    local_wire::Reply out;
    auto touches = local_wire::DecodeTouches(batch);
    if (!touches) {
      out.code = static_cast<int32_t>(touches.error().code());
      out.message = touches.error().message();
      return out;
    }
    std::set<std::pair<std::string_view, uint64_t>> seen;  // a range listed twice counts once
    for (const auto& t : *touches) {
      if (!seen.insert({t.path, t.offset}).second) continue;
      auto rp = svc_->mounts().Resolve(t.path);
      if (!rp) continue;
      short_circuit_bytes_->Add(svc_->NoteLeasedReads(*rp, t.offset, t.length, t.count, client));
    }
    return out;
  }

  // A short-circuit read of a pending write-back version: its data file, as
  // one raw segment (no page header: header_len 0, local_wire.h). A write
  // this worker does not hold answers an error, and the client asks over HTTP.
  local_wire::Reply ServeLocalPending(const ResolvedPath& rp, const local_wire::Request& r,
                                      std::vector<PageRef>* pages) {
    local_wire::Reply out;
    auto data = wb_->Data(r.version.substr(kWritebackVersionPrefix.size()), rp.ns_path);
    Status why = data ? Status() : data.error();
    if (data && data->commit.size != r.size) {
      why = Status(Code::kInvalidArgument, "size=" + std::to_string(r.size) + " contradicts " + rp.ns_path +
                                               " version " + r.version + " (" + std::to_string(data->commit.size) +
                                               " bytes)");
    } else if (data && r.offset > r.size) {
      why = Status(Code::kOutOfRange, "offset " + std::to_string(r.offset) + " is past the end of " + rp.ns_path +
                                          " (size " + std::to_string(r.size) + ")");
    }
    if (!why.ok()) {
      out.code = static_cast<int32_t>(why.code());
      out.message = why.message();
      return out;
    }
    const uint64_t length = std::min({r.length, r.size - r.offset, uint64_t{UINT32_MAX}});
    if (length == 0) return out;
    int fd = ::dup(*data->fd);
    if (fd < 0) return out;  // nothing here: read over HTTP
    out.segments.push_back({r.offset, length, 0, 0, 0, 0});
    pages->emplace_back(fd, r.offset, static_cast<uint32_t>(length));
    short_circuit_bytes_->Add(length);
    return out;
  }

  static Json QuotasJson(const PageStore::Stats& st) {
    Json out = Json::array();
    for (const auto& q : st.quotas)
      out.push_back(Json{{"rule", q.path}, {"used_bytes", q.used}, {"limit_bytes", q.limit}});
    return out;
  }

  // Per mount: the bytes served that its store did not send, and its price.
  Json EgressJson() const {
    Json out = Json::array();
    for (const auto& e : svc_->Egress()) {
      out.push_back(
          {{"mount", e.mount}, {"ufs", e.ufs}, {"saved_bytes", e.saved_bytes}, {"price_per_gb", e.price_per_gb}});
    }
    return out;
  }

  // The body of /v1/status.
  // Each mount's store credentials: the provider, when they expire, how
  // their refreshes went. Never the secret.
  static Json CredentialsJson() {
    Json out = Json::array();
    for (const auto& [mount, info] : cloud::RegisteredCredentials()) {
      out.push_back({{"mount", mount},
                     {"provider", info.provider},
                     {"detail", info.detail},
                     {"expires", cloud::FormatExpiry(info.expires)},
                     {"refreshes", info.refreshes},
                     {"failures", info.failures},
                     {"last_error", info.last_error}});
    }
    return out;
  }

  static Json CacheDirsJson(const PageStore::Stats& st) {
    Json out = Json::array();
    for (const auto& d : st.dirs) {
      out.push_back({{"path", d.path},
                     {"used_bytes", d.used},
                     {"capacity_bytes", d.capacity},
                     {"effective_capacity_bytes", d.effective_capacity}});
    }
    return out;
  }

  Json RecentErrorsJson() const {
    Json out = Json::array();
    for (const auto& e : recent_errors_.Newest(20)) {
      out.push_back({{"unix_ms", e.unix_ms},
                     {"kind", e.kind},
                     {"message", e.message},
                     {"request_id", e.request_id},
                     {"text", FormatRecentError(e)}});
    }
    return out;
  }

  Json StatusJson() const {
    auto st = svc_->pages().stats();
    auto t = svc_->totals();
    auto wb = wb_->stats();
    Json j{{"address", address_},
           {"id", id_},
           {"cache_used_bytes", st.used_bytes},
           {"cache_capacity_bytes", st.capacity_bytes},
           {"cache_effective_capacity_bytes", st.effective_capacity_bytes},
           {"pages", st.pages},
           {"hit_bytes", t.hit_bytes},
           {"miss_bytes", t.miss_bytes},
           {"ufs_read_bytes", t.ufs_read_bytes},
           {"evicted_bytes", st.evicted_bytes},
           {"pinned_bytes", st.pinned_bytes},
           {"quotas", QuotasJson(st)},
           {"rules_version", svc_->rules().version()},
           {"local_socket", local_ ? local_->path() : std::string()},
           {"s3_endpoint", s3_address_},
           {"tls", tls_ != nullptr},
           {"tls_not_after", tls_ ? tls_->not_after() : 0},
           {"local_token", local_ ? local_token_ : std::string()},
           {"write_back_pending_bytes", wb.pending_bytes},
           {"write_back_open_bytes", wb.open_bytes},
           {"write_back_pending_files", wb.pending_files},
           {"write_back_oldest_pending_seconds", wb.oldest_pending_seconds},
           {"write_back_paused", wb.paused},
           {"egress", EgressJson()},
           {"credentials", CredentialsJson()},
           {"cache_dirs", CacheDirsJson(st)},
           {"errors_total", recent_errors_.total()},
           {"recent_errors", RecentErrorsJson()}};
    j.update(hot_->StatusJson());
    return j;
  }

  // The query and its path parameter, resolved; or the answer already given.
  std::optional<std::pair<Query, ResolvedPath>> Parse(const HttpRequest& req, const Responder& res) {
    Query q = Query::Parse(req.query());
    if (!q.error.empty()) {
      res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, q.error)));
      return std::nullopt;
    }
    auto p = q.Get("path");
    if (!p) {
      res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, "missing query parameter 'path'")));
      return std::nullopt;
    }
    auto rp = svc_->mounts().Resolve(*p);
    if (!rp) {
      res.Respond(ErrorAnswer(rp.error()));
      return std::nullopt;
    }
    return std::pair{std::move(q), std::move(*rp)};
  }

  // The name of the user this worker runs as (its uid when it has no name).
  static const std::string& LocalUser() {
    static const std::string name = UserNameOf(::geteuid());
    return name;
  }

  // One log line the first time an identity (user, groups, door) is served:
  // who uses this worker, from its log. Bounded: past kMaxCallersNoted
  // distinct identities the set starts over. On every request: a thread that
  // sees the identity it saw last takes no lock.
  void NoteCaller(const security::Identity& id) {
    std::string line = id.ToString();
    if (!id.groups.empty()) {
      line += " groups=";
      for (size_t i = 0; i < id.groups.size(); ++i) line += (i ? "," : "") + id.groups[i];
    }
    thread_local std::string last_noted;
    if (line == last_noted) return;
    last_noted = line;
    {
      std::lock_guard lock(callers_mu_);
      if (callers_noted_.contains(line)) return;
      if (callers_noted_.size() >= kMaxCallersNoted) callers_noted_.clear();
      callers_noted_.insert(line);
    }
    spdlog::info("serving {} for the first time", line);
  }

  Json WhoAmIJson(const security::Identity& id) const {
    return Json{{"user", id.user},
                {"groups", id.groups},
                {"proof", security::ProofName(id.proof)},
                {"via", id.acting_for_by},
                {"may_act_for_others", id.acting_for_by.empty() && guard_->MayActForOthers(id)}};
  }

  void HandleHealth(const HttpRequest&, Responder res) { res.Respond(HttpResponse::Text(200, "ok\n", "text/plain")); }

  void HandleMetrics(const HttpRequest&, Responder res) {
    svc_->pages().UpdateRuleGauges();
    hot_->UpdateMetrics();
    res.Respond(HttpResponse::Text(200, MetricsRegistry::Global().RenderPrometheus(), "text/plain; version=0.0.4"));
  }

  void HandleStatus(const HttpRequest&, Responder res) { res.Respond(JsonAnswer(StatusJson())); }

  // The cluster as this worker sees it (client/status_document.h): the JSON
  // document at /v1/cluster/status, the page drawing it at / and /ui. Asking
  // every worker blocks: on the pool, never on an I/O thread (this worker
  // answers its own part there).
  //
  // Open like /metrics, so its cost must not grow with its callers: one
  // fan-out at a time, on one pool thread (a frozen peer holds it up to the
  // client's timeout, never the pool); callers meanwhile wait without a thread
  // and all get its answer; an answer under kClusterStatusFor old is reused.
  void HandleClusterStatus(const HttpRequest& req, Responder res) {
    const bool page = req.path() != "/v1/cluster/status";
    std::unique_lock lock(cluster_status_mu_);
    if (cluster_status_ && Clock::now() - cluster_status_at_ < kClusterStatusFor) {
      auto doc = cluster_status_;
      lock.unlock();
      return res.Respond(ClusterStatusAnswer(*doc, page));
    }
    if (cluster_status_waiters_.size() >= kMaxClusterStatusWaiters) {
      lock.unlock();
      return res.Respond(ErrorAnswer(Status(Code::kUnavailable,
                                            "too many requests for the cluster's status "
                                            "at once; try again in a second")));
    }
    cluster_status_waiters_.emplace_back(page, std::move(res));
    if (cluster_status_running_) return;
    cluster_status_running_ = true;
    lock.unlock();
    pool_.Post([this] {
      auto client = ClusterClient();
      Result<std::shared_ptr<const Json>> doc =
          client ? Result<std::shared_ptr<const Json>>(std::make_shared<const Json>(ClusterStatusDocument(**client)))
                 : Err(client.error().WithContext("the cluster's status"));
      std::vector<std::pair<bool, Responder>> waiters;
      {
        std::lock_guard l(cluster_status_mu_);
        if (doc) {
          cluster_status_ = *doc;
          cluster_status_at_ = Clock::now();
        }
        waiters.swap(cluster_status_waiters_);
        cluster_status_running_ = false;
      }
      for (auto& [wants_page, waiter] : waiters) {
        waiter.Respond(doc ? ClusterStatusAnswer(**doc, wants_page) : ErrorAnswer(doc.error()));
      }
    });
  }

  HttpResponse ClusterStatusAnswer(const Json& doc, bool page) const {
    if (!page) return JsonAnswer(doc);
    HttpResponse answer = HttpResponse::Text(200, StatusPageHtml(doc, address_), "text/html; charset=utf-8");
    answer.headers.emplace_back("Cache-Control", "no-store");
    answer.headers.emplace_back("Content-Security-Policy",
                                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                "connect-src 'self'; img-src 'self' data:");
    return answer;
  }

  void HandleStat(const HttpRequest& req, Responder res) {
    auto parsed = Parse(req, res);
    if (!parsed) return;
    if (auto c = parsed->first.Get("cache_only"); c && *c != "0") {
      if (*c != "1") return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, "cache_only=" + *c + " is not 0 or 1")));
      return ServeCachedStat(parsed->second, res);
    }
    pool_.Post([this, rp = parsed->second, res] {
      if (auto pending = wb_->Pending(rp.ns_path)) return res.Respond(JsonAnswer(PendingJson(*pending)));
      auto st = svc_->Stat(rp);
      if (!st && st.error().code() == Code::kNotFound && wb_->HasPendingBelow(rp.ns_path)) {
        return res.Respond(JsonAnswer(InfoJson(PendingDirInfo(), rp.ns_path)));
      }
      res.Respond(st ? JsonAnswer(InfoJson(*st, rp.ns_path)) : ErrorAnswer(st.error()));
    });
  }

  // A directory that exists only as the parent of pending writes.
  static FileInfo PendingDirInfo() {
    FileInfo d;
    d.is_dir = true;
    return d;
  }

  // A cache-only stat (a peer's metadata miss after a ring change,
  // peer_stat.h): the fresh cached entry and its age, or 404 "not cached".
  // Never asks the under-store; a file with a pending write-back is not
  // answered (its owner answers for it).
  void ServeCachedStat(const ResolvedPath& rp, const Responder& res) {
    auto cached = wb_->Pending(rp.ns_path) ? std::nullopt : svc_->CachedStat(rp);
    if (!cached) {
      return res.Respond(ErrorAnswer(Status(Code::kNotFound, "not cached: the metadata of " + rp.ns_path +
                                                                 " (cache_only=1 never asks the under-store)")));
    }
    res.Respond(HttpResponse::Text(200, peer_stat::Encode(rp.ns_path, *cached), "application/json"));
  }

  void HandleList(const HttpRequest& req, Responder res) {
    auto parsed = Parse(req, res);
    if (!parsed) return;
    // pending_only=1: only this worker's pending writes (and the directories
    // they make) under the path, never the store's entries: a write-back
    // client merges these from every worker, since the directory's owner
    // holds only some of them.
    const bool pending_only = parsed->first.Flag("pending_only");
    pool_.Post([this, rp = parsed->second, res, pending_only] {
      auto pending = wb_->PendingUnder(rp.ns_path);
      auto pending_dirs = wb_->PendingDirsUnder(rp.ns_path);
      auto list = pending_only ? Result<std::vector<FileInfo>>(std::vector<FileInfo>{}) : svc_->List(rp);
      if (!list && !((pending.size() || pending_dirs.size()) && list.error().code() == Code::kNotFound)) {
        return res.Respond(ErrorAnswer(list.error()));
      }
      Json entries = Json::array();
      if (list) {
        std::unordered_set<std::string> pending_files, dirs_made(pending_dirs.begin(), pending_dirs.end());
        for (const auto& p : pending) pending_files.insert(p.path);
        for (const auto& e : *list) {
          const std::string child = ChildPath(rp, e);
          // A pending write of the file is what readers see.
          if (e.is_dir || !pending_files.contains(child)) entries.push_back(InfoJson(e, child));
          if (e.is_dir) dirs_made.erase(child);  // the store has it already
        }
        std::erase_if(pending_dirs, [&](const std::string& d) { return !dirs_made.contains(d); });
      }
      for (const auto& p : pending) entries.push_back(PendingJson(p));
      // Directories only pending files make: the upload will create them.
      for (const auto& d : pending_dirs) entries.push_back(InfoJson(PendingDirInfo(), d));
      res.Respond(JsonAnswer(ObjectJson("path", rp.ns_path, "entries", std::move(entries))));
    });
  }

  void HandleRefresh(const HttpRequest& req, Responder res) {
    Query q = Query::Parse(req.query());
    if (!q.error.empty()) return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, q.error)));
    auto p = q.Get("path");
    if (!p) return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, "missing query parameter 'path'")));
    auto norm = svc_->mounts().Resolve(*p);
    std::string ns = norm ? norm->ns_path : std::string();
    if (!norm) {
      auto n = MountTable::NormalisePath(*p);  // "/" and other paths above the mounts are fine here
      if (!n) return res.Respond(ErrorAnswer(n.error()));
      ns = *n;
    }
    bool recursive = q.Flag("recursive"), data = q.Flag("data");
    pool_.Post([this, ns, recursive, data, res] {
      size_t dropped = svc_->Refresh(ns, recursive, data);
      res.Respond(JsonAnswer(ObjectJson("path", ns, "dropped", dropped)));
    });
  }

  // POST /v1/page?path=P&version=V&size=S&offset=O with the page as the body:
  // a page a cache-through writer pushes after its Close (worker/page_put.h).
  void HandlePagePush(const HttpRequest& req, Responder res) {
    auto parsed = Parse(req, res);
    if (!parsed) return;
    const Query& q = parsed->first;
    PagePush push;
    if (auto v = q.Get("version")) push.version = *v;
    auto size = q.Number("size");
    auto offset = q.Number("offset");
    if (!size) return res.Respond(ErrorAnswer(size.error()));
    if (!offset) return res.Respond(ErrorAnswer(offset.error()));
    push.size = *size;
    push.offset = *offset;
    auto checked = ExpectedPageLength(push, config_.worker.page_size, parsed->second.ns_path);
    if (!checked) return res.Respond(ErrorAnswer(checked.error()));
    pool_.Post([this, rp = parsed->second, push, body = req.body, res] {
      Status st = svc_->PutPushedPage(rp, push, body);
      res.Respond(st.ok() ? JsonAnswer(ObjectJson("path", rp.ns_path, "cached", body.size())) : ErrorAnswer(st));
    });
  }

  // The load-job and free routes (worker/load_job.h, docs/protocol.md).
  void HandleLoad(const HttpRequest& req, Responder res) {
    Query q = Query::Parse(req.query());
    if (!q.error.empty()) return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, q.error)));
    auto answer = [res](const Result<std::string>& r) {
      res.Respond(r ? HttpResponse::Text(200, *r + "\n", "application/json") : ErrorAnswer(r.error()));
    };
    std::string id = q.Get("id") ? *q.Get("id") : "";
    if (req.path() == "/v1/free") {
      return pool_.Post([this, q = std::move(q), answer] { answer(FreePath(*svc_, q.params)); });
    }
    if (req.path() == "/v1/load/stop") {
      auto n = loads_->Stop(id);
      if (!n) return answer(Err(n.error()));
      return answer(ObjectJson("id", id.empty() ? "all" : id, "stopped", *n).dump());
    }
    if (req.method == "GET") return answer(loads_->StatusJson(id));
    auto p = loads_->ParseParams(q.params);
    if (!p) return answer(Err(p.error()));
    answer(loads_->Start(std::move(*p)));
  }

  // The scrubber (cache/scrubber.h, docs/protocol.md): POST starts a pass of
  // the pages under `path` (all when absent), at worker.scrub_rate or with
  // now=1 at full speed; GET answers the pass running or the last one.
  void HandleScrub(const HttpRequest& req, Responder res) {
    Query q = Query::Parse(req.query());
    if (!q.error.empty()) return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, q.error)));
    auto json = [](const Scrubber::Progress& p) {
      return Json{{"pass", p.pass},   {"running", p.running}, {"asked", p.asked},
                  {"now", p.now},     {"path", p.path},       {"pages", p.pages},
                  {"bytes", p.bytes}, {"corrupt", p.corrupt}, {"seconds", p.seconds}};
    };
    if (req.method == "GET") return res.Respond(JsonAnswer(json(scrubber_->progress())));
    std::string path = "/";
    if (const std::string* p = q.Get("path"); p != nullptr && *p != "/") {
      auto rp = svc_->mounts().Resolve(*p);
      if (!rp) return res.Respond(ErrorAnswer(rp.error()));
      path = rp->ns_path;
    }
    res.Respond(JsonAnswer(json(scrubber_->Start(path, q.Flag("now")))));
  }

  // The path rules routes (worker/rules_route.h, docs/protocol.md).
  void HandleRules(const HttpRequest& req, Responder res) {
    Query q = Query::Parse(req.query());
    if (!q.error.empty()) return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, q.error)));
    pool_.Post([this, q = std::move(q), method = std::string(req.method), route = std::string(req.path()), res] {
      auto r = HandleRulesRoute(*svc_, svc_->rules(), method, route, q.params, ClusterShare(config_));
      res.Respond(r ? HttpResponse::Text(200, *r + "\n", "application/json") : ErrorAnswer(r.error()));
    });
  }

  // GET /v1/read?path=P&version=V&size=S&offset=O&length=L. Every parameter is
  // the client's claim: checked for range and against what this worker knows
  // of version V before anything is planned.
  void HandleRead(const HttpRequest& req, Responder res) {
    auto started = Clock::now();
    const std::string_view client = ClientDoorOf(req);
    auto parsed = Parse(req, res);
    if (!parsed) return;
    const Query& q = parsed->first;
    const ResolvedPath& rp = parsed->second;
    auto version = q.Get("version");
    if (!version || version->empty()) {
      return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, "missing query parameter 'version'")));
    }
    auto size = q.Number("size");
    auto offset = q.Number("offset");
    auto length = q.Number("length");
    if (!size) return res.Respond(ErrorAnswer(size.error()));
    if (!offset) return res.Respond(ErrorAnswer(offset.error()));
    if (!length) return res.Respond(ErrorAnswer(length.error()));
    if (version->starts_with(kWritebackVersionPrefix)) {
      if (*offset > *size) {
        return res.Respond(ErrorAnswer(
            Status(Code::kOutOfRange, "offset=" + std::to_string(*offset) + " is past the end of " + rp.ns_path)));
      }
      return pool_.Post([this, rp, id = version->substr(kWritebackVersionPrefix.size()), size = *size, offset = *offset,
                         length = *length, res] {
        ServeWriteback(rp, id, size, offset, offset + std::min(length, size - offset), {}, res);
      });
    }
    bool cache_only = false;
    if (auto c = q.Get("cache_only")) {
      if (*c != "0" && *c != "1") {
        return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, "cache_only=" + *c + " is not 0 or 1")));
      }
      cache_only = *c == "1";
    }
    auto spread = HotReads::SpreadFlag(q.Get("spread"));
    if (!spread) return res.Respond(ErrorAnswer(spread.error()));
    FileRef file{rp, *version, *size};
    if (auto s = svc_->CheckClaims(file); !s.ok()) return res.Respond(ErrorAnswer(s));
    if (*offset > *size) {
      return res.Respond(ErrorAnswer(Status(Code::kOutOfRange, "offset=" + std::to_string(*offset) +
                                                                   " is past the end of " + rp.ns_path +
                                                                   " (size=" + std::to_string(*size) + ")")));
    }
    uint64_t end = *offset + std::min(*length, *size - *offset);  // no overflow: offset <= size
    if (cache_only) {
      return ServeCached(std::make_shared<const FileRef>(std::move(file)), *offset, end, res, started, client);
    }
    net::Headers extra;  // X-Shoal-Hot when the shard is hot (worker/hot_reads.h)
    hot_->Note(rp.ns_path, *version, *size, *offset, end - *offset, *spread, &extra);
    ServeRange(std::make_shared<const FileRef>(std::move(file)), *offset, end, std::move(extra), res, started, client);
  }

  // A cache-only read (a peer's miss, peer_fetch.h): all of [offset, end)
  // from cached pages, or 404 "not cached". Never reads the under-store.
  // `client`: the door the client declared (ClientDoorOf), for the metrics.
  void ServeCached(std::shared_ptr<const FileRef> file, uint64_t offset, uint64_t end, Responder res,
                   Clock::time_point started, std::string_view client) {
    if (end - offset > kWholeAnswerBytes) {
      return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, "a cache_only read is at most " +
                                                                        std::to_string(kWholeAnswerBytes) +
                                                                        " bytes; ask for a shorter range")));
    }
    auto segs = end == offset ? std::optional<std::vector<Segment>>(std::in_place) : svc_->CachedRange(*file, offset, end);
    if (!segs) {
      return res.Respond(ErrorAnswer(Status(Code::kNotFound, "not cached: " + file->resolved.ns_path + " version " +
                                                                 file->version + " bytes " + std::to_string(offset) +
                                                                 "-" + std::to_string(end) +
                                                                 " (cache_only=1 never reads the under-store)")));
    }
    auto tally = std::make_shared<Tally>();
    HttpResponse ok;
    ok.headers = {{"Content-Type", "application/octet-stream"}};
    ok.parts = Parts(file, *segs, *tally);
    ok.on_done = [this, file, tally, started, client](bool complete) {
      if (complete) {
        svc_->CountServed(file->resolved, tally->hit.load(), tally->miss.load(),
                          std::chrono::duration<double>(Clock::now() - started).count(), WorkerService::Door::kHttp,
                          client);
      }
    };
    res.Respond(std::move(ok));
  }

  // GET /v1/open?path=P&length=L: the stat (in an X-Shoal-Stat header) and the
  // first L bytes of its version, in one round trip: a small file is opened and
  // read with one request to its owner.
  void HandleOpen(const HttpRequest& req, Responder res) {
    auto started = Clock::now();
    const std::string_view client = ClientDoorOf(req);
    auto parsed = Parse(req, res);
    if (!parsed) return;
    auto length = parsed->first.Number("length");
    if (!length) return res.Respond(ErrorAnswer(length.error()));
    auto spread = HotReads::SpreadFlag(parsed->first.Get("spread"));
    if (!spread) return res.Respond(ErrorAnswer(spread.error()));
    pool_.Post([this, rp = parsed->second, length = *length, spread = *spread, res, started, client] {
      if (auto pending = wb_->Pending(rp.ns_path)) {
        std::string stat = JsonText(PendingJson(*pending));
        stat.pop_back();
        return ServeWriteback(rp, pending->id, pending->size, 0, std::min(length, pending->size),
                              {{"X-Shoal-Stat", std::move(stat)}}, res);
      }
      auto st = svc_->Stat(rp);
      if (!st) return res.Respond(ErrorAnswer(st.error()));
      std::string stat = JsonText(InfoJson(*st, rp.ns_path));
      stat.pop_back();  // the newline
      net::Headers extra = {{"X-Shoal-Stat", std::move(stat)}};
      auto file = std::make_shared<const FileRef>(FileRef{rp, st->is_dir ? std::string() : st->Version(), st->size});
      uint64_t end = st->is_dir ? 0 : std::min(length, st->size);
      if (!st->is_dir) hot_->Note(rp.ns_path, file->version, st->size, 0, end, spread, &extra);
      ServeRange(file, 0, end, std::move(extra), res, started, client);
    });
  }

  // Answers [offset, end) of `file`: 200 with `extra` headers and the bytes as
  // body parts (cached pages by sendfile, fetched bytes from memory). A range
  // of at most kWholeAnswerBytes is answered once all of it is at hand; a
  // longer one once its first piece is, then streams window by window.
  void ServeRange(std::shared_ptr<const FileRef> file, uint64_t offset, uint64_t end, net::Headers extra, Responder res,
                  Clock::time_point started, std::string_view client) {
    extra.emplace_back("Content-Type", "application/octet-stream");
    auto tally = std::make_shared<Tally>();
    if (end == offset) {
      HttpResponse empty;
      empty.headers = std::move(extra);
      return res.Respond(std::move(empty));
    }
    uint64_t first_end = WindowEnd(offset, end);
    auto planned = svc_->PlanRead(*file, offset, first_end);
    if (!planned) return res.Respond(ErrorAnswer(planned.error()));
    auto segs = std::make_shared<std::vector<Segment>>(std::move(*planned));
    bool whole = end - offset <= kWholeAnswerBytes;
    std::vector<std::shared_ptr<Fetch>> waits;
    for (const auto& s : *segs) {
      if (s.fetch && (waits.empty() || waits.back() != s.fetch)) waits.push_back(s.fetch);
      if (!whole) break;  // only the first piece before the head
    }
    auto answer = [this, file, segs, first_end, end, extra = std::move(extra), res, started, tally, waits,
                   client]() mutable {
      for (const auto& f : waits) {
        if (!f->result()) return res.Respond(ErrorAnswer(f->result().error()));
      }
      HttpResponse ok;
      ok.headers = std::move(extra);
      ok.parts = Parts(file, *segs, *tally);
      if (first_end < end) ok.parts.push_back(NextWindow(file, first_end, end, tally));
      ok.on_done = [this, file, tally, started, client](bool complete) {
        if (complete) {
          svc_->CountServed(file->resolved, tally->hit.load(), tally->miss.load(),
                            std::chrono::duration<double>(Clock::now() - started).count(), WorkerService::Door::kHttp,
                            client);
        }
      };
      res.Respond(std::move(ok));
    };
    WhenDone(std::move(waits), std::move(answer));
  }

  // Runs `then` once every fetch has finished: at once (on this thread) when
  // they have, else on the thread that finishes the last.
  static void WhenDone(std::vector<std::shared_ptr<Fetch>> fetches, std::function<void()> then) {
    if (fetches.empty()) return then();
    struct Countdown {
      std::atomic<size_t> left;
      std::function<void()> then;
    };
    auto c = std::make_shared<Countdown>();
    c->left = fetches.size();
    c->then = std::move(then);
    for (const auto& f : fetches) {
      f->OnDone([c] {
        if (c->left.fetch_sub(1) == 1) c->then();
      });
    }
  }

  uint64_t WindowEnd(uint64_t from, uint64_t end) const {
    uint64_t page = config_.worker.page_size;
    uint64_t window = std::max(kWindowBytes, page);
    return std::min(end, from - from % page + window);  // no overflow: end <= kMaxFileSize
  }

  // The rest of a long range, [from, end): planned when the server reaches it.
  BodyPart NextWindow(std::shared_ptr<const FileRef> file, uint64_t from, uint64_t end, std::shared_ptr<Tally> tally) {
    auto take = [this, file, from, end, tally]() -> Result<std::vector<BodyPart>> {
      uint64_t to = WindowEnd(from, end);
      auto segs = svc_->PlanRead(*file, from, to);
      if (!segs) return Err(segs.error());
      auto parts = Parts(file, *segs, *tally);
      if (to < end) parts.push_back(NextWindow(file, to, end, tally));
      return parts;
    };
    return BodyPart::Deferred(end - from, [](BodyPart::Ready ready) { ready(); }, std::move(take));
  }

  // Planned segments as body parts: cached pages, and fetched bytes deferred
  // until their fetch is done (at once if it is).
  std::vector<BodyPart> Parts(const std::shared_ptr<const FileRef>& file, std::vector<Segment>& segs,
                              Tally& tally) {
    std::vector<BodyPart> parts;
    parts.reserve(segs.size());
    for (auto& seg : segs) {
      uint64_t hit = 0, miss = 0;
      Count(*file, seg, &hit, &miss);
      tally.hit += hit;
      tally.miss += miss;
      parts.push_back(seg.page ? PagePart(file, seg) : FetchedDeferred(file, seg.fetch, seg.offset, seg.length));
    }
    return parts;
  }

  // A segment served: what of it the store sent for a reader and no read was
  // served yet is a miss, the rest a hit (worker/fresh_bytes.h).
  void Count(const FileRef& file, const Segment& seg, uint64_t* hit, uint64_t* miss) {
    const uint64_t fresh = svc_->TakeFresh(file, seg.offset - seg.skip, seg.length);
    *miss += fresh;
    *hit += seg.length - fresh;
  }

  // ---- Checked sending of cached pages (docs/page-format.md) -------------
  // The one place a cached page becomes response bytes. No byte of it is sent
  // before its chunk has been checked: the segment goes in batches of about
  // kSendBatch bytes (whole chunks, so no chunk is read twice); each batch is
  // read and checked against the page's chunk checksums when the server
  // reaches it, then sent with sendfile(2) from the page file.
  //
  // Writing the checked copy instead would send exactly the bytes checked,
  // but measured over TCP (bench/core_bench; docs/page-format.md, "What the
  // checks cost") it costs the worker 1.5x the CPU of check-then-sendfile and
  // lost 47% of the unchecked throughput against 17%.
  // The price of sendfile: it reads the page cache again, microseconds after
  // the check. A byte can change in between only if, in that window, the
  // page is evicted and read back from a failing disk, or some process writes
  // into the page file (Shoal never does; files are renamed into place, and
  // block-file slots, which are written in place, are not sent this way); a
  // change before the check, or after the batch is in the socket (which then
  // holds the page cache pages), is caught or harmless.
  //
  // A page that fails is dropped, fetched again from the under-store, and the
  // rest of the segment is sent from that fetch: the reader gets the right
  // bytes and the response keeps its length. The reads run on the I/O
  // thread, as sendfile's own reads do.
  static constexpr uint64_t kSendBatch = 256 * 1024;

  //
  // worker.verify: once (the default) checks a page whole at its first read
  // (after a start, or after its file changed) and then trusts it while its
  // file keeps that identity (PageRef::Trusted): a trusted page file goes
  // out with sendfile and no check. "always" checks every read as above.
  BodyPart PagePart(const std::shared_ptr<const FileRef>& file, Segment& seg) {
    auto page = std::make_shared<PageRef>(std::move(*seg.page));
    const uint64_t page_offset = seg.offset - seg.skip, from = seg.skip, to = seg.skip + seg.length;
    const std::string& mode = config_.worker.verify;
    if (mode == "always") return CheckedPagePart(file, std::move(page), page_offset, from, to, Check::kRange);
    if (mode == "off" || page->Trusted()) {
      if (mode != "off") trusted_reads_->Add();
      if (!InBlockFile(*page)) {
        // Read before the move: the order arguments are evaluated in is unspecified.
        const int fd = page->fd();
        const uint64_t at = page->data_offset() + from;
        return BodyPart::File(fd, at, to - from, std::move(page));
      }
      return CheckedPagePart(file, std::move(page), page_offset, from, to, Check::kNone);
    }
    return CheckedPagePart(file, std::move(page), page_offset, from, to, Check::kWhole);
  }

  // A block-file slot (worker.page_store: blocks) is written in place when it
  // is reused. sendfile(2) copies nothing: the socket keeps referring to the
  // page cache pages until the reader has taken them, so a slot reused while
  // its bytes wait in a socket would change them under the reader (tests/
  // worker_http_test.cc, ABlockSlotReusedWhileItsBytesWaitInASocket...). Its
  // bytes are sent from the checked copy instead; a page file is never
  // written once named, so it is still sent with sendfile.
  static bool InBlockFile(const PageRef& page) { return page.generation() != 0; }

  // How CheckedPagePart checks: each batch's chunks as it is sent (kRange);
  // the whole page first, then nothing (kWhole: the first read of a page
  // under worker.verify: once); nothing (kNone: a trusted block-file page,
  // which is still copied, not sent with sendfile).
  enum class Check { kRange, kWhole, kNone };

  // Bytes [from, to) of a cached page's data (the page starts at file offset
  // `page_offset`), read batch by batch as the server reaches them.
  BodyPart CheckedPagePart(std::shared_ptr<const FileRef> file, std::shared_ptr<PageRef> page, uint64_t page_offset,
                           uint64_t from, uint64_t to, Check check) {
    auto take = [this, file, page, page_offset, from, to, check]() -> Result<std::vector<BodyPart>> {
      Status st;
      if (check == Check::kWhole) {
        thread_local std::string scratch;
        auto verified = svc_->pages().Verify(*page, scratch);
        if (!verified) st = verified.error();
        if (st.ok() && !InBlockFile(*page)) {
          return std::vector<BodyPart>{BodyPart::File(page->fd(), page->data_offset() + from, to - from, page)};
        }
      }
      const Check next = check == Check::kRange ? Check::kRange : Check::kNone;
      page_format::PageFileReader reader(next == Check::kRange);
      if (st.ok()) st = page->BeginRead(reader);
      uint64_t stop = from;
      std::shared_ptr<char[]> buf;
      if (st.ok()) {
        stop = reader.NextStop(from, std::max<uint64_t>(kSendBatch, reader.header().chunk_size()), to);
        buf = std::make_shared_for_overwrite<char[]>(stop - from);
        st = reader.Read(from, std::span<char>(buf.get(), stop - from));
      }
      std::vector<BodyPart> parts;
      if (st.ok() && InBlockFile(*page)) {
        parts.push_back(BodyPart::Bytes(std::string_view(buf.get(), stop - from), buf));
        if (stop < to) parts.push_back(CheckedPagePart(file, page, page_offset, stop, to, next));
        return parts;
      }
      if (st.ok()) {
        parts.push_back(BodyPart::File(page->fd(), page->data_offset() + from, stop - from, page));
        if (stop < to) parts.push_back(CheckedPagePart(file, page, page_offset, stop, to, next));
        return parts;
      }
      // The rest of the segment, [from, to), from a fetch of the page.
      std::shared_ptr<Fetch> fetch = svc_->RefetchCorruptPage(*file, page_offset, *page, st);
      parts.push_back(FetchedDeferred(file, std::move(fetch), page_offset + from, to - from));
      return parts;
    };
    return BodyPart::Deferred(to - from, [](BodyPart::Ready ready) { ready(); }, std::move(take));
  }
  // ---- end of checked sending ---------------------------------------------

  // [offset, offset + length) of a fetch's bytes, sent once the fetch is done (at once if it is).
  static BodyPart FetchedDeferred(std::shared_ptr<const FileRef> file, std::shared_ptr<Fetch> fetch, uint64_t offset,
                                  uint64_t length) {
    return BodyPart::Deferred(
        length, [fetch](BodyPart::Ready ready) { fetch->OnDone(std::move(ready)); },
        [file, fetch, offset, length]() -> Result<std::vector<BodyPart>> {
          auto p = FetchedPart(*file, fetch, offset, length);
          if (!p) return Err(p.error());
          std::vector<BodyPart> one;
          one.push_back(std::move(*p));
          return one;
        });
  }

  // [offset, offset + length) from a finished fetch's buffer, which the part keeps alive.
  static Result<BodyPart> FetchedPart(const FileRef& file, const std::shared_ptr<Fetch>& fetch, uint64_t offset,
                                      uint64_t length) {
    const auto& data = fetch->result();
    if (!data) return Err(data.error().WithContext("reading " + file.resolved.ns_path));
    if (offset < fetch->start() || offset - fetch->start() + length > data->size()) {
      // The fetch was planned by a request that claimed another size.
      return Err(Code::kInvalidArgument, "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + length) +
                                             ") of " + file.resolved.ns_path + " version " + file.version +
                                             " are past its end as the under-store gave it; stat the file again");
    }
    return BodyPart::Bytes(std::string_view(data->data() + (offset - fetch->start()), length), fetch);
  }

  // ---- write-back (worker/writeback_journal.h, docs/protocol.md) ----------

  // A pending write's stat, with the options it will be uploaded with
  // ("attrs": its content type and metadata, for the S3 endpoint's HEAD).
  static Json PendingJson(const WritebackCommit& c) {
    Json j{{"path", c.path},         {"is_dir", false},        {"size", c.size},
           {"mtime_ns", c.mtime_ns}, {"version", c.version()}, {"pending", true}};
    if (!c.attrs.empty()) {
      Json attrs = Json::parse(c.attrs, nullptr, /*allow_exceptions=*/false);
      if (attrs.is_object()) {
        // The holder checked them when it took the write (DecodeWriteOptions).
        for (const char* k : {"mode", "uid", "gid"}) {
          if (attrs.contains(k) && attrs[k].is_number_unsigned()) j[k] = attrs[k];
        }
        j["attrs"] = std::move(attrs);
      }
    }
    return j;
  }

  // [offset, end) of pending write `id` of `rp`, whose size the request claims.
  void ServeWriteback(const ResolvedPath& rp, const std::string& id, uint64_t size, uint64_t offset, uint64_t end,
                      net::Headers extra, const Responder& res) {
    auto data = wb_->Data(id, rp.ns_path);
    if (!data) return res.Respond(ErrorAnswer(data.error()));
    if (data->commit.size != size) {
      return res.Respond(ErrorAnswer(Status(
          Code::kInvalidArgument, "size=" + std::to_string(size) + " contradicts " + rp.ns_path + " version wb-" + id +
                                      " (" + std::to_string(data->commit.size) + " bytes)")));
    }
    extra.emplace_back("Content-Type", "application/octet-stream");
    HttpResponse ok;
    ok.headers = std::move(extra);
    if (end > offset) ok.parts.push_back(BodyPart::File(*data->fd, offset, end - offset, data->fd));
    res.Respond(std::move(ok));
  }

  // /v1/wb/*: begin, append, commit, abort (a writer), done, state (holders), pause (operators, tests).
  void HandleWriteback(const HttpRequest& req, Responder res) {
    Query q = Query::Parse(req.query());
    if (!q.error.empty()) return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument, q.error)));
    const std::string op(std::string_view(req.path()).substr(std::string_view("/v1/wb/").size()));
    if (op == "pause") {
      wb_->Pause(q.Flag("on"));
      return res.Respond(JsonAnswer(ObjectJson("paused", q.Flag("on"), "worker", id_)));
    }
    auto idp = q.Get("id");
    if (!idp || !WritebackJournal::ValidId(*idp)) {
      return res.Respond(ErrorAnswer(Status(Code::kInvalidArgument,
                                            "write-back: query parameter 'id' must be 32 "
                                            "lowercase hex digits")));
    }
    std::string id = *idp;
    if (op == "state") return res.Respond(JsonAnswer(ObjectJson("id", id, "state", wb_->State(id))));
    if (op == "abort") {
      return pool_.Post([this, id, res] {
        wb_->Abort(id);
        res.Respond(JsonAnswer(ObjectJson("id", id, "aborted", true)));
      });
    }
    if (op == "done") {
      return pool_.Post([this, id, res] {
        Status st = wb_->Done(id);
        res.Respond(st.ok() ? JsonAnswer(ObjectJson("id", id, "done", true)) : ErrorAnswer(st));
      });
    }
    if (op == "begin" || op == "put") {
      auto parsed = Parse(req, res);
      if (!parsed) return;
      if (parsed->second.key.empty()) {
        return res.Respond(ErrorAnswer(
            Status(Code::kIsDirectory, "cannot write " + parsed->second.ns_path + ": it is the root of a mount")));
      }
      if (parsed->second.mount->read_only) {
        return res.Respond(ErrorAnswer(Status(Code::kReadOnly, "cannot write " + parsed->second.ns_path + ": mount " +
                                                                   parsed->second.mount->path + " is read-only")));
      }
      auto h = q.Get("holders");
      auto holders = WritebackJournal::ParseHolders(h ? *h : "");
      if (!holders) return res.Respond(ErrorAnswer(holders.error()));
      auto a = q.Get("attrs");  // the write's options for the store, checked by the journal
      std::string attrs = a ? *a : std::string();
      if (op == "put") {  // begin, append and commit of a small file at once
        auto size = q.Number("size");
        auto sum = q.Number("xxh3");
        if (!size) return res.Respond(ErrorAnswer(size.error()));
        if (!sum) return res.Respond(ErrorAnswer(sum.error()));
        return pool_.Post([this, id, path = parsed->second.ns_path, holders = std::move(*holders), body = req.body,
                           size = *size, sum = *sum, attrs = std::move(attrs), res] {
          auto c = wb_->Put(id, path, holders, body, size, sum, attrs);
          res.Respond(c ? JsonAnswer(PendingJson(*c)) : ErrorAnswer(c.error()));
        });
      }
      return pool_.Post(
          [this, id, path = parsed->second.ns_path, holders = std::move(*holders), attrs = std::move(attrs), res] {
            Status st = wb_->Begin(id, path, holders, attrs);
            res.Respond(st.ok() ? JsonAnswer(ObjectJson("id", id, "path", path)) : ErrorAnswer(st));
          });
    }
    if (op == "append") {
      auto offset = q.Number("offset");
      if (!offset) return res.Respond(ErrorAnswer(offset.error()));
      // On threads of their own: an append waits for its body to arrive, and
      // must not hold the threads that reads need.
      if (!req.body_stream) {  // the route table streams it; anything else is a bug here
        return res.Respond(ErrorAnswer(Status(Code::kInternal, "write-back append without a streamed body")));
      }
      return append_pool_.Post([this, id, offset = *offset, body = req.body_stream, res] {
        // Each piece as the connection read it goes to the data file, and back for reuse
        // (ReturnPiece keeps only full-size pieces, so the first, empty one is dropped).
        std::string held;
        auto n = wb_->AppendFrom(id, offset, [&]() -> Result<std::string_view> {
          body->ReturnPiece(std::move(held));
          auto piece = body->TakePiece();
          if (!piece) return Err(piece.error());
          held = std::move(*piece);
          return std::string_view(held);
        });
        body->ReturnPiece(std::move(held));
        res.Respond(n ? JsonAnswer(ObjectJson("id", id, "size", offset + *n)) : ErrorAnswer(n.error()));
      });
    }
    if (op == "commit") {
      auto size = q.Number("size");
      auto sum = q.Number("xxh3");
      if (!size) return res.Respond(ErrorAnswer(size.error()));
      if (!sum) return res.Respond(ErrorAnswer(sum.error()));
      auto a = q.Get("attrs");  // options that replace begin's (checked by the journal)
      std::optional<std::string> attrs = a ? std::optional<std::string>(*a) : std::nullopt;
      return pool_.Post([this, id, size = *size, sum = *sum, attrs = std::move(attrs), res] {
        auto c = wb_->Commit(id, size, sum, attrs);
        res.Respond(c ? JsonAnswer(PendingJson(*c)) : ErrorAnswer(c.error()));
      });
    }
    res.Respond(ErrorAnswer(Status(Code::kNotFound, "no write-back route " + std::string(req.path()))));
  }

  Config config_;
  BlockingPool pool_;
  // Write-back appends, which wait for their bodies: as many as
  // worker.ufs_threads, apart from pool_.
  BlockingPool append_pool_;
  std::unique_ptr<WorkerService> svc_;
  std::unique_ptr<net::HttpServer> server_;
  std::string address_;
  std::string id_;
  std::unique_ptr<LocalServer> local_;
  std::string local_token_;
  std::unique_ptr<LoadJobs> loads_;
  // Write-back holders telling each other; they carry the cluster secret like any client.
  // Owned by svc_; null when worker.peer_fetch is off, or until Init set it
  // (the write-back uploader may run before: only first shards are cached then).
  std::atomic<PeerFetch*> peer_fetch_{nullptr};
  WorkerCaller peers_{[this] {
    auto o = WorkerCaller::OptionsFor(config_);
    o.connect_timeout = WorkerCaller::Options{}.connect_timeout;
    o.response_timeout = WorkerCaller::Options{}.response_timeout;
    return o;
  }()};
  std::unique_ptr<WritebackJournal> wb_;
  std::unique_ptr<EtcdRegistration> registration_;
  std::mutex cluster_client_mu_;
  std::unique_ptr<Client> cluster_client_;  // ClusterClient(): opened by its first use
  std::unique_ptr<s3::S3Endpoint> s3_;
  std::unique_ptr<net::HttpServer> s3_server_;  // worker.s3_listen
  std::unique_ptr<net::HttpServer> metrics_server_;  // worker.metrics_listen
  std::shared_ptr<security::TlsContext> tls_;        // null without tls.cert_file
  std::unique_ptr<security::RequestGuard> guard_;
  std::unique_ptr<authz::Authorizer> authz_;  // null: no policies configured
  RecentErrors recent_errors_;                // for the status page and `shoal status`
  std::mutex error_log_mu_;
  RepeatLimiter error_log_limit_{std::chrono::seconds(10)};  // NoteErrorAnswer's log lines, by status
  std::string s3_address_;
  Counter* trusted_reads_ = &MetricsRegistry::Global().GetCounter(
      "shoal_cache_trusted_reads_total",
      "Page reads sent without checking their bytes: the page checked whole before, its file unchanged since "
      "(worker.verify: once)");
  Counter* short_circuit_bytes_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_bytes_total", "Cached bytes handed to clients on this host as page files (short-circuit reads)");
  Counter* short_circuit_opens_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_requests_total", "Short-circuit requests of clients on this host", {{"kind", "open"}});
  Counter* short_circuit_reads_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_requests_total", "Short-circuit requests of clients on this host", {{"kind", "read"}});
  Counter* short_circuit_cached_opens_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_requests_total", "Short-circuit requests of clients on this host", {{"kind", "open_cached"}});
  Counter* short_circuit_touches_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_requests_total", "Short-circuit requests of clients on this host", {{"kind", "touch"}});
  std::unique_ptr<HotReads> hot_;  // made in Init, with the page store
  std::unique_ptr<Scrubber> scrubber_;  // made in Init, with the page store
  static constexpr std::chrono::milliseconds kClusterStatusFor{1000};
  static constexpr size_t kMaxClusterStatusWaiters = 256;
  std::mutex cluster_status_mu_;
  std::shared_ptr<const Json> cluster_status_;  // the last document, and when it was made
  Clock::time_point cluster_status_at_{};
  bool cluster_status_running_ = false;
  std::vector<std::pair<bool, Responder>> cluster_status_waiters_;  // (wants the page, who)
  static constexpr size_t kMaxCallersNoted = 4096;
  std::mutex callers_mu_;
  std::set<std::string> callers_noted_;
  Counter* auth_refused_ = &MetricsRegistry::Global().GetCounter(
      "shoal_auth_refused_total",
      "Requests refused for a missing or bad credential (cluster secret, token, certificate)");
};

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

Result<std::unique_ptr<Worker>> Worker::Start(const Config& config, bool handle_signals) {
  // Embedders call this rather than main(): a client that leaves mid-answer
  // must not kill their process with SIGPIPE either.
  net::IgnoreSigpipe();
  auto impl = std::make_unique<Impl>(config);
  SHOAL_RETURN_IF_ERROR(impl->Init(handle_signals));
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

const std::string& Worker::address() const { return impl_->address(); }
const std::string& Worker::id() const { return impl_->id(); }
const std::string& Worker::s3_address() const { return impl_->s3_address(); }
void Worker::Stop() { impl_->Stop(); }
void Worker::Wait() { impl_->Wait(); }

}  // namespace shoal
