#include "cluster/membership.h"

namespace shoal {
namespace {

std::vector<std::string> Ids(const std::vector<WorkerEntry>& workers) {
  std::vector<std::string> ids;
  ids.reserve(workers.size());
  for (const auto& w : workers) ids.push_back(w.id);
  return ids;
}

}  // namespace

RingSnapshot::RingSnapshot(uint64_t v, std::vector<WorkerEntry> w) : RingSnapshot(v, std::move(w), {}) {}

RingSnapshot::RingSnapshot(uint64_t v, std::vector<WorkerEntry> w, std::vector<uint64_t> wt)
    : version(v), workers(std::move(w)), weights(std::move(wt)), ring(Ids(workers), (weights.resize(workers.size()), weights)) {}

StaticMembership::StaticMembership(std::vector<WorkerEntry> workers)
    : snapshot_(std::make_shared<const RingSnapshot>(1, std::move(workers))) {}

}  // namespace shoal
