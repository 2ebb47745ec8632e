// ShoalFs writes: files written through Client::Create -> Writer, streamed
// as the program writes or staged in a local buffer first (file_handle.h
// says which and when each commits), and unlink, mkdir, rmdir and rename
// through the client.
#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>

#include "client/client_internal.h"
#include "fuse/file_handle.h"
#include "fuse/shoal_fs.h"

namespace shoal::fuse {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Appends `n` zero bytes to a streamed file (a gap ahead of the end, or a
// truncate that extends it).
Status WriteZeros(Writer& w, uint64_t n) {
  static const std::array<char, 64 * 1024> zeros{};
  while (n > 0) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, zeros.size()));
    SHOAL_RETURN_IF_ERROR(w.Write(std::span<const char>(zeros.data(), k)));
    n -= k;
  }
  return {};
}

}  // namespace

Status Refuse(const std::string& ns, const std::string& what, const std::string& instead) {
  Status s(Code::kNotSupported, ns + ": " + what + " is not supported" + (instead.empty() ? "" : " (" + instead + ")"));
  spdlog::warn("refused: {}", s.message());
  return s;
}

Result<ShoalFs::Resolved> ShoalFs::WritableChild(uint64_t parent, std::string_view name) const {
  auto r = ResolveChild(parent, name);
  if (!r) return Err(r.error());
  if (r->place.kind != MountView::Kind::kInMount) {
    return Err(Code::kReadOnly, r->ns + " is above the mounts: only paths inside a mount can be written");
  }
  if (r->place.rule.read_only) return Err(Code::kReadOnly, r->ns + " is on a read-only mount");
  return r;
}

Result<FsOpen> ShoalFs::OpenWriter(uint64_t ino, const Resolved& r, int flags, bool created, uint32_t mode,
                                   std::optional<Creator> creator) {
  auto h = std::make_unique<FileHandle>();
  h->ino = ino;
  h->ns = r.ns;
  h->writing = true;
  h->append = flags & O_APPEND;
  h->is_new = created || (flags & O_TRUNC);
  h->mtime_ns = NowNs();
  h->mode = created ? mode & 07777 : 0;  // an existing file keeps its own
  if (creator) {                         // the creator's, from the writer on (file://: before the file is there)
    h->set_uid = creator->uid;
    h->set_gid = creator->gid;
  }
  h->writer_mode = h->mode;
  if (h->is_new) {
    // A new file (or one replacing the old): the writer now, so that what
    // the store refuses (O_EXCL on an existing name, a directory) fails the open.
    CreateOptions create = h->WriterOptions();
    create.overwrite = !(flags & O_EXCL);
    auto w = client_.Create(r.ns, create);
    if (!w) return Err(w.error());
    h->writer = std::move(*w);
    h->streamed = (flags & O_ACCMODE) == O_WRONLY && !h->append;
    h->dirty = !h->streamed;  // a staged new file is committed even if nothing is written
  } else {
    // Rewriting an existing file in place: its bytes are copied into the
    // buffer at the first change; until then reads come from the store.
    OpenOptions o;
    o.prefetch = 0;
    auto f = client_.OpenFile(r.ns, o);
    if (!f) return Err(f.error());
    if ((*f)->status().size > options_.max_rewrite_bytes) {
      return Err(Refuse(
          r.ns, "writing into an existing file of " + std::to_string((*f)->status().size) + " bytes without O_TRUNC",
          "it would be copied to the local buffer first; the limit is " + std::to_string(options_.max_rewrite_bytes) +
              " bytes: write a new file instead"));
    }
    h->file = std::move(*f);
  }
  FsOpen o;
  {
    std::lock_guard lock(writing_mu_);
    writing_[ino] = h.get();
  }
  o.fh = reinterpret_cast<uint64_t>(h.release());
  return o;
}

Status ShoalFs::Stage(FileHandle& h) {
  if (h.staged) return {};
  auto s = StagedFile::Make(options_.staging_dir);
  if (!s) return s.error();
  if (h.streamed) {
    // Nothing has reached the writer yet: the file continues staged.
    h.streamed = false;
    h.dirty = true;
  } else if (!h.is_new && h.file) {
    if (auto st = (*s)->Fill(*h.file); !st.ok()) {
      return Status(st.code(), "copying " + h.ns + " into the local buffer to rewrite it: " + st.message());
    }
  }
  h.staged = std::move(*s);
  return {};
}

void ShoalFs::Discard(uint64_t fh) {
  std::unique_ptr<FileHandle> h(reinterpret_cast<FileHandle*>(fh));
  if (!h->writing) return;
  std::lock_guard lock(writing_mu_);
  if (auto it = writing_.find(h->ino); it != writing_.end() && it->second == h.get()) writing_.erase(it);
  if (h->writer) h->writer->Abort();
}

