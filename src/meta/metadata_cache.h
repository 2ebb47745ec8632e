// MetadataCache: a worker's cache of under-store metadata (stat and list
// results), keyed by namespace path, revalidated by the mount's consistency
// mode:
//   immutable  never revalidated (negative results still expire after the ttl)
//   ttl        revalidated once older than the mount's ttl
//   always     never served from cache
// Bounded: the least recently inserted entries go first past `max_entries`.
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

  // A cached stat: the FileInfo, or a cached kNotFound. nullopt: ask the store.
  std::optional<Result<FileInfo>> LookupStat(const std::string& path, const MountConfig& mount);
  void InsertStat(const std::string& path, const Result<FileInfo>& info);

  std::optional<std::vector<FileInfo>> LookupList(const std::string& path, const MountConfig& mount);
  void InsertList(const std::string& path, std::vector<FileInfo> entries);

  // Drops the entries of `path` (and, when recursive, everything under it).
  size_t Invalidate(const std::string& path, bool recursive);

  size_t size() const;

 private:
  struct Entry {
    Clock::time_point fetched;
    std::optional<Result<FileInfo>> stat;
    std::optional<std::vector<FileInfo>> list;
    std::list<std::string>::iterator order;
  };
  bool Fresh(const Entry& e, const MountConfig& mount, bool negative) const;
  Entry& Upsert(const std::string& key);

  mutable std::mutex mu_;
  size_t max_entries_;
  Now now_;
  std::unordered_map<std::string, Entry> entries_;  // key: 's' or 'l' + path
  std::list<std::string> order_;  // oldest first
};

}  // namespace shoal
