// MountTable: maps namespace paths and physical URIs to (mount, key).
//
//   mounts: /imagenet -> s3://bucket/imagenet/
//   "/imagenet/train/x.jpg"              -> mount /imagenet, key "train/x.jpg"
//   "s3://bucket/imagenet/train/x.jpg"   -> the same
//
// Thread safety: immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "shoal/status.h"

namespace shoal {

struct ResolvedPath {
  size_t mount_index = 0;
  const MountConfig* mount = nullptr;
  std::string ns_path;  // normalised namespace path: "/imagenet/train/x.jpg"
  std::string key;      // key relative to the mount's UFS root: "train/x.jpg" ("" for the mount root)
};

class MountTable {
 public:
  explicit MountTable(std::vector<MountConfig> mounts);

  // Accepts a namespace path or a physical URI. Errors: kInvalidArgument for
  // '..' and malformed paths, kNotFound for a path outside every mount (the
  // message lists the mounts).
  Result<ResolvedPath> Resolve(std::string_view path_or_uri) const;

  const std::vector<MountConfig>& mounts() const { return mounts_; }

  // Normalises a namespace path: "/a//b/./c/" -> "/a/b/c". Rejects "..".
  static Result<std::string> NormalisePath(std::string_view path);

 private:
  std::string MountList() const;
  std::vector<MountConfig> mounts_;
  std::vector<std::string> ufs_roots_;  // canonical "scheme://authority/path/" per mount
};

}  // namespace shoal
