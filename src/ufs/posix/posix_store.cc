#include "ufs/posix/posix_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <random>

#include "common/config.h"
#include "common/sigv4.h"
#include "ufs/mount_options.h"

namespace shoal {
namespace {

Status ErrnoStatus(int err, const std::string& what, const std::string& path) {
  std::string msg = what + " '" + path + "': " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR: return Status(Code::kNotFound, "no such file or directory: '" + path + "'");
    case EACCES:
    case EPERM: return Status(Code::kPermissionDenied, msg + " (check the file permissions)");
    case ENOSPC:
    case EDQUOT: return Status(Code::kNoSpace, msg);
    case EEXIST: return Status(Code::kAlreadyExists, msg);
    case EISDIR: return Status(Code::kIsDirectory, msg);
    case ENAMETOOLONG:
      return Status(Code::kInvalidArgument, what + ": a name in the path is too long for the under-store");
    case ENOTEMPTY: return Status(Code::kNotEmpty, msg);
    default: return Status(Code::kIo, msg);
  }
}

// `s` with the physical directory `root` (ending in '/') replaced by the
// mount's namespace path `mount` ("" for the mount at /).
Status HideRoot(Status s, const std::string& root, const std::string& mount) {
  if (s.ok()) return s;
  std::string m = s.message();
  const std::string bare = root.substr(0, root.size() - 1);  // without its trailing '/'
  for (size_t at = m.find(bare); at != std::string::npos; at = m.find(bare, at)) {
    m.replace(at, bare.size(), mount);
    at += mount.size();
  }
  return Status(s.code(), std::move(m));
}

int64_t Ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }
int64_t MtimeNs(const struct stat& st) { return Ns(st.st_mtim); }

// What a file written through Shoal keeps beside its bytes, in extended
// attributes of the user namespace. A file system without user xattrs keeps
// neither; its files then get the ETag made of their stat.
//
// kEtagXattr: "<etag> <size> <mtime_ns> <ctime_ns>", the ETag (the MD5 of
// the bytes, or what the writer gave: an S3 multipart upload's "md5-N") and
// the file's stat just before the attribute was set, once the file is in
// place. Setting it moves the ctime once more, by at most kEtagCtimeSlack
// (the writer checks, and sets it again otherwise); every later change of
// the file (a write, truncate, utimes, chmod, rename) moves the ctime past
// that, so the kept ETag no longer holds and the stat one is given: an ETag
// that looks like an MD5 is never kept for other bytes.
constexpr char kEtagXattr[] = "user.shoal.etag";
// kMetaXattr: the content type, then "name=value" lines of user metadata.
constexpr char kMetaXattr[] = "user.shoal.meta";
constexpr int64_t kEtagCtimeSlack = 20'000'000;  // 20 ms: a few ticks of the kernel's coarse clock
constexpr int kEtagAttempts = 5;

// The ETag of a regular file: the one kept in kEtagXattr (`kept`, as read)
// while it holds, else one made of its stat. The stat one names the device
// and inode, so no two files share it, and the ctime, so it changes with
// every change of the bytes; it is never 32 hex digits (it would pass for an
// MD5) and has no '-' (it would pass for a multipart ETag, whose MD5 tools
// do not compare).
std::string FileEtag(const struct stat& st, std::string_view kept) {
  if (!kept.empty()) {
    char etag[160];
    unsigned long long size = 0;
    long long mtime = 0, ctime = 0;
    std::string text(kept);
    if (std::sscanf(text.c_str(), "%159s %llu %lld %lld", etag, &size, &mtime, &ctime) == 4 &&
        size == static_cast<unsigned long long>(st.st_size) && mtime == MtimeNs(st) && Ns(st.st_ctim) >= ctime &&
        Ns(st.st_ctim) <= ctime + kEtagCtimeSlack) {
      return etag;
    }
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "%llx.%llx.%llx.%llx.%llx", static_cast<unsigned long long>(MtimeNs(st)),
                static_cast<unsigned long long>(st.st_size), static_cast<unsigned long long>(st.st_dev),
                static_cast<unsigned long long>(st.st_ino), static_cast<unsigned long long>(Ns(st.st_ctim)));
  return buf;
}

