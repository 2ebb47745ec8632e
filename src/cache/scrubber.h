// Scrubber: reads back and checks every cached page, at a bounded rate, so
// that a page that went bad where no read looks (a media error, a write that
// kept its file's ctime; see cache/page_format.h, "verified once, then
// trusted") is dropped before a trusting read serves it.
//
// A background pass starts when the worker starts and then at most every
// `interval` (from the start of the last); it skips pages checked whole
// (by a read) within the last interval, whose file has not changed since.
// A pass asked for (Start: `shoal scrub`) checks every page under its path,
// recently read or not, at `rate` or, with `now`, as fast as the disk reads.
// A page that fails is dropped (counted with found_by="scrub") and fetched
// again by its next read.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

namespace shoal {

class Counter;
class MetricsRegistry;
class PageStore;

class Scrubber {
 public:
  struct Options {
    uint64_t rate = 4 << 20;  // bytes a second; 0: no background passes (asked ones run at full speed)
    std::chrono::milliseconds interval{24 * 3600 * 1000};
    MetricsRegistry* metrics = nullptr;  // null: MetricsRegistry::Global()
  };

  // What a pass did (the one running, or the last).
  struct Progress {
    uint64_t pass = 0;  // 0: none yet; then numbered from 1
    bool running = false;
    bool asked = false;  // started by Start, not by the schedule
    bool now = false;    // at full speed
    std::string path;    // the pages under it ("/": all)
    uint64_t pages = 0;  // checked so far
    uint64_t bytes = 0;
    uint64_t corrupt = 0;  // dropped
    double seconds = 0;    // since it started (to its end, once done)
  };

  Scrubber(PageStore& store, Options options);
  ~Scrubber();  // stops a pass at its next page
  Scrubber(const Scrubber&) = delete;
  Scrubber& operator=(const Scrubber&) = delete;

  // Starts a pass of the pages under `path` ("/" or "": all), or, when one
  // is running, stops it at its next page and starts this one instead.
  // Returns the new pass's progress (its number to wait for).
  Progress Start(const std::string& path, bool now);
  Progress progress() const;

 private:
  void Run(std::stop_token stop);
  // One pass; false when stopping. REQUIRES: not mu_.
  bool Pass(std::stop_token& stop, const std::string& path, bool asked, bool now);

  PageStore& store_;
  Options options_;
  Counter* scrubbed_bytes_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  Progress progress_;    // under mu_
  bool asked_ = false;   // a Start waits to run (under mu_)
  Progress wanted_;      // what it asked for (under mu_)
  std::jthread thread_;  // last: stopped first
};

}  // namespace shoal
