#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <future>
#include <unordered_map>

#include "client/client_impl.h"
#include "client/client_internal.h"
#include "cluster/etcd_membership.h"
#include "common/end_user.h"
#include "common/library_log.h"
#include "common/units.h"
#include "meta/etcd_mounts.h"
#include "security/token.h"
#include "ufs/http/call_deadline.h"
#include "ufs/posix_metadata.h"
#include "ufs/uri.h"
#include "ufs/write_options_codec.h"

namespace shoal {

using Json = nlohmann::json;

namespace {

// Transfers are cut into pieces of at most this size, so a large read keeps
// several connections (and workers) busy at once.
constexpr uint64_t kPieceBytes = 1ull << 20;
// How long a read waits for another thread's discovery of a worker's short circuit.
constexpr auto kAwaitDiscovery = std::chrono::seconds(1);

// Bytes an open fetches along with the stat: whole ImageNet-sized files.

Result<FileStatus> StatusFromJson(const std::string& body) {
  try {
    auto j = Json::parse(body);
    FileStatus s;
    s.path = j.at("path").get<std::string>();
    s.is_dir = j.at("is_dir").get<bool>();
    s.size = j.at("size").get<uint64_t>();
    s.mtime_ns = j.at("mtime_ns").get<int64_t>();
    s.version = j.at("version").get<std::string>();
    // Absent where the store keeps no modes (and from workers before it).
    s.mode = j.contains("mode") ? static_cast<uint32_t>(j.at("mode").get<uint64_t>() & 07777) : 0;
    s.ctime_ns = j.contains("ctime_ns") ? j.at("ctime_ns").get<int64_t>() : 0;
    // Absent where the store keeps no owners; only ids a file can have.
    for (auto [name, out] : {std::pair{"uid", &s.uid}, std::pair{"gid", &s.gid}}) {
      if (!j.contains(name)) continue;
      const uint64_t id = j.at(name).get<uint64_t>();
      if (id >= kNoOwner)
        return Err(Code::kIo, std::string("malformed answer from worker: '") + name + "' " + std::to_string(id) +
                                  " is no user or group id");
      *out = static_cast<int64_t>(id);
    }
    return s;
  } catch (const std::exception& e) {
    return Err(Code::kIo, std::string("malformed answer from worker: ") + e.what());
  }
}

std::string ReadTarget(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, uint64_t length) {
  return "/v1/read?path=" + PercentEncode(rp.ns_path, true) + "&version=" + PercentEncode(st.version, false) +
         "&size=" + std::to_string(st.size) + "&offset=" + std::to_string(offset) + "&length=" + std::to_string(length);
}

template <class T>
WorkerAttempt<T> FromWorker(Result<T> r) {
  // A 2xx answer the client cannot parse is a broken worker, not a final error.
  if (!r) return WorkerFailed<T>(r.error());
  return {std::move(r)};
}

void SortByPath(std::vector<FileStatus>* v) {
  std::sort(v->begin(), v->end(), [](const auto& a, const auto& b) { return a.path < b.path; });
}

}  // namespace

FileStatus ToFileStatus(const FileInfo& f, std::string ns_path) {
  FileStatus s;
  s.path = std::move(ns_path);
  s.is_dir = f.is_dir;
  s.size = f.size;
  s.mtime_ns = f.mtime_ns;
  s.version = f.is_dir ? "" : f.Version();
  s.mode = f.mode;
  s.ctime_ns = f.ctime_ns;
  s.uid = f.uid;
  s.gid = f.gid;
  return s;
}

namespace detail {

WriteMode ClientImpl::WriteModeFor(const ResolvedPath& rp) const {
  return rules_.For(rp.ns_path).write_mode.value_or(rp.mount->write_mode);
}

// The caller options of a client: OptionsFor's, and the bearer token given
// in code, else from SHOAL_TOKEN or client.token_file.
WorkerCaller::Options ClientCallerOptions(const Config& config, const std::string& token = "") {
  auto o = WorkerCaller::OptionsFor(config);
  if (!token.empty()) {
    o.token = token;
    if (token.size() > 16384 || token.find_first_of(" \t\r\n") != std::string::npos) {
      o.setup_error = Status(Code::kInvalidArgument,
                             "the token given is not one (a token is one line of at most 16 KiB without spaces: the "
                             "last line of `shoal token issue`)");
    }
  } else if (const char* env = std::getenv("SHOAL_TOKEN"); env && *env) {
    o.token = env;
  } else if (!config.client.token_file.empty()) {
    std::ifstream in(config.client.token_file);
    if (!in || !(in >> o.token)) {
      o.setup_error = Status(Code::kInvalidArgument, "client.token_file " + config.client.token_file +
                                                         ": cannot read a token from it (write the last line of "
                                                         "`shoal token issue` there)");
    }
  }
  return o;
}

ClientImpl::ClientImpl(Config config) : ClientImpl(config, std::make_shared<StaticMembership>(config.cluster.workers)) {}

ClientImpl::ClientImpl(Config config, std::shared_ptr<const Membership> membership, const std::string& token)
    : config_(std::move(config)),
      mounts_(config_.mounts, EtcdMountLoader(config_.cluster.etcd, /*with_secrets=*/false)),
      rules_(PathRules::Make(config_.rules).value_or(PathRules())),
      caller_(ClientCallerOptions(config_, token)),
      health_([this](const WorkerEntry& w) { return caller_.Probe(w); },
              WorkerHealth::Options{config_.client.down_backoff, std::chrono::seconds(30)}),
      limiter_(config_.client.fallback_rate, static_cast<uint64_t>(config_.client.fallback_requests)),
      router_(std::move(membership), &health_,
              Router::Options{config_.client.ufs_fallback, config_.client.timeout, 0, &limiter_,
                              [this](const WorkerEntry& w) { return local_.IsLocal(w.address); }}),
      fanout_pool_(static_cast<size_t>(config_.client.max_parallel)),
      readahead_pool_(4),
      // A short-circuit read is answered from the worker's page index at once;
      // an open may wait on a store's stat, and one that takes longer than the
      // response timeout goes over HTTP, which heartbeats.
      local_(config_.client.response_timeout, std::chrono::seconds(30), config_.client.verify_checksums),
      fallback_stores_(LiveMountTable::kMaxMounts) {
  // A client with a token names its user on the short circuit too, so a
  // policy sees the same user whichever way the bytes go.
  if (auto claims = security::TokenClaims(caller_.token())) {
    local_.set_self(OnBehalfValue(EndUser{claims->user, claims->groups}));
  }
}

Result<std::shared_ptr<UnderStore>> ClientImpl::FallbackStore(const ResolvedPath& rp) {
  std::lock_guard lock(mu_);
  auto& s = fallback_stores_[rp.mount_index];
  if (!s) {
    auto opened = OpenUnderStore(*rp.mount);
    if (!opened) return Err(opened.error().WithContext("mount " + rp.mount->path));
    s = std::move(*opened);
  }
  return s;
}

Result<ObjectMetadata> ClientImpl::MetadataFromStore(std::string_view path) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  if (rp->key.empty()) return Err(Code::kNotFound, rp->ns_path + " is the root of a mount, not a file");
  auto store = FallbackStore(*rp);
  if (!store) return Err(store.error());
  CallDeadline bound(NewDeadline());
  auto m = (*store)->Metadata(rp->key);
  if (!m && m.error().code() == Code::kNotFound) return Err(Code::kNotFound, "no such file: " + rp->ns_path);
  return m;
}

Result<ObjectMetadata> ClientImpl::MetadataOf(std::string_view path, std::string_view version) {
  if (!version.starts_with("wb-")) return MetadataFromStore(path);
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  // The stat owner is the write's first holder: its stat of the pending
  // write carries the options the write will be uploaded with.
  const Deadline deadline = NewDeadline();
  const std::string target = "/v1/stat?path=" + PercentEncode(rp->ns_path, true);
  auto body = router_.Route<std::string>(
      HashRing::MetaKey(rp->ns_path), deadline, "stat " + rp->ns_path,
      [&](const WorkerEntry& w) -> WorkerAttempt<std::string> {
        auto r = caller_.Call(w, "GET", target, deadline, rp->ns_path);
        if (r.worker_failed) return WorkerFailed<std::string>(r.status);
        if (!r.status.ok()) return {Err(r.status)};
        return {std::move(r.body)};
      },
      [&]() -> Result<std::string> {
        return Err(Code::kUnavailable, "no worker answers for the pending write of " + rp->ns_path);
      });
  if (!body) return Err(body.error());
  Json j = Json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("version") || j["version"] != version) return MetadataFromStore(path);  // uploaded
  auto o = DecodeWriteOptions(j.contains("attrs") ? j["attrs"].dump() : std::string());
  if (!o) return Err(Code::kIo, "the metadata of " + rp->ns_path + " from its worker: " + o.error().message());
  o->metadata.etag = std::move(o->etag);
  return std::move(o->metadata);
}

