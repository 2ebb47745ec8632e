#include "fuse/mount_view.h"

#include <algorithm>
#include <set>

#include "common/units.h"

namespace shoal::fuse {
namespace {

// Whether namespace path `path` is `prefix` or below it.
bool Under(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return true;
  return path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '/');
}

}  // namespace

Result<CacheRule> CacheRuleFor(const MountInfo& mount) {
  CacheRule r;
  r.read_only = mount.read_only;
  r.stat_each_listed = mount.stat_each_listed;
  const std::string& c = mount.consistency;
  if (c == "immutable") {
    r.timeout_s = kLongTimeoutS;
    r.listing = std::chrono::hours(24);
  } else if (c == "always") {
    r.timeout_s = 0;
    r.listing = {};
  } else if (c.starts_with("ttl=")) {
    auto d = ParseDuration(std::string_view(c).substr(4));
    if (!d) return Err(d.error().WithContext("mount " + mount.path + " consistency"));
    r.timeout_s = static_cast<double>(d->count()) / 1000.0;
    r.listing = *d;
  } else {
    return Err(Code::kInvalidArgument, "mount " + mount.path + " has consistency '" + c +
                                           "', which the FUSE mount does not know (immutable, ttl=D or always)");
  }
  return r;
}

Result<MountView> MountView::Make(const std::vector<MountInfo>& mounts, std::string_view base) {
  MountView v;
  v.base_ = std::string(base.empty() ? "/" : base);
  while (v.base_.size() > 1 && v.base_.back() == '/') v.base_.pop_back();
  if (!v.base_.starts_with("/")) {
    return Err(Code::kInvalidArgument, "--path '" + v.base_ + "' is not a namespace path: start it with '/'");
  }
  std::string names;
  for (const auto& m : mounts) {
    auto rule = CacheRuleFor(m);
    if (!rule) return Err(rule.error());
    v.mounts_.push_back({m.path, *rule});
    names += (names.empty() ? "" : ", ") + m.path;
  }
  if (v.mounts_.empty()) return Err(Code::kInvalidArgument, "the config has no mounts: nothing to show");
  if (v.Classify(v.base_).kind == Kind::kOutside) {
    return Err(Code::kNotFound, "--path " + v.base_ + " is outside every mount (mounts: " + names + ")");
  }
  return v;
}

std::string MountView::NsPath(std::string_view rel) const {
  if (rel.empty()) return base_;
  return (base_ == "/" ? "" : base_) + "/" + std::string(rel);
}

MountView::Place MountView::Classify(std::string_view ns) const {
  const Mount* best = nullptr;
  for (const auto& m : mounts_) {
    if (Under(ns, m.path) && (!best || m.path.size() > best->path.size())) best = &m;
  }
  if (best) return {Kind::kInMount, best->rule};
  CacheRule fixed;
  fixed.timeout_s = kLongTimeoutS;
  fixed.listing = std::chrono::hours(24);
  fixed.read_only = true;
  for (const auto& m : mounts_) {
    if (Under(m.path, ns)) return {Kind::kAboveMount, fixed};
  }
  return {Kind::kOutside, fixed};
}

std::vector<std::string> MountView::ChildrenAbove(std::string_view ns) const {
  std::set<std::string> names;
  size_t skip = ns == "/" ? 1 : ns.size() + 1;
  for (const auto& m : mounts_) {
    if (m.path == ns || !Under(m.path, ns)) continue;
    std::string_view rest = std::string_view(m.path).substr(skip);
    names.insert(std::string(rest.substr(0, rest.find('/'))));
  }
  return {names.begin(), names.end()};
}

}  // namespace shoal::fuse