uint64_t ShoalFs::WritingSize(const FileHandle& h) {
  if (h.staged) return h.staged->size();
  if (h.streamed || h.is_new) return h.writer ? h.writer->size() : 0;
  return h.file ? h.file->status().size : 0;
}

std::optional<FsEntry> ShoalFs::WritingAttr(uint64_t ino, const Resolved& r) {
  std::lock_guard lock(writing_mu_);
  auto it = writing_.find(ino);
  if (it == writing_.end()) return std::nullopt;
  FileHandle* h = it->second;
  std::lock_guard write_lock(h->write_mu);
  FileStatus st;
  st.path = r.ns;
  st.size = WritingSize(*h);
  st.mtime_ns = h->set_mtime.value_or(h->mtime_ns);
  st.mode = h->mode;
  if (h->set_uid) st.uid = *h->set_uid;
  if (h->set_gid) st.gid = *h->set_gid;
  FsEntry e;
  e.ino = ino;
  e.attr = Attr(ino, st, r.place.rule);
  e.timeout_s = 0;  // it changes
  return e;
}

Result<ShoalFs::Created> ShoalFs::Create(uint64_t parent, std::string_view name, int flags, uint32_t mode,
                                         std::optional<Creator> creator) {
  auto r = WritableChild(parent, name);
  if (!r) return Err(r.error());
  Created c;
  // The inode first (as lookup would make it), then the writer; a failed
  // writer gives the lookup back.
  c.entry.ino = inodes_.Lookup(parent, name, false);
  auto o = OpenWriter(c.entry.ino, *r, flags, true, mode, creator);
  if (!o) {
    inodes_.Forget(c.entry.ino, 1);
    return Err(o.error());
  }
  FileStatus empty;
  empty.path = r->ns;
  empty.mode = mode & 07777;
  if (creator) {
    empty.uid = creator->uid;
    empty.gid = creator->gid;
  }
  c.entry.attr = Attr(c.entry.ino, empty, r->place.rule);
  c.entry.timeout_s = r->place.rule.timeout_s;
  c.open = *o;
  return c;
}

Result<size_t> ShoalFs::Write(uint64_t fh, uint64_t offset, std::span<const char> data) {
  auto* h = reinterpret_cast<FileHandle*>(fh);
  if (!h->writing) return Err(Code::kInvalidArgument, h->ns + " is not open for writing");
  std::lock_guard lock(h->write_mu);
  if (!h->failed.ok()) return Err(h->failed);
  if (h->streamed) {
    if (h->committed) {
      return Err(Refuse(h->ns, "writing after fsync or close through a write-only descriptor",
                        "the file was committed then; open it O_RDWR to keep writing after a close"));
    }
    const uint64_t end = h->writer->size();
    if (offset != end && end == 0) {
      if (auto st = Stage(*h); !st.ok()) return Err(st);
    } else if (offset < end) {
      // The file would not hold what the program wrote: nothing of it becomes visible.
      h->failed = Refuse(
          h->ns,
          "writing at offset " + std::to_string(offset) + " of a write-only file that ends at " + std::to_string(end),
          "write-only files are streamed in order; open it O_RDWR to write anywhere");
      return Err(h->failed);
    } else {
      Status st = WriteZeros(*h->writer, offset - end);  // a gap ahead reads as zeros
      if (st.ok()) st = h->writer->Write(data);
      if (!st.ok()) {
        h->failed = st;
        return Err(st);
      }
      h->mtime_ns = NowNs();
      h->set_mtime.reset();  // a write after a utimensat moves the time again
      return data.size();
    }
  }
  if (auto st = Stage(*h); !st.ok()) return Err(st);
  if (auto st = h->staged->WriteAt(h->append ? h->staged->size() : offset, data); !st.ok()) {
    h->failed = st;
    return Err(st);
  }
  h->dirty = true;
  h->mtime_ns = NowNs();
  h->set_mtime.reset();
  return data.size();
}

Result<size_t> ShoalFs::ReadWriting(FileHandle& h, uint64_t offset, std::span<char> out) {
  std::lock_guard lock(h.write_mu);
  if (h.staged) return h.staged->ReadAt(offset, out);
  if (h.streamed) return Err(Code::kInvalidArgument, h.ns + " is open write-only");
  if (h.is_new || !h.file) return size_t{0};  // nothing written yet
  size_t done = 0;
  while (done < out.size()) {
    auto n = h.file->Pread(offset + done, out.subspan(done));
    if (!n) return Err(n.error());
    if (*n == 0) break;
    done += *n;
  }
  return done;
}

