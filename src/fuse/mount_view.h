// MountView: what the FUSE mount shows and how long the kernel may cache it.
//
// The mount shows the namespace from a base path ("/" by default: every
// mount of the mount table is a directory, and the directories above mounts
// are made up from their paths). Each mount's consistency mode sets the
// kernel's caching of what is under it:
//
//   immutable   entries, attributes and negative entries for a day; listings
//               kept by the kernel
//   ttl=D       all of those for D
//   always      nothing cached (every stat and open goes to Shoal)
//
// File data is cached by the kernel across opens while the file's version
// stays the same, in every mode (ShoalFs::Open).
//
// Thread safety: immutable after Make.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/client.h"
#include "shoal/status.h"

namespace shoal::fuse {

struct CacheRule {
  double timeout_s = 0;                 // entry, attribute and negative-entry timeout
  std::chrono::milliseconds listing{};  // how long the kernel may keep a directory listing; 0: never
  bool read_only = false;
  bool stat_each_listed = false;  // MountInfo::stat_each_listed
};

// The rule for a mount's consistency string ("immutable", "ttl=60s", "always").
Result<CacheRule> CacheRuleFor(const MountInfo& mount);

class MountView {
 public:
  // `base` is a namespace path inside a mount or above one.
  static Result<MountView> Make(const std::vector<MountInfo>& mounts, std::string_view base);

  enum class Kind { kInMount, kAboveMount, kOutside };
  struct Place {
    Kind kind = Kind::kOutside;
    CacheRule rule;  // the mount's; for the rest, a day (the mount table does not change)
  };

  // The namespace path of `rel`, a path relative to the mount's root ("a/b").
  std::string NsPath(std::string_view rel) const;
  Place Classify(std::string_view ns_path) const;
  // For a directory above mounts: the names of its children (each the next
  // component of a mount path), sorted.
  std::vector<std::string> ChildrenAbove(std::string_view ns_path) const;

  const std::string& base() const { return base_; }

 private:
  struct Mount {
    std::string path;
    CacheRule rule;
  };
  std::string base_;
  std::vector<Mount> mounts_;
};

// Kernel timeout for what never changes while mounted.
inline constexpr double kLongTimeoutS = 24 * 3600;

}  // namespace shoal::fuse
