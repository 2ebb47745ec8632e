// Router: where a request for a ring key goes, and what happens when it fails.
// Every client call (stat, list, open, read, and the refresh/status fan-out)
// routes through here; failover is written once, in Route().
//
// For a key with N replicas (a path rule's `replicas: N`), the candidates are
// the N distinct workers that follow the key on the current ring snapshot, in
// ring order (owner first), minus the workers WorkerHealth has marked down.
// With N > 1 the live ones are tried best first: a worker on this host
// (short circuit) before the others, then the one with the fewest calls from
// this client in flight, ties in ring order. A hot key (cluster/hot_shards.h)
// is routed with `spread`: its ties go round robin instead, so that one
// client's reads of it alternate between the owner and the next workers.
//
// Route() tries the live candidates in order. A worker's answer (a value, or
// an error it reported such as NotFound, or a timeout while it was still
// working) is final. A worker failure (unreachable, silent, broken, not a
// Shoal worker) marks that worker down and moves on to the next candidate,
// and after the last one to the under-store directly when client.ufs_fallback
// is on, through the client's FallbackLimiter (a token bucket in bytes/s and
// requests/s): a call that would wait past its deadline for its turn fails
// with "under-store fallback rate-limited". With no workers configured at
// all, calls go to the under-store (not limited: that is the configuration).
// Everything happens before the call's one deadline; the under-store read gets
// what is left of it.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/fallback_limiter.h"
#include "cluster/membership.h"
#include "cluster/worker_health.h"
#include "shoal/status.h"

namespace shoal {

using Deadline = std::chrono::steady_clock::time_point;

// "w-1 at 127.0.0.1:7001", or the address alone when the id is the address.

// What one try of one worker came to.
std::string WorkerName(const WorkerEntry& w);

template <class T>
struct WorkerAttempt {
  Result<T> result;  // a value, or the worker's (final) error
  // The worker, not the request, failed; result's error says why and names
  // the worker. Route() marks it down and tries elsewhere.
  bool worker_failed = false;
};

template <class T>
WorkerAttempt<T> WorkerFailed(Status why) {
  return {Err(std::move(why)), true};
}

class Router {
 public:
  struct Options {
    bool ufs_fallback = true;
    std::chrono::milliseconds timeout{30'000};  // client.timeout, for messages
    size_t replicas = 0;                        // default candidates after the owner (RouteKey overrides)
    FallbackLimiter* limiter = nullptr;         // direct store reads after a worker failure; null: unlimited
    // Whether a worker is on this host (its short circuit is open): tried first among replicas.
    std::function<bool(const WorkerEntry&)> is_local;
  };

  // What Route() routes: a ring key, how many distinct workers hold it, and
  // the bytes a direct store read of it costs (for the FallbackLimiter).
  struct RouteKey {
    RouteKey(std::string_view k) : key(k) {}
    RouteKey(const std::string& k) : key(k) {}
    RouteKey(const char* k) : key(k) {}
    RouteKey(std::string_view k, size_t n, uint64_t bytes, bool spread = false)
        : key(k), replicas(n), store_bytes(bytes), spread(spread) {}
    std::string_view key;
    size_t replicas = 0;  // 0: 1 + Options::replicas
    uint64_t store_bytes = 0;
    bool spread = false;  // a hot key: ties between candidates go round robin
  };

  Router(std::shared_ptr<const Membership> membership, WorkerHealth* health, Options options);

  struct Candidates {
    std::shared_ptr<const RingSnapshot> ring;                 // keeps the entries below alive
    std::vector<const WorkerEntry*> live;                     // in order: owner, then replicas
    std::vector<std::pair<const WorkerEntry*, Status>> down;  // skipped, with why
  };
  // The ordered live candidates for a ring key (HashRing::MetaKey/DataKey):
  // `n` distinct workers in ring order (0: 1 + Options::replicas), the live
  // ones best first (see above); with `spread`, ties round robin.
  Candidates For(std::string_view ring_key, size_t n = 0, bool spread = false) const;
  // The `n` distinct workers for a ring key in plain ring order, down or not:
  // the holders of a replicated key (write-back uses the same list).
  std::pair<std::shared_ptr<const RingSnapshot>, std::vector<const WorkerEntry*>> Holders(std::string_view ring_key,
                                                                                          size_t n) const;
  // Calls from this client in flight on `worker` (approximate: a hashed slot).
  uint32_t InFlight(const WorkerEntry& worker) const { return Slot(worker).load(std::memory_order_relaxed); }