Status ShoalFs::Commit(uint64_t fh, bool at_flush) {
  auto* h = reinterpret_cast<FileHandle*>(fh);
  if (!h->writing) return {};
  // Lock order: writing_mu_, then the handle's write_mu (as WritingAttr).
  std::unique_lock writing_lock(writing_mu_);
  std::lock_guard lock(h->write_mu);
  return CommitLocked(h, at_flush, writing_lock);
}

Status ShoalFs::CommitLocked(FileHandle* h, bool at_flush, std::unique_lock<std::mutex>& writing_lock) {
  if (h->unlinked) {
    // Removed while open: what it holds has no name to be committed under.
    if (h->writer) h->writer->Abort();
    h->writer.reset();
    h->dirty = false;
    return {};
  }
  if (h->streamed) {
    if (h->committed) return h->commit_status;
    if (at_flush && h->writer->size() == 0) return {};
    h->committed = true;
    if (auto it = writing_.find(h->ino); it != writing_.end() && it->second == h) writing_.erase(it);
  } else {
    // Staged: committed again after each change; the handle keeps answering
    // the file's attributes until its last close.
    if (!h->dirty) return h->commit_status;
    if (at_flush && h->is_new && !h->committed && WritingSize(*h) == 0) return {};
  }
  writing_lock.unlock();
  if (!h->failed.ok()) {
    if (h->writer) h->writer->Abort();
    h->dirty = false;
    h->commit_status = Status(h->failed.code(), h->failed.message() + "; the file was not written");
    spdlog::warn("{}: not written: {}", h->ns, h->failed.message());
    return h->commit_status;
  }
  if (!h->streamed) {
    h->dirty = false;
    h->committed = true;
    if (!h->writer) {
      auto w = client_.Create(h->ns, h->WriterOptions());
      if (!w) {
        h->commit_status = w.error();
        spdlog::error("writing {} failed: {}", h->ns, w.error().message());
        return h->commit_status;
      }
      h->writer = std::move(*w);
    }
    if (h->staged) {
      if (auto st = h->staged->Upload(*h->writer); !st.ok()) {
        h->writer->Abort();
        h->writer.reset();
        h->commit_status = st;
        spdlog::error("writing {} failed: {}", h->ns, st.message());
        return h->commit_status;
      }
    }
  }
  auto st = h->writer->Close();
  if (!h->streamed) h->writer.reset();
  if (!st) {
    h->commit_status = st.error();
    spdlog::error("writing {} failed: {}", h->ns, st.error().message());
    return h->commit_status;
  }
  h->commit_status = {};
  // The kernel's pages of the file are the bytes just written: keep them.
  inodes_.SwapPageVersion(h->ino, VersionHash(st->version));
  KeepAttributesAfterCommit(*h);
  return {};
}

void ShoalFs::KeepAttributesAfterCommit(FileHandle& h) {
  std::optional<uint32_t> mode, uid, gid;
  if (h.mode != 0 && h.mode != h.writer_mode) mode = h.mode;
  if (h.set_uid != h.writer_uid) uid = h.set_uid;  // a chown since the writer was made
  if (h.set_gid != h.writer_gid) gid = h.set_gid;
  if (!mode && !h.set_mtime && !uid && !gid) return;
  if (WrittenBack(client_, h.ns)) {
    // Setting them would wait for the upload at every close (tar, cp -p):
    // on write-back mounts only a change after the close is kept (it waits).
    spdlog::debug("{}: mode, time and owner set before the close are not kept on a write-back mount", h.ns);
    return;
  }
  Status st = client_.SetAttributes(h.ns, mode, h.set_mtime, uid, gid);
  if (st.ok()) {
    h.writer_mode = h.mode;
    h.writer_uid = h.set_uid;
    h.writer_gid = h.set_gid;
  } else if (st.code() == Code::kNotSupported) {
    spdlog::debug("{}: mode and time not kept: {}", h.ns, st.message());
  } else {
    // The bytes are committed; only the attributes are lost: said, not failed.
    spdlog::warn("{}: written, but its mode, time or owner could not be kept: {}", h.ns, st.message());
  }
}

