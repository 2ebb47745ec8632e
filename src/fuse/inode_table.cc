#include "fuse/inode_table.h"

#include <utility>
#include <vector>

namespace shoal::fuse {

size_t InodeTable::DentryHash::operator()(const DentryKey& k) const noexcept {
  return std::hash<std::string_view>()(k.name) ^ (k.parent * 0x9e3779b97f4a7c15ull);
}

InodeTable::InodeTable() {
  Node root;
  root.is_dir = true;
  root.lookups = 1;  // the kernel never forgets the root
  nodes_.emplace(kRoot, std::move(root));
}

uint64_t InodeTable::Lookup(uint64_t parent, std::string_view name, bool is_dir) {
  std::lock_guard lock(mu_);
  if (auto it = dentries_.find(DentryKey{parent, name}); it != dentries_.end()) {
    Node& n = nodes_.at(it->second);
    if (n.is_dir == is_dir) {
      ++n.lookups;
      return it->second;
    }
    DetachLocked(it->second, n);
  }
  uint64_t ino = next_++;
  Node node;
  node.parent = parent;
  node.name = std::string(name);
  node.lookups = 1;
  node.is_dir = is_dir;
  auto [it, inserted] = nodes_.emplace(ino, std::move(node));
  // The key's name points into the node, whose address is stable in the map.
  dentries_.emplace(DentryKey{parent, it->second.name}, ino);
  return ino;
}

void InodeTable::DetachLocked(uint64_t ino, Node& node) {
  if (node.parent == 0) return;
  dentries_.erase(DentryKey{node.parent, node.name});
  node.parent = 0;
}

void InodeTable::Forget(uint64_t ino, uint64_t n) {
  if (ino == kRoot) return;
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  if (it->second.lookups > n) {
    it->second.lookups -= n;
    return;
  }
  DetachLocked(ino, it->second);
  nodes_.erase(it);
}

std::optional<std::string> InodeTable::Path(uint64_t ino) const {
  std::lock_guard lock(mu_);
  std::vector<const std::string*> parts;
  while (ino != kRoot) {
    auto it = nodes_.find(ino);
    if (it == nodes_.end() || it->second.parent == 0) return std::nullopt;
    parts.push_back(&it->second.name);
    ino = it->second.parent;
    if (parts.size() > 4096) return std::nullopt;  // a cycle would be a bug: fail, never spin
  }
  std::string out;
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
    if (!out.empty()) out += '/';
    out += **p;
  }
  return out;
}

std::optional<bool> InodeTable::IsDir(uint64_t ino) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return std::nullopt;
  return it->second.is_dir;
}

uint64_t InodeTable::SwapPageVersion(uint64_t ino, uint64_t version_hash) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return 0;
  if (it->second.page_version != version_hash) it->second.pages_held = false;
  return std::exchange(it->second.page_version, version_hash);
}

bool InodeTable::PagesHeld(uint64_t ino) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  return it != nodes_.end() && it->second.pages_held;
}

void InodeTable::SetPagesHeld(uint64_t ino, bool held) {
  std::lock_guard lock(mu_);
  if (auto it = nodes_.find(ino); it != nodes_.end()) it->second.pages_held = held;
}

std::optional<uint64_t> InodeTable::Parent(uint64_t ino) const {
  if (ino == kRoot) return kRoot;
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end() || it->second.parent == 0) return std::nullopt;
  return it->second.parent;
}

std::optional<uint64_t> InodeTable::Find(uint64_t parent, std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = dentries_.find(DentryKey{parent, name});
  if (it == dentries_.end()) return std::nullopt;
  return it->second;
}

bool InodeTable::KeepListing(uint64_t ino, Clock::time_point until) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return false;
  if (Clock::now() < it->second.listing_until) return true;
  it->second.listing_until = until;
  return false;
}

void InodeTable::Remove(uint64_t parent, std::string_view name) {
  std::lock_guard lock(mu_);
  auto it = dentries_.find(DentryKey{parent, name});
  if (it == dentries_.end()) return;
  uint64_t ino = it->second;
  DetachLocked(ino, nodes_.at(ino));
}

void InodeTable::Move(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name) {
  std::lock_guard lock(mu_);
  if (auto target = dentries_.find(DentryKey{new_parent, new_name}); target != dentries_.end()) {
    uint64_t ino = target->second;
    DetachLocked(ino, nodes_.at(ino));
  }
  auto it = dentries_.find(DentryKey{parent, name});
  if (it == dentries_.end()) return;
  uint64_t ino = it->second;
  Node& n = nodes_.at(ino);
  dentries_.erase(it);
  n.parent = new_parent;
  n.name = std::string(new_name);
  dentries_.emplace(DentryKey{new_parent, n.name}, ino);
}

size_t InodeTable::size() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

}  // namespace shoal::fuse
