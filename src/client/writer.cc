// shoal::Writer and the namespace writes of shoal::Client (Create, Delete,
// Mkdir, Rmdir, Rename): write-through from the client to the mount's
// under-store, then the cached metadata the write made stale is dropped on
// the workers (ClientImpl::AfterMutation).
//
// Deadlines: each store call (the checks of Create, every Write, Close, each
// namespace write) is bounded by client.timeout of its own (CallDeadline, so
// a store's request timeout and retries end with it). A Write that has to
// wait for the upload of an earlier part waits within its own deadline.
//
// Memory: a Write is handed to the store in pieces of at most kAppendPiece;
// each store buffers at most its own upload unit (S3: multipart_threshold,
// then multipart_concurrency parts; Azure: upload_threshold, then
// upload_concurrency blocks; WebHDFS: write_buffer; file://: nothing).
//
// write_mode (per mount): `through` stops there. `cache-through` also keeps
// the bytes in a spill file (an unlinked temp file: disk, not memory; gone
// with the process), because the pages' ring keys need the version the store
// gives only at Close; after the commit they are pushed to their owners
// (ClientImpl::PushWrittenPages). The spill is bounded (SpillFile::Open);
// past its bound, or when it cannot be written, the rest of the file is not
// cached, which is logged; the write itself never fails for it. A front end
// whose answer waits on Close (the S3 endpoint) has the push made after
// Close instead, from a background thread, and on a file:// store from the
// file written rather than a spill (FillCacheAfterClose, client_internal.h).
//
// `write-back` keeps every byte in the spill file too, and nothing goes to
// the store during the writes: the bytes are streamed from the spill to the
// path's k holders while the file is written (WritebackStream,
// writeback_stream.h), and Close returns once all k have them and their
// journal record on disk. When they cannot all take it (busy, disk full,
// down), or the spill cannot hold the file, the same bytes are written
// through instead from the spill: logged and counted
// (ClientStats::write_back_fallbacks), never lost.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>

#include "client/client_impl.h"
#include "client/client_internal.h"
#include "client/writeback_stream.h"
#include "common/units.h"
#include "ufs/http/call_deadline.h"
#include "ufs/posix_metadata.h"
#include "ufs/write_options_codec.h"

