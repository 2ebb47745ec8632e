// InodeTable: the inode numbers the FUSE mount has given the kernel.
//
// An inode is a (parent, name) entry plus the number of lookups the kernel
// holds on it. Every reply that hands the kernel an inode (lookup,
// readdirplus, create, mkdir) counts one lookup; forget() gives them back, and
// an inode whose count drops to zero is erased. Memory is therefore bounded
// by what the kernel keeps in its inode cache (which it trims under memory
// pressure), not by what was ever listed: about 150 bytes per inode with
// names of up to 15 bytes (144 measured in inode_table_test.cc), plus longer names.
//
// Numbers are never reused (64-bit counter), so no generation is needed.
// Paths are not stored per inode: an inode knows its parent and name, and a
// rename moves one entry.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace shoal::fuse {

class InodeTable {
 public:
  static constexpr uint64_t kRoot = 1;
  using Clock = std::chrono::steady_clock;

  InodeTable();

  // The inode of `name` in directory `parent`, made if needed, with one more
  // kernel lookup counted. An existing entry of the other type (a file
  // replaced by a directory) is detached and a new inode made: the kernel
  // must never see an inode change type.
  uint64_t Lookup(uint64_t parent, std::string_view name, bool is_dir);
  // The kernel dropped `n` lookups of `ino`.
  void Forget(uint64_t ino, uint64_t n);

  // The path of `ino` relative to the root ("" for the root, "a/b" below
  // it); nullopt for an unknown or detached inode.
  std::optional<std::string> Path(uint64_t ino) const;
  std::optional<bool> IsDir(uint64_t ino) const;
  // The parent of `ino` (the root is its own parent); nullopt when unknown.
  std::optional<uint64_t> Parent(uint64_t ino) const;
  // The inode of an entry the kernel already holds, without counting a lookup.
  std::optional<uint64_t> Find(uint64_t parent, std::string_view name) const;

  // Records that the kernel's page cache of `ino` now holds a version (a
  // hash of it, never 0): the pages may be kept when it held the same one.
  // Returns the version recorded before (0: none).
  uint64_t SwapPageVersion(uint64_t ino, uint64_t version_hash);
  // Whether the last open of `ino` that kept the kernel's cached pages was
  // served without any read reaching the mount: the kernel holds the file,
  // so the next open need not bring its first bytes. A new version clears it.
  bool PagesHeld(uint64_t ino) const;
  void SetPagesHeld(uint64_t ino, bool held);
  // Directory listings cached by the kernel: true while the listing of `ino`
  // cached until a time after now; otherwise (re)starts the window until
  // `until` and returns false.
  bool KeepListing(uint64_t ino, Clock::time_point until);

  // Entry changes made through the mount (unlink, rmdir, rename): the
  // entries go; inodes the kernel still holds stay until forgotten.
  void Remove(uint64_t parent, std::string_view name);
  void Move(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name);

  // Inodes held, the root included.
  size_t size() const;

 private:
  struct Node {
    uint64_t parent = 0;  // 0: detached
    std::string name;
    uint64_t lookups = 0;
    uint64_t page_version = 0;  // 0: nothing cached yet
    Clock::time_point listing_until{};
    bool is_dir = false;
    bool pages_held = false;
  };
  struct DentryKey {
    uint64_t parent;
    std::string_view name;  // points into the child's Node::name
    bool operator==(const DentryKey&) const = default;
  };
  struct DentryHash {
    size_t operator()(const DentryKey& k) const noexcept;
  };

  void DetachLocked(uint64_t ino, Node& node);

  mutable std::mutex mu_;
  uint64_t next_ = kRoot + 1;
  std::unordered_map<uint64_t, Node> nodes_;
  std::unordered_map<DentryKey, uint64_t, DentryHash> dentries_;
};

}  // namespace shoal::fuse
