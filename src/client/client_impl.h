// Internals of shoal::Client shared by client.cc and file.cc.
//
// Every call takes one deadline (client.timeout) and goes through the Router
// (src/cluster/router.h): candidates for the call's ring key, failover, and
// the direct under-store read, written once. This file supplies the two sides
// of each call: what to ask a worker, and what to ask the under-store.
//
// Thread safety: ClientImpl is safe for concurrent use from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "client/client_internal.h"
#include "client/local_reader.h"
#include "client/worker_caller.h"
#include "cluster/fallback_limiter.h"
#include "cluster/hot_shards.h"
#include "cluster/membership.h"
#include "cluster/router.h"
#include "cluster/worker_health.h"
#include "common/config.h"
#include "common/path_rules.h"
#include "common/task_pool.h"
#include "meta/live_mount_table.h"
#include "shoal/client.h"
#include "ufs/under_store.h"

namespace shoal {

// What Open() learns: the file's status and its first bytes (possibly none).
struct OpenedFile {
  ResolvedPath resolved;
  FileStatus status;
  std::string prefix;
};

FileStatus ToFileStatus(const FileInfo& f, std::string ns_path);

namespace detail {

class ClientImpl {
 public:
  explicit ClientImpl(Config config);
  const Router& router() const { return router_; }
  // With the membership OpenMembership(config) gave (etcd or static).
  // `token`: a bearer token given in code, sent instead of SHOAL_TOKEN's or
  // client.token_file's ("" = those).
  ClientImpl(Config config, std::shared_ptr<const Membership> membership, const std::string& token = "");

  const Config& config() const { return config_; }
  // The config's mounts, and with cluster.etcd those published in etcd (never their credentials).
  const LiveMountTable& mounts() const { return mounts_; }
  // The config's `rules:` table (common/path_rules.h).
  const PathRules& rules() const { return rules_; }
  // How a write to `rp` is acknowledged: its path rule's write_mode, else its mount's.
  WriteMode WriteModeFor(const ResolvedPath& rp) const;

  Result<FileStatus> Stat(std::string_view path);
  // ReadObjectMetadata (client_internal.h).
  Result<ObjectMetadata> MetadataFromStore(std::string_view path);
  Result<ObjectMetadata> MetadataOf(std::string_view path, std::string_view version);
  // Stat plus the first bytes, in one round trip to the path's owner.
  Result<OpenedFile> Open(std::string_view path, uint64_t prefetch);
  // OpenCachedOnly (client_internal.h): from a worker on this host, at once, or kUnavailable.
  Result<OpenedFile> OpenCached(std::string_view path, uint64_t prefetch);
  Result<std::vector<FileStatus>> List(std::string_view path);
  Status Refresh(std::string_view path, bool recursive, bool data);
  // Each worker's status; with `bodies`, also its /v1/status body ("" when it did not answer).
  std::vector<WorkerStatus> ClusterStatus(std::vector<std::string>* bodies = nullptr);
  Result<CallerIdentity> WhoAmI();
  Result<std::string> PolicyCheck(std::string_view user, const std::vector<std::string>& groups, std::string_view path,
                                  std::string_view access);
  bool presents_credential() const { return caller_.presents_credential(); }
  // Admin fan-out (src/client/worker_calls.cc).
  std::vector<WorkerAnswer> CallWorkers(std::string_view method,
                                        const std::function<std::string(const std::string& member)>& target_for);
  std::vector<std::string> RingMembers() const;

  // Writes (src/client/writer.cc). They go from this client straight to the
  // mount's under-store, each store call bounded by client.timeout, and then
  // drop the metadata they made stale (AfterMutation).
  Result<std::unique_ptr<Writer>> Create(std::string_view path, const CreateOptions& options);
  Status Delete(std::string_view path);
  Status Mkdir(std::string_view path);
  Status Rmdir(std::string_view path);
  Status Rename(std::string_view from, std::string_view to);
  Status SetAttributes(std::string_view path, std::optional<uint32_t> mode, std::optional<int64_t> mtime_ns,
                       std::optional<uint32_t> uid, std::optional<uint32_t> gid);

