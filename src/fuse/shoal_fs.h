// ShoalFs: the file system the FUSE mount serves, in plain C++ (no libfuse
// types: fuse_ops.cc adapts the kernel's requests to it).
//
// It sits on the public client API only (Client, File). Inodes come from an
// InodeTable that honours forget; what each answer may be cached for by the
// kernel comes from the MountView (the mount's consistency mode). Reads go
// through one shoal::File per open handle: reads that continue where the
// last one ended use File::Read (client read-ahead), the others File::Pread.
//
// Errors are Status values; fuse_ops.cc turns them into errno (errno_map.h).
//
// Thread safety: every method may be called concurrently (the session is
// multi-threaded). REQUIRES: the Client outlives the ShoalFs.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fuse/inode_table.h"
#include "fuse/mount_view.h"
#include "shoal/client.h"
#include "shoal/status.h"

namespace shoal::fuse {

// An answer to lookup (and the attributes of getattr). ino 0 is a negative
// entry: "no such name", cached by the kernel for timeout_s (0: not cached).
struct FsEntry {
  uint64_t ino = 0;
  struct stat attr {};
  double timeout_s = 0;
};

struct FsOpen {
  uint64_t fh = 0;
  bool keep_cache = false;       // the kernel may keep the file's (or listing's) cached pages
  bool version_changed = false;  // a different version than the kernel saw: drop its cached attributes
  bool cache_listing = false;    // directories: the kernel may cache the listing
};

struct FsDirEntry {
  std::string name;
  FileStatus status;
};

struct FsStats {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
};

class ShoalFs {
 public:
  struct Options {
    std::string base = "/";  // the namespace path shown at the mount's root
    // Where files being written at any offset are buffered (file_handle.h);
    // "" is $TMPDIR, else /tmp.
    std::string staging_dir;
    // The largest existing file rewritten in place (opened for writing
    // without O_TRUNC, or truncated to another non-zero size): it is copied
    // into the local buffer first.
    uint64_t max_rewrite_bytes = 16ull << 30;
  };

  static Result<std::unique_ptr<ShoalFs>> Make(Client& client, const Options& options);
  ~ShoalFs();

  Result<FsEntry> Lookup(uint64_t parent, std::string_view name);
  // A name over 255 bytes, or a namespace path it would make over 4095
  // (PATH_MAX, with its NUL): the kernel's ENAMETOOLONG.
  bool NameTooLong(uint64_t parent, std::string_view name) const;
  Result<FsEntry> GetAttr(uint64_t ino);
  void Forget(uint64_t ino, uint64_t n) { inodes_.Forget(ino, n); }
  Status Access(uint64_t ino, int mask);

  // Opens a file: for reading, or for writing (shoal_fs_write.cc).
  Result<FsOpen> Open(uint64_t ino, int flags);
  // Reads up to out.size() bytes at `offset` (fewer only at the end of the
  // file); a handle open for reading and writing reads what it wrote.
  Result<size_t> Read(uint64_t fh, uint64_t offset, std::span<char> out);
  void Release(uint64_t fh);
  // Forgets a handle the kernel never got (an interrupted open or create):
  // a writer is aborted, nothing committed.
  void Discard(uint64_t fh);

  // Writes, through Client::Create -> Writer and the client's Delete, Mkdir,
  // Rmdir and Rename (shoal_fs_write.cc). Read-only mounts answer kReadOnly.
  // A file opened write-only as new (or with O_TRUNC) is streamed to the
  // writer in order; every other writing open (read-write, O_APPEND, an
  // existing file without O_TRUNC) goes through a local buffer (StagedFile)
  // that may be written anywhere, read back and resized, and is uploaded at
  // each commit after a change. What cannot be done (writing behind the end
  // of a streamed file, or after its commit; rewriting an existing file over
  // max_rewrite_bytes) answers kNotSupported and is logged.
  //
  // A new file, open for writing; `flags` and `mode` are open(2)'s (the
  // mode, 07777 after the umask, is kept where the store keeps modes; 0:
  // the store's default).
  struct Created {
    FsEntry entry;
    FsOpen open;
  };
  // Who creates a file or directory (the request's uid and gid). Where the
  // daemon runs as root for other users (allow_other), what they create is
  // theirs, as on a local file system; otherwise the daemon's user owns it.
  struct Creator {
    uint32_t uid = 0;
    uint32_t gid = 0;
  };
  Result<Created> Create(uint64_t parent, std::string_view name, int flags, uint32_t mode = 0,
                         std::optional<Creator> creator = std::nullopt);
  // Appends `data`, which must start where the file ends.
  Result<size_t> Write(uint64_t fh, uint64_t offset, std::span<const char> data);
  // fsync(2), close(2) (the kernel's flush, `at_flush`) and the last close
  // (release) commit the file: its durability point. A streamed file is
  // committed once (later calls answer the same); a buffered one again after
  // each change. A flush before anything is written to a new file commits
  // nothing: shells open a file, dup it onto stdout and close the first
  // descriptor before writing. So close(2) reports a failed commit unless
  // the file is empty.
  Status Commit(uint64_t fh, bool at_flush);
  Status Unlink(uint64_t parent, std::string_view name);
  Result<FsEntry> Mkdir(uint64_t parent, std::string_view name, uint32_t mode = 0,
                        std::optional<Creator> creator = std::nullopt);
  Status Rmdir(uint64_t parent, std::string_view name);
  Status Rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
                bool no_replace);
  // setattr: a truncate to the current size is a no-op; one of a file open
  // for writing resizes it (a streamed one only grows, with zeros, unless
  // nothing was written yet); one of a stored file rewrites it (0: a new
  // empty file). The mode and the modification time are kept where the
  // store keeps them (Client::SetAttributes; a file being written gets them
  // at its commit); elsewhere, and owners and access times everywhere, are
  // accepted with no effect (so cp -p, tar and rsync work).
  struct AttrChange {
    bool size = false;
    uint64_t new_size = 0;
    std::optional<uint32_t> mode;     // chmod: permission bits
    std::optional<int64_t> mtime_ns;  // utimensat's modification time (now, for UTIME_NOW)
    std::optional<uint32_t> uid;      // chown: owner
    std::optional<uint32_t> gid;      //        group
  };
  Result<FsEntry> SetAttr(uint64_t ino, const AttrChange& change, uint64_t fh);

