#include "meta/live_mount_table.h"

#include <spdlog/spdlog.h>

namespace shoal {
namespace {

// Whether mount paths a and b are the same or one holds the other.
bool Nests(const std::string& a, const std::string& b) {
  auto inside = [](const std::string& outer, const std::string& inner) {
    return outer == "/" || inner == outer || (inner.starts_with(outer) && inner[outer.size()] == '/');
  };
  return inside(a, b) || inside(b, a);
}

}  // namespace

LiveMountTable::LiveMountTable(std::vector<MountConfig> mounts, Loader loader, std::chrono::milliseconds min_interval)
    : loader_(std::move(loader)), min_interval_(min_interval) {
  if (mounts.size() > kMaxMounts) mounts.resize(kMaxMounts);
  tables_.push_back(std::make_shared<const MountTable>(std::move(mounts)));
}

std::shared_ptr<const MountTable> LiveMountTable::Current() const {
  std::lock_guard lock(mu_);
  return tables_.back();
}

Result<ResolvedPath> LiveMountTable::Resolve(std::string_view path_or_uri) const {
  auto r = Current()->Resolve(path_or_uri);
  if (r || r.error().code() != Code::kNotFound || !loader_) return r;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (last_load_ != std::chrono::steady_clock::time_point{} && now - last_load_ < min_interval_) return r;
  }
  auto added = Reload();
  if (!added) {
    spdlog::warn("cannot reload the mount table: {}", added.error().ToString());
    return r;
  }
  return *added > 0 ? Current()->Resolve(path_or_uri) : r;
}

Result<size_t> LiveMountTable::Reload() const {
  if (!loader_) return size_t{0};
  std::lock_guard load(load_mu_);
  {
    std::lock_guard lock(mu_);
    last_load_ = std::chrono::steady_clock::now();
  }
  auto mounts = loader_();
  if (!mounts) return Err(mounts.error());
  return Add(*mounts);
}

size_t LiveMountTable::Add(const std::vector<MountConfig>& mounts) const {
  std::lock_guard lock(mu_);
  std::vector<MountConfig> next = tables_.back()->mounts();
  const size_t before = next.size();
  for (const auto& m : mounts) {
    bool known = false, clash = false;
    for (const auto& have : next) {
      if (have.path == m.path) known = true;
      else if (Nests(have.path, m.path)) clash = true;
    }
    if (known) continue;  // the first definition of a path stays (a change takes a restart)
    if (clash) {
      spdlog::warn("mount {} -> {} is not added: it nests with a mount already in the table", m.path, m.ufs);
      continue;
    }
    if (next.size() >= kMaxMounts) {
      spdlog::warn("mount {} -> {} is not added: the table holds {} mounts, the most there may be", m.path, m.ufs,
                   kMaxMounts);
      continue;
    }
    spdlog::info("mount {} -> {} added to the mount table", m.path, m.ufs);
    next.push_back(m);
  }
  const size_t added = next.size() - before;
  if (added > 0) tables_.push_back(std::make_shared<const MountTable>(std::move(next)));
  return added;
}

}  // namespace shoal
