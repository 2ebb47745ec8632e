// WorkerService: what a cache worker does, independent of the HTTP transport.
//
// It owns the page store, the metadata cache and one (accounted, capped)
// UnderStore per mount, and implements:
//   - Stat / List through the metadata cache under each mount's consistency mode;
//   - the read path: a byte range of one file version is planned as pages;
//     cached pages are handed out as PageRefs (served with sendfile), adjacent
//     missing pages are fetched from the UFS in one ranged read, concurrent
//     misses on one page share one fetch (single-flight), and sequential
//     readers trigger read-ahead;
//   - Refresh: dropping cached metadata (and pages) under a path.
//
// Blocking work (UFS calls, disk writes) runs on the `ufs_executor` given at
// construction; callers are notified through Fetch::OnDone.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "cache/page_store.h"
#include "common/config.h"
#include "common/end_user.h"
#include "common/shared_epoch.h"
#include "common/single_flight.h"
#include "meta/live_mount_table.h"
#include "meta/metadata_cache.h"
#include "ufs/under_store.h"
#include "worker/fresh_bytes.h"
#include "worker/rules_route.h"

namespace shoal {

class Counter;
class Histogram;
class IdleWriter;
class PeerFetch;  // worker/peer_fetch.h
struct PagePush;  // worker/page_put.h

// One ranged read from the UFS covering one or more adjacent pages.
class Fetch {
 public:
  Fetch(uint64_t start, uint64_t end) : start_(start), end_(end) {}
  uint64_t start() const { return start_; }
  uint64_t end() const { return end_; }

  // Runs `cb` once the fetch has finished (at once if it already has), on the
  // finishing thread: keep it short (post to your executor).
  void OnDone(std::function<void()> cb);
  // REQUIRES: done. The bytes [start, end), or why they could not be read.
  const Result<std::string>& result() const { return result_; }
  // Whether Finish has run (result() may be read).
  bool done() const {
    std::lock_guard lock(mu_);
    return done_;
  }

  void Finish(Result<std::string> r);

  // Held while the bytes of a finished fetch are written to the page store
  // after it finished (a stat's first page: by the idle writer, or by a
  // short-circuit open that needs the page at once), so they are written once.
  std::mutex& write_mu() { return write_mu_; }

 private:
  uint64_t start_, end_;
  std::mutex write_mu_;
  mutable std::mutex mu_;
  bool done_ = false;
  std::vector<std::function<void()>> waiters_;
  Result<std::string> result_ = Err(Code::kInternal, "fetch not finished");
};

// A file version as a read request names it.
struct FileRef {
  ResolvedPath resolved;
  std::string version;
  uint64_t size = 0;
};

// One piece of a read response, in order.
struct Segment {
  uint64_t offset = 0;  // file offset of the first byte
  uint64_t length = 0;
  // Either a cached page (send `length` bytes from ref.data_offset() + skip) or a fetch.
  std::optional<PageRef> page;
  uint64_t skip = 0;
  std::shared_ptr<Fetch> fetch;
};

class WorkerService {
 public:
  using Executor = std::function<void(std::function<void()>)>;

  static Result<std::unique_ptr<WorkerService>> Create(const Config& config, Executor ufs_executor);
  ~WorkerService();

  const Config& config() const { return config_; }
  // The config's mounts, and with cluster.etcd those published in etcd (with their credentials).
  const LiveMountTable& mounts() const { return mounts_; }
  PageStore& pages() { return *pages_; }
  // The path rules (config and CLI) the page store enforces.
  RuleBook& rules() { return *rules_; }

  // How a stat that reads a cold file's first page (StatFromStore) caches it.
  struct StatOptions {
    // Write the page to the page store before returning, on the calling
    // thread, instead of handing it to the idle writer (the default, which
    // serves it from memory meanwhile). For callers that want the page file
    // at once (a short-circuit open, a load): no thread hand-off.
    bool write_first_page = false;
    // Set to true when this call read the first page from the under-store.
    bool* fetched_first_page = nullptr;
  };

  // Blocking (call from the UFS executor).
  Result<FileInfo> Stat(const ResolvedPath& p, const StatOptions& o);
  Result<FileInfo> Stat(const ResolvedPath& p) { return Stat(p, StatOptions{}); }
  // Concurrent misses on one directory share one listing (single-flight).
  Result<std::vector<FileInfo>> List(const ResolvedPath& p);
  // Drops metadata (and with `data`, pages) under the path; returns entries dropped.
  size_t Refresh(const std::string& ns_path, bool recursive, bool data);

