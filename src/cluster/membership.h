// Membership: who is in the cluster, published as immutable ring snapshots.
//
// A RingSnapshot is one version of the member list with its hash ring. It
// never changes once published: a caller takes the current snapshot once per
// call and routes every piece of that call over it, so one call never mixes
// two memberships. A new membership (etcd, later) is a new snapshot with a
// higher version, swapped in whole.
//
// StaticMembership publishes the config's cluster.workers as version 1 and
// never changes. EtcdMembership (cluster/etcd_membership.h) publishes the
// workers registered in etcd, versioned by the etcd revision.
//
// Thread safety: RingSnapshot is immutable; Membership::Current() is safe from
// any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "cluster/hash_ring.h"
#include "common/config.h"

namespace shoal {

struct RingSnapshot {
  RingSnapshot(uint64_t version, std::vector<WorkerEntry> workers);
  // weights[i] is workers[i]'s ring weight (its cache capacity); 0 or missing
  // counts as the mean of the others.
  RingSnapshot(uint64_t version, std::vector<WorkerEntry> workers, std::vector<uint64_t> weights);

  uint64_t version;
  std::vector<WorkerEntry> workers;  // member i of `ring` is workers[i]
  std::vector<uint64_t> weights;     // parallel to workers (all 0 for a static list)
  HashRing ring;                     // keyed by worker id
};

class Membership {
 public:
  virtual ~Membership() = default;
  // The latest snapshot; never null (it may hold no workers).
  virtual std::shared_ptr<const RingSnapshot> Current() const = 0;
  // "static" or "etcd", for status.
  virtual std::string_view Kind() const { return "static"; }
};

class StaticMembership final : public Membership {
 public:
  explicit StaticMembership(std::vector<WorkerEntry> workers);
  std::shared_ptr<const RingSnapshot> Current() const override { return snapshot_; }
  std::string_view Kind() const override { return "static"; }

 private:
  std::shared_ptr<const RingSnapshot> snapshot_;
};

}  // namespace shoal
