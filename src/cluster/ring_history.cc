#include "cluster/ring_history.h"

#include <algorithm>

namespace shoal {

RingHistory::RingHistory(std::shared_ptr<const Membership> membership) : membership_(std::move(membership)) {
  Observe();
}

std::shared_ptr<const RingSnapshot> RingHistory::Observe() {
  auto now = membership_->Current();
  std::lock_guard lock(mu_);
  if (snapshots_.empty() || snapshots_.front()->version != now->version) {
    snapshots_.push_front(now);
    if (snapshots_.size() > kKept) snapshots_.pop_back();
  }
  return snapshots_.front();
}

size_t RingHistory::kept() const {
  std::lock_guard lock(mu_);
  return snapshots_.size();
}

std::vector<WorkerEntry> RingHistory::PreviousHolders(std::string_view ring_key, std::string_view self, size_t replicas,
                                                      size_t max) {
  Observe();
  std::deque<std::shared_ptr<const RingSnapshot>> snaps;
  {
    std::lock_guard lock(mu_);
    snaps = snapshots_;
  }
  const RingSnapshot& current = *snaps.front();
  std::vector<WorkerEntry> out;
  auto add = [&](const WorkerEntry& w) {
    if (out.size() >= max || w.id == self) return;
    // Only workers still in the ring (under their current address).
    auto it = std::find_if(current.workers.begin(), current.workers.end(),
                           [&](const WorkerEntry& c) { return c.id == w.id; });
    if (it == current.workers.end()) return;
    if (std::none_of(out.begin(), out.end(), [&](const WorkerEntry& o) { return o.id == it->id; })) out.push_back(*it);
  };
  for (size_t s = 1; s < snaps.size(); ++s) {
    if (!snaps[s]->ring.empty()) add(snaps[s]->workers[snaps[s]->ring.Owner(ring_key)]);
  }
  if (!current.ring.empty()) {
    for (size_t i : current.ring.Owners(ring_key, std::max<size_t>(replicas, 1) + 1)) add(current.workers[i]);
  }
  return out;
}

}  // namespace shoal