  // The largest size a request may claim for a file: offsets are off_t.
  static constexpr uint64_t kMaxFileSize = (1ull << 63) - 1;

  // Non-blocking. Checks what a request claims of a file version (its size)
  // against what this worker knows of that version: the size must be at most
  // kMaxFileSize and equal that of a cached stat of the same version.
  // kInvalidArgument naming the claim and the fact otherwise.
  Status CheckClaims(const FileRef& file);

  // Non-blocking. Plans [offset, end) of `file` (end <= file.size) into
  // segments, starting UFS fetches for missing pages. Also schedules
  // read-ahead when the reader is sequential. kInvalidArgument when a cached
  // page of the version contradicts file.size (a last page shorter than the
  // range needs). REQUIRES: offset < end, file.size <= kMaxFileSize.
  Result<std::vector<Segment>> PlanRead(const FileRef& file, uint64_t offset, uint64_t end);

  // Non-blocking unless `write_fetched`. The cached pages covering a prefix of
  // [offset, end), at most `max_segments` of them, stopping at the first page
  // not cached (no fetch is started for it). For short-circuit readers, which
  // read the pages themselves; schedules read-ahead like PlanRead. With
  // `write_fetched` (blocking: a page write), a page whose bytes a finished
  // fetch holds but the idle writer has not written yet (a cold file's first
  // page, read by its stat) is written now and handed out too (Segment::
  // fetched): a cold small file then reaches a same-host reader through its
  // page file, without a second request over TCP.
  std::vector<Segment> CachedPrefix(const FileRef& file, uint64_t offset, uint64_t end, size_t max_segments,
                                    bool write_fetched = false);

  // Non-blocking. A cached page failed its checksum while being read through
  // `fd` (`why` says how): drops it, counted in shoal_cache_corrupt_pages_total,
  // and returns the fetch that reads it again from the under-store (one
  // already in flight for it, or a new one), which also caches it again.
  std::shared_ptr<Fetch> RefetchCorruptPage(const FileRef& file, uint64_t page, const PageRef& ref, const Status& why);

  // Blocking (call from the UFS executor). Caches one page a cache-through
  // writer pushed (src/worker/page_put.cc): checks the claims of `push` and
  // the body's length, and that `push.version` is the path's current version
  // in the under-store (a stat from the store when the cached one differs);
  // kVersionMismatch or kInvalidArgument, naming the claim, when not.
  Status PutPushedPage(const ResolvedPath& p, const PagePush& push, std::string_view data);

  // The under-store of a mount, opened on first use (the write-back uploader's).
  Result<std::shared_ptr<UnderStore>> Store(const ResolvedPath& p) { return StoreFor(p); }
  // Non-blocking. For a cache-only read (GET /v1/read?cache_only=1): the
  // cached pages covering all of [offset, end), or nullopt when any part is
  // not cached (or, for a range ending at file.size, the last page is not
  // exactly that long). Starts no fetch and no read-ahead.
  std::optional<std::vector<Segment>> CachedRange(const FileRef& file, uint64_t offset, uint64_t end);

  // Non-blocking. For a cache-only stat (GET /v1/stat?cache_only=1, a peer's
  // miss after a ring change, peer_stat.h): the fresh cached stat of `p` and
  // its age, or nullopt. Never asks the under-store.
  std::optional<MetadataCache::AgedStat> CachedStat(const ResolvedPath& p) {
    return meta_.LookupFreshStat(p.ns_path, *p.mount);
  }

  // Misses ask `peers` before the under-store; fetched pages of replicated
  // paths are pushed to their other holders. Call before serving.
  void SetPeerFetch(std::unique_ptr<PeerFetch> peers);

  // Bumped after every change that can make an earlier answer wrong (a stat
  // dropped or replaced, a page removed; the worker adds pending writes):
  // what same-host clients check before they use a leased answer
  // (common/local_wire.h, "Leases").
  SharedEpoch& epoch() { return epoch_; }
  // `reads` reads of bytes [offset, offset + length) of `p` that a same-host
  // client served from a leased answer: the pages' policy sees them; they
  // count as hits (fetched bytes not yet served: misses), at most the pages'
  // bytes, once whatever `reads` says (a client's count is not trusted with a
  // counter). Returns the bytes counted (0 when the stat or a page is gone).
  // `client`: the door the client declared (common/end_user.h).
  uint64_t NoteLeasedReads(const ResolvedPath& p, uint64_t offset, uint64_t length, uint32_t reads,
                           std::string_view client);

