// WorkerSupervisor: the `shoal worker` processes that `shoal up` runs.
//
// Worker i caches in CACHE_ROOT/worker-i and logs to STATE/worker-i.log. Each
// starts on the port it had the last time (remembered in STATE/ports), so a
// `shoal up` started again on the same state dir comes back on the same
// addresses; a port someone else took is replaced by a free one (port 0).
// Either way the worker keeps its id (kept in its cache dir), so it owns the
// same part of the ring and its cache stays warm.
//
// A worker that exits is restarted, for as long as `shoal up` runs: after
// min_delay, doubling on each crash up to max_delay, back to min_delay once a
// worker has stayed up for stable_after. Every exit and restart is logged to
// stderr as one line naming the worker, how it ended and its log file.
//
// Not thread-safe: one thread (`shoal up`'s main loop) drives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/subprocess.h"
#include "shoal/status.h"

namespace shoal::cli {

class WorkerSupervisor {
 public:
  struct Options {
    std::string exe;            // the shoal binary
    std::string worker_config;  // the config every worker loads
    std::string cache_root;     // worker i caches in CACHE_ROOT/worker-i
    std::string state_dir;      // worker logs and the remembered ports
    uint64_t cache_size = 0;    // per worker
    int workers = 1;
    std::chrono::milliseconds min_delay{500};
    std::chrono::milliseconds max_delay{30'000};
    std::chrono::milliseconds stable_after{60'000};
    std::chrono::milliseconds start_timeout{60'000};  // until a worker prints `listening:`
  };

  explicit WorkerSupervisor(Options options);
  // CACHE_ROOT/worker-i: where worker i caches.
  static std::string CacheDirOf(const std::string& cache_root, int i);
  ~WorkerSupervisor();

  // Starts every worker, each on its remembered port if it is free. Fails
  // (stopping those already started) when one cannot start at all.
  Status StartAll();

  // Restarts the workers that exited and whose delay has passed, and notes
  // new exits. Returns true when a worker came back on a new address (the
  // client config must then be written again).
  bool Tick();

  // SIGTERM to every worker, then waits (SIGKILL after a grace period).
  void StopAll();

  // The cluster's members, id@host:port, in worker order.
  std::vector<WorkerEntry> members() const;

  struct WorkerInfo {
    WorkerEntry entry;
    pid_t pid = -1;
    std::string cache_dir;
    std::string log;
  };
  std::vector<WorkerInfo> workers() const;

 private:
  struct Slot {
    Subprocess proc;
    WorkerInfo info;
    int restarts = 0;
    std::chrono::milliseconds delay{0};  // the wait before the next restart
    std::chrono::steady_clock::time_point up_since;
    std::optional<std::chrono::steady_clock::time_point> restart_at;  // set while the worker is down
  };

  // Starts worker i on `listen`, else (a specific port that failed) on port 0.
  Status Start(size_t i, const std::string& listen);
  Status StartOn(size_t i, const std::string& listen);
  void NoteExit(size_t i);
  std::string PortsFile() const;
  void SavePorts() const;

  Options o_;
  std::vector<Slot> slots_;
};

// "exited with code 1", "was killed by signal 9 (SIGKILL)": a waitpid status.
std::string DescribeExit(int wait_status);

}  // namespace shoal::cli
