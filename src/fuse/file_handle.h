// What ShoalFs keeps per open file (internal to src/fuse/).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "fuse/shoal_fs.h"
#include "fuse/staged_file.h"
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
  // Writing. Two ways, chosen at open (shoal_fs_write.cc):
  //  - streamed: a new (or O_TRUNC) file opened write-only goes straight to
  //    one Writer as the program writes, in order (a gap ahead is written as
  //    zeros); committed (Close) at the first flush with data or fsync, whose
  //    result is every later flush's answer;
  //  - staged: every other writing open (read-write, O_APPEND, rewriting an
  //    existing file) writes into a local StagedFile, read back and resized
  //    at will, uploaded through a new Writer at each flush or fsync that
  //    follows a change, and at the last close.
  std::unique_ptr<Writer> writer;      // streamed; staged: the one made at open, used by the first commit
  std::unique_ptr<StagedFile> staged;  // staged: made at the first change (an existing file is copied in)
  bool writing = false;                // opened for writing (streamed or staged)
  bool streamed = false;
  bool append = false;    // O_APPEND: every write goes to the end
  bool is_new = false;    // created by this open (or O_TRUNC): no store bytes to copy in
  bool dirty = false;     // staged: changed since the last commit
  bool unlinked = false;  // removed while open: never committed again
  int64_t mtime_ns = 0;   // the last change, shown while it is being written
  // Mode and time the file gets where its store keeps them: `mode` from
  // create(2) or a chmod since (0: the store's default, or the mode of the
  // file it replaces), `writer_mode` what the current writer was made with;
  // `set_mtime` from a utimensat since the last write; `set_uid`/`set_gid`
  // from a chown, or the creating user's where the daemon creates for
  // others (root). Given to the store after each commit
  // (Client::SetAttributes) where the writer did not.
  uint32_t mode = 0;
  uint32_t writer_mode = 0;
  std::optional<int64_t> set_mtime;
  std::optional<uint32_t> set_uid;
  std::optional<uint32_t> set_gid;
  // The owner the current writer was made with (CreateOptions), as writer_mode.
  std::optional<uint32_t> writer_uid;
  std::optional<uint32_t> writer_gid;
  // CreateOptions for a writer of this file: its mode and owner so far.
  CreateOptions WriterOptions() {
    writer_mode = mode;
    writer_uid = set_uid;
    writer_gid = set_gid;
    CreateOptions o;
    o.mode = mode;
    if (set_uid) o.uid = *set_uid;
    if (set_gid) o.gid = *set_gid;
    return o;
  }
  std::mutex write_mu;    // writes, truncates, commits and staged reads
  bool committed = false;
  Status commit_status;
  Status failed;  // a write failed or was refused: the commit aborts instead
};

// A hash of a file version for InodeTable::SwapPageVersion (never 0).
uint64_t VersionHash(const std::string& version);
// A refusal of what the design cannot do (kNotSupported), logged: "NS: WHAT
// is not supported (INSTEAD)", where INSTEAD says why and what to do.
Status Refuse(const std::string& ns, const std::string& what, const std::string& instead);
// A name the kernel can be given: non-empty, no '/', no NUL, at most 255 bytes.
bool ValidName(std::string_view name);

}  // namespace shoal::fuse
