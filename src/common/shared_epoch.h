// SharedEpoch: a counter one process bumps and others on the host read from
// shared memory, without asking it.
//
// A worker bumps its epoch after every change that can make an answer it
// gave earlier wrong: a cached stat dropped or replaced, a page removed, a
// pending write recorded. A same-host client that holds such an answer (a
// lease, common/local_wire.h kOpenCached) uses it again only while the epoch
// still reads what the answer carried, so holding it saves the round trip to
// the worker and never outlives a change.
//
// The counter lives in a sealed memfd: the worker maps it writable before it
// seals it against future writes (F_SEAL_FUTURE_WRITE), so a reader that gets
// the fd (over the short circuit's socket) can only map it read-only and
// cannot move another reader's epoch. SharedEpochView checks those seals
// before it trusts an fd.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "shoal/status.h"

namespace shoal {

class SharedEpoch {
 public:
  // A counter at 1 in a new sealed memfd. Never fails: without a memfd (an
  // old kernel, a seccomp filter) the counter is private and fd() is -1, so
  // no reader can hold answers.
  SharedEpoch();
  ~SharedEpoch();
  SharedEpoch(const SharedEpoch&) = delete;
  SharedEpoch& operator=(const SharedEpoch&) = delete;

  // After the change, never before: a reader that saw the old value also
  // sees the change once it reads the new one.
  void Bump() { counter_->fetch_add(1, std::memory_order_seq_cst); }
  uint64_t value() const { return counter_->load(std::memory_order_seq_cst); }
  // The memfd to pass to readers (-1: none); stays owned by this object.
  int fd() const { return fd_; }

 private:
  std::atomic<uint64_t> private_{1};
  std::atomic<uint64_t>* counter_ = &private_;
  void* map_ = nullptr;
  int fd_ = -1;
};

// A reader's read-only mapping of another process's SharedEpoch.
class SharedEpochView {
 public:
  // Maps `fd` (not taken: the caller still closes it). Refuses an fd that is
  // not a memfd sealed against writes, growth and shrinking: its owner could
  // otherwise be anyone who can write to it.
  static Result<std::unique_ptr<SharedEpochView>> Map(int fd);
  ~SharedEpochView();
  SharedEpochView(const SharedEpochView&) = delete;
  SharedEpochView& operator=(const SharedEpochView&) = delete;

  uint64_t value() const { return counter_->load(std::memory_order_seq_cst); }

 private:
  explicit SharedEpochView(void* map) : map_(map), counter_(static_cast<const std::atomic<uint64_t>*>(map)) {}
  void* map_;
  const std::atomic<uint64_t>* counter_;
};

}  // namespace shoal
