// LiveMountTable: the mount table of a running process, which can grow: the
// config's mounts, plus mounts published later (in etcd, meta/etcd_mounts.h)
// that a `loader` brings in.
//
// Mounts are only ever added; changing or removing one takes a restart. Every
// table it ever held stays alive, and a new table keeps the old mounts first
// in their order, so a ResolvedPath (its `mount` pointer and `mount_index`)
// stays valid for the life of the object. At most kMaxMounts mounts.
//
// A path outside every mount makes Resolve() call the loader (at most once
// per `min_interval`, so a typo cannot hammer etcd) and try again: a mount
// published a moment ago is found at its first use. Reload() brings new
// mounts in at any time.
//
// Thread safety: all methods are safe from any thread. The loader is called
// with no lock held, by one thread at a time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "meta/mount_table.h"

namespace shoal {

class LiveMountTable {
 public:
  static constexpr size_t kMaxMounts = 256;
  using Loader = std::function<Result<std::vector<MountConfig>>()>;

  // `loader` empty: the table is the config's and never changes.
  explicit LiveMountTable(std::vector<MountConfig> mounts, Loader loader = {},
                          std::chrono::milliseconds min_interval = std::chrono::seconds(1));

  // As MountTable::Resolve; on kNotFound, reloads (see above) and tries again.
  Result<ResolvedPath> Resolve(std::string_view path_or_uri) const;

  // The table now.
  std::shared_ptr<const MountTable> Current() const;

  // Calls the loader now and adds the mounts it gives whose path is new:
  // how many were added. A mount that nests with one already there, or one
  // past kMaxMounts, is skipped with a warning naming it.
  Result<size_t> Reload() const;

  // Adds the mounts of `mounts` whose path is new (as Reload does).
  size_t Add(const std::vector<MountConfig>& mounts) const;

 private:
  Loader loader_;
  std::chrono::milliseconds min_interval_;
  mutable std::mutex mu_;  // tables_, last_load_
  mutable std::vector<std::shared_ptr<const MountTable>> tables_;  // every table held; back() is current
  mutable std::chrono::steady_clock::time_point last_load_{};
  mutable std::mutex load_mu_;  // one loader call at a time
};

}  // namespace shoal