  // How the bytes left the worker: its HTTP API (the client library: CLI,
  // FUSE, Python, C++), the short circuit to a client on this host, or its
  // own S3 listener. The `door` label of the read metrics.
  enum class Door { kHttp, kShortCircuit, kS3 };
  static constexpr int kDoors = 3;
  // Accounting of served bytes (called by the transport once sent); `seconds`
  // < 0: the transport did not time it (no latency sample). `client`: the
  // door the client declared (X-Shoal-Door or its short-circuit hello: fuse,
  // python, cli, s3, ...; common/end_user.h), the `client` label of the
  // per-client metrics; any name not known there counts as "other".
  void CountServed(const ResolvedPath& where, uint64_t hit_bytes, uint64_t miss_bytes, double seconds, Door door,
                   std::string_view client);

  // Egress saved per mount: the bytes served that its store did not send
  // (the hits), and what a GB of its egress costs (EgressPricePerGb).
  struct MountEgress {
    std::string mount;
    std::string ufs;
    uint64_t saved_bytes = 0;
    double price_per_gb = 0;
  };
  std::vector<MountEgress> Egress() const;

  struct Totals {
    uint64_t hit_bytes, miss_bytes, ufs_read_bytes;
  };
  Totals totals() const;

  // Of `bytes` served from the page of `file` at `page`, how many the store
  // sent for a reader and no read was served yet: count them as a miss, the
  // rest as a hit (worker/fresh_bytes.h).
  uint64_t TakeFresh(const FileRef& file, uint64_t page, uint64_t bytes) {
    return fresh_.Take(file.resolved.ns_path, file.version, page, bytes);
  }
  // Every series the README lists exists at 0 from the start (dashboards and
  // alerts see 0, not "no data"): the ones registered where they are used.
  static void RegisterPushMetrics();

  // A preload's pages of [first, last]: their bytes count as hits when served.
  void ForgetFresh(const FileRef& file, uint64_t first, uint64_t last) {
    fresh_.Forget(file.resolved.ns_path, file.version, first / page_size_ * page_size_, last, page_size_);
  }

 private:
  WorkerService(const Config& config, Executor ufs_executor);
  Result<std::shared_ptr<UnderStore>> StoreFor(const ResolvedPath& p);
  // A stat or a listing that missed the metadata cache, run once for all
  // who ask at the same time (stats_in_flight_, lists_in_flight_): from a
  // peer or the store, or stale metadata during an outage.
  Result<FileInfo> StatMiss(const ResolvedPath& p, const StatOptions& o);
  Result<std::vector<FileInfo>> ListMiss(const ResolvedPath& p);
  // A stat that missed the metadata cache: one under-store request, cached.
  Result<FileInfo> StatFromStore(const ResolvedPath& p, const StatOptions& o);
  // A stat that missed the metadata cache, from another worker's cache when
  // the ring changed or the path is replicated (PeerFetch::Stat), cached with
  // its original time. nullopt: ask the store.
  std::optional<FileInfo> StatFromPeer(const ResolvedPath& p);
  // Whether a failed revalidation may be answered from stale metadata: the
  // store could not be reached (not: the object changed, vanished or is denied).
  static bool IsOutage(const Status& s);
  // Counts and logs (once per path) an answer served stale during an outage.
  void NoteStaleServed(const ResolvedPath& p, const char* what, const Status& why);
  // Claims the pages [first, last] that are neither cached nor in flight,
  // stopping at the first that is, and starts one fetch for them.
  // `credit`: its bytes count as misses for the reads served them (FreshBytes);
  // false for a corrupt page fetched again while a read that counted it as a
  // hit is being sent.
  std::shared_ptr<Fetch> StartFetchLocked(const FileRef& file, uint64_t first_page, uint64_t last_page,
                                          bool credit = true);
  void RunFetch(FileRef file, std::shared_ptr<Fetch> fetch);
  // Caches the pages of `bytes`, read for `file` at file offset `start`.
  void CachePages(const FileRef& file, uint64_t start, const std::string& bytes);
  // The page at `page` of `file` when a finished fetch in the in-flight table
  // holds its bytes (not yet written by the idle writer): written now, then
  // looked up. nullopt when there is none, or the page cannot be cached.
  std::optional<PageRef> WriteFetchedPage(const FileRef& file, uint64_t page);
  void ReadAhead(const FileRef& file, uint64_t from);
  std::string InflightKey(const FileRef& f, uint64_t page) const;
  // Records `version` as the latest seen of `path`; true when it supersedes
  // another, whose pages the caller then drops. Only the under-store's word
  // counts (a stat, a fetch that passed its version check): a version a
  // request merely names could be made up. REQUIRES: inflight_mu_ held.
  bool NoteVersionLocked(const std::string& path, const std::string& version);
  // Records a read of [offset, end) for sequential-reader detection; returns
  // whether the reader is sequential.
  bool NoteRead(const FileRef& file, uint64_t offset, uint64_t end);