Result<FileStatus> ClientImpl::StatFromStore(const ResolvedPath& rp, Deadline deadline) {
  if (rp.key.empty()) {  // a mount's root
    FileStatus root;
    root.path = rp.ns_path;
    root.is_dir = true;
    return root;
  }
  auto store = FallbackStore(rp);
  if (!store) return Err(store.error());
  CallDeadline bound(deadline);
  auto info = (*store)->Stat(rp.key);
  if (!info) {
    if (info.error().code() == Code::kNotFound) return Err(Code::kNotFound, "no such file or directory: " + rp.ns_path);
    return Err(info.error());
  }
  return ToFileStatus(*info, rp.ns_path);
}

Result<std::vector<FileStatus>> ClientImpl::ListFromStore(const ResolvedPath& rp, Deadline deadline) {
  auto store = FallbackStore(rp);
  if (!store) return Err(store.error());
  std::vector<FileStatus> out;
  {
    CallDeadline bound(deadline);
    auto listed = ListDirectory(**store, rp.key);
    if (!listed) return Err(listed.error());
    const std::string& mp = rp.mount->path;
    for (const auto& e : *listed) out.push_back(ToFileStatus(e, (mp == "/" ? "" : mp) + "/" + e.key));
  }
  if (out.empty() && !rp.key.empty()) {  // a file lists as itself
    auto st = StatFromStore(rp, deadline);
    if (!st) return Err(st.error());
    if (!st->is_dir) out.push_back(*st);
  }
  SortByPath(&out);
  return out;
}

Status ClientImpl::ReadFromStore(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                                 Deadline deadline) {
  auto store = FallbackStore(rp);
  if (!store) return store.error();
  ReadOptions o;
  o.if_version = st.version;
  Result<size_t> n = [&] {
    CallDeadline bound(deadline);
    return (*store)->Read(rp.key, offset, out, o);
  }();
  if (!n && n.error().code() == Code::kVersionMismatch) {
    ForgetMetadata(rp.ns_path, deadline);
    return Status(Code::kVersionMismatch, rp.ns_path + " changed in the under-store since it was opened; open it again");
  }
  if (!n) return n.error();
  if (*n != out.size()) {
    ForgetMetadata(rp.ns_path, deadline);
    return Status(Code::kVersionMismatch, rp.ns_path + " changed in the under-store while being read; open it again");
  }
  fallback_read_bytes_.fetch_add(*n, std::memory_order_relaxed);
  return {};
}