// The value of attribute `name` of `path` (or of `fd` when >= 0); "" when
// it has none, or the file system keeps none.
std::string ReadXattr(const std::string& path, int fd, const char* name) {
  char buf[4096];
  ssize_t n = fd >= 0 ? ::fgetxattr(fd, name, buf, sizeof buf) : ::getxattr(path.c_str(), name, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

FileInfo InfoFromStat(std::string key, const struct stat& st, std::string_view kept_etag) {
  FileInfo fi;
  fi.key = std::move(key);
  fi.is_dir = S_ISDIR(st.st_mode);
  fi.size = fi.is_dir ? 0 : static_cast<uint64_t>(st.st_size);
  fi.mtime_ns = MtimeNs(st);
  fi.mode = static_cast<uint32_t>(st.st_mode & 07777);
  fi.ctime_ns = Ns(st.st_ctim);
  fi.uid = st.st_uid;
  fi.gid = st.st_gid;
  if (!fi.is_dir) fi.etag = FileEtag(st, kept_etag);
  return fi;
}

// The FileInfo of `path` (stat `st`), reading its kept ETag (from `fd` when >= 0).
FileInfo InfoOf(std::string key, const struct stat& st, const std::string& path, int fd = -1) {
  std::string kept = S_ISREG(st.st_mode) ? ReadXattr(path, fd, kEtagXattr) : std::string();
  return InfoFromStat(std::move(key), st, kept);
}

// Keeps `etag` in kEtagXattr (see there) of the file `fd` (`path`, for
// messages), with the stat it has once the attribute is set. A file system
// without user xattrs (ENOTSUP) keeps none: the file has the ETag of its stat.
Status StampEtag(int fd, const std::string& etag, const std::string& path) {
  for (int attempt = 0; attempt < kEtagAttempts; ++attempt) {
    struct stat before, after;
    if (::fstat(fd, &before) != 0) return ErrnoStatus(errno, "cannot stat", path);
    const std::string kept = etag + " " + std::to_string(before.st_size) + " " + std::to_string(MtimeNs(before)) + " " +
                             std::to_string(Ns(before.st_ctim));
    if (::fsetxattr(fd, kEtagXattr, kept.data(), kept.size(), 0) != 0) {
      if (errno == ENOTSUP) return {};
      return ErrnoStatus(errno, "cannot keep the ETag (extended attribute) of", path);
    }
    if (::fstat(fd, &after) != 0) return ErrnoStatus(errno, "cannot stat", path);
    if (FileEtag(after, kept) == etag) return {};
  }
  ::fremovexattr(fd, kEtagXattr);  // the ctime kept moving: the ETag of the stat, which is right too
  return {};
}

// The extended attribute's text: the content type on the first line, then
// "name=value" per user metadata entry and ":name=value" per standard header
// (a header name holds no ':', so the two never mix).
std::string EncodeMetadata(const ObjectMetadata& m) {
  std::string out = m.content_type + "\n";
  for (const auto& [k, v] : m.user) out += k + "=" + v + "\n";
  for (const auto& [k, v] : m.headers) out += ":" + k + "=" + v + "\n";
  return out;
}

ObjectMetadata DecodeMetadata(std::string_view text) {
  ObjectMetadata m;
  auto nl = text.find('\n');
  if (nl == std::string_view::npos) return m;
  m.content_type = std::string(text.substr(0, nl));
  text.remove_prefix(nl + 1);
  while (!text.empty()) {
    nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    if (line.starts_with(':')) {
      m.headers.emplace_back(std::string(line.substr(1, eq - 1)), std::string(line.substr(eq + 1)));
    } else {
      m.user.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    }
  }
  return m;
}

std::string Parent(const std::string& path) { return path.substr(0, path.rfind('/')); }

// fsync of a directory, so a rename or mkdir in it survives a crash.
Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open directory", dir);
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  return rc == 0 ? Status() : ErrnoStatus(e, "cannot fsync directory", dir);
}

// Writes to a hidden temporary beside the target; Close fsyncs it, renames it
// into place and fsyncs the directory, so the file is durable when Close
// returns and readers never see it partial.
//
// The fsync at Close would otherwise write the whole file out while the
// client waits (0.1-0.3 s for 40 MiB here): every kWritebackStep bytes, the
// disk write of what came before is started (sync_file_range), so it runs
// while the rest arrives and Close waits only for the tail. Durability is
// still Close's fsync; this only moves the work earlier.
class PosixWriter final : public ObjectWriter {
 public:
  // `hide` rewrites what an error says (PosixStore::Hide).
  PosixWriter(int fd, std::string tmp, std::string dest, WriteOptions options, std::function<Status(Status)> hide)
      : fd_(fd), tmp_(std::move(tmp)), dest_(std::move(dest)), options_(std::move(options)), hide_(std::move(hide)) {
    if (options_.etag.empty()) md5_.emplace(s3::StreamDigest::Kind::kMd5);
  }
  ~PosixWriter() override { Abort(); }

  Status Append(std::span<const char> data) override { return hide_(AppendHere(data)); }
  Status AppendFile(int fd, uint64_t offset, uint64_t length) override {
    return hide_(AppendFileHere(fd, offset, length));
  }
  Status Close() override { return hide_(CloseHere()); }
  void Abort() override;

 private:
  static constexpr uint64_t kWritebackStep = 8 << 20;

  Status AppendHere(std::span<const char> data) {
    if (fd_ < 0) return Status(Code::kInvalidArgument, "write to a closed writer for '" + dest_ + "'");
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "cannot write", dest_);
      }
      if (md5_) md5_->Update(data.first(static_cast<size_t>(n)));
      data = data.subspan(static_cast<size_t>(n));
      Wrote(static_cast<uint64_t>(n));
    }
    return {};
  }

  // copy_file_range when the ETag is given (nothing to hash here); the
  // bytes through this process when they must be hashed, or when the kernel
  // cannot copy between these files (another file system on an old kernel).
  Status AppendFileHere(int fd, uint64_t offset, uint64_t length) {
    if (fd_ < 0) return Status(Code::kInvalidArgument, "write to a closed writer for '" + dest_ + "'");
    if (md5_) return ObjectWriter::AppendFile(fd, offset, length);
    while (length > 0) {
      loff_t in = static_cast<loff_t>(offset);
      ssize_t n =
          ::copy_file_range(fd, &in, fd_, nullptr, static_cast<size_t>(std::min<uint64_t>(length, 1ull << 30)), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        return ObjectWriter::AppendFile(fd, offset, length);
      }
      if (n < 0) return ErrnoStatus(errno, "cannot copy a staged part into", dest_);
      if (n == 0) return Status(Code::kIo, "a staged part for '" + dest_ + "' ended before its size");
      offset += static_cast<uint64_t>(n);
      length -= static_cast<uint64_t>(n);
      Wrote(static_cast<uint64_t>(n));
    }
    return {};
  }

  // Starts the disk write of each whole kWritebackStep written (see the class comment).
  void Wrote(uint64_t n) {
    written_ += n;
    if (written_ - flushed_ < kWritebackStep) return;
    const uint64_t upto = written_ - written_ % kWritebackStep;
    // Best effort: an error here shows again at Close's fsync.
    ::sync_file_range(fd_, static_cast<off64_t>(flushed_), static_cast<off64_t>(upto - flushed_),
                      SYNC_FILE_RANGE_WRITE);
    flushed_ = upto;
  }

  Status CloseHere() {
    if (fd_ < 0) return Status(Code::kInvalidArgument, "writer for '" + dest_ + "' already closed");
    if (Status st = KeepVersionMoving(); !st.ok()) {
      Abort();
      return st;
    }
    if (Status st = KeepMetadata(); !st.ok()) {
      Abort();
      return st;
    }
    if (Status st = KeepMode(); !st.ok()) {
      Abort();
      return st;
    }
    if (::fsync(fd_) != 0) {
      Status st = ErrnoStatus(errno, "cannot fsync", dest_);
      Abort();
      return st;
    }
    if (::rename(tmp_.c_str(), dest_.c_str()) != 0) {
      int e = errno;
      Abort();
      return ErrnoStatus(e, "cannot rename into place", dest_);
    }
    tmp_.clear();
    Status kept = KeepEtag();  // after the rename, which moves the ctime
    ::close(fd_);
    fd_ = -1;
    if (!kept.ok()) return kept;
    return SyncDir(dest_.substr(0, dest_.rfind('/')));
  }

 private:
  // A file's version is mtime+size, and the kernel stamps files with a
  // coarse clock (one tick is milliseconds): a file replaced or deleted and
  // written again with the same size within a tick would keep its version,
  // and cached pages of the old bytes would be served for it. A file written
  // through Shoal gets the precise current time instead, and always a time
  // after the file it replaces.
  Status KeepVersionMoving() {
    struct timespec now;
    ::clock_gettime(CLOCK_REALTIME, &now);
    int64_t ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    struct stat old_st;
    if (::stat(dest_.c_str(), &old_st) == 0) ns = std::max(ns, MtimeNs(old_st) + 1);
    struct timespec times[2];
    times[0].tv_sec = 0;
    times[0].tv_nsec = UTIME_OMIT;
    times[1].tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    times[1].tv_nsec = static_cast<long>(ns % 1'000'000'000);
    if (::futimens(fd_, times) != 0) return ErrnoStatus(errno, "cannot set the modification time of", dest_);
    return {};
  }

  // kEtagXattr (see there), on the file in place.
  Status KeepEtag() {
    const std::string etag = md5_ ? s3::HexOf(md5_->Bytes()) : options_.etag;
    md5_.reset();
    return StampEtag(fd_, etag, dest_);
  }

  // The mode the writer gave, else the one of the file replaced (as
  // writing it in place would keep), else the default the temporary has.
  // The owner of the file replaced too, where this process may give it
  // (root): a file rewritten for its owner stays theirs.
  Status KeepMode() {
    mode_t mode = options_.mode & 07777;
    struct stat old_st, tmp_st;
    if (options_.uid >= 0 || options_.gid >= 0) {
      // The owner the writer gave (a file created for another user).
      if (::fchown(fd_, options_.uid >= 0 ? static_cast<uid_t>(options_.uid) : static_cast<uid_t>(-1),
                   options_.gid >= 0 ? static_cast<gid_t>(options_.gid) : static_cast<gid_t>(-1)) != 0) {
        return ErrnoStatus(errno, "cannot give its owner to", dest_);
      }
      if (mode == 0 && ::stat(dest_.c_str(), &old_st) == 0 && S_ISREG(old_st.st_mode)) mode = old_st.st_mode & 07777;
    } else if (::stat(dest_.c_str(), &old_st) == 0 && S_ISREG(old_st.st_mode)) {
      if (mode == 0) mode = old_st.st_mode & 07777;
      if (::fstat(fd_, &tmp_st) == 0 && (tmp_st.st_uid != old_st.st_uid || tmp_st.st_gid != old_st.st_gid) &&
          ::fchown(fd_, old_st.st_uid, old_st.st_gid) != 0 && errno != EPERM) {
        return ErrnoStatus(errno, "cannot keep the owner of", dest_);
      }
    }
    if (mode != 0 && ::fchmod(fd_, mode) != 0) return ErrnoStatus(errno, "cannot set the mode of", dest_);
    return {};
  }

  // kMetaXattr (see there), on the temporary.
  Status KeepMetadata() {
    if (options_.metadata.empty()) return {};
    const std::string meta = EncodeMetadata(options_.metadata);
    if (::fsetxattr(fd_, kMetaXattr, meta.data(), meta.size(), 0) != 0) {
      if (errno == ENOTSUP) return {};
      if (errno == E2BIG || errno == ENOSPC || errno == ERANGE) {
        return Status(Code::kInvalidArgument,
                      "the metadata of '" + dest_ + "' (" + std::to_string(meta.size()) +
                          " bytes) is more than its file system keeps in an extended attribute");
      }
      return ErrnoStatus(errno, "cannot keep the metadata (extended attribute) of", dest_);
    }
    return {};
  }

  int fd_;
  std::string tmp_;
  std::string dest_;
  WriteOptions options_;
  std::optional<s3::StreamDigest> md5_;  // of the bytes written, unless options_.etag gives the ETag
  std::function<Status(Status)> hide_;
  uint64_t written_ = 0;  // bytes in the temporary
  uint64_t flushed_ = 0;  // bytes whose disk write was started (Wrote)
};