namespace shoal {
namespace {

constexpr size_t kAppendPiece = 4 << 20;

// A spill never takes more than this, nor more than half the free space of
// its file system when it is opened.
constexpr uint64_t kMaxSpillBytes = 64ull << 30;

// The bytes of a cache-through write, in an unlinked file in $TMPDIR (or
// /tmp): nothing is left behind however the process ends.
class SpillFile {
 public:
  static std::optional<SpillFile> Open(const std::string& for_path) {
    const char* env = std::getenv("TMPDIR");
    std::string dir = env && *env ? env : "/tmp";
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      std::string tmpl = dir + "/shoal-spill-XXXXXX";
      fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
      if (fd >= 0) ::unlink(tmpl.c_str());
    }
    if (fd < 0) {
      spdlog::warn(
          "{} will not be cached after it is written: no spill file in {} ({}); set TMPDIR to a writable "
          "directory",
          for_path, dir, std::strerror(errno));
      return std::nullopt;
    }
    uint64_t limit = kMaxSpillBytes;
    struct statvfs vfs {};
    if (::fstatvfs(fd, &vfs) == 0) limit = std::min<uint64_t>(limit, uint64_t(vfs.f_bavail) * vfs.f_frsize / 2);
    return SpillFile(fd, limit);
  }
  SpillFile(SpillFile&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), limit_(o.limit_), size_(o.size_), stopped_(o.stopped_) {}
  SpillFile& operator=(SpillFile&&) = delete;
  ~SpillFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Appends; past the bound or after a failed write, nothing more is kept.
  void Append(std::span<const char> data, const std::string& for_path) {
    if (!Fits(data.size())) return;
    while (!data.empty()) {
      ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(size_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Stop("a failed write to the spill file: ", n < 0 ? errno : EIO, for_path);
      size_ += static_cast<uint64_t>(n);
      data = data.subspan(static_cast<size_t>(n));
    }
  }
  // Append of `length` bytes of the file `fd` from `offset`, copied inside the kernel.
  // The kernel cannot copy between some file systems ($TMPDIR on tmpfs, the
  // file on ext4): those bytes go through this process instead.
  void AppendFile(int fd, uint64_t offset, uint64_t length, const std::string& for_path) {
    if (!Fits(length)) return;
    while (length > 0) {
      loff_t in = static_cast<loff_t>(offset), out = static_cast<loff_t>(size_);
      ssize_t n = ::copy_file_range(fd, &in, fd_, &out, static_cast<size_t>(std::min<uint64_t>(length, 1ull << 30)), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        return CopyThrough(fd, offset, length, for_path);
      }
      if (n <= 0) return Stop("a failed copy into the spill file: ", n < 0 ? errno : EIO, for_path);
      size_ += static_cast<uint64_t>(n);
      offset += static_cast<uint64_t>(n);
      length -= static_cast<uint64_t>(n);
    }
  }
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  const std::string& stopped() const { return stopped_; }

 private:
  SpillFile(int fd, uint64_t limit) : fd_(fd), limit_(limit) {}
  // Whether `n` more bytes stay within the bound; past it the spill stops.
  bool Fits(uint64_t n) {
    if (!stopped_.empty()) return false;
    if (size_ + n <= limit_) return true;
    stopped_ = "the spill bound of " + std::to_string(limit_) + " bytes (half the free space of $TMPDIR, at most " +
               std::to_string(kMaxSpillBytes) + ")";
    return false;
  }
  void Stop(const char* what, int err, const std::string& for_path) {
    stopped_ = what + std::string(std::strerror(err));
    spdlog::warn("{}: only its first {} bytes will be cached after it is written ({})", for_path, size_, stopped_);
  }
  void CopyThrough(int fd, uint64_t offset, uint64_t length, const std::string& for_path) {
    std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(length, 1 << 20)));
    while (length > 0 && stopped_.empty()) {
      ssize_t n = ::pread(fd, buf.data(), static_cast<size_t>(std::min<uint64_t>(length, buf.size())),
                          static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Stop("a failed read of the file written: ", n < 0 ? errno : EIO, for_path);
      Append(std::span<const char>(buf.data(), static_cast<size_t>(n)), for_path);
      offset += static_cast<uint64_t>(n);
      length -= static_cast<uint64_t>(n);
    }
  }
  int fd_;
  uint64_t limit_;
  uint64_t size_ = 0;
  std::string stopped_;  // why nothing more is kept ("" while it is)
};

class WriterImpl final : public Writer {
 public:
  WriterImpl(detail::ClientImpl& client, ResolvedPath rp, std::unique_ptr<ObjectWriter> out, WriteOptions options)
      : client_(client),
        rp_(std::move(rp)),
        out_(std::move(out)),
        options_(std::move(options)),
        spill_(client_.WriteModeFor(rp_) != WriteMode::kThrough ? SpillFile::Open(rp_.ns_path) : std::nullopt) {
    if (client_.WriteModeFor(rp_) == WriteMode::kWriteBack && !out_) {  // else written through (see Create)
      hash_ = XXH3_createState();
      XXH3_64bits_reset(hash_);
      write_back_ = true;
      if (!spill_) write_back_ = false, why_through_ = "no spill file to hold its bytes until Close";
    }
    if (write_back_) {
      auto holders = client_.WritebackHolders(rp_);
      if (holders.empty()) {
        write_back_ = false, why_through_ = "no live worker to hold it";
      } else {
        stream_ =
            std::make_unique<detail::WritebackStream>(client_, rp_, std::move(holders), spill_->fd(), HeldAttrs());
      }
    }
  }

