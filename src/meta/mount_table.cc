#include "meta/mount_table.h"

#include "ufs/uri.h"

namespace shoal {
namespace {

std::string CanonicalRoot(const UfsUri& u) {
  if (u.scheme == "file") return "file://" + u.path;
  return u.scheme + "://" + u.authority + "/" + u.path;
}

}  // namespace

MountTable::MountTable(std::vector<MountConfig> mounts) : mounts_(std::move(mounts)) {
  for (const auto& m : mounts_) {
    auto u = ParseUfsUri(m.ufs);
    ufs_roots_.push_back(u ? CanonicalRoot(*u) : std::string());
  }
}

Result<std::string> MountTable::NormalisePath(std::string_view path) {
  if (path.empty() || path[0] != '/') {
    return Err(Code::kInvalidArgument,
               "'" + std::string(path) + "' is not an absolute path (paths look like /mount/dir/file or s3://bucket/key)");
  }
  auto key = NormaliseKey(path);
  if (!key) return Err(key.error());
  return "/" + *key;
}

std::string MountTable::MountList() const {
  if (mounts_.empty()) return "no mounts are configured (add one under 'mounts:' in the config)";
  std::string s = "mounts:";
  for (const auto& m : mounts_) s += " " + m.path + " -> " + m.ufs + ";";
  s.pop_back();
  return s;
}

Result<ResolvedPath> MountTable::Resolve(std::string_view input) const {
  ResolvedPath r;
  if (input.find("://") != std::string_view::npos) {
    // A physical URI: find the mount whose UFS root contains it.
    auto u = ParseUfsUri(input);
    if (!u) return Err(u.error());
    std::string full = CanonicalRoot(*u);  // ends with '/'
    for (size_t i = 0; i < mounts_.size(); ++i) {
      const auto& root = ufs_roots_[i];
      if (root.empty() || !full.starts_with(root)) continue;
      auto key = NormaliseKey(std::string_view(full).substr(root.size()));
      if (!key) return Err(key.error());
      r.mount_index = i;
      r.mount = &mounts_[i];
      r.key = *key;
      r.ns_path = mounts_[i].path == "/" ? "/" + r.key : mounts_[i].path + (r.key.empty() ? "" : "/" + r.key);
      return r;
    }
    return Err(Code::kNotFound, "'" + std::string(input) + "' is outside every mount (" + MountList() + ")");
  }
  auto norm = NormalisePath(input);
  if (!norm) return Err(norm.error());
  for (size_t i = 0; i < mounts_.size(); ++i) {
    const auto& mp = mounts_[i].path;
    bool inside = mp == "/" || *norm == mp || (norm->starts_with(mp) && (*norm)[mp.size()] == '/');
    if (!inside) continue;
    r.mount_index = i;
    r.mount = &mounts_[i];
    r.ns_path = *norm;
    r.key = mp == "/" ? norm->substr(1) : (*norm == mp ? "" : norm->substr(mp.size() + 1));
    return r;
  }
  return Err(Code::kNotFound, "'" + *norm + "' is outside every mount (" + MountList() + ")");
}

}  // namespace shoal