  // A path a write may change: resolved, on a mount that is not read_only
  // (kReadOnly naming the mount), not a mount root. `op` names the write.
  Result<ResolvedPath> ResolveForWrite(std::string_view path, std::string_view op);
  // The under-store of a mount, opened on first use (shared with the direct reads).
  Result<std::shared_ptr<UnderStore>> StoreFor(const ResolvedPath& rp) { return FallbackStore(rp); }
  Deadline NewDeadline() const { return std::chrono::steady_clock::now() + config_.client.timeout; }
  // Delete/Mkdir/Rmdir: `op` on the path's store within a deadline, then AfterMutation.
  Status WritePath(std::string_view path, std::string_view what, std::string_view verb,
                   const std::function<Status(UnderStore&, const std::string&)>& op);

  // After a write to `rp` succeeded: drops the cached metadata of the path and
  // of every directory above it up to its mount's root (their listings, and
  // negative entries of parents that a write may have created) on each
  // path's metadata owner; with `subtree`, also everything under the path on
  // every worker (a renamed directory). Best effort: a worker that cannot be
  // told is logged, and revalidates by its mount's rule.
  void AfterMutation(const ResolvedPath& rp, bool subtree = false);
  // After a cache-through write of `st` committed: pushes the pages of its
  // first `spilled` bytes, read from `spill_fd` (a file holding the bytes
  // written), to their owners under st.version (src/client/page_push.cc).
  // Within one client.timeout, max_parallel pages at a time, one page of
  // memory each. Best effort: failures are logged and counted.
  void PushWrittenPages(const ResolvedPath& rp, const FileStatus& st, int spill_fd, uint64_t spilled);
  // The same with the pages read by `read_page(offset, out)` (all of out, or an error).
  void PushWrittenPages(const ResolvedPath& rp, const FileStatus& st, uint64_t spilled,
                        const std::function<Status(uint64_t, std::span<char>)>& read_page);
  // Runs `fill` (a PushWrittenPages of `bytes` for `path`) on the one
  // background fill thread (FillCacheAfterClose), unless kMaxQueuedFillBytes
  // are queued already: then it is dropped, logged and counted as a push
  // failure. A client being destroyed runs no fill still queued.
  void QueueCacheFill(const std::string& path, uint64_t bytes, std::function<void()> fill);
  ClientStats stats() const;

  // write_mode: write-back (src/client/writeback_push.cc). The k holders of
  // a path: the live owners of its metadata key in ring order, k =
  // the mount's write_back_replicas capped at the live workers.
  std::vector<WorkerEntry> WritebackHolders(const ResolvedPath& rp) const;
  static std::string WritebackHoldersText(const std::vector<WorkerEntry>& holders);
  // One request to a worker; a worker that failed is reported to the router.
  WorkerReply CallWorker(const WorkerEntry& w, std::string_view method, const std::string& target,
                         Deadline deadline, std::string_view path, std::string_view body = {});
  TaskPool& fanout_pool() { return fanout_pool_; }
  // Reads of a pending write-back version ("wb-<id>") go to its holders.
  Status ReadPending(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                     Deadline deadline);
  // The bytes of a pending version a holder on this host served from the
  // front of `out` through the short circuit, in one exchange (0: none).
  uint64_t ReadPendingLocal(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                            Deadline deadline);
  void CountWritebackFallback() { write_back_fallbacks_.fetch_add(1, std::memory_order_relaxed); }
  void CountWriteback() { write_backs_.fetch_add(1, std::memory_order_relaxed); }

  // Reads [offset, offset + out.size()) of one file version, which the caller
  // has clamped to the file size, as one call (one deadline). `parallel` fans
  // pieces out over the pool.
  Status ReadRange(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out, bool parallel);

  // The page files a worker on this host holds for a prefix of [offset,
  // offset + length) of one file version, within one shard (local_pages.h):
  // asked of the range's first live holder when its short circuit is open.
  std::vector<LocalPage> LocalPages(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, uint64_t length);

  TaskPool& readahead_pool() { return readahead_pool_; }
  // Sends the reads served from held short-circuit pages to their workers.
  void ReportHeldReads() { local_.ReportHeldReads(); }

  // Write-back: returns once neither `rp` nor anything under it has a
  // pending write (at once on other mounts); kUnavailable naming `what` at
  // the deadline.
  Status WaitForUploads(const ResolvedPath& rp, std::string_view what, Deadline deadline);

