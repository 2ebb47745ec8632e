// The ring a client routes by, rebuilt from Client::Ring(), so that a test or
// benchmark can tell which worker owns a key (and which one comes next).
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/membership.h"
#include "shoal/client.h"

namespace shoal::testing {

inline RingSnapshot SnapshotOf(const RingInfo& info) {
  std::vector<WorkerEntry> workers;
  std::vector<uint64_t> weights;
  for (const auto& m : info.members) {
    workers.push_back({m.id, m.address});
    weights.push_back(m.weight);
  }
  return RingSnapshot(info.version, std::move(workers), std::move(weights));
}

}  // namespace shoal::testing
