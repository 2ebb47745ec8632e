#include "cluster/hot_shards.h"

#include <xxhash.h>

#include <algorithm>

namespace shoal {

namespace {
ShardHeat::Options Checked(ShardHeat::Options o) {
  if (o.window.count() <= 0) o.window = std::chrono::milliseconds(1'000);
  return o;
}
}  // namespace

ShardHeat::ShardHeat(Options options) : options_(Checked(options)), cool_rps_(options.hot_rps / 4) {}

size_t ShardHeat::Column(uint64_t hash, size_t row) {
  // Double hashing: row i uses h1 + i * h2 (h2 odd), enough independence for
  // a count-min sketch of a few rows.
  const uint64_t h1 = hash, h2 = (hash >> 32 | hash << 32) | 1;
  return static_cast<size_t>((h1 + row * h2) % kColumns);
}

void ShardHeat::AdvanceLocked(Clock::time_point now) {
  if (!started_) {
    started_ = true;
    window_start_ = now;
    return;
  }
  if (now < window_start_ + options_.window) return;
  if (now >= window_start_ + 2 * options_.window) {
    // Idle for a whole window or more: nothing counted is recent.
    for (auto& row : previous_) row.fill(0);
    for (auto& row : current_) row.fill(0);
    window_start_ = now;
  } else {
    previous_ = current_;
    for (auto& row : current_) row.fill(0);
    window_start_ += options_.window;
  }
  CoolLocked(now);
}

double ShardHeat::RateLocked(uint64_t hash, Clock::time_point now) const {
  uint32_t cur = UINT32_MAX, prev = UINT32_MAX;
  for (size_t r = 0; r < kRows; ++r) {
    const size_t c = Column(hash, r);
    cur = std::min(cur, current_[r][c]);
    prev = std::min(prev, previous_[r][c]);
  }
  const double window = std::chrono::duration<double>(options_.window).count();
  const double into = std::chrono::duration<double>(now - window_start_).count() / window;
  const double overlap = 1.0 - std::clamp(into, 0.0, 1.0);
  return (cur + prev * overlap) / window;
}

void ShardHeat::CoolLocked(Clock::time_point now) {
  for (auto it = hot_.begin(); it != hot_.end();) {
    if (RateLocked(XXH3_64bits(it->first.data(), it->first.size()), now) < cool_rps_) {
      it = hot_.erase(it);
      cooled_.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++it;
    }
  }
}

bool ShardHeat::Note(std::string_view key, std::string_view path, uint64_t shard, Clock::time_point now) {
  if (options_.hot_rps <= 0) return false;
  const uint64_t hash = XXH3_64bits(key.data(), key.size());
  std::lock_guard lock(mu_);
  AdvanceLocked(now);
  for (size_t r = 0; r < kRows; ++r) {
    uint32_t& n = current_[r][Column(hash, r)];
    if (n < UINT32_MAX) ++n;
  }
  const double rps = RateLocked(hash, now);
  auto it = hot_.find(std::string(key));
  if (it != hot_.end()) {
    if (rps >= cool_rps_) return true;
    hot_.erase(it);
    cooled_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (rps < options_.hot_rps) return false;
  if (hot_.size() >= options_.max_hot) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  hot_.emplace(std::string(key), Entry{std::string(path), shard, now});
  heated_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

double ShardHeat::Rate(std::string_view key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  AdvanceLocked(now);
  return RateLocked(XXH3_64bits(key.data(), key.size()), now);
}

std::vector<ShardHeat::Hot> ShardHeat::HotShards(Clock::time_point now) {
  std::lock_guard lock(mu_);
  AdvanceLocked(now);
  CoolLocked(now);
  std::vector<Hot> out;
  for (const auto& [key, e] : hot_) {
    out.push_back({e.path, e.shard, RateLocked(XXH3_64bits(key.data(), key.size()), now),
                   std::chrono::duration<double>(now - e.since).count()});
  }
  std::sort(out.begin(), out.end(), [](const Hot& a, const Hot& b) { return a.rps > b.rps; });
  return out;
}

void HotKeys::Mark(const std::string& key, uint32_t spread, Clock::time_point now) {
  spread = std::clamp<uint32_t>(spread, 2, kMaxSpread);
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end() && keys_.size() >= kMaxKeys) {
    std::erase_if(keys_, [&](const auto& kv) { return kv.second.until <= now; });
    if (keys_.size() >= kMaxKeys) return;  // a bound: the oldest marks expire first
  }
  keys_[key] = Entry{spread, now + kHold};
  size_.store(keys_.size(), std::memory_order_relaxed);
}

void HotKeys::Clear(const std::string& key) {
  std::lock_guard lock(mu_);
  keys_.erase(key);
  size_.store(keys_.size(), std::memory_order_relaxed);
}

uint32_t HotKeys::Spread(const std::string& key, Clock::time_point now) {
  if (empty()) return 0;
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) return 0;
  if (it->second.until <= now) {
    keys_.erase(it);
    size_.store(keys_.size(), std::memory_order_relaxed);
    return 0;
  }
  return it->second.spread;
}

}  // namespace shoal