  ~WriterImpl() override {
    Abort();
    if (hash_) XXH3_freeState(hash_);
  }

  // Opens the store writer (write-back defers it) and hands it what the spill
  // holds: from here on the file is written through.
  Status SwitchToThrough() {
    write_back_ = false;
    stream_.reset();  // tells the holders to drop what they have
    spdlog::warn("{}: written through instead of write-back ({})", rp_.ns_path, why_through_);
    client_.CountWritebackFallback();
    if (out_) return {};
    // An older write of this path may still be uploading: this file, written
    // through now, could land first and be replaced by those older bytes.
    // So it waits for them, as a delete or rename of a pending file does.
    if (Status st = client_.WaitForUploads(rp_, "write through", client_.NewDeadline()); !st.ok()) return st;
    auto store = client_.StoreFor(rp_);
    if (!store) return store.error();
    auto out = (*store)->OpenWriter(rp_.key, options_);
    if (!out) return out.error();
    out_ = std::move(*out);
    if (!spill_) return {};  // nothing was written yet (a write-back without a spill is through from the start)
    std::vector<char> buf(std::min<uint64_t>(kAppendPiece, std::max<uint64_t>(spill_->size(), 1)));
    for (uint64_t off = 0; off < spill_->size();) {
      const uint64_t len = std::min<uint64_t>(buf.size(), spill_->size() - off);
      ssize_t got = ::pread(spill_->fd(), buf.data(), len, static_cast<off_t>(off));
      if (got != static_cast<ssize_t>(len)) {
        return Status(Code::kIo, "reading back the spill file of " + rp_.ns_path + ": " +
                                     (got < 0 ? std::strerror(errno) : "short read"));
      }
      SHOAL_RETURN_IF_ERROR(out_->Append(std::span<const char>(buf.data(), len)));
      off += len;
    }
    return {};
  }

  Status Write(std::span<const char> data) override {
    if (state_ != State::kOpen) return NotOpen("write to");
    CallDeadline bound(client_.NewDeadline());
    while (!data.empty()) {
      auto piece = data.first(std::min(kAppendPiece, data.size()));
      if (write_back_) {
        const uint64_t before = spill_->size();
        spill_->Append(piece, rp_.ns_path);
        if (spill_->stopped().empty()) {
          XXH3_64bits_update(hash_, piece.data(), piece.size());
          size_ += piece.size();
          data = data.subspan(piece.size());
          if (Status st = stream_->Offer(size_); !st.ok()) {
            why_through_ = st.message();
            if (Status sw = SwitchToThrough(); !sw.ok()) {
              Abort();
              return sw.WithContext("write " + rp_.ns_path + " (nothing was stored)");
            }
          }
          continue;
        }
        why_through_ = "the spill file stopped at " + spill_->stopped();
        const uint64_t kept = spill_->size() - before;
        if (Status st = SwitchToThrough(); !st.ok()) {
          Abort();
          return st.WithContext("write " + rp_.ns_path + " (nothing was stored)");
        }
        piece = piece.subspan(kept);
        size_ += kept;
        data = data.subspan(kept);
        if (piece.empty()) continue;
      }
      if (!out_) {
        if (Status st = SwitchToThrough(); !st.ok()) {
          Abort();
          return st.WithContext("write " + rp_.ns_path + " (nothing was stored)");
        }
      }
      if (Status st = out_->Append(piece); !st.ok()) {
        Abort();
        return st.WithContext("write " + rp_.ns_path + " (nothing was stored)");
      }
      if (spill_) spill_->Append(piece, rp_.ns_path);
      size_ += piece.size();
      data = data.subspan(piece.size());
    }
    return {};
  }

  uint64_t size() const override { return size_; }

