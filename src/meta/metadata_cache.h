// MetadataCache: a worker's cache of under-store metadata (stat and list
// results), keyed by namespace path, revalidated by the mount's consistency
// mode:
//   immutable  a file's stat is never revalidated; negative results and
//              directory listings expire after the ttl, so objects added
//              later appear in lookups and listings alike
//   ttl        revalidated once older than the mount's ttl
//   always     never served from cache (negative results are not kept either)
// An entry past its freshness is kept: when revalidation fails because the
// store is unreachable, the Lookup*Stale calls serve it for up to the mount's
// stale_if_error past its freshness.
// Bounded: the least recently inserted entries go first past `max_entries`.
//
// A stat can also come from another worker's cache (after a ring change,
// src/worker/peer_fetch.h) with its age: InsertAgedStat keeps it with the
// time the store gave it, so the mount's rule counts from then, and refuses
// it when this cache invalidated the path since (a write through Shoal told
// this worker, not the peer).
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "ufs/under_store.h"

namespace shoal {

class MetadataCache {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  explicit MetadataCache(size_t max_entries, Now now = [] { return Clock::now(); });

  // Counts Invalidate calls. A caller that asks the store takes it first and
  // passes it to Insert*: an answer the store gave before a concurrent
  // invalidation (a write through Shoal) is then not cached, so it cannot
  // outlive the invalidation that should have dropped it.
  uint64_t generation() const;

  // Called (under this cache's lock: it must not call back) after every
  // change that can make an earlier answer wrong: an Invalidate, and an
  // insert that replaces a cached stat. Set before use.
  void OnChange(std::function<void()> f) { on_change_ = std::move(f); }

  // A cached stat: the FileInfo, or a cached kNotFound. nullopt: ask the store.
  std::optional<Result<FileInfo>> LookupStat(const std::string& path, const MountConfig& mount);
  // `since`: generation() before the store was asked (nullopt: insert anyway).
  void InsertStat(const std::string& path, const Result<FileInfo>& info, std::optional<uint64_t> since = std::nullopt);

  std::optional<std::vector<FileInfo>> LookupList(const std::string& path, const MountConfig& mount);
  void InsertList(const std::string& path, std::vector<FileInfo> entries, std::optional<uint64_t> since = std::nullopt);

  // A cached positive stat (or listing) that is no longer fresh but is within
  // the mount's stale_if_error window: what a worker serves when the store
  // cannot be reached to revalidate it. nullopt: nothing usable.
  std::optional<FileInfo> LookupStaleStat(const std::string& path, const MountConfig& mount);
  std::optional<std::vector<FileInfo>> LookupStaleList(const std::string& path, const MountConfig& mount);

  // Drops the entries of `path` (and, when recursive, everything under it).
  size_t Invalidate(const std::string& path, bool recursive);

  // A fresh positive stat and its age: how long ago the store gave it (or
  // this worker took it, aged, from a peer). For cache-only stats.
  struct AgedStat {
    FileInfo info;
    Clock::duration age{};
    // How much longer it stays fresh under the mount's rule (max(): for ever).
    // Set by LookupFreshStat only.
    Clock::duration fresh_for{};
  };
  std::optional<AgedStat> LookupFreshStat(const std::string& path, const MountConfig& mount);
  // Caches a stat the store gave `age` ago, as fresh as it is under the
  // mount's rule. Not cached (false) when the mount's rule finds it too old,
  // when `path` was invalidated after the store gave it, or when generation()
  // moved past `since` meanwhile. REQUIRES: age >= 0.
  bool InsertAgedStat(const std::string& path, const FileInfo& info, Clock::duration age, uint64_t since,
                      const MountConfig& mount);

  size_t size() const;

 private:
  struct Entry {
    Clock::time_point fetched;
    std::optional<Result<FileInfo>> stat;
    std::optional<std::vector<FileInfo>> list;
    std::list<std::string>::iterator order;
  };
  // How long an entry stays fresh under the mount's rule (max() for ever).
  static Clock::duration Lifetime(const MountConfig& mount, bool negative_or_list);
  bool Fresh(const Entry& e, const MountConfig& mount, bool negative_or_list) const;
  bool WithinStaleWindow(const Entry& e, const MountConfig& mount, bool list) const;
  Entry& Upsert(const std::string& key);
  // The latest Invalidate that covered `path` (min() when none is known).
  Clock::time_point InvalidatedAtLocked(const std::string& path) const;

  mutable std::mutex mu_;
  size_t max_entries_;
  Now now_;
  std::unordered_map<std::string, Entry> entries_;  // key: 's' or 'l' + path
  std::list<std::string> order_;  // oldest first
  uint64_t generation_ = 0;       // Invalidate calls so far
  // When each path (or, recursively, subtree) was last invalidated, for
  // InsertAgedStat. Bounded: past kMaxInvalidated entries both are cleared
  // and every entry counts as invalidated at that time (invalidated_all_).
  static constexpr size_t kMaxInvalidated = 10'000;
  std::unordered_map<std::string, Clock::time_point> invalidated_;
  std::unordered_map<std::string, Clock::time_point> invalidated_trees_;
  Clock::time_point invalidated_all_ = Clock::time_point::min();
  std::function<void()> on_change_;
};

}  // namespace shoal
