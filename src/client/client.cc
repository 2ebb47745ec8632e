#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "client/client_impl.h"
#include "common/units.h"
#include "ufs/uri.h"
#include "worker/http_status.h"

namespace shoal {

using Json = nlohmann::json;

namespace {

// Transfers are cut into pieces of at most this size, so a large read keeps
// several connections (and workers) busy at once.
constexpr uint64_t kPieceBytes = 1ull << 20;

// Bytes an open fetches along with the stat: whole ImageNet-sized files.
constexpr uint64_t kOpenPrefetch = 256 * 1024;

Result<FileStatus> StatusFromJson(const std::string& body) {
  try {
    auto j = Json::parse(body);
    FileStatus s;
    s.path = j.at("path").get<std::string>();
    s.is_dir = j.at("is_dir").get<bool>();
    s.size = j.at("size").get<uint64_t>();
    s.mtime_ns = j.at("mtime_ns").get<int64_t>();
    s.version = j.at("version").get<std::string>();
    return s;
  } catch (const std::exception& e) {
    return Err(Code::kIo, std::string("malformed answer from worker: ") + e.what());
  }
}

}  // namespace

FileStatus ToFileStatus(const FileInfo& f, std::string ns_path) {
  FileStatus s;
  s.path = std::move(ns_path);
  s.is_dir = f.is_dir;
  s.size = f.size;
  s.mtime_ns = f.mtime_ns;
  s.version = f.is_dir ? "" : f.Version();
  return s;
}

Client::Impl::Impl(Config config)
    : config_(std::move(config)),
      mounts_(config_.mounts),
      ring_(config_.cluster.workers),
      fanout_pool_(static_cast<size_t>(config_.client.max_parallel)),
      readahead_pool_(4),
      local_(config_.client.timeout, std::chrono::seconds(30), config_.client.verify_checksums),
      fallback_stores_(config_.mounts.size()) {}

bool Client::Impl::IsDown(const std::string& worker) {
  std::lock_guard lock(mu_);
  auto it = down_until_.find(worker);
  return it != down_until_.end() && std::chrono::steady_clock::now() < it->second;
}

void Client::Impl::MarkDown(const std::string& worker, const Status& why) {
  spdlog::warn("worker {} failed ({}); using {} for {} ms", worker, why.message(),
               config_.client.ufs_fallback ? "the under-store directly" : "nothing",
               config_.client.down_backoff.count());
  worker_failures_.fetch_add(1, std::memory_order_relaxed);
  pool_.Forget(worker);
  std::lock_guard lock(mu_);
  down_until_[worker] = std::chrono::steady_clock::now() + config_.client.down_backoff;
}

WorkerReply Client::Impl::Call(const std::string& worker, std::string_view method, const std::string& target,
                               std::span<char> body_out) {
  WorkerReply r;
  auto deadline = NewDeadline();
  // A pooled connection may have been closed by the worker while idle: one retry on a fresh one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    r = WorkerReply{};  // forget the failed first attempt
    auto conn = attempt == 0 ? pool_.Acquire(worker, deadline) : WorkerConnection::Connect(worker, deadline);
    if (!conn) {
      r.status = conn.error();
      r.transport_failed = true;
      return r;
    }
    Status st = (*conn)->SendRequest(method, target, deadline);
    Result<ResponseHead> head = st.ok() ? (*conn)->ReadHead(deadline) : Err(st);
    if (!head) {
      r.status = head.error();
      r.transport_failed = true;
      if (head.error().code() == Code::kTimeout) return r;
      continue;
    }
    if (head->status >= 200 && head->status < 300 && !body_out.empty()) {
      if (head->content_length != body_out.size()) {
        r.status = Status(Code::kIo, "worker " + worker + " sent " + std::to_string(head->content_length) +
                                         " bytes where " + std::to_string(body_out.size()) + " were asked");
        r.transport_failed = true;
        return r;
      }
      st = (*conn)->ReadBody(body_out, deadline);
    } else {
      auto body = (*conn)->ReadBodyString(head->content_length, deadline);
      if (body) r.body = std::move(*body);
      st = body ? Status() : body.error();
    }
    if (!st.ok()) {
      r.status = st;
      r.transport_failed = true;
      return r;
    }
    r.shoal_stat = std::move(head->shoal_stat);
    if (head->keep_alive) pool_.Release(std::move(*conn));
    if (head->status < 200 || head->status >= 300) {
      std::string code, msg = r.body;
      try {
        auto j = Json::parse(r.body);
        code = j.value("code", "");
        msg = j.value("message", r.body);
      } catch (...) {
      }
      r.status = Status(CodeFromWire(code, head->status), msg);
    }
    return r;
  }
  return r;
}