Status ShoalFs::Resize(FileHandle& h, uint64_t size) {
  if (h.streamed) {
    if (h.committed) {
      return Refuse(h.ns, "resizing after fsync or close through a write-only descriptor",
                    "open it O_RDWR to change it after a close");
    }
    const uint64_t end = h.writer->size();
    if (size == end) return {};
    if (end != 0) {
      if (size < end) {
        return Refuse(h.ns,
                      "cutting a write-only file being written from " + std::to_string(end) + " to " +
                          std::to_string(size) + " bytes",
                      "write-only files are streamed in order; open it O_RDWR to resize it freely");
      }
      if (auto st = WriteZeros(*h.writer, size - end); !st.ok()) {
        h.failed = st;
        return st;
      }
      h.mtime_ns = NowNs();
      return {};
    }
  }
  if (size == WritingSize(h) && !h.streamed) return {};  // a no-op
  SHOAL_RETURN_IF_ERROR(Stage(h));
  SHOAL_RETURN_IF_ERROR(h.staged->Truncate(size));
  h.dirty = true;
  h.mtime_ns = NowNs();
  return {};
}

// Truncating a file no descriptor of this mount is writing: the same size is
// a no-op, 0 a new empty file, any other size a rewrite through a buffer.
Status ShoalFs::ResizeStored(const Resolved& r, uint64_t size) {
  auto st = client_.Stat(r.ns);
  if (!st) return st.error();
  if (st->is_dir) return Status(Code::kIsDirectory, r.ns + " is a directory");
  if (st->size == size) return {};
  auto w = client_.Create(r.ns);
  if (!w) return w.error();
  if (size != 0) {
    if (std::min(st->size, size) > options_.max_rewrite_bytes) {
      (*w)->Abort();
      return Refuse(r.ns, "truncating a file of " + std::to_string(st->size) + " bytes to " + std::to_string(size),
                    "it would be copied to the local buffer first; the limit is " +
                        std::to_string(options_.max_rewrite_bytes) + " bytes");
    }
    FileHandle h;
    h.ns = r.ns;
    OpenOptions o;
    o.prefetch = 0;
    auto f = client_.OpenFile(r.ns, o);
    if (!f) return f.error();
    h.file = std::move(*f);
    Status done = Stage(h);
    if (done.ok()) done = h.staged->Truncate(size);
    if (done.ok()) done = h.staged->Upload(**w);
    if (!done.ok()) {
      (*w)->Abort();
      return done;
    }
  }
  auto closed = (*w)->Close();
  if (!closed) return closed.error();
  return {};
}

Status ShoalFs::Unlink(uint64_t parent, std::string_view name) {
  auto r = WritableChild(parent, name);
  if (!r) return r.error();
  // A file open for writing here is not committed after this (a new one
  // may not have reached the store yet: mkstemp, then unlink).
  bool open_here = false;
  if (auto ino = inodes_.Find(parent, name)) {
    std::lock_guard writing_lock(writing_mu_);
    if (auto it = writing_.find(*ino); it != writing_.end()) {
      std::lock_guard lock(it->second->write_mu);
      it->second->unlinked = true;
      open_here = !it->second->committed;
    }
  }
  Status st = client_.Delete(r->ns);
  if (!st.ok() && !(open_here && st.code() == Code::kNotFound)) return st;
  inodes_.Remove(parent, name);
  return {};
}

Result<FsEntry> ShoalFs::Mkdir(uint64_t parent, std::string_view name, uint32_t mode, std::optional<Creator> creator) {
  auto r = WritableChild(parent, name);
  if (!r) return Err(r.error());
  SHOAL_RETURN_IF_ERROR(client_.Mkdir(r->ns));
  FileStatus dir;
  dir.path = r->ns;
  dir.is_dir = true;
  mode &= 07777;
  std::optional<uint32_t> set_mode;
  if (mode != 0 && mode != 0755) set_mode = mode;  // the stores make directories 0755
  if (set_mode || creator) {
    Status st =
        client_.SetAttributes(r->ns, set_mode, std::nullopt, creator ? std::optional(creator->uid) : std::nullopt,
                              creator ? std::optional(creator->gid) : std::nullopt);
    if (st.ok()) {
      dir.mode = set_mode.value_or(0);
      if (creator) {
        dir.uid = creator->uid;
        dir.gid = creator->gid;
      }
    } else if (st.code() != Code::kNotSupported) {
      spdlog::warn("{}: mode or owner not kept: {}", r->ns, st.message());
    }
  }
  FsEntry e;
  e.ino = inodes_.Lookup(parent, name, true);
  e.attr = Attr(e.ino, dir, r->place.rule);
  e.timeout_s = r->place.rule.timeout_s;
  return e;
}

Status ShoalFs::Rmdir(uint64_t parent, std::string_view name) {
  auto r = WritableChild(parent, name);
  if (!r) return r.error();
  SHOAL_RETURN_IF_ERROR(client_.Rmdir(r->ns));
  inodes_.Remove(parent, name);
  return {};
}

