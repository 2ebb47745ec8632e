// What ShoalFs keeps per open file (internal to src/fuse/).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "fuse/shoal_fs.h"
#include "shoal/client.h"

namespace shoal::fuse {

struct ShoalFs::FileHandle {
  uint64_t ino = 0;
  std::string ns;  // its namespace path, for messages
  // Reading: one File. The offset where File::Read's position is: a read
  // starting there is sequential and uses Read (with the client's read-ahead).
  std::unique_ptr<File> file;
  bool keep_cache = false;               // the open kept the kernel's cached pages
  std::atomic<bool> read_seen{false};    // a read reached the mount through this handle
  std::mutex seq_mu;
  std::atomic<uint64_t> next{0};
  // Writing a new file: one Writer, committed (Close) at the first flush or
  // fsync; its result is every later flush's answer.
  std::unique_ptr<Writer> writer;
  std::mutex write_mu;
  bool committed = false;
  Status commit_status;
  Status failed;  // a write failed or was refused: the commit aborts instead
};

// A hash of a file version for InodeTable::SwapPageVersion (never 0).
uint64_t VersionHash(const std::string& version);
// A refusal of what the writer cannot do (kNotSupported), logged with the reason.
Status Refuse(const std::string& ns, const std::string& what);
// A name the kernel can be given: non-empty, no '/', no NUL, at most 255 bytes.
bool ValidName(std::string_view name);

}  // namespace shoal::fuse