  Config config_;
  LiveMountTable mounts_;
  Executor ufs_executor_;
  SharedEpoch epoch_;  // before the caches that bump it
  std::unique_ptr<PageStore> pages_;
  std::unique_ptr<RuleBook> rules_;
  MetadataCache meta_;
  uint64_t page_size_;
  uint64_t max_fetch_bytes_;

  std::mutex stores_mu_;
  std::vector<std::shared_ptr<UnderStore>> stores_;  // per mount, opened on first use

  SingleFlight<Result<FileInfo>> stats_in_flight_;               // by namespace path
  SingleFlight<Result<std::vector<FileInfo>>> lists_in_flight_;  // by namespace path

  std::mutex inflight_mu_;
  std::unordered_map<std::string, std::shared_ptr<Fetch>> inflight_;  // page key -> its fetch
  // Namespace path -> fetches of it in flight (a stat's first page included):
  // a stat of a path with bytes on the way must not read its first page again.
  std::unordered_map<std::string, uint32_t> inflight_paths_;
  void AddInflightPathLocked(const std::string& path) { ++inflight_paths_[path]; }
  void DropInflightPathLocked(const std::string& path) {
    if (auto it = inflight_paths_.find(path); it != inflight_paths_.end() && --it->second == 0)
      inflight_paths_.erase(it);
  }
  // Sequential-reader detection: file key -> end of the last read.
  std::unordered_map<std::string, uint64_t> stream_end_;
  std::list<std::string> stream_order_;
  // Latest version seen per path, so superseded pages are dropped at once.
  std::unordered_map<std::string, std::string> latest_version_;

  // Per mount: until when its store is taken as unreachable (steady-clock ns).
  // Within it, metadata that may be served stale is, without asking the store
  // again (each attempt would cost the store's whole retry schedule).
  std::unique_ptr<std::atomic<int64_t>[]> outage_until_;
  bool InOutage(const ResolvedPath& p) const;
  void NoteOutage(const ResolvedPath& p);

  // Versions pushed pages were checked against, from the store's word: path ->
  // (version, size). The metadata cache may decline to keep a stat that
  // raced with any refresh (its generation guard), and concurrent writes
  // refresh all the time; without this each page would cost a store stat.
  std::mutex pushed_mu_;
  std::unordered_map<std::string, std::pair<std::string, uint64_t>> pushed_versions_;

  std::mutex stale_mu_;
  std::unordered_map<std::string, bool> stale_logged_;  // paths already logged as served stale (bounded)

  Counter* hit_bytes_;
  Counter* miss_bytes_;
  Counter* stale_stats_;
  Counter* stale_lists_;
  // shoal_egress_saved_bytes_total{mount}: made at start for the config's
  // mounts, at first use for one published later.
  Counter* SavedBytes(const MountConfig& mount);
  mutable std::mutex saved_mu_;
  std::map<std::string, std::pair<MountConfig, Counter*>> saved_;  // by mount path
  Histogram* read_latency_[kDoors];
  Counter* served_bytes_[kDoors];
  Histogram* client_latency_[kClientDoorCount];
  Counter* client_bytes_[kClientDoorCount];
  std::atomic<uint64_t> ufs_read_bytes_{0};
  FreshBytes fresh_;  // bytes the store sent that no read was served yet
  std::unique_ptr<PeerFetch> peers_;
  // Last, so it is destroyed (and its queued writes, which use the members
  // above, are run) first.
  std::unique_ptr<IdleWriter> idle_writer_;
};

}  // namespace shoal