Result<FileStatus> ClientImpl::StatPendingDir(const ResolvedPath& rp, Deadline deadline) {
  const auto slash = rp.ns_path.rfind('/');
  auto parent = mounts_.Resolve(rp.ns_path.substr(0, std::max<size_t>(slash, 1)));
  if (parent && parent->mount == rp.mount) {
    for (auto& e : PendingUnder(*parent, deadline)) {
      if (e.is_dir && e.path == rp.ns_path) return std::move(e);
    }
  }
  return Err(Code::kNotFound, "no such file or directory: " + rp.ns_path);
}

Result<FileStatus> ClientImpl::Stat(std::string_view path) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  const Deadline deadline = NewDeadline();
  auto st = StatResolved(*rp, deadline);
  if (st || st.error().code() != Code::kNotFound || rp->key.empty() || WriteModeFor(*rp) != WriteMode::kWriteBack) {
    return st;
  }
  auto dir = StatPendingDir(*rp, deadline);
  return dir ? dir : st;
}

size_t ClientImpl::ReplicasFor(const ResolvedPath& rp) const {
  return static_cast<size_t>(std::max(1, rules_.For(rp.ns_path).replicas.value_or(1)));
}

Result<FileStatus> ClientImpl::StatResolved(const ResolvedPath& rp, Deadline deadline) {
  const std::string target = "/v1/stat?path=" + PercentEncode(rp.ns_path, true);
  return router_.Route<FileStatus>(
      HashRing::MetaKey(rp.ns_path), deadline, "stat " + rp.ns_path,
      [&](const WorkerEntry& w) -> WorkerAttempt<FileStatus> {
        auto r = caller_.Call(w, "GET", target, deadline, rp.ns_path);
        if (r.worker_failed) return WorkerFailed<FileStatus>(r.status);
        if (!r.status.ok()) return {Err(r.status)};
        return FromWorker(StatusFromJson(r.body));
      },
      [&] { return StatFromStore(rp, deadline); });
}

Result<OpenedFile> ClientImpl::Open(std::string_view path, uint64_t prefetch) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  const Deadline deadline = NewDeadline();
  const std::string& ns = rp->ns_path;
  const std::string target = "/v1/open?path=" + PercentEncode(ns, true) + "&length=" + std::to_string(prefetch);
  // Shard 0 lives with the metadata: a replicated path is opened at any of its holders.
  const std::string ring_key = HashRing::MetaKey(ns);
  const size_t replicas = ReplicasFor(*rp);
  const Router::RouteKey key = ReadKey(ring_key, replicas, prefetch);
  return router_.Route<OpenedFile>(
      key, deadline, "open " + ns,
      [&](const WorkerEntry& w) -> WorkerAttempt<OpenedFile> {
        if (config_.client.short_circuit) {
          if (Status d = DiscoverLocal(w, deadline); !d.ok()) return WorkerFailed<OpenedFile>(d);
          // (A short-circuit open that times out may be a worker waiting on a
          // slow store, which has no heartbeat here: HTTP below judges the worker.)
          if (auto o = local_.Open(w.address, ns, prefetch)) {
            auto st = StatusFromJson(o->stat_json);
            if (!st) return WorkerFailed<OpenedFile>(st.error());
            local_read_bytes_.fetch_add(o->prefix.size(), std::memory_order_relaxed);
            worker_read_bytes_.fetch_add(o->prefix.size(), std::memory_order_relaxed);
            return {OpenedFile{*rp, std::move(*st), std::move(o->prefix)}};
          }
        }
        auto r = caller_.Call(w, "GET", target + SpreadParam(key, replicas, w), deadline, ns);
        if (r.worker_failed) return WorkerFailed<OpenedFile>(r.status);
        NoteHeat(ring_key, w, r.hot);
        if (!r.status.ok()) return {Err(r.status)};
        auto st = StatusFromJson(r.shoal_stat);
        if (!st) return WorkerFailed<OpenedFile>(st.error());
        worker_read_bytes_.fetch_add(r.body.size(), std::memory_order_relaxed);
        return {OpenedFile{*rp, std::move(*st), std::move(r.body)}};
      },
      [&]() -> Result<OpenedFile> {
        auto st = StatFromStore(*rp, deadline);
        if (!st) return Err(st.error());
        return OpenedFile{*rp, std::move(*st), std::string()};
      });
}

Result<OpenedFile> ClientImpl::OpenCached(std::string_view path, uint64_t prefetch) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  const std::string& ns = rp->ns_path;
  auto not_here = [&ns](std::string_view why) {
    return Err(Code::kUnavailable, "cached-only open of " + ns + ": " + std::string(why) + "; open it the usual way");
  };
  if (!config_.client.short_circuit) return not_here("the short circuit is off (client.short_circuit)");
  // Any holder of the path's metadata answers under the same consistency
  // rule; the first one on this host whose short circuit is known is asked.
  auto c = router_.For(HashRing::MetaKey(ns), ReplicasFor(*rp));
  for (const WorkerEntry* w : c.live) {
    if (!local_.IsLocal(w->address)) continue;
    auto o = local_.OpenCached(w->address, ns, prefetch);
    if (!o) return not_here("not cached on worker " + w->address);
    auto st = StatusFromJson(o->stat_json);
    if (!st) return not_here(st.error().message());
    // All of the asked bytes, checked, or none: a chunk that failed its check
    // is left to the usual open, which has the worker replace the page.
    if (st->is_dir || o->prefix.size() != std::min(prefetch, st->size)) return not_here("not all bytes cached");
    local_read_bytes_.fetch_add(o->prefix.size(), std::memory_order_relaxed);
    worker_read_bytes_.fetch_add(o->prefix.size(), std::memory_order_relaxed);
    return OpenedFile{*rp, std::move(*st), std::move(o->prefix)};
  }
  return not_here("no worker on this host holds it");
}

