// HashRing: chooses which worker owns a piece of data, the same way on every
// client, with no coordination.
//
// It is rendezvous (highest-random-weight) hashing: each key is scored against
// every member and the highest score wins; replicas are the next highest. This
// is a consistent hash: adding a member to N moves ~1/(N+1) of the keys (only
// those the new member wins), removing one moves only its own keys, and load is
// even without virtual nodes. A lookup costs one cheap mix per member, which is
// nothing next to a 64 MiB shard read for the cluster sizes Shoal targets.
//
// Thread safety: immutable after construction; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

class HashRing {
 public:
  explicit HashRing(std::vector<std::string> members);

  bool empty() const { return members_.empty(); }
  size_t size() const { return members_.size(); }
  const std::vector<std::string>& members() const { return members_; }

  // REQUIRES: !empty(). Index into members() of the key's owner.
  size_t Owner(std::string_view key) const;
  // The first min(n, size()) distinct owners, best first (owner, then replicas).
  std::vector<size_t> Owners(std::string_view key, size_t n) const;

  // The ring key of one shard of one version of a file.
  static std::string ShardKey(std::string_view path, std::string_view version, uint64_t shard);
  // Where a shard's data lives: shard 0 with the path's metadata (MetaKey), so
  // the worker that stats a file also holds its first bytes (a small file is
  // one under-store request, stat and data together); later shards by ShardKey.
  static std::string DataKey(std::string_view path, std::string_view version, uint64_t shard);
  // The ring key for a path's metadata (stat/list).
  static std::string MetaKey(std::string_view path);

 private:
  std::vector<std::string> members_;
  std::vector<uint64_t> member_hashes_;
};

}  // namespace shoal
