// IdleWriter: one thread that runs cache-fill work (writing pages already
// served from memory to the page store) at the lowest CPU priority
// (SCHED_IDLE), so filling the cache never takes a core from requests in
// flight: on a busy node those, and the under-store they wait on, come first,
// and the writes catch up when a core is free.
//
// The queue is bounded by the bytes its tasks hold: Submit refuses work past
// `max_pending_bytes`, and the caller then does it some other way (at normal
// priority), so a node that is never idle still fills its cache.
//
// Thread safety: Submit may be called from any thread. The destructor runs
// what is queued (at normal priority) before it returns.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace shoal {

class IdleWriter {
 public:
  explicit IdleWriter(uint64_t max_pending_bytes);
  ~IdleWriter();
  IdleWriter(const IdleWriter&) = delete;
  IdleWriter& operator=(const IdleWriter&) = delete;

  // Queues `task`, which holds `bytes` of memory until it has run. False (and
  // `task` untouched) when that would pass the bound.
  bool Submit(uint64_t bytes, std::function<void()>& task);

  uint64_t pending_bytes() const;

 private:
  void Loop();

  const uint64_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, std::function<void()>>> queue_;
  uint64_t pending_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace shoal
