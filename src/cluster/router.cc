#include "cluster/router.h"

#include <algorithm>
#include <functional>

#include "common/units.h"

namespace shoal {

std::string WorkerName(const WorkerEntry& w) { return w.id == w.address ? w.address : w.id + " at " + w.address; }

Router::Router(std::shared_ptr<const Membership> membership, WorkerHealth* health, Options options)
    : membership_(std::move(membership)), health_(health), options_(options) {}

std::atomic<uint32_t>& Router::Slot(const WorkerEntry& w) const {
  return in_flight_[std::hash<std::string>{}(w.id) % kSlots];
}

Router::Candidates Router::For(std::string_view ring_key, size_t n, bool spread) const {
  Candidates c;
  c.ring = membership_->Current();
  if (c.ring->ring.empty()) return c;
  if (n == 0) n = 1 + options_.replicas;
  for (size_t i : c.ring->ring.Owners(ring_key, n)) {
    const WorkerEntry* w = &c.ring->workers[i];
    if (auto why = health_->DownReason(*w)) {
      c.down.emplace_back(w, std::move(*why));
    } else {
      c.live.push_back(w);
    }
  }
  if (spread && c.live.size() > 1) {
    const size_t turn = round_robin_.fetch_add(1, std::memory_order_relaxed) % c.live.size();
    std::rotate(c.live.begin(), c.live.begin() + static_cast<std::ptrdiff_t>(turn), c.live.end());
  }
  if (c.live.size() > 1) {
    // Best first: on this host, then fewest calls in flight; ties keep ring order.
    struct Rank {
      bool remote;
      uint32_t busy;
      const WorkerEntry* w;
    };
    std::vector<Rank> ranks;
    for (const WorkerEntry* w : c.live) {
      ranks.push_back({!(options_.is_local && options_.is_local(*w)), InFlight(*w), w});
    }
    std::stable_sort(ranks.begin(), ranks.end(), [](const Rank& a, const Rank& b) {
      return a.remote != b.remote ? a.remote < b.remote : a.busy < b.busy;
    });
    for (size_t i = 0; i < ranks.size(); ++i) c.live[i] = ranks[i].w;
  }
  return c;
}

std::pair<std::shared_ptr<const RingSnapshot>, std::vector<const WorkerEntry*>> Router::Holders(
    std::string_view ring_key, size_t n) const {
  auto ring = membership_->Current();
  std::vector<const WorkerEntry*> out;
  if (!ring->ring.empty()) {
    for (size_t i : ring->ring.Owners(ring_key, n)) out.push_back(&ring->workers[i]);
  }
  return {std::move(ring), std::move(out)};
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
  return Status(store.code(), std::string(what) + ": " + failed +
                                  ", and reading the under-store directly failed: " + store.message() + how);
}

}  // namespace shoal
