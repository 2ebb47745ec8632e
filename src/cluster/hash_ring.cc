#include "cluster/hash_ring.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <utility>

namespace shoal {
namespace {

// splitmix64's finaliser: a strong 64-bit mix, so point j of a member lands
// like an independent random draw.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t KeyHash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

std::vector<uint32_t> PointCounts(const std::vector<uint64_t>& weights) {
  long double sum = 0;
  size_t nonzero = 0;
  for (uint64_t w : weights) {
    if (w > 0) {
      sum += static_cast<long double>(w);
      ++nonzero;
    }
  }
  long double mean = nonzero ? sum / static_cast<long double>(nonzero) : 1;
  // The unit: the power of two nearest the mean, so equal weights give
  // exactly kPointsPerUnit each and small changes of the mean change nothing.
  long double unit = std::exp2(std::round(std::log2(mean)));
  std::vector<uint32_t> counts;
  counts.reserve(weights.size());
  for (uint64_t w : weights) {
    long double units = w > 0 ? static_cast<long double>(w) / unit : mean / unit;
    units = std::min<long double>(units, HashRing::kMaxUnits);
    auto c = static_cast<uint32_t>(std::llround(units * HashRing::kPointsPerUnit));
    counts.push_back(std::max<uint32_t>(c, 1));
  }
  return counts;
}

}  // namespace

HashRing::HashRing(std::vector<std::string> members) : HashRing(std::move(members), std::vector<uint64_t>()) {}

HashRing::HashRing(std::vector<std::string> members, const std::vector<uint64_t>& weights)
    : members_(std::move(members)) {
  std::vector<uint64_t> w = weights;
  w.resize(members_.size(), 0);
  point_counts_ = PointCounts(w);
  size_t total = std::accumulate(point_counts_.begin(), point_counts_.end(), size_t{0});
  // (position, member hash, member index): the member hash breaks the (never
  // seen) tie of two equal positions the same way whatever the member order.
  struct Placed {
    uint64_t pos;
    uint64_t member_hash;
    uint32_t member;
  };
  std::vector<Placed> points;
  points.reserve(total);
  member_hashes_.reserve(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    uint64_t mh = XXH3_64bits(members_[i].data(), members_[i].size());
    member_hashes_.push_back(mh);
    for (uint32_t j = 0; j < point_counts_[i]; ++j) {
      points.push_back({Mix(mh + Mix(j)), mh, static_cast<uint32_t>(i)});
    }
  }
  std::sort(points.begin(), points.end(), [](const Placed& a, const Placed& b) {
    return a.pos != b.pos ? a.pos < b.pos : a.member_hash < b.member_hash;
  });
  points_.reserve(total);
  for (const auto& p : points) points_.push_back({p.pos, p.member});
  if (total == 0) return;
  // About one point per bucket.
  int bits = std::max(1, static_cast<int>(std::bit_width(total - 1)));
  bits = std::min(bits, 24);
  bucket_shift_ = 64 - bits;
  buckets_.assign((size_t{1} << bits) + 1, 0);
  size_t p = 0;
  for (size_t b = 0; b < (size_t{1} << bits); ++b) {
    uint64_t start = static_cast<uint64_t>(b) << bucket_shift_;
    while (p < total && points_[p].pos < start) ++p;
    buckets_[b] = static_cast<uint32_t>(p);
  }
  buckets_.back() = static_cast<uint32_t>(total);
}

size_t HashRing::FirstPoint(uint64_t h) const {
  size_t b = static_cast<size_t>(h >> bucket_shift_);
  size_t i = buckets_[b];
  size_t end = buckets_[b + 1];
  while (i < end && points_[i].pos < h) ++i;
  return i == points_.size() ? 0 : i;
}

uint64_t HashRing::Probe(uint64_t key_hash, uint32_t p) {
  return p == 0 ? key_hash : Mix(key_hash + 0x9e3779b97f4a7c15ull * p);
}

size_t HashRing::Owner(std::string_view key) const {
  const uint64_t h = KeyHash(key);
  uint64_t best_distance = ~0ull;
  uint32_t best = points_[0].owner;
  for (uint32_t p = 0; p < kProbes; ++p) {
    uint64_t x = Probe(h, p);
    size_t i = FirstPoint(x);
    uint64_t d = points_[i].pos - x;  // clockwise, modulo 2^64
    uint32_t m = points_[i].owner;
    if (d < best_distance || (d == best_distance && member_hashes_[m] < member_hashes_[best])) {
      best_distance = d;
      best = m;
    }
  }
  return best;
}

std::vector<size_t> HashRing::Owners(std::string_view key, size_t n) const {
  n = std::min(n, members_.size());
  std::vector<size_t> out;
  if (n == 0) return out;
  // A member among the n closest has one probe (its closest) where fewer than
  // n other members come before it: walking each probe forward to its first
  // n distinct members finds every candidate with its own closest distance.
  const uint64_t h = KeyHash(key);
  std::vector<std::pair<uint64_t, uint32_t>> best;  // (distance, member), one per member
  std::vector<uint32_t> seen;
  for (uint32_t p = 0; p < kProbes; ++p) {
    uint64_t x = Probe(h, p);
    size_t i = FirstPoint(x);
    seen.clear();
    for (size_t steps = 0; steps < points_.size() && seen.size() < n; ++steps) {
      uint32_t m = points_[i].owner;
      if (std::find(seen.begin(), seen.end(), m) == seen.end()) {
        seen.push_back(m);
        uint64_t d = points_[i].pos - x;
        auto it = std::find_if(best.begin(), best.end(), [m](const auto& b) { return b.second == m; });
        if (it == best.end()) best.emplace_back(d, m);
        else if (d < it->first) it->first = d;
      }
      if (++i == points_.size()) i = 0;
    }
  }
  std::sort(best.begin(), best.end(), [this](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : member_hashes_[a.second] < member_hashes_[b.second];
  });
  for (size_t i = 0; i < n && i < best.size(); ++i) out.push_back(best[i].second);
  return out;
}

std::vector<double> HashRing::Shares() const {
  std::vector<double> share(members_.size(), 0);
  const size_t m = points_.size();
  if (m == 0) return share;
  if (m == 1) {
    share[points_[0].owner] = 1;
    return share;
  }
  constexpr long double kCircle = 18446744073709551616.0L;  // 2^64
  // Point i's arc: from the point before it (wrapping) to it, as a fraction of the circle.
  std::vector<long double> gap(m);
  for (size_t i = 0; i < m; ++i) {
    uint64_t prev = i == 0 ? points_.back().pos : points_[i - 1].pos;
    gap[i] = static_cast<long double>(points_[i].pos - prev) / kCircle;
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gap[a] < gap[b]; });
  // F(t) = k * integral_0^t (1 - G(s))^(k-1) ds, with G piecewise linear:
  // between the r-th and (r+1)-th smallest gaps, G(s) = S_r + (m - r) s.
  const long double k = kProbes;
  long double f = 0, sum_small = 0, t = 0;
  for (size_t r = 0; r < m; ++r) {
    size_t i = order[r];
    long double slope = static_cast<long double>(m - r);
    auto rest = [&](long double s) { return std::max(0.0L, 1 - sum_small - slope * s); };
    // integral of k (1 - S - slope s)^(k-1) ds from t to gap[i] = (rest(t)^k - rest(gap)^k) / slope
    f += (std::pow(rest(t), k) - std::pow(rest(gap[i]), k)) / slope;
    t = gap[i];
    share[points_[i].owner] += static_cast<double>(f);
    sum_small += gap[i];
  }
  return share;
}

std::string HashRing::ShardKey(std::string_view path, std::string_view version, uint64_t shard) {
  std::string k;
  k.reserve(path.size() + version.size() + 24);
  k.append("d\n").append(path).append("\n").append(version).append("\n").append(std::to_string(shard));
  return k;
}

std::string HashRing::DataKey(std::string_view path, std::string_view version, uint64_t shard) {
  return shard == 0 ? MetaKey(path) : ShardKey(path, version, shard);
}

std::string HashRing::MetaKey(std::string_view path) {
  std::string k = "m\n";
  k.append(path);
  return k;
}

}  // namespace shoal