std::vector<FileStatus> ClientImpl::PendingUnder(const ResolvedPath& rp, Deadline deadline) {
  std::vector<FileStatus> out;
  std::unordered_map<std::string, size_t> at;  // path -> index in out
  const std::string target = "/v1/list?path=" + PercentEncode(rp.ns_path, true) + "&pending_only=1";
  auto [ring, members] = router_.Members();
  for (const auto& m : members) {
    if (m.down) continue;
    // Best effort: a worker that fails adds nothing (and is marked down, so
    // the next listing does not wait for it); the directory owner's answer stands.
    auto r = CallWorker(*m.entry, "GET", target, deadline, rp.ns_path);
    if (!r.status.ok()) continue;
    Json answer = Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (!answer.is_object() || !answer.contains("entries") || !answer["entries"].is_array()) continue;
    for (const auto& e : answer["entries"]) {
      auto s = StatusFromJson(e.dump(-1, ' ', false, Json::error_handler_t::replace));
      if (!s) continue;
      auto [it, added] = at.emplace(s->path, out.size());
      if (added) {
        out.push_back(std::move(*s));
      } else if (FileStatus& same = out[it->second]; !s->is_dir && (same.is_dir || s->mtime_ns > same.mtime_ns)) {
        same = std::move(*s);  // two holders of two pending writes: the newer is the file
      }
    }
  }
  return out;
}

Result<std::vector<FileStatus>> ClientImpl::List(std::string_view path) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  const Deadline deadline = NewDeadline();
  auto listed = ListFromOwner(*rp, deadline);
  // Write-back: the directory's owner holds only some of the pending writes
  // under it (those whose holders it is), and the directories that only
  // pending writes make exist nowhere else yet.
  if (WriteModeFor(*rp) != WriteMode::kWriteBack || (!listed && listed.error().code() != Code::kNotFound)) {
    return listed;
  }
  auto pending = PendingUnder(*rp, deadline);
  if (!listed && pending.empty()) return listed;
  std::vector<FileStatus> out = listed ? std::move(*listed) : std::vector<FileStatus>{};
  std::unordered_map<std::string, size_t> at;  // path -> index in out
  for (size_t i = 0; i < out.size(); ++i) at.emplace(out[i].path, i);
  for (auto& p : pending) {
    auto it = at.find(p.path);
    if (it == at.end()) {
      out.push_back(std::move(p));
    } else if (FileStatus& same = out[it->second]; !p.is_dir && !same.is_dir && !same.version.starts_with("wb-")) {
      same = std::move(p);  // the store's older file, which a pending write replaces
    }
  }
  SortByPath(&out);
  return out;
}

Result<std::vector<FileStatus>> ClientImpl::ListFromOwner(const ResolvedPath& resolved, Deadline deadline) {
  const ResolvedPath* rp = &resolved;
  const std::string target = "/v1/list?path=" + PercentEncode(rp->ns_path, true);
  return router_.Route<std::vector<FileStatus>>(
      HashRing::MetaKey(rp->ns_path), deadline, "list " + rp->ns_path,
      [&](const WorkerEntry& w) -> WorkerAttempt<std::vector<FileStatus>> {
        auto r = caller_.Call(w, "GET", target, deadline, rp->ns_path);
        if (r.worker_failed) return WorkerFailed<std::vector<FileStatus>>(r.status);
        if (!r.status.ok()) return {Err(r.status)};
        std::vector<FileStatus> out;
        try {
          Json answer = Json::parse(r.body);  // named: a range-for over a temporary's member dangles
          for (const auto& e : answer.at("entries")) {
            auto s = StatusFromJson(e.dump());
            if (!s) return WorkerFailed<std::vector<FileStatus>>(s.error());
            out.push_back(std::move(*s));
          }
        } catch (const std::exception& e) {
          return WorkerFailed<std::vector<FileStatus>>(
              Status(Code::kIo, "malformed list answer from worker " + w.address + ": " + e.what()));
        }
        SortByPath(&out);
        return {std::move(out)};
      },
      [&] { return ListFromStore(*rp, deadline); });
}

Result<CallerIdentity> ClientImpl::WhoAmI() {
  const Deadline deadline = NewDeadline();
  auto [ring, members] = router_.Members();
  Status last(Code::kUnavailable, "no worker is up to ask (shoal status shows them)");
  for (const auto& m : members) {
    if (m.down) continue;
    auto r = caller_.Call(*m.entry, "GET", "/v1/whoami", deadline, "who this client is");
    if (r.worker_failed) {
      router_.ReportFailure(*m.entry, r.status);
      last = r.status;
      continue;
    }
    if (!r.status.ok()) return Err(r.status);
    try {
      auto j = Json::parse(r.body);
      CallerIdentity id;
      id.user = j.at("user").get<std::string>();
      id.groups = j.at("groups").get<std::vector<std::string>>();
      id.proof = j.at("proof").get<std::string>();
      id.via = j.value("via", std::string());
      id.may_act_for_others = j.value("may_act_for_others", false);
      return id;
    } catch (const std::exception& e) {
      return Err(Code::kIo, "worker " + WorkerName(*m.entry) + " answered /v1/whoami with malformed JSON: " + e.what());
    }
  }
  return Err(last);
}

Result<std::string> ClientImpl::PolicyCheck(std::string_view user, const std::vector<std::string>& groups,
                                            std::string_view path, std::string_view access) {
  std::string joined;
  for (const auto& g : groups) joined += (joined.empty() ? "" : ",") + g;
  const std::string target = "/v1/policy/check?user=" + PercentEncode(user, false) +
                             "&groups=" + PercentEncode(joined, false) + "&path=" + PercentEncode(path, true) +
                             "&access=" + PercentEncode(access, false);
  const Deadline deadline = NewDeadline();
  auto [ring, members] = router_.Members();
  Status last(Code::kUnavailable, "no worker is up to ask (shoal status shows them)");
  for (const auto& m : members) {
    if (m.down) continue;
    auto r = caller_.Call(*m.entry, "GET", target, deadline, path);
    if (r.worker_failed) {
      router_.ReportFailure(*m.entry, r.status);
      last = r.status;
      continue;
    }
    if (!r.status.ok()) return Err(r.status);
    return std::move(r.body);
  }
  return Err(last);
}