void PosixWriter::Abort() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

class PosixStore final : public UnderStore {
 public:
  PosixStore(std::string uri, std::string root, std::string mount)
      : uri_(std::move(uri)), root_(std::move(root)), mount_(mount == "/" ? "" : std::move(mount)) {}

  const std::string& uri() const override { return uri_; }

  // The store's answers name paths as the namespace does, never the
  // physical path on this host (a client has no business knowing it; the
  // worker's logs, which show the under-store, may).
  Result<FileInfo> Stat(std::string_view key) override { return Hidden(StatHere(key)); }
  Result<ListPage> List(std::string_view prefix, const ListOptions& options) override {
    return Hidden(ListHere(prefix, options));
  }
  Result<size_t> Read(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& options) override {
    return Hidden(ReadImpl(key, offset, out, options, nullptr));
  }
  Result<ReadWithInfoResult> ReadWithInfo(std::string_view key, uint64_t offset, std::span<char> out) override {
    return Hidden(ReadWithInfoHere(key, offset, out));
  }
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key, const WriteOptions& options = {}) override {
    return Hidden(OpenWriterHere(key, options));
  }
  Result<ObjectMetadata> Metadata(std::string_view key) override { return Hidden(MetadataHere(key)); }
  Status Delete(std::string_view key) override { return Hide(DeleteHere(key)); }
  Status Mkdir(std::string_view key) override { return Hide(MkdirHere(key)); }
  Status Rmdir(std::string_view key) override { return Hide(RmdirHere(key)); }
  Status Rename(std::string_view from, std::string_view to) override { return Hide(RenameHere(from, to)); }
  Status SetAttributes(std::string_view key, const AttributeChange& change) override {
    return Hide(SetAttributesHere(key, change));
  }

  Status Hide(Status s) const { return HideRoot(std::move(s), root_, mount_); }
  template <typename T>
  Result<T> Hidden(Result<T> r) const {
    if (!r) return Err(Hide(std::move(r.error())));
    return r;
  }

 private:
  Result<FileInfo> StatHere(std::string_view key) {
    auto path = Path(key);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Err(ErrnoStatus(errno, "cannot stat", path));
    FileInfo fi = InfoOf(std::string(key), st, path);
    if (key.empty()) fi.mode = 0;  // the store's own directory: its mode is the operator's, not shown
    return fi;
  }

  Result<ObjectMetadata> MetadataHere(std::string_view key) {
    auto path = Path(key);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Err(ErrnoStatus(errno, "cannot stat", path));
    if (!S_ISREG(st.st_mode)) return Err(Code::kNotFound, "'" + path + "' is a directory, not a file");
    return DecodeMetadata(ReadXattr(path, -1, kMetaXattr));
  }

  Result<ListPage> ListHere(std::string_view prefix, const ListOptions& options) {
    // Object-store semantics over a directory tree. "a/b/" lists directory a/b;
    // "a/b" lists entries of a/ whose names start with "b".
    std::string p(prefix);
    std::string dir_key = p.substr(0, p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
    std::vector<FileInfo> all;
    if (options.delimiter.empty()) {
      SHOAL_RETURN_IF_ERROR(Walk(dir_key, p, &all));
    } else {
      SHOAL_RETURN_IF_ERROR(ListDir(dir_key, p, &all));
    }
    std::sort(all.begin(), all.end(), [](const FileInfo& a, const FileInfo& b) { return a.key < b.key; });
    ListPage page;
    auto it = all.begin();
    if (!options.continuation.empty()) {
      it = std::upper_bound(all.begin(), all.end(), options.continuation,
                            [](const std::string& k, const FileInfo& f) { return k < f.key; });
    }
    int max = options.max_keys > 0 ? options.max_keys : 1000;
    for (; it != all.end() && static_cast<int>(page.entries.size()) < max; ++it) page.entries.push_back(*it);
    if (it != all.end() && !page.entries.empty()) page.continuation = page.entries.back().key;
    return page;
  }

  // One open: the fstat that guards the version also answers the stat.
  Result<ReadWithInfoResult> ReadWithInfoHere(std::string_view key, uint64_t offset, std::span<char> out) {
    ReadWithInfoResult r;
    auto n = ReadImpl(key, offset, out, {}, &r.info);
    if (!n) return Err(n.error());
    r.bytes = *n;
    return r;
  }

  Result<size_t> ReadImpl(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& options,
                          FileInfo* info) {
    auto path = Path(key);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Err(ErrnoStatus(errno, "cannot open", path));
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int e = errno;
      ::close(fd);
      return Err(ErrnoStatus(e, "cannot stat", path));
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Err(Code::kInvalidArgument, "'" + path + "' is a directory, not a file");
    }
    FileInfo now = InfoOf(std::string(key), st, path, fd);
    if (!options.if_version.empty() && now.Version() != options.if_version) {
      ::close(fd);
      return Err(Code::kVersionMismatch, "'" + path + "' is not version " + options.if_version + " (now version " +
                                             now.Version() +
                                             "): it changed since it was opened, or "
                                             "the version asked for is wrong");
    }
    if (info) *info = std::move(now);
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        ::close(fd);
        return Err(ErrnoStatus(e, "cannot read", path));
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    return done;
  }

  Result<std::unique_ptr<ObjectWriter>> OpenWriterHere(std::string_view key, const WriteOptions& options) {
    if (key.empty()) return Err(Code::kInvalidArgument, "cannot write the root of " + MountName());
    auto dest = Path(key);
    auto slash = dest.rfind('/');
    struct stat st;
    if (::stat(dest.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Err(Code::kIsDirectory, "cannot write '" + dest + "': it is a directory");
    }
    SHOAL_RETURN_IF_ERROR(MakeDirs(dest.substr(0, slash)));
    static std::atomic<uint64_t> counter{0};
    std::string tmp = dest.substr(0, slash + 1) + ".shoal-tmp-" + std::to_string(::getpid()) + "-" +
                      std::to_string(counter.fetch_add(1));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Err(ErrnoStatus(errno, "cannot create", tmp));
    return std::make_unique<PosixWriter>(
        fd, std::move(tmp), std::move(dest), options,
        [root = root_, mount = mount_](Status st) { return HideRoot(std::move(st), root, mount); });
  }

  Status DeleteHere(std::string_view key) {
    if (key.empty()) return Status(Code::kIsDirectory, "cannot delete the root of " + MountName());
    auto path = Path(key);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot delete", path);
    if (S_ISDIR(st.st_mode))
      return Status(Code::kIsDirectory, "cannot delete '" + path + "': it is a directory (rmdir removes an empty one)");
    if (::unlink(path.c_str()) != 0) return ErrnoStatus(errno, "cannot delete", path);
    return SyncDir(Parent(path));
  }

  // chmod and utimensat on the file itself. A file whose ETag is kept (an
  // MD5: its bytes are unchanged by this) keeps it: the change moves its
  // ctime, so it is stamped again, unless it had changed before (then the
  // ETag of its stat is right, as before).
  Status SetAttributesHere(std::string_view key, const AttributeChange& change) {
    if (key.empty()) return Status(Code::kNotSupported, "the root of " + MountName() + " keeps its own mode and time");
    auto path = Path(key);
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) {
      // Not readable by this process (mode 0000 on another's file): the
      // path calls, and the ETag of its stat after.
      if ((change.uid || change.gid) && ::lchown(path.c_str(), change.uid ? *change.uid : static_cast<uid_t>(-1),
                                                 change.gid ? *change.gid : static_cast<gid_t>(-1)) != 0)
        return ErrnoStatus(errno, "cannot change the owner of", path);
      if (change.mode && ::chmod(path.c_str(), *change.mode & 07777) != 0)
        return ErrnoStatus(errno, "cannot set the mode of", path);
      if (change.mtime_ns) {
        struct timespec times[2] = {{0, UTIME_OMIT}, TimespecOf(*change.mtime_ns)};
        if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0)
          return ErrnoStatus(errno, "cannot set the modification time of", path);
      }
      return {};
    }
    if (fd < 0) return ErrnoStatus(errno, "cannot set the attributes of", path);
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st;
    if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "cannot stat", path);
    std::string etag;
    if (S_ISREG(st.st_mode)) {
      // The kept ETag, only if it holds now.
      std::string kept = ReadXattr(path, fd, kEtagXattr);
      std::string current = FileEtag(st, kept);
      if (!kept.empty() && kept.compare(0, current.size() + 1, current + " ") == 0) etag = std::move(current);
    } else if (!S_ISDIR(st.st_mode)) {
      return Status(Code::kNotSupported, "cannot set the attributes of '" + path + "': not a file or a directory");
    }
    // The owner first: chown clears setuid and setgid bits, which a mode
    // given with it then sets (as `chown` then `chmod` would).
    if ((change.uid || change.gid) && ::fchown(fd, change.uid ? *change.uid : static_cast<uid_t>(-1),
                                               change.gid ? *change.gid : static_cast<gid_t>(-1)) != 0)
      return ErrnoStatus(errno, "cannot change the owner of", path);
    if (change.mode && ::fchmod(fd, *change.mode & 07777) != 0)
      return ErrnoStatus(errno, "cannot set the mode of", path);
    if (change.mtime_ns) {
      struct timespec times[2] = {{0, UTIME_OMIT}, TimespecOf(*change.mtime_ns)};
      if (::futimens(fd, times) != 0) return ErrnoStatus(errno, "cannot set the modification time of", path);
    }
    if (!etag.empty()) return StampEtag(fd, etag, path);
    return {};
  }

  static struct timespec TimespecOf(int64_t ns) {
    struct timespec t;
    t.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    t.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    if (t.tv_nsec < 0) {  // before 1970
      t.tv_nsec += 1'000'000'000;
      t.tv_sec -= 1;
    }
    return t;
  }

  Status MkdirHere(std::string_view key) {
    if (key.empty()) return Status(Code::kAlreadyExists, "the root of " + MountName() + " already exists");
    auto path = Path(key);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      return Status(Code::kAlreadyExists, "cannot create directory '" + path + "': a " +
                                              (S_ISDIR(st.st_mode) ? "directory" : "file") + " is already there");
    }
    SHOAL_RETURN_IF_ERROR(MakeDirs(Parent(path)));
    if (::mkdir(path.c_str(), 0755) != 0) return ErrnoStatus(errno, "cannot create directory", path);
    return SyncDir(Parent(path));
  }

  Status RmdirHere(std::string_view key) {
    if (key.empty()) return Status(Code::kInvalidArgument, "cannot remove the root of " + MountName());
    auto path = Path(key);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot remove directory", path);
    if (!S_ISDIR(st.st_mode))
      return Status(Code::kNotDirectory, "cannot remove directory '" + path + "': it is a file");
    if (::rmdir(path.c_str()) != 0) {
      if (errno == ENOTEMPTY || errno == EEXIST) {
        return Status(Code::kNotEmpty, "cannot remove directory '" + path + "': it is not empty");
      }
      return ErrnoStatus(errno, "cannot remove directory", path);
    }
    return SyncDir(Parent(path));
  }

  Status RenameHere(std::string_view from, std::string_view to) {
    if (from.empty() || to.empty()) return Status(Code::kInvalidArgument, "cannot rename the root of " + MountName());
    auto a = Path(from), b = Path(to);
    struct stat st;
    if (::lstat(a.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot rename", a);
    SHOAL_RETURN_IF_ERROR(MakeDirs(Parent(b)));
    if (::rename(a.c_str(), b.c_str()) != 0) {
      int e = errno;
      std::string what = "cannot rename '" + a + "' to '" + b + "'";
      if (e == EISDIR) return Status(Code::kIsDirectory, what + ": the target is a directory");
      if (e == ENOTDIR) return Status(Code::kNotDirectory, what + ": the target is a file and the source a directory");
      if (e == ENOTEMPTY || e == EEXIST)
        return Status(Code::kNotEmpty, what + ": the target is a directory that is not empty");
      if (e == EINVAL) return Status(Code::kInvalidArgument, what + ": a directory cannot move into itself");
      return ErrnoStatus(e, "cannot rename", a);
    }
    SHOAL_RETURN_IF_ERROR(SyncDir(Parent(b)));
    return Parent(a) == Parent(b) ? Status() : SyncDir(Parent(a));
  }

  std::string MountName() const { return "the mount " + (mount_.empty() ? std::string("/") : mount_); }

  std::string Path(std::string_view key) const {
    std::string p = root_;
    p.append(key);
    if (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
  }

  Status MakeDirs(const std::string& dir) {
    if (dir.empty()) return {};
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) return {};
      return Status(Code::kNotDirectory, "'" + dir + "' is a file, not a directory");
    }
    auto slash = dir.rfind('/');
    if (slash != std::string::npos && slash > 0) SHOAL_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash)));
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "cannot create directory", dir);
    return {};
  }

  // Entries of directory `dir_key` (relative, "" or ending in '/') whose key starts with `prefix`.
  Status ListDir(const std::string& dir_key, const std::string& prefix, std::vector<FileInfo>* out) {
    std::string dir = root_ + dir_key;
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
      if (errno == ENOENT || errno == ENOTDIR) return {};  // an empty prefix, as object stores say
      return ErrnoStatus(errno, "cannot list", dir);
    }
    while (auto* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name.starts_with(".shoal-tmp-")) continue;
      std::string key = dir_key + name;
      if (!key.starts_with(prefix)) continue;
      struct stat st;
      if (::stat((dir + name).c_str(), &st) != 0) continue;  // vanished meanwhile
      out->push_back(InfoOf(std::move(key), st, dir + name));
    }
    ::closedir(d);
    return {};
  }

  Status Walk(const std::string& dir_key, const std::string& prefix, std::vector<FileInfo>* out) {
    std::vector<FileInfo> here;
    SHOAL_RETURN_IF_ERROR(ListDir(dir_key, "", &here));
    for (auto& f : here) {
      if (f.is_dir) {
        std::string sub = f.key + "/";
        if (sub.starts_with(prefix) || prefix.starts_with(sub)) SHOAL_RETURN_IF_ERROR(Walk(sub, prefix, out));
      } else if (f.key.starts_with(prefix)) {
        out->push_back(std::move(f));
      }
    }
    return {};
  }

  std::string uri_;
  std::string root_;   // absolute, ends in '/'
  std::string mount_;  // the mount's namespace path ("" for the mount at /)
};

}  // namespace

Result<std::shared_ptr<UnderStore>> MakePosixStore(const UfsUri& uri, const MountConfig& mount) {
  if (auto o = MountOptions::Parse("file", {}, mount.options); !o) return Err(o.error());
  struct stat st;
  if (::stat(uri.path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Err(Code::kNotFound, "under-store directory '" + uri.path + "' of mount '" + mount.path +
                                    "' does not exist or is not a directory");
  }
  return std::make_shared<PosixStore>(mount.ufs, uri.path, mount.path);
}

}  // namespace shoal
