// RingHistory: the current ring snapshot of a Membership and the few before
// it, as this process saw them. A worker asks it, on a miss, who held a
// shard before the ring changed (src/worker/peer_fetch.h).
//
// It polls nothing: Observe() records Membership::Current() when its version
// is new, and callers call it on the paths that need the history (every
// peer-fetch lookup), plus once at start. A worker that joins has no "before"
// of its own; for it the previous owner of a key is the next worker on the
// current ring after itself, which PreviousHolders() includes too.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/membership.h"

namespace shoal {

class RingHistory {
 public:
  static constexpr size_t kKept = 4;  // snapshots kept, the current one included

  explicit RingHistory(std::shared_ptr<const Membership> membership);

  // Records the membership's current snapshot if its version is new; returns it.
  std::shared_ptr<const RingSnapshot> Observe();

  // Workers other than `self` (a worker id) that may hold `ring_key`'s data,
  // best first, at most `max`, each a member of the current ring: the key's
  // owner in each earlier snapshot (newest first), then the next workers
  // after `self` among the key's first `replicas` + 1 holders on the current ring.
  std::vector<WorkerEntry> PreviousHolders(std::string_view ring_key, std::string_view self, size_t replicas,
                                           size_t max);

  size_t kept() const;

 private:
  std::shared_ptr<const Membership> membership_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const RingSnapshot>> snapshots_;  // newest first
};

}  // namespace shoal