Status ShoalFs::Rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
                       bool no_replace) {
  auto from = WritableChild(parent, name);
  if (!from) return from.error();
  auto to = WritableChild(new_parent, new_name);
  if (!to) return to.error();
  if (no_replace) {
    auto st = client_.Stat(to->ns);
    if (st) return Status(Code::kAlreadyExists, to->ns + " exists");
    if (st.error().code() != Code::kNotFound) return st.error();
  }
  // A file open for writing here is committed first (the store renames
  // what it holds) and goes on under its new name.
  std::unique_lock writing_lock(writing_mu_);
  FileHandle* h = nullptr;
  if (auto ino = inodes_.Find(parent, name)) {
    if (auto it = writing_.find(*ino); it != writing_.end()) h = it->second;
  }
  if (h) {
    std::lock_guard handle_lock(h->write_mu);
    if (h->dirty || (h->streamed && !h->committed)) {
      SHOAL_RETURN_IF_ERROR(CommitLocked(h, false, writing_lock));
    }
  }
  if (writing_lock.owns_lock()) writing_lock.unlock();
  SHOAL_RETURN_IF_ERROR(client_.Rename(from->ns, to->ns));
  if (h) {
    // Its release may have run meanwhile (the kernel sends it after close,
    // concurrently with the next call): renamed only while still registered.
    std::lock_guard again(writing_mu_);
    auto ino = inodes_.Find(parent, name);
    if (auto it = ino ? writing_.find(*ino) : writing_.end(); it != writing_.end() && it->second == h) {
      std::lock_guard handle_lock(h->write_mu);
      h->ns = to->ns;
    }
  }
  inodes_.Move(parent, name, new_parent, new_name);
  return {};
}

Result<FsEntry> ShoalFs::SetAttr(uint64_t ino, const AttrChange& change, uint64_t fh) {
  auto r = Resolve(ino);
  if (!r) return Err(r.error());
  if (r->place.rule.read_only) return Err(Code::kReadOnly, r->ns + " is on a read-only mount");
  if (change.size) {
    auto* h = fh ? reinterpret_cast<FileHandle*>(fh) : nullptr;
    if (h && h->writing) {
      std::lock_guard lock(h->write_mu);
      SHOAL_RETURN_IF_ERROR(Resize(*h, change.new_size));
    } else {
      // truncate(2) by path: a descriptor of this mount writing the file
      // takes it (kept from release by writing_mu_), else the store's file.
      std::unique_lock writing_lock(writing_mu_);
      auto it = writing_.find(ino);
      if (it != writing_.end()) {
        std::lock_guard lock(it->second->write_mu);
        SHOAL_RETURN_IF_ERROR(Resize(*it->second, change.new_size));
      } else {
        writing_lock.unlock();
        SHOAL_RETURN_IF_ERROR(ResizeStored(*r, change.new_size));
      }
    }
  }
  if (change.mode || change.mtime_ns || change.uid || change.gid) {
    SHOAL_RETURN_IF_ERROR(KeepAttributes(ino, *r, change, fh));
  }
  if (auto e = WritingAttr(ino, *r)) return *e;
  return GetAttr(ino);
}

// A file that will be committed again (a streamed one before its commit, a
// buffered one with changes) gets the mode and time at that commit: the
// commit would replace what the store kept now. Anything else, now.
Status ShoalFs::KeepAttributes(uint64_t ino, const Resolved& r, const AttrChange& change, uint64_t fh) {
  {
    std::lock_guard writing_lock(writing_mu_);
    auto* h = fh ? reinterpret_cast<FileHandle*>(fh) : nullptr;
    if (!h || !h->writing) {
      auto it = writing_.find(ino);
      h = it != writing_.end() ? it->second : nullptr;
    }
    if (h) {
      std::lock_guard lock(h->write_mu);
      const bool commits_again = !h->unlinked && (h->streamed ? !h->committed : h->dirty);
      if (commits_again) {
        if (change.mode) h->mode = *change.mode;
        if (change.mtime_ns) h->set_mtime = change.mtime_ns;
        if (change.uid) h->set_uid = change.uid;
        if (change.gid) h->set_gid = change.gid;
        return {};
      }
    }
  }
  Status st = client_.SetAttributes(r.ns, change.mode, change.mtime_ns, change.uid, change.gid);
  if (st.code() == Code::kNotSupported) {
    // Stores that keep none (object stores without posix_attributes):
    // accepted with no effect, so cp -p, tar and rsync work.
    spdlog::debug("{}: mode and time not kept: {}", r.ns, st.message());
    return {};
  }
  return st;
}

}  // namespace shoal::fuse