  // WriteFromFile (client_internal.h): written through, the store writer
  // takes the file's bytes as a file (a file:// store copies them inside the
  // kernel), and so does the spill; otherwise they are read and written.
  Status WriteFrom(int fd, uint64_t offset, uint64_t length) {
    if (state_ != State::kOpen) return NotOpen("write to");
    if (write_back_ || !out_) return WriteFromByReading(fd, offset, length);
    CallDeadline bound(client_.NewDeadline());
    if (Status st = out_->AppendFile(fd, offset, length); !st.ok()) {
      Abort();
      return st.WithContext("write " + rp_.ns_path + " (nothing was stored)");
    }
    if (spill_) spill_->AppendFile(fd, offset, length, rp_.ns_path);
    size_ += length;
    return {};
  }

  // After Close, the pages go to the cache from a background thread
  // (ClientImpl::QueueCacheFill) instead of before Close returns. On a
  // file:// store, cache-through, they are then read back from the file
  // written (in the page cache still, and checked against its version), so
  // no spill copy of every byte is made while the client waits.
  void FillCacheAfterClose() {
    fill_after_close_ = true;
    if (size_ == 0 && spill_ && out_ && client_.WriteModeFor(rp_) == WriteMode::kCacheThrough &&
        rp_.mount->ufs.starts_with("file://")) {
      spill_.reset();
      read_back_ = true;
    }
  }

  // The options the write-back holders keep: all but a mode or owner the
  // store would not keep (file:// keeps both, hdfs:// modes, object stores
  // with posix_attributes both), which a pending stat would show.
  // Create checked that they encode.
  std::string HeldAttrs() const {
    WriteOptions held = options_;
    const bool file = rp_.mount->ufs.starts_with("file://"), posix = KeepsPosixMetadata(*rp_.mount);
    if (!file && !rp_.mount->ufs.starts_with("hdfs://") && !posix) held.mode = 0;
    if (!file && !posix) held.uid = held.gid = -1;  // only these keep owners
    return EncodeWriteOptions(held).value_or(std::string());
  }

  // SetETagBeforeClose (client_internal.h).
  void SetETag(std::string etag) {
    if (etag.empty() || etag.find_first_of(" \r\n") != std::string::npos) return;
    options_.etag = std::move(etag);
    options_changed_ = true;
  }

  Result<FileStatus> Close() override {
    if (state_ != State::kOpen) return Err(NotOpen("close"));
    if (write_back_) {
      // Options changed since the holders began: they keep the new ones (Create checked the rest encodes).
      std::optional<std::string> attrs;
      if (options_changed_) attrs = HeldAttrs();
      auto held = stream_->Commit(size_, XXH3_64bits_digest(hash_), attrs);
      if (held) {
        state_ = State::kClosed;
        stream_.reset();
        spill_.reset();
        client_.CountWriteback();
        client_.AfterMutation(rp_);
        return held;
      }
      why_through_ = held.error().message();
      if (Status st = SwitchToThrough(); !st.ok()) {
        Abort();
        return Err(st.WithContext("write " + rp_.ns_path + " (nothing was stored)"));
      }
    } else if (!out_) {
      if (Status st = SwitchToThrough(); !st.ok()) {
        Abort();
        return Err(st.WithContext("write " + rp_.ns_path + " (nothing was stored)"));
      }
    }
    CallDeadline bound(client_.NewDeadline());
    if (Status st = out_->Close(); !st.ok()) {
      Abort();
      return Err(st.WithContext("write " + rp_.ns_path + " (nothing was stored)"));
    }
    state_ = State::kClosed;
    client_.AfterMutation(rp_);
    // The new version (ETag or mtime) is the store's to say.
    auto store = client_.StoreFor(rp_);
    if (!store) return Err(store.error());
    auto info = (*store)->Stat(rp_.key);
    if (!info) {
      return Err(info.error().WithContext(rp_.ns_path + " was written (" + std::to_string(size_) +
                                          " bytes), but its new status could not be read"));
    }
    FileStatus done = ToFileStatus(*info, rp_.ns_path);
    if (read_back_ && done.size == size_) {
      client_.QueueCacheFill(rp_.ns_path, size_, [&client = client_, rp = rp_, done, store = *store] {
        ReadOptions same;
        same.if_version = done.version;  // a file replaced since is not ours to cache
        client.PushWrittenPages(rp, done, done.size, [&](uint64_t offset, std::span<char> out) -> Status {
          auto got = store->Read(rp.key, offset, out, same);
          if (!got) return got.error();
          if (*got != out.size()) return Status(Code::kIo, "reading back " + rp.ns_path + ": short read");
          return {};
        });
      });
    }
    if (spill_) {
      if (spill_->size() < size_ && !spill_->stopped().empty()) {
        spdlog::warn("{}: only its first {} of {} bytes were cached after the write (the spill stopped at {})",
                     rp_.ns_path, spill_->size(), size_, spill_->stopped());
      }
      // The store's size differs from what was written only if another
      // writer replaced the file since; its pages are not ours to cache.
      if (done.size == size_ && fill_after_close_) {
        auto spill = std::make_shared<SpillFile>(std::move(*spill_));
        const uint64_t bytes = spill->size();
        client_.QueueCacheFill(rp_.ns_path, bytes, [&client = client_, rp = rp_, done, spill] {
          client.PushWrittenPages(rp, done, spill->fd(), spill->size());
        });
      } else if (done.size == size_) {
        client_.PushWrittenPages(rp_, done, spill_->fd(), spill_->size());
      }
      spill_.reset();
    }
    return done;
  }