Status ClientImpl::Refresh(std::string_view path, bool recursive, bool data) {
  std::string ns;
  if (auto rp = mounts_.Resolve(path)) {
    ns = rp->ns_path;
  } else {
    auto n = MountTable::NormalisePath(path);
    if (!n) return n.error();
    ns = *n;
  }
  const Deadline deadline = NewDeadline();
  const std::string target = "/v1/refresh?path=" + PercentEncode(ns, true) + (recursive ? "&recursive=1" : "") +
                             (data ? "&data=1" : "");
  auto [ring, members] = router_.Members();
  std::vector<std::future<std::string>> results;  // per member: "" or why it was not reached
  for (const auto& m : members) {
    if (m.down) {
      std::promise<std::string> p;
      p.set_value(WorkerName(*m.entry) + " (down: " + m.down->message() + ")");
      results.push_back(p.get_future());
      continue;
    }
    results.push_back(fanout_pool_.Submit([this, w = m.entry, &target, &ns, deadline]() -> std::string {
      auto r = caller_.Call(*w, "POST", target, deadline, ns);
      if (r.worker_failed) router_.ReportFailure(*w, r.status);
      return r.status.ok() ? std::string() : WorkerName(*w) + " (" + r.status.message() + ")";
    }));
  }
  std::string list;
  size_t failed = 0;
  for (auto& f : results) {
    std::string why = f.get();
    if (why.empty()) continue;
    ++failed;
    list += (list.empty() ? "" : ", ") + why;
  }
  if (failed) {
    return Status(Code::kUnavailable, "refresh of " + ns + " did not reach " + std::to_string(failed) + " of " +
                                          std::to_string(members.size()) + " workers: " + list +
                                          "; they revalidate by their mount's rule, or run the refresh again");
  }
  return {};
}

void ClientImpl::AfterMutation(const ResolvedPath& rp, bool subtree) {
  // The path and each directory above it, up to the mount's root: a write
  // changes the listing of its parent and can create (or, on object stores,
  // remove) the directories above.
  std::vector<std::string> paths;
  const std::string& root = rp.mount->path;
  for (std::string p = rp.ns_path;;) {
    paths.push_back(p);
    if (p.size() <= root.size() || p == "/") break;
    size_t slash = p.rfind('/');
    p = slash == 0 ? "/" : p.substr(0, slash);
  }
  const Deadline deadline = NewDeadline();
  std::vector<std::future<std::string>> results;  // per path: "" or why its owner was not told
  for (auto& path : paths) {
    results.push_back(fanout_pool_.Submit([this, path, deadline]() -> std::string {
      const std::string target = "/v1/refresh?path=" + PercentEncode(path, true);
      std::string failed;
      (void)router_.Route<void>(
          HashRing::MetaKey(path), deadline, "refresh " + path,
          [&](const WorkerEntry& w) -> WorkerAttempt<void> {
            auto r = caller_.Call(w, "POST", target, deadline, path);
            if (!r.status.ok()) failed = WorkerName(w) + ": " + r.status.message();
            if (r.worker_failed) return WorkerFailed<void>(r.status);
            return {};
          },
          [] { return Result<void>(); });  // no live owner: readers go to the store, which has the change
      return failed;
    }));
  }
  std::string failed;
  for (auto& f : results) {
    std::string why = f.get();
    if (!why.empty()) failed += (failed.empty() ? "" : "; ") + why;
  }
  if (subtree) {
    if (Status st = Refresh(rp.ns_path, /*recursive=*/true, /*data=*/false); !st.ok()) {
      failed += (failed.empty() ? "" : "; ") + st.message();
    }
  }
  if (!failed.empty()) {
    spdlog::warn(
        "{} changed in the under-store, but cached metadata of it could not be dropped everywhere ({}); "
        "other clients may see the old state until their mount's ttl, or `shoal refresh {}`",
        rp.ns_path, failed, rp.ns_path);
  }
}