 private:
  Result<FileStatus> StatResolved(const ResolvedPath& rp, Deadline deadline);
  // The directory's owner's listing (or the store's, when no worker answers).
  Result<std::vector<FileStatus>> ListFromOwner(const ResolvedPath& rp, Deadline deadline);
  // Write-back: every live worker's pending writes directly under `rp`, and
  // the directories that pending writes deeper down make (best effort: a
  // worker that does not answer adds nothing).
  std::vector<FileStatus> PendingUnder(const ResolvedPath& rp, Deadline deadline);
  // `rp` as a directory that only pending writes make, else kNotFound.
  Result<FileStatus> StatPendingDir(const ResolvedPath& rp, Deadline deadline);
  // How many workers hold the data of `rp` (its path rule's replicas; 1 when unset).
  size_t ReplicasFor(const ResolvedPath& rp) const;
  Status ReadPiece(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                   Deadline deadline);
  // The prefix of [offset, offset + out.size()) (within one shard) that the
  // shard's worker serves through its short circuit, read on the calling
  // thread; its length (0 when that worker is not known to be on this host).
  Result<uint64_t> ReadLocal(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                             Deadline deadline);

  // Hot shards (cluster/hot_shards.h, src/client/hot_reads.cc). How a read of
  // `ring_key` is routed: over its `replicas` holders, or, while a worker
  // says the key is hot, over that many workers in ring order, round robin.
  Router::RouteKey ReadKey(const std::string& ring_key, size_t replicas, uint64_t bytes);
  // "&spread=1" when `w` is not one of the key's `replicas` holders (it
  // serves a copy only because the key is hot; it counts such reads), else "".
  std::string SpreadParam(const Router::RouteKey& key, size_t replicas, const WorkerEntry& w);
  // What `w`'s answer for `ring_key` said: X-Shoal-Hot marks the key hot; an
  // answer without it from the key's owner makes it cold again.
  void NoteHeat(const std::string& ring_key, const WorkerEntry& w, uint32_t hot);

  // The under-store side of each call; bounded by what is left of `deadline`.
  Result<std::shared_ptr<UnderStore>> FallbackStore(const ResolvedPath& rp);
  Result<FileStatus> StatFromStore(const ResolvedPath& rp, Deadline deadline);
  Result<std::vector<FileStatus>> ListFromStore(const ResolvedPath& rp, Deadline deadline);
  Status ReadFromStore(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                       Deadline deadline);

  // Drops the metadata owner's cached stat of a path seen to have changed (best effort).
  void ForgetMetadata(const std::string& ns_path, Deadline deadline);
  // Learns once (per retry interval) whether `worker` is on this host. An
  // error when the worker failed to answer (the caller's attempt failed).
  Status DiscoverLocal(const WorkerEntry& worker, Deadline deadline);

  Config config_;
  LiveMountTable mounts_;
  PathRules rules_;
  // Declared before health_: the probe thread uses it until health_ is destroyed.
  WorkerCaller caller_;
  WorkerHealth health_;
  FallbackLimiter limiter_;  // before router_, which uses it
  Router router_;
  TaskPool fanout_pool_;
  TaskPool readahead_pool_;
  LocalReader local_;

  std::mutex mu_;
  std::vector<std::shared_ptr<UnderStore>> fallback_stores_;

  std::atomic<uint64_t> worker_read_bytes_{0};
  std::atomic<uint64_t> fallback_read_bytes_{0};
  std::atomic<uint64_t> local_read_bytes_{0};
  std::atomic<uint64_t> cache_pushed_bytes_{0};
  std::atomic<uint64_t> cache_push_failures_{0};
  std::atomic<uint64_t> write_backs_{0};
  std::atomic<uint64_t> write_back_fallbacks_{0};
  HotKeys hot_;
  std::atomic<uint64_t> spread_reads_{0};

  // QueueCacheFill's thread and what waits for it. Last: it is stopped (and
  // the fill it runs finishes) before anything a fill uses is destroyed.
  static constexpr uint64_t kMaxQueuedFillBytes = 1ull << 30;
  struct BackgroundFills {
    std::atomic<bool> closing{false};
    std::atomic<uint64_t> queued_bytes{0};
    TaskPool pool{1};
    ~BackgroundFills() { closing = true; }  // before pool joins: queued fills are skipped
  };
  BackgroundFills fills_;
};

}  // namespace detail
}  // namespace shoal