  void Abort() override {
    if (state_ != State::kOpen) return;
    state_ = State::kAborted;
    stream_.reset();  // before the spill it reads
    spill_.reset();
    CallDeadline bound(client_.NewDeadline());  // an S3 writer tells the store to drop its parts
    if (out_) out_->Abort();
  }

 private:
  enum class State { kOpen, kClosed, kAborted };

  Status NotOpen(const char* what) const {
    return Status(Code::kInvalidArgument, std::string("cannot ") + what + " " + rp_.ns_path + ": its writer was " +
                                              (state_ == State::kClosed ? "closed" : "aborted (or failed)") +
                                              "; create it again");
  }

  detail::ClientImpl& client_;
  ResolvedPath rp_;
  std::unique_ptr<ObjectWriter> out_;
  WriteOptions options_;            // for the store writer
  bool options_changed_ = false;    // SetETag, after the holders began
  std::optional<SpillFile> spill_;  // cache-through: the bytes written, for the push after Close
  // write-back: still on (else written through); the hash of the bytes; why it was given up.
  bool write_back_ = false;
  XXH3_state_t* hash_ = nullptr;
  std::string why_through_;
  std::unique_ptr<detail::WritebackStream> stream_;  // write-back: to the holders, while write_back_
  uint64_t size_ = 0;
  State state_ = State::kOpen;
  bool fill_after_close_ = false;  // FillCacheAfterClose
  bool read_back_ = false;         // FillCacheAfterClose: the fill reads the file written, there is no spill

  Status WriteFromByReading(int fd, uint64_t offset, uint64_t length) {
    auto buf = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(std::min<uint64_t>(length, kAppendPiece)));
    while (length > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(length, kAppendPiece));
      ssize_t got = ::pread(fd, buf.get(), want, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        Abort();
        return Status(Code::kIo, "cannot read the file being written into " + rp_.ns_path + ": " +
                                     (got < 0 ? std::strerror(errno) : "it ended early") + " (nothing was stored)");
      }
      SHOAL_RETURN_IF_ERROR(Write(std::span<const char>(buf.get(), static_cast<size_t>(got))));
      offset += static_cast<uint64_t>(got);
      length -= static_cast<uint64_t>(got);
    }
    return {};
  }
};

}  // namespace