  Result<FsOpen> OpenDir(uint64_t ino);
  // The entries of an open directory; listed at the first call and again
  // when `restart` (a rewind to offset 0). The vector lives until the next
  // call with restart or ReleaseDir.
  Result<const std::vector<FsDirEntry>*> Entries(uint64_t fh, bool restart);
  // A listed entry as lookup would answer it, counting one kernel lookup
  // (readdirplus); the inode of the directory itself for "." and "..".
  FsEntry LookupListed(uint64_t fh, const FsDirEntry& entry);
  uint64_t DirIno(uint64_t fh) const;
  void ReleaseDir(uint64_t fh);

  Result<FsStats> StatFs();

  InodeTable& inodes() { return inodes_; }

 private:
  // A mount whose listings lack what a stat gives (MountInfo::stat_each_listed):
  // each listed file's stat, kListStatsInFlight at a time.
  void StatListedFiles(std::vector<FsDirEntry>& entries);
  struct FileHandle;
  struct DirHandle;

  ShoalFs(Client& client, MountView view, Options options);
  // The namespace path of `ino` and where it lies; kNotFound for an inode
  // the table no longer knows (or detached), which the kernel gets as ESTALE.
  struct Resolved {
    std::string ns;
    MountView::Place place;
  };
  Result<Resolved> Resolve(uint64_t ino) const;
  Result<Resolved> ResolveChild(uint64_t parent, std::string_view name) const;
  // The namespace path of a child to be written: inside a writable mount.
  Result<Resolved> WritableChild(uint64_t parent, std::string_view name) const;
  // `created`: by create(2), a new name, with `mode`.
  Result<FsOpen> OpenWriter(uint64_t ino, const Resolved& r, int flags, bool created, uint32_t mode = 0,
                            std::optional<Creator> creator = std::nullopt);
  // After a commit: the mode and time set while it was written (FileHandle).
  // REQUIRES: the handle's write_mu is held.
  void KeepAttributesAfterCommit(FileHandle& h);
  Status KeepAttributes(uint64_t ino, const Resolved& r, const AttrChange& change, uint64_t fh);
  Result<size_t> ReadWriting(FileHandle& h, uint64_t offset, std::span<char> out);
  // REQUIRES: the handle's write_mu is held.
  Status Stage(FileHandle& h);  // the handle's buffer, made (and filled) at its first use
  Status Resize(FileHandle& h, uint64_t size);
  static uint64_t WritingSize(const FileHandle& h);
  // Commit's work; unlocks `writing_lock` (writing_mu_) before the upload.
  Status CommitLocked(FileHandle* h, bool at_flush, std::unique_lock<std::mutex>& writing_lock);
  Status ResizeStored(const Resolved& r, uint64_t size);
  struct stat Attr(uint64_t ino, const FileStatus& st, const CacheRule& rule) const;
  Result<FileStatus> StatPath(const Resolved& r) const;

  Client& client_;
  MountView view_;
  Options options_;
  InodeTable inodes_;
  uid_t uid_;
  gid_t gid_;
  int64_t start_ns_;  // the time shown for directories that have none

  // New files being written (not committed yet), by inode: their attributes
  // come from the writer, since the store has nothing under the path yet.
  std::mutex writing_mu_;
  std::unordered_map<uint64_t, FileHandle*> writing_;
  std::optional<FsEntry> WritingAttr(uint64_t ino, const Resolved& r);

  std::mutex statfs_mu_;
  std::chrono::steady_clock::time_point statfs_at_{};
  FsStats statfs_;
};

}  // namespace shoal::fuse
