// WorkerHealth: which workers are down, and the probing that brings them back.
// The one place that holds a client's view of worker health.
//
// A worker is marked down when a request to it fails in a way that says the
// worker (not the data) is the problem: unreachable, silent past
// client.response_timeout, a broken response, or not the Shoal worker the
// config names. A down worker is used by no call until a background probe has
// seen it healthy again: the probe runs first client.down_backoff after the
// failure, then backs off exponentially up to max_backoff. So a hung worker
// costs one response timeout once, not one per call.
//
// Each transition is logged once (down: a warning with the reason; back: an
// info line), never once per call. A worker that goes down again soon after
// coming back (flapping) starts its probing at twice its previous backoff, so
// its log lines thin out too.
//
// The probe thread starts at the first MarkDown and is joined by the
// destructor, which may wait for one probe in flight (the probe's own
// timeouts bound it). Fork: no lock is held across a probe (I/O), and a
// process forked from one with a probe thread starts its own on first need
// and leaves the parent's (which does not exist in the child) alone.
//
// Thread safety: all methods are safe from any thread. The probe function is
// called from the probe thread only, one probe at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "shoal/status.h"

namespace shoal {

class WorkerHealth {
 public:
  // Asks `worker` whether it is healthy and is who the config says; OK when
  // it is. Blocking, with short timeouts of its own.
  using Probe = std::function<Status(const WorkerEntry& worker)>;

  struct Options {
    std::chrono::milliseconds first_backoff{2'000};  // client.down_backoff
    std::chrono::milliseconds max_backoff{30'000};
  };

  WorkerHealth(Probe probe, Options options);
  ~WorkerHealth();
  WorkerHealth(const WorkerHealth&) = delete;
  WorkerHealth& operator=(const WorkerHealth&) = delete;

  bool IsDown(const WorkerEntry& worker) const;
  // Why the worker is down; nullopt when it is up.
  std::optional<Status> DownReason(const WorkerEntry& worker) const;

  // Takes the worker out of use until a probe sees it healthy. Returns true
  // when this call made the transition (and logged it); false when the worker
  // was already down.
  bool MarkDown(const WorkerEntry& worker, const Status& why);

 private:
  using Clock = std::chrono::steady_clock;
  struct State {
    WorkerEntry entry;
    bool down = false;
    Status why;
    Clock::time_point next_probe{};
    std::chrono::milliseconds backoff{0};
    Clock::time_point up_since{};  // when it came back (flapping detection)
  };
  static std::string Key(const WorkerEntry& w) { return w.id + "@" + w.address; }
  void EnsureProbeThreadLocked();
  void ProbeLoop();

  const Probe probe_;
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, State> workers_;  // only workers that have ever been down
  std::atomic<size_t> down_count_{0};     // lets IsDown skip the lock while all are up
  bool stop_ = false;
  std::unique_ptr<std::thread> thread_;
  pid_t thread_pid_ = 0;  // the process the probe thread belongs to
};

}  // namespace shoal
