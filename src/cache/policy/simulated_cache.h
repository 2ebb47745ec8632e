// SimulatedCache: a cache of page ids with a byte capacity, run by a real
// EvictionPolicy, without data or disks. For the policy tests and the
// trace-driven simulator (bench/policy_sim); evicts as the PageStore does:
// what a page needs on a miss, and with watermarks, after a miss that leaves
// the cache above `high` percent of its capacity, down to `low` percent at
// once (the worker's background evictor, worker.eviction_high_watermark).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "cache/policy/eviction_policy.h"

namespace shoal {

class SimulatedCache {
 public:
  struct Watermarks {
    unsigned high, low;  // percent of the capacity; high 0: off
  };
  SimulatedCache(std::unique_ptr<EvictionPolicy> policy, uint64_t capacity, Watermarks w = {0, 0})
      : policy_(std::move(policy)), capacity_(capacity), watermarks_(w) {}

  // Reads one page: true on a hit; a miss caches it, evicting first.
  bool Access(const PageId& id, uint64_t bytes, EvictionPolicy::Time now) {
    if (cached_.contains(id)) {
      policy_->Touch(id, now);
      return true;
    }
    EvictTo(capacity_ - std::min(capacity_, bytes));
    cached_[id] = bytes;
    used_ += bytes;
    policy_->Insert(id, bytes, now);
    if (watermarks_.high > 0 && used_ * 100 > capacity_ * watermarks_.high) EvictTo(capacity_ * watermarks_.low / 100);
    return false;
  }

  bool contains(const PageId& id) const { return cached_.contains(id); }
  size_t pages() const { return cached_.size(); }
  uint64_t stray_victims() const { return stray_victims_; }
  EvictionPolicy& policy() { return *policy_; }

 private:
  // Evicts in the policy's order until at most `target` bytes are cached.
  void EvictTo(uint64_t target) {
    // Bounded: every pass removes a page.
    while (used_ > target && !cached_.empty()) {
      auto v = policy_->Victim();
      if (!v) break;
      auto it = cached_.find(*v);
      if (it == cached_.end()) {  // a policy bug: drop the stray id
        policy_->Erase(*v);
        ++stray_victims_;
        continue;
      }
      used_ -= it->second;
      cached_.erase(it);
      policy_->Erase(*v);
    }
  }

  std::unique_ptr<EvictionPolicy> policy_;
  uint64_t capacity_;
  Watermarks watermarks_;
  uint64_t used_ = 0;
  uint64_t stray_victims_ = 0;
  std::unordered_map<PageId, uint64_t, PageIdHash> cached_;
};

}  // namespace shoal