std::vector<WorkerStatus> ClientImpl::ClusterStatus(std::vector<std::string>* bodies) {
  const Deadline deadline = NewDeadline();
  auto [ring, members] = router_.Members();
  std::vector<std::future<std::pair<WorkerStatus, std::string>>> results;
  for (const auto& m : members) {
    if (m.down) {  // being probed; asking it again would only wait for it
      WorkerStatus s;
      s.address = m.entry->address;
      s.id = m.entry->id;
      s.error = "down: " + m.down->message();
      std::promise<std::pair<WorkerStatus, std::string>> p;
      p.set_value({std::move(s), std::string()});
      results.push_back(p.get_future());
      continue;
    }
    results.push_back(fanout_pool_.Submit([this, w = m.entry, deadline] {
      WorkerStatus s;
      s.address = w->address;
      s.id = w->id;
      auto r = caller_.Call(*w, "GET", "/v1/status", deadline, "its status");
      if (r.worker_failed) router_.ReportFailure(*w, r.status);
      if (!r.status.ok()) {
        s.error = r.status.message();
        return std::pair{std::move(s), std::string()};
      }
      try {
        auto j = Json::parse(r.body);
        s.up = true;
        s.cache_used_bytes = j.at("cache_used_bytes").get<uint64_t>();
        s.cache_capacity_bytes = j.at("cache_capacity_bytes").get<uint64_t>();
        s.cache_effective_capacity_bytes = j.value("cache_effective_capacity_bytes", s.cache_capacity_bytes);
        s.hit_bytes = j.at("hit_bytes").get<uint64_t>();
        s.miss_bytes = j.at("miss_bytes").get<uint64_t>();
        s.ufs_read_bytes = j.at("ufs_read_bytes").get<uint64_t>();
        s.write_back_pending_bytes = j.value("write_back_pending_bytes", uint64_t{0});
        s.write_back_pending_files = j.value("write_back_pending_files", uint64_t{0});
        s.write_back_oldest_pending_seconds = j.value("write_back_oldest_pending_seconds", 0.0);
        s.tls = j.value("tls", false);
        s.tls_not_after = j.value("tls_not_after", int64_t{0});
        s.hot_spread_reads = j.value("hot_spread_reads", uint64_t{0});
        for (const auto& d : j.value("cache_dirs", Json::array())) {
          s.cache_dirs.push_back({d.value("path", ""), d.value("used_bytes", uint64_t{0}),
                                  d.value("capacity_bytes", uint64_t{0}),
                                  d.value("effective_capacity_bytes", uint64_t{0})});
        }
        for (const auto& e : j.value("recent_errors", Json::array())) s.recent_errors.push_back(e.value("text", ""));
        s.errors_total = j.value("errors_total", uint64_t{0});
        for (const auto& c : j.value("credentials", Json::array())) {
          s.credentials.push_back(
              c.value("mount", "") + ": " + c.value("provider", "") + " (" + c.value("detail", "") + "), expires " +
              c.value("expires", "") + "; " + std::to_string(c.value("refreshes", uint64_t{0})) + " refreshes, " +
              std::to_string(c.value("failures", uint64_t{0})) + " failures" +
              (c.value("last_error", "").empty() ? "" : "; last error: " + c.value("last_error", "")));
        }
        for (const auto& h : j.value("hot_shards", Json::array())) {
          s.hot_shards.push_back(h.value("path", "") + " shard " + std::to_string(h.value("shard", uint64_t{0})) + " (" +
                                 std::to_string(static_cast<uint64_t>(h.value("rps", 0.0))) + " reads/s)");
        }
      } catch (const std::exception& e) {
        s.up = false;
        s.error = std::string("malformed status: ") + e.what();
      }
      return std::pair{std::move(s), std::move(r.body)};
    }));
  }
  std::vector<WorkerStatus> out;
  for (auto& f : results) {
    auto [status, body] = f.get();
    out.push_back(std::move(status));
    if (bodies) bodies->push_back(std::move(body));
  }
  return out;
}

ClientStats ClientImpl::stats() const {
  return {worker_read_bytes_.load(),   fallback_read_bytes_.load(), caller_.failures(),
          local_read_bytes_.load(),    local_.corrupt_reads(),      cache_pushed_bytes_.load(),
          cache_push_failures_.load(), write_backs_.load(),         write_back_fallbacks_.load(),
          limiter_.throttled_waits(),  limiter_.rejected(),         spread_reads_.load(),
          local_.file_bytes()};
}

void ClientImpl::ForgetMetadata(const std::string& ns_path, Deadline deadline) {
  const std::string target = "/v1/refresh?path=" + PercentEncode(ns_path, true);
  // Best effort: the metadata revalidates by its mount's rule anyway.
  (void)router_.Route<void>(
      HashRing::MetaKey(ns_path), deadline, "refresh " + ns_path,
      [&](const WorkerEntry& w) -> WorkerAttempt<void> {
        auto r = caller_.Call(w, "POST", target, deadline, ns_path);
        if (r.worker_failed) return WorkerFailed<void>(r.status);
        return {};
      },
      [] { return Result<void>(); });
}

Status ClientImpl::DiscoverLocal(const WorkerEntry& worker, Deadline deadline) {
  if (!local_.ClaimDiscovery(worker.address)) {
    local_.AwaitDiscovery(worker.address, std::min(deadline, std::chrono::steady_clock::now() + kAwaitDiscovery));
    return {};
  }
  std::string socket, token;
  auto r = caller_.Call(worker, "GET", "/v1/status", deadline, "its status");
  if (r.status.ok()) {
    try {
      auto j = Json::parse(r.body);
      socket = j.value("local_socket", "");
      token = j.value("local_token", "");
    } catch (const std::exception&) {
    }
  }
  local_.Discovered(worker.address, socket, token);
  return r.worker_failed ? r.status : Status();
}

Status ClientImpl::ReadPiece(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                             Deadline deadline) {
  if (st.version.starts_with("wb-")) return ReadPending(rp, st, offset, out, deadline);
  const uint64_t shard = offset / config_.cluster.shard_size;
  const std::string ring_key = HashRing::DataKey(rp.ns_path, st.version, shard);
  const size_t replicas = ReplicasFor(rp);
  const Router::RouteKey key = ReadKey(ring_key, replicas, out.size());
  auto r = router_.Route<void>(
      key, deadline, "read " + rp.ns_path,
      [&](const WorkerEntry& w) -> WorkerAttempt<void> {
        uint64_t off = offset;
        std::span<char> rest = out;
        if (config_.client.short_circuit) {
          if (Status d = DiscoverLocal(w, deadline); !d.ok()) return WorkerFailed<void>(d);
          auto started = std::chrono::steady_clock::now();
          uint64_t n = local_.Read(w.address, rp.ns_path, st.version, st.size, off, rest);
          local_read_bytes_.fetch_add(n, std::memory_order_relaxed);
          worker_read_bytes_.fetch_add(n, std::memory_order_relaxed);
          if (n == rest.size()) return {};
          // A short-circuit read is answered from the worker's page index and
          // never waits on the under-store: a worker silent for the whole
          // response timeout here is hung unless it shows it is alive (slow,
          // on a loaded machine: then the rest goes over TCP); asking a hung
          // one again over TCP would only wait as long once more.
          if (n == 0 && std::chrono::steady_clock::now() - started >= config_.client.response_timeout &&
              !caller_.Alive(w, started)) {
            return WorkerFailed<void>(Status(Code::kUnavailable,
                                             "worker " + w.address + " did not answer a short-circuit read for " +
                                                 FormatDuration(config_.client.response_timeout) +
                                                 " (client.response_timeout): taken as hung"));
          }
          off += n;
          rest = rest.subspan(n);
        }
        auto r = caller_.Call(w, "GET", ReadTarget(rp, st, off, rest.size()) + SpreadParam(key, replicas, w), deadline,
                              rp.ns_path, rest);
        if (r.worker_failed) return WorkerFailed<void>(r.status);
        NoteHeat(ring_key, w, r.hot);
        if (r.status.ok()) {
          worker_read_bytes_.fetch_add(rest.size(), std::memory_order_relaxed);
          return {};
        }
        if (r.status.code() == Code::kVersionMismatch) {
          // The metadata owner may still hold the old version: make the next open revalidate.
          ForgetMetadata(rp.ns_path, deadline);
          return {Err(Code::kVersionMismatch, rp.ns_path + " changed in the under-store since it was opened; open it again")};
        }
        return {Err(r.status)};
      },
      [&]() -> Result<void> {
        Status s = ReadFromStore(rp, st, offset, out, deadline);
        if (!s.ok()) return Err(s);
        return {};
      });
  return r ? Status() : r.error();
}

