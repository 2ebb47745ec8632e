// The uploader's state of one committed write (internal to writeback_*.cc).
#pragma once

#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "worker/writeback_journal.h"

namespace shoal {

// A write being received (begun, not committed).
struct WritebackJournal::OpenWrite {
  std::mutex mu;
  int fd = -1;
  std::string path;
  std::vector<WorkerEntry> holders;
  std::string attrs;  // WritebackCommit::attrs
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::chrono::steady_clock::time_point last_used;
  XXH3_state_t* hash = nullptr;
  bool failed = false;
  ~OpenWrite() {
    if (fd >= 0) ::close(fd);
    if (hash) XXH3_freeState(hash);
  }
};

struct WritebackJournal::Entry {
  WritebackCommit commit;
  uint64_t seq = 0;  // commit order on this worker
  std::chrono::steady_clock::time_point committed_at;
  // The uploader's progress (only its thread touches these).
  int attempts = 0;
  std::chrono::steady_clock::time_point next_try{};
  bool uploaded = false;   // in the store (or superseded); the other holders are being told
  bool took_over = false;  // a non-primary holder uploading because the primary is gone
  std::vector<bool> told;  // per holder: knows it is done
  std::chrono::steady_clock::time_point uploaded_at{};
};

}  // namespace shoal
