// PeerFetch: a worker's miss asks other workers' caches before the under-store.
//
// Two cases move a shard to a worker that does not hold it: the ring changed
// (a worker joined, or came back under a new ring, and now owns shards that
// another live worker cached), or the shard is replicated (`replicas: N`) and
// this holder has not seen it yet. Either way another worker may have the
// bytes on its disk, and reading them over the LAN costs no egress.
//
// On a miss of [start, end) of a file version (one fetch, one shard), Fetch()
// asks the shard's previous holders (RingHistory: its owner in each earlier
// ring this worker saw, then the next workers on the current ring) with a
// cache-only read (GET /v1/read?...&cache_only=1, docs/protocol.md): the peer
// answers from its cache or says "not cached", and never reads its store.
// Bounded: at most kMaxPeers peers, one attempt each, each within
// kAttemptTimeout; a peer that failed is skipped for kSkipFailed. What no peer
// has comes from the store as before.
//
// After a fetch from the store, Replicate() pushes the fetched pages to the
// shard's other holders when its path rule says `replicas: N` (POST /v1/page,
// the page push cache-through writers use, which checks the version), so a
// replica can serve the data when the first holder dies and the store is
// unreachable.
//
// The same holds for metadata: a worker that must stat a path it has no
// fresh entry for, when MayHold, first asks the path's metadata owners under
// the earlier rings (and its other holders) for their cached stat with a
// cache-only stat (GET /v1/stat?...&cache_only=1, peer_stat.h), which carries
// the entry's age; Stat() returns the first fresh, well-formed answer the
// caller keeps with its original time (MetadataCache::InsertAgedStat), so the
// mount's ttl never restarts. Same bounds as for pages, kMetaAttemptTimeout
// per peer; a peer that garbles its answer is skipped like a failed one.
//
// Metrics: shoal_peer_meta_hits_total (a stat taken from a peer),
// shoal_peer_meta_misses_total (no peer had a fresh one, or it was refused),
// shoal_peer_fetch_bytes_total, shoal_peer_fetch_misses_total (a
// peer had no copy), shoal_peer_fetch_errors_total (a peer failed),
// shoal_replica_push_bytes_total, shoal_replica_push_failures_total.
//
// Thread safety: all methods are safe from any thread; they block (call them
// from the worker's under-store executor).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cluster/ring_history.h"
#include "common/config.h"
#include "common/path_rules.h"
#include "meta/metadata_cache.h"
#include "meta/mount_table.h"

namespace shoal {

class Counter;
class WorkerCaller;
struct FileRef;

class PeerFetch {
 public:
  static constexpr size_t kMaxPeers = 2;
  static constexpr std::chrono::milliseconds kAttemptTimeout{5'000};
  static constexpr std::chrono::milliseconds kSkipFailed{10'000};
  // A cache-only stat is a lookup: a live peer answers at once.
  static constexpr std::chrono::milliseconds kMetaAttemptTimeout{2'000};

  // `self` is this worker's id on the ring.
  PeerFetch(const Config& config, std::shared_ptr<const Membership> membership, std::string self);
  ~PeerFetch();

  // The bytes [start, end) of `file` from a peer's cache (exactly end - start
  // of them), or nullopt when no peer had them all.
  std::optional<std::string> Fetch(const FileRef& file, uint64_t start, uint64_t end);

  // The cached stat of `p` from a peer (see above), or nullopt when no peer
  // had a fresh, well-formed one that `keep` took. `keep` gets each answer
  // with its age counted from when it was asked, and says whether the caller
  // kept it (false: too old for the mount's rule, or invalidated since).
  std::optional<FileInfo> Stat(const ResolvedPath& p, const std::function<bool(const MetadataCache::AgedStat&)>& keep);

  // Pushes the pages of `bytes` (file offset `start`, page-aligned) to the
  // shard's other holders when the path is replicated. Best effort.
  void Replicate(const FileRef& file, uint64_t start, const std::string& bytes);

  // Whether another worker may hold pages of `ns_path` that this one lacks:
  // the ring changed while this worker ran, the path is replicated, or this
  // worker is not the owner of its metadata (and first shard).
  bool MayHold(const std::string& ns_path);

  // How many workers hold `ns_path`'s data (its rule's replicas, else 1).
  size_t Replicas(const std::string& ns_path) const;

  // The first owner of `ring_key` on the current ring (nullopt: no ring yet).
  std::optional<WorkerEntry> Owner(const std::string& ring_key);

 private:
  std::string RingKey(const FileRef& file, uint64_t offset) const;
  bool Skipped(const std::string& id);
  void NoteFailed(const WorkerEntry& w, const std::string& why);

  const Config& config_;
  std::string self_;
  PathRules rules_;
  RingHistory history_;
  std::unique_ptr<WorkerCaller> caller_;
  std::shared_ptr<const Membership> membership_;

  std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> skip_until_;  // peer id -> when to try again

  Counter* fetched_bytes_;
  Counter* misses_;
  Counter* errors_;
  Counter* pushed_bytes_;
  Counter* push_failures_;
  Counter* meta_hits_;
  Counter* meta_misses_;
};

}  // namespace shoal
