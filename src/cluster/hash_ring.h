// HashRing: chooses which worker owns a piece of data, the same way on every
// client, with no coordination.
//
// It is multi-probe consistent hashing with weighted points. Each member puts
// points on a 64-bit circle at hash(member id, j), j < its point count, which
// is proportional to its weight (kPointsPerUnit for a member of the unit
// weight). A key is hashed to kProbes positions on the circle; the key belongs
// to the member of the point that follows one of its probes most closely, and
// its replicas are the next closest distinct members. Adding a member moves
// only the keys whose closest point is now one of its own (about w/W of them);
// removing one moves only its own keys: every other key keeps its owner.
//
// Why probes: with one probe (a plain ring) a member's share is the length of
// the arcs before its points, which varies like 1/sqrt(points) and needs
// thousands of points per member to stay within 5% of fair. With k probes a
// point wins a key when a probe lands in a short window just before it, of
// about the same length for every point whatever its arc, so shares even out
// with few points (bench/ring_sim: within 5% at 1,000 workers with 21 probes
// and 16 points per member), and the point table stays small enough for the
// cache. A lookup is kProbes O(1) table look-ups (a bucket index over the top
// bits of the hash, then a few compares).
//
// The unit weight: weights are relative. The unit is the power of two nearest
// the members' mean weight (kPointsPerUnit points per unit), so equal weights
// give every member the same point count (exactly kPointsPerUnit for the
// static list), and a join or leave changes no other member's point count
// unless it moves the mean past a power of two.
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
  // Points per member of the unit weight.
  static constexpr uint32_t kPointsPerUnit = 32;
  // Positions a key is hashed to.
  static constexpr uint32_t kProbes = 32;
  // A member's points are capped at this many units (a weight above
  // kMaxUnits x the mean counts as kMaxUnits x).
  static constexpr uint32_t kMaxUnits = 64;

  // Every member with the same weight.
  explicit HashRing(std::vector<std::string> members);
  // weights[i] is members[i]'s (any positive scale, e.g. cache bytes). A
  // weight of 0 counts as the mean of the others.
  HashRing(std::vector<std::string> members, const std::vector<uint64_t>& weights);

  bool empty() const { return members_.empty(); }
  size_t size() const { return members_.size(); }
  const std::vector<std::string>& members() const { return members_; }

  // REQUIRES: !empty(). Index into members() of the key's owner.
  size_t Owner(std::string_view key) const;
  // The first min(n, size()) distinct owners, best first (owner, then replicas).
  std::vector<size_t> Owners(std::string_view key, size_t n) const;

  // The fraction of the key space each member owns (sums to 1): what its load
  // will be, for status and the ring simulator. Exact for independent uniform
  // probes: a point with the arc g before it wins with probability
  // k * integral_0^g (1 - G(t))^(k-1) dt, where G(t) = sum_i min(t, g_i) is
  // the chance one probe lands within t before some point.
  std::vector<double> Shares() const;
  // How many points member i has on the circle.
  uint32_t Points(size_t i) const { return point_counts_[i]; }

  // The ring key of one shard of one version of a file.
  static std::string ShardKey(std::string_view path, std::string_view version, uint64_t shard);
  // Where a shard's data lives: shard 0 with the path's metadata (MetaKey), so
  // the worker that stats a file also holds its first bytes (a small file is
  // one under-store request, stat and data together); later shards by ShardKey.
  static std::string DataKey(std::string_view path, std::string_view version, uint64_t shard);
  // The ring key for a path's metadata (stat/list).
  static std::string MetaKey(std::string_view path);

 private:
  size_t FirstPoint(uint64_t h) const;  // index of the first point >= h (wrapping)
  static uint64_t Probe(uint64_t key_hash, uint32_t p);

  std::vector<std::string> members_;
  std::vector<uint32_t> point_counts_;
  // Sorted by position; position and owner side by side, so a probe touches one cache line.
  struct Point {
    uint64_t pos;
    uint32_t owner;  // index into members_
  };
  std::vector<Point> points_;
  std::vector<uint64_t> member_hashes_;  // breaks (never seen) distance ties the same way everywhere
  std::vector<uint32_t> buckets_;        // first point index per top-`bucket_bits_` hash prefix, plus one end entry
  int bucket_shift_ = 64;
};

}  // namespace shoal