namespace detail {

Result<ResolvedPath> ClientImpl::ResolveForWrite(std::string_view path, std::string_view op) {
  auto rp = mounts_.Resolve(path);
  if (!rp) return Err(rp.error());
  if (rp->mount->read_only) {
    return Err(Code::kReadOnly, "cannot " + std::string(op) + " " + rp->ns_path + ": mount " + rp->mount->path +
                                    " is read-only (read_only: true in its mount config)");
  }
  return rp;
}

// What the store writer keeps beside the bytes (see CreateOptions).
static WriteOptions WriteOptionsOf(const CreateOptions& o) {
  WriteOptions w;
  w.metadata.content_type = o.content_type;
  w.metadata.user = o.metadata;
  w.metadata.headers = o.headers;
  w.etag = o.etag;
  w.mode = o.mode & 07777;
  w.uid = o.uid;
  w.gid = o.gid;
  return w;
}

Result<std::unique_ptr<Writer>> ClientImpl::Create(std::string_view path, const CreateOptions& options) {
  auto rp = ResolveForWrite(path, "create");
  if (!rp) return Err(rp.error());
  auto bad = [&](const std::string& v) { return v.find_first_of("\r\n") != std::string::npos; };
  for (const auto& [name, value] : options.metadata) {
    if (name.empty() || name.find_first_of("=\r\n") != std::string::npos || bad(value)) {
      return Err(Code::kInvalidArgument, "cannot create " + rp->ns_path + ": metadata '" + name +
                                             "' has an empty name, an '=' in its name or a line break");
    }
  }
  for (const auto& [name, value] : options.headers) {
    if (std::find(std::begin(kObjectHeaders), std::end(kObjectHeaders), name) == std::end(kObjectHeaders) ||
        bad(value)) {
      return Err(Code::kInvalidArgument, "cannot create " + rp->ns_path + ": header '" + name +
                                             "' is not one an object keeps (cache-control, content-disposition, "
                                             "content-encoding, content-language, expires) or has a line break");
    }
  }
  if (bad(options.content_type) || bad(options.etag) || options.etag.find(' ') != std::string::npos) {
    return Err(Code::kInvalidArgument,
               "cannot create " + rp->ns_path + ": a line break in its content type, or a space in its ETag");
  }
  if (rp->key.empty()) return Err(Code::kIsDirectory, "cannot create " + rp->ns_path + ": it is the root of a mount");
  CallDeadline bound(NewDeadline());
  // The holders keep the file's metadata, ETag and mode with its bytes and
  // upload them together; only metadata a journal cannot carry (not UTF-8,
  // over kMaxWriteOptionsText) makes it go through.
  if (WriteModeFor(*rp) == WriteMode::kWriteBack && EncodeWriteOptions(WriteOptionsOf(options))) {
    // write-back with overwrite (the default) asks nothing: a checkpoint or a
    // small put costs no round trip to the store before its bytes go to the
    // holders. (A key that is also a directory prefix is an object store's
    // normal state; on a file store its upload fails, logged and retried, until
    // the directory goes; docs/architecture.md.) Without overwrite the path's
    // stat owner is asked (its cached metadata, any pending write-back, else
    // the store); only a definite answer refuses the write.
    if (options.overwrite)
      return std::unique_ptr<Writer>(new WriterImpl(*this, std::move(*rp), nullptr, WriteOptionsOf(options)));
    auto st = StatResolved(*rp, NewDeadline());
    if (st && st->is_dir) return Err(Code::kIsDirectory, "cannot create " + rp->ns_path + ": it is a directory");
    if (st && !options.overwrite) {
      return Err(Code::kAlreadyExists, "cannot create " + rp->ns_path + ": it exists (and overwrite is off)");
    }
    return std::unique_ptr<Writer>(new WriterImpl(*this, std::move(*rp), nullptr, WriteOptionsOf(options)));
  }
  auto store = StoreFor(*rp);
  if (!store) return Err(store.error());
  auto existing = (*store)->Stat(rp->key);
  if (existing && existing->is_dir) {
    return Err(Code::kIsDirectory, "cannot create " + rp->ns_path + ": it is a directory");
  }
  if (existing && !options.overwrite) {
    return Err(Code::kAlreadyExists, "cannot create " + rp->ns_path + ": it exists (and overwrite is off)");
  }
  if (!existing && existing.error().code() != Code::kNotFound) {
    return Err(existing.error().WithContext("create " + rp->ns_path));
  }
  auto out = (*store)->OpenWriter(rp->key, WriteOptionsOf(options));
  if (!out) return Err(out.error().WithContext("create " + rp->ns_path));
  return std::unique_ptr<Writer>(new WriterImpl(*this, std::move(*rp), std::move(*out), WriteOptionsOf(options)));
}

// One namespace write on one path: `op` on the store, then the refresh.
Status ClientImpl::WritePath(std::string_view path, std::string_view what, std::string_view verb,
                             const std::function<Status(UnderStore&, const std::string&)>& op) {
  auto rp = ResolveForWrite(path, what);
  if (!rp) return rp.error();
  auto store = StoreFor(*rp);
  if (!store) return store.error();
  {
    CallDeadline bound(NewDeadline());
    if (Status st = op(**store, rp->key); !st.ok()) return st.WithContext(std::string(verb) + " " + rp->ns_path);
  }
  AfterMutation(*rp);
  return {};
}

Status ClientImpl::WaitForUploads(const ResolvedPath& rp, std::string_view what, Deadline deadline) {
  if (WriteModeFor(rp) != WriteMode::kWriteBack || rp.key.empty()) return {};
  auto still_waiting = [&] {
    return Status(Code::kUnavailable,
                  std::string(what) + ": " + rp.ns_path + " (or a file under it) is still waiting for its upload " +
                      "(write-back) after client.timeout (" + FormatDuration(config_.client.timeout) +
                      "): `shoal status` shows the workers' pending uploads; try again once they are done");
  };
  for (;;) {
    auto st = StatResolved(rp, deadline);
    if (!st && st.error().code() == Code::kTimeout) return still_waiting();
    if (!st && st.error().code() != Code::kNotFound) return st.error().WithContext(std::string(what));
    // A file in the store has nothing pending under it; a directory (or a
    // path the store lacks) may have, on any worker.
    const bool pending = st ? st->version.starts_with("wb-") || (st->is_dir && !PendingUnder(rp, deadline).empty())
                            : !PendingUnder(rp, deadline).empty();
    if (!pending) return {};
    if (std::chrono::steady_clock::now() >= deadline) return still_waiting();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // uploads start within 100 ms of a commit
  }
}

Status ClientImpl::Delete(std::string_view path) {
  // A pending write is in no store yet: deleting the store's file would let
  // the upload bring it back, so the delete waits for the upload.
  if (auto rp = mounts_.Resolve(path)) {
    if (Status st = WaitForUploads(*rp, "delete", NewDeadline()); !st.ok()) return st;
  }
  return WritePath(path, "delete", "delete", [](UnderStore& s, const std::string& key) { return s.Delete(key); });
}

Status ClientImpl::Mkdir(std::string_view path) {
  return WritePath(path, "create directory", "mkdir",
                   [](UnderStore& s, const std::string& key) { return s.Mkdir(key); });
}

Status ClientImpl::Rmdir(std::string_view path) {
  return WritePath(path, "remove directory", "rmdir",
                   [](UnderStore& s, const std::string& key) { return s.Rmdir(key); });
}

Status ClientImpl::SetAttributes(std::string_view path, std::optional<uint32_t> mode, std::optional<int64_t> mtime_ns,
                                 std::optional<uint32_t> uid, std::optional<uint32_t> gid) {
  if (mode && *mode > 07777) {
    return Status(Code::kInvalidArgument, "cannot set the mode of " + std::string(path) + ": " + std::to_string(*mode) +
                                              " is more than the permission bits (07777)");
  }
  for (auto [what, id] : {std::pair{"owner", uid}, std::pair{"group", gid}}) {
    if (id && *id >= kNoOwner) {
      return Status(Code::kInvalidArgument, "cannot set the " + std::string(what) + " of " + std::string(path) + ": " +
                                                std::to_string(*id) + " is no id (4294967295 means none)");
    }
  }
  const UnderStore::AttributeChange change{mode, mtime_ns, uid, gid};
  if (change.empty()) return {};
  if (auto rp = mounts_.Resolve(path)) {
    // Its last write may still be on the holders only: the store's file is
    // not yet the one a change is meant for, so the change waits for the upload.
    if (Status st = WaitForUploads(*rp, "set the mode, time or owner of", NewDeadline()); !st.ok()) return st;
  }
  return WritePath(path, "set the mode, time or owner of", "set the attributes of",
                   [&](UnderStore& s, const std::string& key) { return s.SetAttributes(key, change); });
}

Status ClientImpl::Rename(std::string_view from, std::string_view to) {
  auto a = ResolveForWrite(from, "rename");
  if (!a) return a.error();
  auto b = ResolveForWrite(to, "rename to");
  if (!b) return b.error();
  const std::string what = "rename " + a->ns_path + " to " + b->ns_path;
  if (a->mount_index != b->mount_index) {
    return Status(Code::kNotSupported, what + ": they are in different mounts (" + a->mount->path + ", " +
                                           b->mount->path + "); copy the file and delete the original instead");
  }
  if (a->key.empty() || b->key.empty())
    return Status(Code::kInvalidArgument, what + ": a mount's root cannot be renamed");
  // Write-back: a pending file is in no store yet, and its holders are those
  // of its name, so it is renamed once uploaded; a pending write of the
  // target would replace the renamed file at its upload, so it goes first.
  const Deadline deadline = NewDeadline();
  for (const ResolvedPath* rp : {&*a, &*b}) {
    if (Status st = WaitForUploads(*rp, what, deadline); !st.ok()) return st;
  }
  auto store = StoreFor(*a);
  if (!store) return store.error();
  bool subtree = true;  // unless the target is known to be a file
  {
    CallDeadline bound(NewDeadline());
    if (Status st = (*store)->Rename(a->key, b->key); !st.ok()) return st.WithContext(what);
    auto moved = (*store)->Stat(b->key);
    subtree = !moved || moved->is_dir;
  }
  // A renamed directory moves everything under it: every worker may hold
  // metadata below either name.
  AfterMutation(*a, subtree);
  AfterMutation(*b, subtree);
  return {};
}

}  // namespace detail