Result<std::shared_ptr<UnderStore>> Client::Impl::FallbackStore(const ResolvedPath& rp) {
  std::lock_guard lock(mu_);
  auto& s = fallback_stores_[rp.mount_index];
  if (!s) {
    auto opened = OpenUnderStore(*rp.mount);
    if (!opened) return Err(opened.error().WithContext("mount " + rp.mount->path));
    s = std::move(*opened);
  }
  return s;
}

Result<FileStatus> Client::Impl::Stat(std::string_view path) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  if (!ring_.empty()) {
    const auto& worker = ring_.members()[ring_.Owner(HashRing::MetaKey(rp->ns_path))];
    if (!IsDown(worker)) {
      auto r = Call(worker, "GET", "/v1/stat?path=" + PercentEncode(rp->ns_path, true));
      if (r.status.ok()) return StatusFromJson(r.body);
      if (!r.transport_failed) return Err(r.status);
      MarkDown(worker, r.status);
      if (!config_.client.ufs_fallback) return Err(r.status.WithContext("client.ufs_fallback is off"));
    } else if (!config_.client.ufs_fallback) {
      return Err(Code::kUnavailable, "worker " + worker + " is down and client.ufs_fallback is off");
    }
  }
  auto store = FallbackStore(*rp);
  if (!store) return Err(store.error());
  if (rp->key.empty()) {
    FileStatus root;
    root.path = rp->ns_path;
    root.is_dir = true;
    return root;
  }
  auto info = (*store)->Stat(rp->key);
  if (!info) {
    if (info.error().code() == Code::kNotFound) return Err(Code::kNotFound, "no such file or directory: " + rp->ns_path);
    return Err(info.error());
  }
  return ToFileStatus(*info, rp->ns_path);
}

Result<OpenedFile> Client::Impl::Open(std::string_view path) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  if (!ring_.empty()) {
    const auto& worker = ring_.members()[ring_.Owner(HashRing::MetaKey(rp->ns_path))];
    if (config_.client.short_circuit && !IsDown(worker)) {
      DiscoverLocal(worker);
      if (auto o = local_.Open(worker, rp->ns_path, kOpenPrefetch)) {
        auto st = StatusFromJson(o->stat_json);
        if (!st) return Err(st.error());
        local_read_bytes_.fetch_add(o->prefix.size(), std::memory_order_relaxed);
        worker_read_bytes_.fetch_add(o->prefix.size(), std::memory_order_relaxed);
        return OpenedFile{std::move(*rp), std::move(*st), std::move(o->prefix)};
      }
    }
    if (!IsDown(worker)) {
      auto r = Call(worker, "GET",
                    "/v1/open?path=" + PercentEncode(rp->ns_path, true) + "&length=" + std::to_string(kOpenPrefetch));
      if (r.status.ok()) {
        auto st = StatusFromJson(r.shoal_stat);
        if (!st) return Err(st.error());
        worker_read_bytes_.fetch_add(r.body.size(), std::memory_order_relaxed);
        return OpenedFile{std::move(*rp), std::move(*st), std::move(r.body)};
      }
      if (!r.transport_failed) return Err(r.status);
      MarkDown(worker, r.status);
    }
  }
  auto st = Stat(rp->ns_path);  // the worker is down: the under-store, or the error
  if (!st) return Err(st.error());
  return OpenedFile{std::move(*rp), std::move(*st), std::string()};
}

