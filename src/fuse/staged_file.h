// StagedFile: the local buffer of a file opened for reading and writing (or
// rewritten in place) through the FUSE mount. The writer (Client::Create ->
// Writer) only appends; programs such as rsync (mkstemp), fio, Python's
// open(p, "w+") and git write at any offset, read back what they wrote and
// truncate. So their bytes go to an anonymous file in a local directory
// first (O_TMPFILE: nothing is left behind, even after a crash) and reach
// the store at the commit, streamed to a Writer.
//
// Thread safety: pread, pwrite and ftruncate on the descriptor are safe
// concurrently; the caller serialises Truncate and Upload against writes
// when it needs a consistent size.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "shoal/client.h"
#include "shoal/status.h"

namespace shoal::fuse {

class StagedFile {
 public:
  // A new, empty buffer in `dir` (an existing local directory). The error
  // names the directory and what to do.
  static Result<std::unique_ptr<StagedFile>> Make(const std::string& dir);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  // Writes `data` at `offset` (a gap past the end reads as zeros).
  Status WriteAt(uint64_t offset, std::span<const char> data);
  // Reads up to out.size() bytes at `offset`; fewer only at the end.
  Result<size_t> ReadAt(uint64_t offset, std::span<char> out) const;
  // Sets the size: cuts, or extends with zeros.
  Status Truncate(uint64_t size);
  uint64_t size() const;
  // Copies the whole of `file` into the buffer (opening an existing file
  // for rewriting in place).
  Status Fill(File& file);
  // Streams the buffer to `writer` (which must be new and empty).
  Status Upload(Writer& writer) const;

 private:
  StagedFile(int fd, std::string dir) : fd_(fd), dir_(std::move(dir)) {}
  Status Failed(const std::string& what, int err) const;
  int fd_;
  std::string dir_;
};

}  // namespace shoal::fuse