Status WriteFromFile(Writer& w, int fd, uint64_t offset, uint64_t length) {
  if (auto* impl = dynamic_cast<WriterImpl*>(&w)) return impl->WriteFrom(fd, offset, length);
  auto buf = std::make_unique_for_overwrite<char[]>(kAppendPiece);
  while (length > 0) {
    ssize_t got = ::pread(fd, buf.get(), static_cast<size_t>(std::min<uint64_t>(length, kAppendPiece)),
                          static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      w.Abort();
      return Status(Code::kIo, std::string("cannot read the file being written: ") +
                                   (got < 0 ? std::strerror(errno) : "it ended early") + " (nothing was stored)");
    }
    SHOAL_RETURN_IF_ERROR(w.Write(std::span<const char>(buf.get(), static_cast<size_t>(got))));
    offset += static_cast<uint64_t>(got);
    length -= static_cast<uint64_t>(got);
  }
  return {};
}

void FillCacheAfterClose(Writer& w) {
  if (auto* impl = dynamic_cast<WriterImpl*>(&w)) impl->FillCacheAfterClose();
}

void SetETagBeforeClose(Writer& w, std::string etag) {
  if (auto* impl = dynamic_cast<WriterImpl*>(&w)) impl->SetETag(std::move(etag));
}

}  // namespace shoal
