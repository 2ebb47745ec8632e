#include "meta/metadata_cache.h"

#include <algorithm>

namespace shoal {

MetadataCache::MetadataCache(size_t max_entries, Now now) : max_entries_(max_entries), now_(std::move(now)) {}

MetadataCache::Clock::duration MetadataCache::Lifetime(const MountConfig& mount, bool negative_or_list) {
  switch (mount.consistency) {
    case Consistency::kAlways: return Clock::duration::zero();
    case Consistency::kImmutable:
      // A file never changes once seen; whether a name exists can.
      if (!negative_or_list) return Clock::duration::max();
      return mount.ttl;
    case Consistency::kTtl: return mount.ttl;
  }
  return Clock::duration::zero();
}

bool MetadataCache::Fresh(const Entry& e, const MountConfig& mount, bool negative_or_list) const {
  auto life = Lifetime(mount, negative_or_list);
  return life == Clock::duration::max() || now_() - e.fetched < life;
}

bool MetadataCache::WithinStaleWindow(const Entry& e, const MountConfig& mount, bool list) const {
  if (mount.stale_if_error <= std::chrono::milliseconds::zero()) return false;
  auto life = Lifetime(mount, list);
  if (life == Clock::duration::max()) return true;
  return now_() - e.fetched < life + mount.stale_if_error;
}

std::optional<FileInfo> MetadataCache::LookupStaleStat(const std::string& path, const MountConfig& mount) {
  std::lock_guard lock(mu_);
  auto it = entries_.find("s" + path);
  if (it == entries_.end() || !it->second.stat || !it->second.stat->has_value()) return std::nullopt;
  if (!WithinStaleWindow(it->second, mount, false)) return std::nullopt;
  return **it->second.stat;
}

std::optional<std::vector<FileInfo>> MetadataCache::LookupStaleList(const std::string& path, const MountConfig& mount) {
  std::lock_guard lock(mu_);
  auto it = entries_.find("l" + path);
  if (it == entries_.end() || !it->second.list) return std::nullopt;
  if (!WithinStaleWindow(it->second, mount, true)) return std::nullopt;
  return it->second.list;
}

std::optional<Result<FileInfo>> MetadataCache::LookupStat(const std::string& path, const MountConfig& mount) {
  std::lock_guard lock(mu_);
  auto it = entries_.find("s" + path);
  if (it == entries_.end() || !it->second.stat) return std::nullopt;
  if (!Fresh(it->second, mount, !it->second.stat->has_value())) return std::nullopt;
  return it->second.stat;
}

std::optional<std::vector<FileInfo>> MetadataCache::LookupList(const std::string& path, const MountConfig& mount) {
  std::lock_guard lock(mu_);
  auto it = entries_.find("l" + path);
  if (it == entries_.end() || !it->second.list) return std::nullopt;
  if (!Fresh(it->second, mount, true)) return std::nullopt;
  return it->second.list;
}

MetadataCache::Entry& MetadataCache::Upsert(const std::string& key) {
  auto [it, inserted] = entries_.try_emplace(key);
  if (!inserted) order_.erase(it->second.order);
  order_.push_back(key);
  it->second.order = std::prev(order_.end());
  it->second.fetched = now_();
  while (entries_.size() > max_entries_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
  return entries_.at(key);
}

uint64_t MetadataCache::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

void MetadataCache::InsertStat(const std::string& path, const Result<FileInfo>& info, std::optional<uint64_t> since) {
  if (!info && info.error().code() != Code::kNotFound) return;  // only real answers are cached
  std::lock_guard lock(mu_);
  if (since && *since != generation_) return;
  Entry& e = Upsert("s" + path);
  if (e.stat && on_change_) on_change_();
  e.stat = info;
}

void MetadataCache::InsertList(const std::string& path, std::vector<FileInfo> entries, std::optional<uint64_t> since) {
  std::lock_guard lock(mu_);
  if (since && *since != generation_) return;
  Upsert("l" + path).list = std::move(entries);
}

size_t MetadataCache::Invalidate(const std::string& path, bool recursive) {
  std::lock_guard lock(mu_);
  ++generation_;
  // Under the lock, like the drop: a reader reads the epoch before its
  // lookup, which takes this lock, so it either sees the new epoch or the drop.
  if (on_change_) on_change_();
  auto& marks = recursive ? invalidated_trees_ : invalidated_;
  if (marks.size() >= kMaxInvalidated) {
    invalidated_.clear();
    invalidated_trees_.clear();
    invalidated_all_ = now_();
  }
  marks[path] = now_();
  size_t n = 0;
  std::string prefix = path == "/" ? "/" : path + "/";
  for (auto it = entries_.begin(); it != entries_.end();) {
    std::string_view p = std::string_view(it->first).substr(1);  // drop the kind byte
    if (p == path || (recursive && p.starts_with(prefix))) {
      order_.erase(it->second.order);
      it = entries_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

MetadataCache::Clock::time_point MetadataCache::InvalidatedAtLocked(const std::string& path) const {
  Clock::time_point at = invalidated_all_;
  if (auto it = invalidated_.find(path); it != invalidated_.end()) at = std::max(at, it->second);
  // A recursive invalidation of the path or of any directory above it.
  for (std::string p = path;;) {
    if (auto it = invalidated_trees_.find(p); it != invalidated_trees_.end()) at = std::max(at, it->second);
    if (p.empty() || p == "/") break;
    size_t slash = p.rfind('/');
    p = slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
  }
  return at;
}

std::optional<MetadataCache::AgedStat> MetadataCache::LookupFreshStat(const std::string& path,
                                                                      const MountConfig& mount) {
  std::lock_guard lock(mu_);
  auto it = entries_.find("s" + path);
  if (it == entries_.end() || !it->second.stat || !it->second.stat->has_value()) return std::nullopt;
  if (!Fresh(it->second, mount, false)) return std::nullopt;
  const auto age = std::max(Clock::duration::zero(), now_() - it->second.fetched);
  const auto life = Lifetime(mount, false);
  return AgedStat{**it->second.stat, age, life == Clock::duration::max() ? life : life - age};
}

bool MetadataCache::InsertAgedStat(const std::string& path, const FileInfo& info, Clock::duration age, uint64_t since,
                                   const MountConfig& mount) {
  if (age < Clock::duration::zero()) return false;
  const auto life = Lifetime(mount, false);
  if (life != Clock::duration::max() && age >= life) return false;
  std::lock_guard lock(mu_);
  if (since != generation_) return false;
  const Clock::time_point fetched = now_() - age;
  // Invalidated here after the store gave it: the peer kept what this worker was told to drop.
  if (InvalidatedAtLocked(path) >= fetched) return false;
  Entry& e = Upsert("s" + path);
  if (e.stat && on_change_) on_change_();
  e.stat = info;
  e.fetched = fetched;
  return true;
}

size_t MetadataCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace shoal
