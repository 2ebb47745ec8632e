#include "worker/peer_fetch.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "client/worker_caller.h"
#include "cluster/hash_ring.h"
#include "common/metrics.h"
#include "ufs/uri.h"
#include "worker/peer_stat.h"
#include "worker/worker_service.h"

namespace shoal {

namespace {
using Clock = std::chrono::steady_clock;
}

PeerFetch::PeerFetch(const Config& config, std::shared_ptr<const Membership> membership, std::string self)
    : config_(config),
      self_(std::move(self)),
      rules_(PathRules::Make(config.rules).value_or(PathRules())),
      history_(membership),
      caller_(std::make_unique<WorkerCaller>([&config] {
        auto o = WorkerCaller::OptionsFor(config);
        o.connect_timeout = std::chrono::milliseconds(500);
        return o;
      }())),
      membership_(std::move(membership)) {
  auto& m = MetricsRegistry::Global();
  fetched_bytes_ = &m.GetCounter("shoal_peer_fetch_bytes_total", "Bytes a miss read from another worker's cache");
  misses_ = &m.GetCounter("shoal_peer_fetch_misses_total", "Cache-only peer reads the peer could not answer");
  errors_ = &m.GetCounter("shoal_peer_fetch_errors_total", "Cache-only peer reads that failed (peer unreachable)");
  pushed_bytes_ =
      &m.GetCounter("shoal_replica_push_bytes_total", "Bytes pushed to the other holders of replicated paths");
  push_failures_ = &m.GetCounter("shoal_replica_push_failures_total", "Pages that could not be pushed to a replica");
  meta_hits_ = &m.GetCounter("shoal_peer_meta_hits_total", "Stats taken from another worker's cached metadata");
  meta_misses_ = &m.GetCounter("shoal_peer_meta_misses_total",
                               "Stats no peer could answer from its cache (or too old to take): asked the store");
}

PeerFetch::~PeerFetch() = default;

std::string PeerFetch::RingKey(const FileRef& file, uint64_t offset) const {
  return HashRing::DataKey(file.resolved.ns_path, file.version, offset / config_.cluster.shard_size);
}

size_t PeerFetch::Replicas(const std::string& ns_path) const {
  return static_cast<size_t>(std::max(1, rules_.For(ns_path).replicas.value_or(1)));
}

bool PeerFetch::MayHold(const std::string& ns_path) {
  auto ring = history_.Observe();
  // Not (yet) a member: this worker is joining, and its ring is about to change.
  bool joining = !ring->workers.empty() && std::none_of(ring->workers.begin(), ring->workers.end(),
                                                        [&](const WorkerEntry& w) { return w.id == self_; });
  // Not the path's owner: a reader sent it here while the owner holds the
  // first page (a hot shard spread to its next owner, or a failover).
  const bool owner = joining || ring->ring.empty() || ring->workers[ring->ring.Owner(HashRing::MetaKey(ns_path))].id == self_;
  return joining || history_.kept() > 1 || Replicas(ns_path) > 1 || !owner;
}

bool PeerFetch::Skipped(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = skip_until_.find(id);
  if (it == skip_until_.end()) return false;
  if (Clock::now() < it->second) return true;
  skip_until_.erase(it);
  return false;
}

void PeerFetch::NoteFailed(const WorkerEntry& w, const std::string& why) {
  errors_->Add();
  std::lock_guard lock(mu_);
  if (skip_until_.size() > 10'000) skip_until_.clear();  // a bound, not a policy
  bool fresh = skip_until_.find(w.id) == skip_until_.end();
  skip_until_[w.id] = Clock::now() + kSkipFailed;
  if (fresh) spdlog::warn("peer fetch: worker {} failed ({}); not asked again for 10s", w.id, why);
}

std::optional<std::string> PeerFetch::Fetch(const FileRef& file, uint64_t start, uint64_t end) {
  if (end <= start) return std::nullopt;
  const std::string key = RingKey(file, start);
  if (key != RingKey(file, end - 1)) return std::nullopt;  // one shard per fetch
  const std::string& path = file.resolved.ns_path;
  const std::string target = "/v1/read?path=" + PercentEncode(path, true) +
                             "&version=" + PercentEncode(file.version, false) + "&size=" + std::to_string(file.size) +
                             "&offset=" + std::to_string(start) + "&length=" + std::to_string(end - start) +
                             "&cache_only=1";
  for (const WorkerEntry& w : history_.PreviousHolders(key, self_, Replicas(path), kMaxPeers)) {
    if (Skipped(w.id)) continue;
    std::string buf(end - start, '\0');
    auto r = caller_->Call(w, "GET", target, Clock::now() + kAttemptTimeout, path, std::span<char>(buf));
    if (r.status.ok()) {
      fetched_bytes_->Add(buf.size());
      return buf;
    }
    if (r.worker_failed) {
      NoteFailed(w, r.status.message());
    } else {
      misses_->Add();  // "not cached", or the peer refused the claims: either way not from it
    }
  }
  return std::nullopt;
}

std::optional<FileInfo> PeerFetch::Stat(const ResolvedPath& p,
                                        const std::function<bool(const MetadataCache::AgedStat&)>& keep) {
  const std::string target = "/v1/stat?path=" + PercentEncode(p.ns_path, true) + "&cache_only=1";
  const auto peers = history_.PreviousHolders(HashRing::MetaKey(p.ns_path), self_, Replicas(p.ns_path), kMaxPeers);
  for (const WorkerEntry& w : peers) {
    if (Skipped(w.id)) continue;
    const auto asked = Clock::now();
    auto r = caller_->Call(w, "GET", target, asked + kMetaAttemptTimeout, p.ns_path);
    if (r.worker_failed) {
      NoteFailed(w, r.status.message());
      continue;
    }
    if (!r.status.ok()) continue;  // "not cached", or refused: either way not from it
    auto got = peer_stat::Decode(r.body, p.ns_path, p.key);
    if (!got) {
      NoteFailed(w, got.error().message());  // a worker that garbles answers is not asked for a while
      continue;
    }
    // Counted from when it was asked: the peer looked it up later than that,
    // so the entry is at most this old, never younger than it seems.
    got->age += Clock::now() - asked;
    if (!keep(*got)) continue;  // too old for the mount's rule, or invalidated here since: maybe another is fresher
    meta_hits_->Add();
    return std::move(got->info);
  }
  meta_misses_->Add();
  return std::nullopt;
}

std::optional<WorkerEntry> PeerFetch::Owner(const std::string& ring_key) {
  auto ring = history_.Observe();
  if (ring->ring.empty()) return std::nullopt;
  auto owners = ring->ring.Owners(ring_key, 1);
  if (owners.empty()) return std::nullopt;
  return ring->workers[owners.front()];
}

void PeerFetch::Replicate(const FileRef& file, uint64_t start, const std::string& bytes) {
  const std::string& path = file.resolved.ns_path;
  const size_t n = Replicas(path);
  if (n < 2 || bytes.empty()) return;
  const std::string key = RingKey(file, start);
  auto ring = history_.Observe();
  if (ring->ring.empty()) return;
  std::vector<const WorkerEntry*> others;
  bool holder = false;
  for (size_t i : ring->ring.Owners(key, n)) {
    if (ring->workers[i].id == self_) {
      holder = true;
    } else {
      others.push_back(&ring->workers[i]);
    }
  }
  if (!holder) return;  // a reader routed here by an older ring: the holders fill themselves
  const uint64_t page = config_.worker.page_size;
  const auto deadline = Clock::now() + kAttemptTimeout;
  for (const WorkerEntry* w : others) {
    if (Skipped(w->id)) continue;
    for (uint64_t off = 0; off < bytes.size(); off += page) {
      const uint64_t len = std::min<uint64_t>(page, bytes.size() - off);
      const std::string target = "/v1/page?path=" + PercentEncode(path, true) +
                                 "&version=" + PercentEncode(file.version, false) +
                                 "&size=" + std::to_string(file.size) + "&offset=" + std::to_string(start + off);
      auto r = caller_->Call(*w, "POST", target, deadline, path, {}, std::string_view(bytes).substr(off, len));
      if (!r.status.ok()) {
        push_failures_->Add();
        if (r.worker_failed) {
          NoteFailed(*w, r.status.message());
          break;
        }
        continue;
      }
      pushed_bytes_->Add(len);
    }
  }
}

}  // namespace shoal