  struct Member {
    const WorkerEntry* entry;
    std::optional<Status> down;  // set when marked down (and why)
  };
  // Every member of the current snapshot, for fan-out calls.
  std::pair<std::shared_ptr<const RingSnapshot>, std::vector<Member>> Members() const;

  // Where the ring snapshots come from.
  const Membership& membership() const { return *membership_; }

  // A fan-out call found `worker` failing: it is marked down like in Route().
  void ReportFailure(const WorkerEntry& worker, const Status& why) { health_->MarkDown(worker, why); }

  // Routes one call for `ring_key`: `try_worker(const WorkerEntry&)` returns a
  // WorkerAttempt<T>; `try_store()` returns Result<T> from the under-store and
  // is given what is left of `deadline` by the caller's own means. `what`
  // names the call for messages ("stat /data/x").
  template <class T, class TryWorker, class TryStore>
  Result<T> Route(const RouteKey& key, Deadline deadline, std::string_view what, TryWorker&& try_worker,
                  TryStore&& try_store) const {
    Candidates c = For(key.key, key.replicas, key.spread);
    std::string failed;  // why each candidate could not be used, for the final message
    for (const auto& [w, why] : c.down)
      Append(&failed, "worker " + WorkerName(*w) + " is down (" + why.message() + ")");
    for (const WorkerEntry* w : c.live) {
      if (std::chrono::steady_clock::now() >= deadline) return Err(DeadlinePassed(what, failed));
      WorkerAttempt<T> a = [&] {
        InFlightGuard busy(Slot(*w));
        return try_worker(*w);
      }();
      if (!a.worker_failed) return std::move(a.result);
      health_->MarkDown(*w, a.result.error());
      Append(&failed, a.result.error().message());  // names the worker
    }
    if (!c.ring->workers.empty()) {
      if (!options_.ufs_fallback) return Err(NoFallback(what, failed));
      if (std::chrono::steady_clock::now() >= deadline) return Err(DeadlinePassed(what, failed));
      if (options_.limiter) {
        if (Status s = options_.limiter->Acquire(key.store_bytes, deadline, what); !s.ok()) {
          return Err(Status(s.code(), s.message() + (failed.empty() ? "" : " (after: " + failed + ")")));
        }
      }
    }
    Result<T> r = try_store();
    if (!r && !failed.empty() && (r.error().code() == Code::kTimeout || r.error().code() == Code::kUnavailable)) {
      return Err(StoreFailed(what, failed, r.error()));
    }
    return r;
  }

 private:
  static constexpr size_t kSlots = 256;
  struct InFlightGuard {
    explicit InFlightGuard(std::atomic<uint32_t>& s) : slot(s) { slot.fetch_add(1, std::memory_order_relaxed); }
    ~InFlightGuard() { slot.fetch_sub(1, std::memory_order_relaxed); }
    std::atomic<uint32_t>& slot;
  };
  std::atomic<uint32_t>& Slot(const WorkerEntry& w) const;
  static void Append(std::string* out, const std::string& text);
  Status NoFallback(std::string_view what, const std::string& failed) const;
  Status DeadlinePassed(std::string_view what, const std::string& failed) const;
  Status StoreFailed(std::string_view what, const std::string& failed, const Status& store) const;

  std::shared_ptr<const Membership> membership_;
  WorkerHealth* health_;
  Options options_;
  mutable std::array<std::atomic<uint32_t>, kSlots> in_flight_{};
  mutable std::atomic<uint64_t> round_robin_{0};  // spread keys' turn
};

}  // namespace shoal