std::vector<LocalPage> ClientImpl::LocalPages(const ResolvedPath& rp, const FileStatus& st, uint64_t offset,
                                              uint64_t length) {
  if (!config_.client.short_circuit || st.version.empty() || st.version.starts_with("wb-") || offset >= st.size) {
    return {};
  }
  const uint64_t shard = config_.cluster.shard_size;
  length = std::min({length, st.size - offset, (offset / shard + 1) * shard - offset});
  auto c = router_.For(HashRing::DataKey(rp.ns_path, st.version, offset / shard), ReplicasFor(rp));
  if (c.live.empty() || !local_.IsLocal(c.live.front()->address)) return {};
  auto pages = local_.Pages(c.live.front()->address, rp.ns_path, st.version, st.size, offset, length);
  uint64_t n = 0;
  for (const auto& p : pages) n += p.length;
  local_read_bytes_.fetch_add(n, std::memory_order_relaxed);
  worker_read_bytes_.fetch_add(n, std::memory_order_relaxed);
  return pages;
}

Result<uint64_t> ClientImpl::ReadLocal(const ResolvedPath& rp, const FileStatus& st, uint64_t offset,
                                       std::span<char> out, Deadline deadline) {
  const std::string ring_key = HashRing::DataKey(rp.ns_path, st.version, offset / config_.cluster.shard_size);
  const size_t replicas = ReplicasFor(rp);
  return router_.Route<uint64_t>(
      ReadKey(ring_key, replicas, out.size()), deadline, "read " + rp.ns_path,
      [&](const WorkerEntry& w) -> WorkerAttempt<uint64_t> {
        if (!local_.IsLocal(w.address)) return {uint64_t{0}};  // ReadPiece discovers it
        const auto started = std::chrono::steady_clock::now();
        const uint64_t n = local_.Read(w.address, rp.ns_path, st.version, st.size, offset, out);
        local_read_bytes_.fetch_add(n, std::memory_order_relaxed);
        worker_read_bytes_.fetch_add(n, std::memory_order_relaxed);
        // As in ReadPiece: a worker silent for the whole response timeout is
        // hung unless it shows it is alive, and is not asked again over TCP.
        if (n == 0 && std::chrono::steady_clock::now() - started >= config_.client.response_timeout &&
            !caller_.Alive(w, started)) {
          return WorkerFailed<uint64_t>(Status(Code::kUnavailable, "worker " + w.address +
                                                                       " did not answer a short-circuit read for " +
                                                                       FormatDuration(config_.client.response_timeout) +
                                                                       " (client.response_timeout): taken as hung"));
        }
        return {n};
      },
      // No worker answered: the pieces read it (from the under-store, if that is allowed).
      [] { return Result<uint64_t>(uint64_t{0}); });
}

