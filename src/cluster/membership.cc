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

RingSnapshot::RingSnapshot(uint64_t v, std::vector<WorkerEntry> w)
    : version(v), workers(std::move(w)), ring(Ids(workers)) {}

StaticMembership::StaticMembership(std::vector<WorkerEntry> workers)
    : snapshot_(std::make_shared<const RingSnapshot>(1, std::move(workers))) {}

}  // namespace shoal
