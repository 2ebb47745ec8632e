#include "cluster/router.h"

#include "common/units.h"

namespace shoal {

std::string WorkerName(const WorkerEntry& w) { return w.id == w.address ? w.address : w.id + " at " + w.address; }

Router::Router(std::shared_ptr<const Membership> membership, WorkerHealth* health, Options options)
    : membership_(std::move(membership)), health_(health), options_(options) {}

Router::Candidates Router::For(std::string_view ring_key) const {
  Candidates c;
  c.ring = membership_->Current();
  if (c.ring->ring.empty()) return c;
  for (size_t i : c.ring->ring.Owners(ring_key, 1 + options_.replicas)) {
    const WorkerEntry* w = &c.ring->workers[i];
    if (auto why = health_->DownReason(*w)) {
      c.down.emplace_back(w, std::move(*why));
    } else {
      c.live.push_back(w);
    }
  }
  return c;
}

std::pair<std::shared_ptr<const RingSnapshot>, std::vector<Router::Member>> Router::Members() const {
  auto ring = membership_->Current();
  std::vector<Member> out;
  out.reserve(ring->workers.size());
  for (const auto& w : ring->workers) out.push_back({&w, health_->DownReason(w)});
  return {std::move(ring), std::move(out)};
}

void Router::Append(std::string* out, const std::string& text) {
  if (!out->empty()) *out += "; ";
  *out += text;
}

Status Router::NoFallback(std::string_view what, const std::string& failed) const {
  return Status(Code::kUnavailable, std::string(what) + ": " + failed +
                                        "; client.ufs_fallback is off, so the under-store was not tried: start the "
                                        "worker, or turn client.ufs_fallback on");
}

Status Router::DeadlinePassed(std::string_view what, const std::string& failed) const {
  return Status(Code::kTimeout, std::string(what) + " did not finish within client.timeout (" +
                                    FormatDuration(options_.timeout) + ")" + (failed.empty() ? "" : ": " + failed) +
                                    "; check the workers, or raise client.timeout");
}

Status Router::StoreFailed(std::string_view what, const std::string& failed, const Status& store) const {
  std::string how = store.code() == Code::kTimeout
                        ? "; the under-store may be stalled: check it, or raise client.timeout (" +
                              FormatDuration(options_.timeout) + ") if it is only slow"
                        : "; check that the under-store is reachable";
  return Status(store.code(), std::string(what) + ": " + failed + ", and reading the under-store directly failed: " +
                                  store.message() + how);
}

}  // namespace shoal
