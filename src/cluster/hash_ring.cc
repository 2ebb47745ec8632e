#include "cluster/hash_ring.h"

#include <xxhash.h>

#include <algorithm>

namespace shoal {
namespace {

// splitmix64's finaliser: a strong 64-bit mix, so score(key, member) behaves
// like an independent random draw per pair.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

HashRing::HashRing(std::vector<std::string> members) : members_(std::move(members)) {
  member_hashes_.reserve(members_.size());
  for (const auto& m : members_) member_hashes_.push_back(XXH3_64bits(m.data(), m.size()));
}

size_t HashRing::Owner(std::string_view key) const {
  uint64_t k = XXH3_64bits(key.data(), key.size());
  size_t best = 0;
  uint64_t best_score = 0;
  for (size_t i = 0; i < member_hashes_.size(); ++i) {
    uint64_t s = Mix(k ^ member_hashes_[i]);
    if (i == 0 || s > best_score) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

std::vector<size_t> HashRing::Owners(std::string_view key, size_t n) const {
  uint64_t k = XXH3_64bits(key.data(), key.size());
  std::vector<std::pair<uint64_t, size_t>> scored;
  scored.reserve(member_hashes_.size());
  for (size_t i = 0; i < member_hashes_.size(); ++i) scored.emplace_back(Mix(k ^ member_hashes_[i]), i);
  n = std::min(n, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<ptrdiff_t>(n), scored.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(scored[i].second);
  return out;
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