Status ClientImpl::ReadRange(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                             bool parallel) {
  const Deadline deadline = NewDeadline();
  // Pieces end at shard boundaries (each shard has its own owner) and at kPieceBytes.
  struct Piece {
    uint64_t offset;
    std::span<char> out;
  };
  std::vector<Piece> pieces;
  uint64_t shard = config_.cluster.shard_size;
  // A shard's worker on this host is asked first, on this thread, for the
  // whole part of the range in its shard: warm pages cost one exchange (or
  // none, for pages it leased before) and no hand-off to the pool. What it
  // does not serve is cut into pieces as below, which go over TCP in parallel.
  const bool pending = st.version.starts_with("wb-");
  const bool local_first = config_.client.short_circuit && !pending;
  // A pending write-back version's holder on this host serves the whole
  // range in one exchange (its data file); what it does not is read in pieces.
  for (uint64_t pos = pending ? ReadPendingLocal(rp, st, offset, out, deadline) : 0; pos < out.size();) {
    uint64_t off = offset + pos;
    const uint64_t shard_end = (off / shard + 1) * shard;
    if (local_first) {
      auto n = ReadLocal(rp, st, off, out.subspan(pos, std::min(out.size() - pos, shard_end - off)), deadline);
      if (!n) return n.error();
      pos += *n;
      off += *n;
      if (pos == out.size() || off == shard_end) continue;
    }
    for (const uint64_t part_end = std::min(out.size(), pos + (shard_end - off)); pos < part_end;) {
      const uint64_t len = std::min(part_end - pos, kPieceBytes);
      pieces.push_back({offset + pos, out.subspan(pos, len)});
      pos += len;
    }
  }
  if (pieces.empty()) return {};
  if (!parallel || pieces.size() == 1) {
    for (auto& p : pieces) SHOAL_RETURN_IF_ERROR(ReadPiece(rp, st, p.offset, p.out, deadline));
    return {};
  }
  std::vector<std::future<Status>> futures;
  for (auto& p : pieces) {
    futures.push_back(fanout_pool_.Submit([&, p] { return ReadPiece(rp, st, p.offset, p.out, deadline); }));
  }
  Status first;
  for (auto& f : futures) {  // every piece writes into `out`: wait for all of them
    auto s = f.get();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace detail

// --- Client ---

Client::Client(std::unique_ptr<detail::ClientImpl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Open(const std::string& config_path) { return Open(config_path, ""); }

Result<std::unique_ptr<Client>> Client::Open(const std::string& config_path, const std::string& token) {
  UseLibraryLoggerOnce();  // stderr, not spdlog's stdout (include/shoal/log.h)
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
  auto m = OpenMembership(*c);
  if (!m) return Err(m.error().WithContext(path));
  // Kept while the client is made: its TLS context (WorkerCaller::OptionsFor
  // shares one per CA while one is alive) is then built once, not twice (the
  // first costs OpenSSL's start, a few ms of a short command's first read).
  const auto checked = detail::ClientCallerOptions(*c, token);
  if (!checked.setup_error.ok()) return Err(checked.setup_error.WithContext(path));
  auto impl = std::make_unique<detail::ClientImpl>(std::move(*c), std::move(*m), token);
  // With etcd, the mounts published there join the config's (meta/etcd_mounts.h).
  if (auto added = impl->mounts().Reload(); !added) return Err(added.error().WithContext(path));
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Result<std::unique_ptr<Client>> Client::FromYaml(const std::string& yaml, const std::string& source) {
  UseLibraryLoggerOnce();
  auto c = ParseConfig(yaml, source);
  if (!c) return Err(c.error());
  auto m = OpenMembership(*c);
  if (!m) return Err(m.error().WithContext(source));
  const auto checked = detail::ClientCallerOptions(*c);  // kept: see Open
  if (!checked.setup_error.ok()) return Err(checked.setup_error.WithContext(source));
  auto impl = std::make_unique<detail::ClientImpl>(std::move(*c), std::move(*m));
  if (auto added = impl->mounts().Reload(); !added) return Err(added.error().WithContext(source));
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Result<FileStatus> Client::Stat(std::string_view path) { return impl_->Stat(path); }
Result<std::vector<FileStatus>> Client::List(std::string_view path) { return impl_->List(path); }
Status Client::Refresh(std::string_view path, bool recursive, bool data) { return impl_->Refresh(path, recursive, data); }
Result<std::unique_ptr<Writer>> Client::Create(std::string_view path, const CreateOptions& options) {
  return impl_->Create(path, options);
}
Status Client::Delete(std::string_view path) { return impl_->Delete(path); }
Status Client::Mkdir(std::string_view path) { return impl_->Mkdir(path); }
Status Client::Rmdir(std::string_view path) { return impl_->Rmdir(path); }
Status Client::Rename(std::string_view from, std::string_view to) { return impl_->Rename(from, to); }
Status Client::SetAttributes(std::string_view path, std::optional<uint32_t> mode, std::optional<int64_t> mtime_ns,
                             std::optional<uint32_t> uid, std::optional<uint32_t> gid) {
  return impl_->SetAttributes(path, mode, mtime_ns, uid, gid);
}
std::vector<WorkerStatus> Client::ClusterStatus() { return ClusterStatusWithBodies(*this, nullptr); }

Result<CallerIdentity> Client::WhoAmI() { return impl_->WhoAmI(); }
Result<std::string> Client::PolicyCheck(std::string_view user, const std::vector<std::string>& groups,
                                        std::string_view path, std::string_view access) {
  return impl_->PolicyCheck(user, groups, path, access);
}
bool Client::presents_credential() const { return impl_->presents_credential(); }

RingInfo Client::Ring() const {
  const Router& router = impl_->router();
  auto [snap, members] = router.Members();
  RingInfo r;
  r.membership = std::string(router.membership().Kind());
  r.version = snap->version;
  auto shares = snap->ring.Shares();
  for (size_t i = 0; i < snap->workers.size(); ++i) {
    r.members.push_back({snap->workers[i].id, snap->workers[i].address, i < snap->weights.size() ? snap->weights[i] : 0,
                         shares[i]});
  }
  return r;
}

Result<RingMember> Client::OwnerOf(const FileStatus& status, uint64_t offset) const {
  const uint64_t shard = offset / impl_->config().cluster.shard_size;
  auto c = impl_->router().For(HashRing::DataKey(status.path, status.version, shard));
  if (c.live.empty()) return Err(Code::kUnavailable, "no live worker serves " + status.path);
  RingMember m;
  m.id = c.live.front()->id;
  m.address = c.live.front()->address;
  return m;
}
ClientStats Client::stats() const { return impl_->stats(); }

std::vector<MountInfo> Client::Mounts() const {
  std::vector<MountInfo> out;
  for (const auto& m : impl_->mounts().Current()->mounts()) {
    MountInfo i;
    i.path = m.path;
    i.ufs = m.ufs;
    i.consistency = m.consistency == Consistency::kTtl ? "ttl=" + FormatDuration(m.ttl)
                                                        : std::string(ConsistencyName(m.consistency));
    i.read_only = m.read_only;
    i.stat_each_listed = KeepsPosixMetadata(m);
    out.push_back(std::move(i));
  }
  return out;
}

Result<ObjectMetadata> ReadObjectMetadata(Client& client, std::string_view path, std::string_view version) {
  return detail::ClientAccess::Impl(client).MetadataOf(path, version);
}

bool WrittenBack(Client& client, std::string_view path) {
  auto& impl = detail::ClientAccess::Impl(client);
  auto rp = impl.mounts().Resolve(path);
  return rp && impl.WriteModeFor(*rp) == WriteMode::kWriteBack;
}

}  // namespace shoal
