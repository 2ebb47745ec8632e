// ShoalFs writes: new files written sequentially through Client::Create ->
// Writer (committed at the first flush or fsync: close(2) reports its
// error), and unlink, mkdir, rmdir and rename through the client.
#include <fcntl.h>
#include <spdlog/spdlog.h>

#include "fuse/file_handle.h"
#include "fuse/shoal_fs.h"

namespace shoal::fuse {

Status Refuse(const std::string& ns, const std::string& what) {
  Status s(Code::kNotSupported,
           ns + ": " + what + " is not supported (files are written once, sequentially, as new files)");
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

Result<FsOpen> ShoalFs::OpenWriter(uint64_t ino, const Resolved& r, int flags) {
  if ((flags & O_ACCMODE) != O_WRONLY) return Err(Refuse(r.ns, "opening for reading and writing at once"));
  if (flags & O_APPEND) return Err(Refuse(r.ns, "appending"));
  auto w = client_.Create(r.ns, CreateOptions{.overwrite = !(flags & O_EXCL)});
  if (!w) return Err(w.error());
  auto h = std::make_unique<FileHandle>();
  h->ino = ino;
  h->ns = r.ns;
  h->writer = std::move(*w);
  FsOpen o;
  {
    std::lock_guard lock(writing_mu_);
    writing_[ino] = h.get();
  }
  o.fh = reinterpret_cast<uint64_t>(h.release());
  return o;
}

void ShoalFs::Discard(uint64_t fh) {
  std::unique_ptr<FileHandle> h(reinterpret_cast<FileHandle*>(fh));
  if (!h->writer) return;
  std::lock_guard lock(writing_mu_);
  if (auto it = writing_.find(h->ino); it != writing_.end() && it->second == h.get()) writing_.erase(it);
  h->writer->Abort();
}

std::optional<FsEntry> ShoalFs::WritingAttr(uint64_t ino, const Resolved& r) {
  std::lock_guard lock(writing_mu_);
  auto it = writing_.find(ino);
  if (it == writing_.end()) return std::nullopt;
  FileHandle* h = it->second;
  std::lock_guard write_lock(h->write_mu);
  FileStatus st;
  st.path = r.ns;
  st.size = h->writer->size();
  FsEntry e;
  e.ino = ino;
  e.attr = Attr(ino, st, r.place.rule);
  e.timeout_s = 0;  // it grows
  return e;
}

Result<ShoalFs::Created> ShoalFs::Create(uint64_t parent, std::string_view name, int flags) {
  auto r = WritableChild(parent, name);
  if (!r) return Err(r.error());
  Created c;
  // The inode first (as lookup would make it), then the writer; a failed
  // writer gives the lookup back.
  c.entry.ino = inodes_.Lookup(parent, name, false);
  auto o = OpenWriter(c.entry.ino, *r, flags);
  if (!o) {
    inodes_.Forget(c.entry.ino, 1);
    return Err(o.error());
  }
  FileStatus empty;
  empty.path = r->ns;
  c.entry.attr = Attr(c.entry.ino, empty, r->place.rule);
  c.entry.timeout_s = r->place.rule.timeout_s;
  c.open = *o;
  return c;
}

Result<size_t> ShoalFs::Write(uint64_t fh, uint64_t offset, std::span<const char> data) {
  auto* h = reinterpret_cast<FileHandle*>(fh);
  if (!h->writer) return Err(Code::kInvalidArgument, h->ns + " is not open for writing");
  std::lock_guard lock(h->write_mu);
  if (h->committed) {
    return Err(Refuse(h->ns, "writing after fsync or close (the file was committed then)"));
  }
  if (!h->failed.ok()) return Err(h->failed);
  if (offset != h->writer->size()) {
    // The file would not hold what the program wrote: nothing of it becomes visible.
    h->failed = Refuse(h->ns, "writing at offset " + std::to_string(offset) + " (the file ends at " +
                                  std::to_string(h->writer->size()) + ")");
    return Err(h->failed);
  }
  if (auto st = h->writer->Write(data); !st.ok()) {
    h->failed = st;
    return Err(st);
  }
  return data.size();
}

Status ShoalFs::Commit(uint64_t fh, bool at_flush) {
  auto* h = reinterpret_cast<FileHandle*>(fh);
  if (!h->writer) return {};
  // Lock order: writing_mu_, then the handle's write_mu (as WritingAttr).
  std::unique_lock writing_lock(writing_mu_);
  std::lock_guard lock(h->write_mu);
  if (h->committed) return h->commit_status;
  if (at_flush && h->writer->size() == 0) return {};
  h->committed = true;
  if (auto it = writing_.find(h->ino); it != writing_.end() && it->second == h) writing_.erase(it);
  writing_lock.unlock();
  if (!h->failed.ok()) {
    h->writer->Abort();
    h->commit_status = Status(h->failed.code(), h->failed.message() + "; the file was not written");
    spdlog::warn("{}: not written: {}", h->ns, h->failed.message());
    return h->commit_status;
  }
  auto st = h->writer->Close();
  if (!st) {
    h->commit_status = st.error();
    spdlog::error("writing {} failed: {}", h->ns, st.error().message());
    return h->commit_status;
  }
  // The kernel's pages of the file are the bytes just written: keep them.
  inodes_.SwapPageVersion(h->ino, VersionHash(st->version));
  return {};
}

Status ShoalFs::Unlink(uint64_t parent, std::string_view name) {
  auto r = WritableChild(parent, name);
  if (!r) return r.error();
  SHOAL_RETURN_IF_ERROR(client_.Delete(r->ns));
  inodes_.Remove(parent, name);
  return {};
}

Result<FsEntry> ShoalFs::Mkdir(uint64_t parent, std::string_view name) {
  auto r = WritableChild(parent, name);
  if (!r) return Err(r.error());
  SHOAL_RETURN_IF_ERROR(client_.Mkdir(r->ns));
  FileStatus dir;
  dir.path = r->ns;
  dir.is_dir = true;
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
  SHOAL_RETURN_IF_ERROR(client_.Rename(from->ns, to->ns));
  inodes_.Move(parent, name, new_parent, new_name);
  return {};
}

Result<FsEntry> ShoalFs::SetAttr(uint64_t ino, const AttrChange& change, uint64_t fh) {
  auto r = Resolve(ino);
  if (!r) return Err(r.error());
  if (r->place.rule.read_only) return Err(Code::kReadOnly, r->ns + " is on a read-only mount");
  if (change.size) {
    if (change.new_size != 0) return Err(Refuse(r->ns, "truncating to " + std::to_string(change.new_size) + " bytes"));
    auto* h = fh ? reinterpret_cast<FileHandle*>(fh) : nullptr;
    if (h && h->writer) {
      // ftruncate(fd, 0) on a file being written: fine while nothing is written.
      std::lock_guard lock(h->write_mu);
      if (h->writer->size() != 0) return Err(Refuse(r->ns, "truncating a file being written"));
    } else if (!WritingAttr(ino, *r)) {
      // truncate to 0: the file becomes a new, empty one.
      auto w = client_.Create(r->ns);
      if (!w) return Err(w.error());
      auto st = (*w)->Close();
      if (!st) return Err(st.error());
    }
  }
  // Modes, owners and times: not kept by the stores; accepted with no
  // effect, so that cp -p, tar and rsync work.
  if (change.mode_or_owner || change.times) spdlog::debug("{}: mode, owner or times not kept", r->ns);
  if (auto e = WritingAttr(ino, *r)) return *e;
  return GetAttr(ino);
}

}  // namespace shoal::fuse
