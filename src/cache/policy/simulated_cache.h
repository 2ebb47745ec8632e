// SimulatedCache: a cache of page ids with a byte capacity, run by a real
// EvictionPolicy, without data or disks. For the policy tests and the
// trace-driven simulator (bench/policy_sim); evicts as the PageStore does.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "cache/policy/eviction_policy.h"

namespace shoal {

class SimulatedCache {
 public:
  SimulatedCache(std::unique_ptr<EvictionPolicy> policy, uint64_t capacity)
      : policy_(std::move(policy)), capacity_(capacity) {}

  // Reads one page: true on a hit; a miss caches it, evicting first.
  bool Access(const PageId& id, uint64_t bytes, EvictionPolicy::Time now) {
    if (cached_.contains(id)) {
      policy_->Touch(id, now);
      return true;
    }
    // Bounded: every pass removes a page.
    while (used_ + bytes > capacity_ && !cached_.empty()) {
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
    cached_[id] = bytes;
    used_ += bytes;
    policy_->Insert(id, bytes, now);
    return false;
  }

  bool contains(const PageId& id) const { return cached_.contains(id); }
  size_t pages() const { return cached_.size(); }
  uint64_t stray_victims() const { return stray_victims_; }
  EvictionPolicy& policy() { return *policy_; }

 private:
  std::unique_ptr<EvictionPolicy> policy_;
  uint64_t capacity_;
  uint64_t used_ = 0;
  uint64_t stray_victims_ = 0;
  std::unordered_map<PageId, uint64_t, PageIdHash> cached_;
};

}  // namespace shoal