Result<std::vector<FileStatus>> Client::Impl::List(std::string_view path) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  std::vector<FileStatus> out;
  if (!ring_.empty()) {
    const auto& worker = ring_.members()[ring_.Owner(HashRing::MetaKey(rp->ns_path))];
    if (!IsDown(worker)) {
      auto r = Call(worker, "GET", "/v1/list?path=" + PercentEncode(rp->ns_path, true));
      if (r.status.ok()) {
        try {
          Json answer = Json::parse(r.body);  // named: a range-for over a temporary's member dangles
          for (const auto& e : answer.at("entries")) {
            auto s = StatusFromJson(e.dump());
            if (!s) return Err(s.error());
            out.push_back(std::move(*s));
          }
        } catch (const std::exception& e) {
          return Err(Code::kIo, std::string("malformed list answer from worker: ") + e.what());
        }
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
        return out;
      }
      if (!r.transport_failed) return Err(r.status);
      MarkDown(worker, r.status);
    }
    if (!config_.client.ufs_fallback) return Err(Code::kUnavailable, "worker " + worker + " is down and client.ufs_fallback is off");
  }
  auto store = FallbackStore(*rp);
  if (!store) return Err(store.error());
  auto listed = ListDirectory(**store, rp->key);
  if (!listed) return Err(listed.error());
  const std::string& mp = rp->mount->path;
  for (const auto& e : *listed) out.push_back(ToFileStatus(e, (mp == "/" ? "" : mp) + "/" + e.key));
  if (out.empty() && !rp->key.empty()) {
    auto st = Stat(path);
    if (!st) return Err(st.error());
    if (!st->is_dir) out.push_back(*st);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

Status Client::Impl::Refresh(std::string_view path, bool recursive, bool data) {
  std::string ns;
  if (auto rp = mounts_.Resolve(path)) {
    ns = rp->ns_path;
  } else {
    auto n = MountTable::NormalisePath(path);
    if (!n) return n.error();
    ns = *n;
  }
  std::string target = "/v1/refresh?path=" + PercentEncode(ns, true) + (recursive ? "&recursive=1" : "") +
                       (data ? "&data=1" : "");
  std::vector<std::string> failed;
  for (const auto& w : ring_.members()) {
    auto r = Call(w, "POST", target);
    if (!r.status.ok()) failed.push_back(w + " (" + r.status.message() + ")");
  }
  if (!failed.empty()) {
    std::string list;
    for (const auto& f : failed) list += (list.empty() ? "" : ", ") + f;
    return Status(Code::kUnavailable, "refresh of " + ns + " did not reach " + std::to_string(failed.size()) + " of " +
                                          std::to_string(ring_.size()) + " workers: " + list +
                                          "; they revalidate by their mount's rule, or run the refresh again");
  }
  return {};
}

std::vector<WorkerStatus> Client::Impl::ClusterStatus() {
  std::vector<WorkerStatus> out;
  for (const auto& w : ring_.members()) {
    WorkerStatus s;
    s.address = w;
    auto r = Call(w, "GET", "/v1/status");
    if (r.status.ok()) {
      try {
        auto j = Json::parse(r.body);
        s.up = true;
        s.cache_used_bytes = j.at("cache_used_bytes").get<uint64_t>();
        s.cache_capacity_bytes = j.at("cache_capacity_bytes").get<uint64_t>();
        s.hit_bytes = j.at("hit_bytes").get<uint64_t>();
        s.miss_bytes = j.at("miss_bytes").get<uint64_t>();
        s.ufs_read_bytes = j.at("ufs_read_bytes").get<uint64_t>();
      } catch (const std::exception& e) {
        s.error = std::string("malformed status: ") + e.what();
      }
    } else {
      s.error = r.status.message();
    }
    out.push_back(std::move(s));
  }
  return out;
}

ClientStats Client::Impl::stats() const {
  return {worker_read_bytes_.load(), fallback_read_bytes_.load(), worker_failures_.load(), local_read_bytes_.load(),
          local_.corrupt_reads()};
}

void Client::Impl::ForgetMetadata(const std::string& ns_path) {
  if (ring_.empty()) return;
  const auto& owner = ring_.members()[ring_.Owner(HashRing::MetaKey(ns_path))];
  Call(owner, "POST", "/v1/refresh?path=" + PercentEncode(ns_path, true));
}

Status Client::Impl::ReadFromUfs(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out) {
  auto store = FallbackStore(rp);
  if (!store) return store.error();
  ReadOptions o;
  o.if_version = st.version;
  auto n = (*store)->Read(rp.key, offset, out, o);
  if (!n && n.error().code() == Code::kVersionMismatch) {
    ForgetMetadata(rp.ns_path);
    return Status(Code::kVersionMismatch, rp.ns_path + " changed in the under-store since it was opened; open it again");
  }
  if (!n) return n.error();
  if (*n != out.size()) {
    ForgetMetadata(rp.ns_path);
    return Status(Code::kVersionMismatch, rp.ns_path + " changed in the under-store while being read; open it again");
  }
  fallback_read_bytes_.fetch_add(*n, std::memory_order_relaxed);
  return {};
}

void Client::Impl::DiscoverLocal(const std::string& worker) {
  if (!local_.ClaimDiscovery(worker)) return;
  std::string socket, token;
  auto r = Call(worker, "GET", "/v1/status");
  if (r.status.ok()) {
    try {
      auto j = Json::parse(r.body);
      socket = j.value("local_socket", "");
      token = j.value("local_token", "");
    } catch (const std::exception&) {
    }
  }
  local_.Discovered(worker, socket, token);
}

uint64_t Client::Impl::ReadLocal(const std::string& worker, const ResolvedPath& rp, const FileStatus& st,
                                 uint64_t offset, std::span<char> out) {
  DiscoverLocal(worker);
  uint64_t n = local_.Read(worker, rp.ns_path, st.version, st.size, offset, out);
  local_read_bytes_.fetch_add(n, std::memory_order_relaxed);
  worker_read_bytes_.fetch_add(n, std::memory_order_relaxed);
  return n;
}

Status Client::Impl::ReadPiece(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out) {
  if (!ring_.empty()) {
    uint64_t shard = offset / config_.cluster.shard_size;
    const auto& worker = ring_.members()[ring_.Owner(HashRing::DataKey(rp.ns_path, st.version, shard))];
    if (config_.client.short_circuit && !IsDown(worker)) {
      uint64_t n = ReadLocal(worker, rp, st, offset, out);
      if (n == out.size()) return {};
      offset += n;
      out = out.subspan(n);
    }
    if (!IsDown(worker)) {
      std::string target = "/v1/read?path=" + PercentEncode(rp.ns_path, true) +
                           "&version=" + PercentEncode(st.version, false) + "&size=" + std::to_string(st.size) +
                           "&offset=" + std::to_string(offset) + "&length=" + std::to_string(out.size());
      auto r = Call(worker, "GET", target, out);
      if (r.status.ok()) {
        worker_read_bytes_.fetch_add(out.size(), std::memory_order_relaxed);
        return {};
      }
      if (r.status.code() == Code::kVersionMismatch) {
        // The metadata owner may still hold the old version: make the next open revalidate.
        ForgetMetadata(rp.ns_path);
        return Status(Code::kVersionMismatch, rp.ns_path + " changed in the under-store since it was opened; open it again");
      }
      if (!r.transport_failed) return r.status;
      MarkDown(worker, r.status);
      if (!config_.client.ufs_fallback) return r.status.WithContext("client.ufs_fallback is off");
    } else if (!config_.client.ufs_fallback) {
      return Status(Code::kUnavailable, "worker " + worker + " is down and client.ufs_fallback is off");
    }
  }
  return ReadFromUfs(rp, st, offset, out);
}

Status Client::Impl::ReadRange(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                               bool parallel) {
  // Pieces end at shard boundaries (each shard has its own owner) and at kPieceBytes.
  struct Piece {
    uint64_t offset;
    std::span<char> out;
  };
  std::vector<Piece> pieces;
  uint64_t shard = config_.cluster.shard_size;
  for (uint64_t pos = 0; pos < out.size();) {
    uint64_t off = offset + pos;
    uint64_t len = std::min({out.size() - pos, (off / shard + 1) * shard - off, kPieceBytes});
    pieces.push_back({off, out.subspan(pos, len)});
    pos += len;
  }
  if (!parallel || pieces.size() == 1) {
    for (auto& p : pieces) SHOAL_RETURN_IF_ERROR(ReadPiece(rp, st, p.offset, p.out));
    return {};
  }
  std::vector<std::future<Status>> futures;
  for (auto& p : pieces) futures.push_back(fanout_pool_.Submit([&, p] { return ReadPiece(rp, st, p.offset, p.out); }));
  Status first;
  for (auto& f : futures) {  // every piece writes into `out`: wait for all of them
    auto s = f.get();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

// --- Client ---

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Open(const std::string& config_path) {
  std::string path = config_path;
  if (path.empty()) {
    const char* env = std::getenv("SHOAL_CONFIG");
    if (!env || !*env) {
      return Err(Code::kInvalidArgument, "no config: give --config FILE or set SHOAL_CONFIG (shoal up prints the path)");
    }
    path = env;
  }
  auto c = LoadConfig(path);
  if (!c) return Err(c.error());
  return std::unique_ptr<Client>(new Client(std::make_unique<Impl>(std::move(*c))));
}

Result<std::unique_ptr<Client>> Client::FromYaml(const std::string& yaml, const std::string& source) {
  auto c = ParseConfig(yaml, source);
  if (!c) return Err(c.error());
  return std::unique_ptr<Client>(new Client(std::make_unique<Impl>(std::move(*c))));
}

Result<FileStatus> Client::Stat(std::string_view path) { return impl_->Stat(path); }
Result<std::vector<FileStatus>> Client::List(std::string_view path) { return impl_->List(path); }
Status Client::Refresh(std::string_view path, bool recursive, bool data) { return impl_->Refresh(path, recursive, data); }
std::vector<WorkerStatus> Client::ClusterStatus() { return impl_->ClusterStatus(); }
ClientStats Client::stats() const { return impl_->stats(); }

std::vector<MountInfo> Client::Mounts() const {
  std::vector<MountInfo> out;
  for (const auto& m : impl_->config().mounts) {
    MountInfo i;
    i.path = m.path;
    i.ufs = m.ufs;
    i.consistency = m.consistency == Consistency::kTtl ? "ttl=" + FormatDuration(m.ttl)
                                                        : std::string(ConsistencyName(m.consistency));
    i.read_only = m.read_only;
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace shoal
