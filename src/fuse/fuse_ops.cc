// The libfuse low-level operations over ShoalFs, and the session that serves
// them (fuse_mount.h). The only file that includes libfuse.
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>

#include "common/end_user.h"
#include "fuse/caller_user.h"
#include "fuse/errno_map.h"
#include "fuse/fuse_mount.h"
#include "fuse/mount_point.h"
#include "fuse/shoal_fs.h"

namespace shoal::fuse {
namespace {

// The largest read the kernel sends (with max_pages = 256 pages).
constexpr unsigned kMaxRead = 1 << 20;

// Kernel read-ahead on the mount: its default (128 KiB) asks for the next
// bytes in small steps; 4 MiB keeps a sequential reader's requests at the
// 1 MiB maximum and several in flight (measured: 305 -> 860 MB/s for a warm
// 400 MiB file whose kernel pages were dropped). The kernel takes the lower
// of the mount's read_ahead_kb (raised in RaiseReadAhead, as root) and what
// init answers.
constexpr unsigned kReadAheadKiB = 4096;

struct Session {
  ShoalFs* fs = nullptr;
  std::function<void()> on_ready;
  fuse_session* se = nullptr;  // set before the loop starts
  bool act_for_callers = false;
};

// Names the calling process's user as the thread's end user (caller_user.h),
// so the workers authorize it rather than the mount. Cheap when the same user
// calls again: each session thread keeps the last one until its TTL.
void ActForCaller(fuse_req_t req) {
  struct Last {
    uid_t uid = 0;
    gid_t gid = 0;
    std::chrono::steady_clock::time_point until;
  };
  thread_local Last last;
  const fuse_ctx* ctx = fuse_req_ctx(req);
  const auto now = std::chrono::steady_clock::now();
  if (CurrentEndUser() && ctx->uid == last.uid && ctx->gid == last.gid && now < last.until) return;
  SetCurrentEndUser(UserOfCaller(ctx->uid, ctx->gid));
  last = {ctx->uid, ctx->gid, now + kCallerTtl};
}

// Every operation reaches the file system through here, first thing.
ShoalFs& Fs(fuse_req_t req) {
  auto* session = static_cast<Session*>(fuse_req_userdata(req));
  if (session->act_for_callers) ActForCaller(req);
  return *session->fs;
}

// Replies with the errno of `s`, logging what failed (a missing name is the
// normal answer of a lookup, not worth a line).
void ReplyError(fuse_req_t req, const Status& s, std::string_view op) {
  int e = ErrnoFor(s);
  if (e != ENOENT) spdlog::warn("{}: {} ({})", op, s.message(), std::strerror(e));
  fuse_reply_err(req, e);
}

// A name over NAME_MAX, or a path past PATH_MAX: ENAMETOOLONG, before the
// store is asked (the kernel passes names of up to 1024 bytes).
bool RefusedName(fuse_req_t req, fuse_ino_t parent, const char* name, std::string_view op) {
  if (!Fs(req).NameTooLong(parent, name)) return false;
  spdlog::debug("{}: name too long ({} bytes)", op, std::strlen(name));
  fuse_reply_err(req, ENAMETOOLONG);
  return true;
}

fuse_entry_param ToParam(const FsEntry& e) {
  fuse_entry_param p{};
  p.ino = e.ino;
  p.attr = e.attr;
  p.attr_timeout = e.timeout_s;
  p.entry_timeout = e.timeout_s;
  return p;
}

void OpInit(void* userdata, fuse_conn_info* conn) {
  auto* s = static_cast<Session*>(userdata);
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_READDIRPLUS);
  want(FUSE_CAP_READDIRPLUS_AUTO);
  want(FUSE_CAP_PARALLEL_DIROPS);
  // Data is invalidated by Shoal, by version (keep_cache on open), not by
  // the kernel on every attribute change (which would also make it ask for
  // attributes before each read).
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  conn->max_read = kMaxRead;
  conn->max_readahead = kReadAheadKiB * 1024;
  // Concurrent read-ahead requests the kernel may have in flight.
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  if (s->on_ready) s->on_ready();
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (RefusedName(req, parent, name, "lookup")) return;
  auto e = Fs(req).Lookup(parent, name);
  if (!e) return ReplyError(req, e.error(), "lookup");
  if (e->ino == 0 && e->timeout_s <= 0) return (void)fuse_reply_err(req, ENOENT);
  auto p = ToParam(*e);
  fuse_reply_entry(req, &p);
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t n) {
  Fs(req).Forget(ino, n);
  fuse_reply_none(req);
}

void OpForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) Fs(req).Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void OpGetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto e = Fs(req).GetAttr(ino);
  if (!e) return ReplyError(req, e.error(), "getattr");
  fuse_reply_attr(req, &e->attr, e->timeout_s);
}

void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask) {
  auto st = Fs(req).Access(ino, mask);
  if (!st.ok()) return ReplyError(req, st, "access");
  fuse_reply_err(req, 0);
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto o = Fs(req).Open(ino, fi->flags);
  if (!o) return ReplyError(req, o.error(), "open");
  fi->fh = o->fh;
  fi->keep_cache = o->keep_cache;
  // A read handle has nothing to flush: no request per close(2). A write
  // handle commits at the flush, so close(2) reports the error.
  fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY && !(fi->flags & O_TRUNC);
  if (o->version_changed) {
    // The kernel may still hold the old size: drop its cached attributes
    // (not the entry; this is not a lookup, so the call cannot deadlock).
    fuse_lowlevel_notify_inval_inode(static_cast<Session*>(fuse_req_userdata(req))->se, ino, -1, 0);
  }
  if (fuse_reply_open(req, fi) == -ENOENT) Fs(req).Discard(o->fh);  // the open was interrupted
}

void OpRead(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  // One buffer per request thread, kept: a fresh 1 MiB allocation per read
  // would be an mmap and munmap each time.
  thread_local std::unique_ptr<char[]> buf;
  thread_local size_t cap = 0;
  if (size > kMaxRead * 2ul) size = kMaxRead * 2ul;
  if (cap < size) {
    buf = std::make_unique_for_overwrite<char[]>(size);
    cap = size;
  }
  auto n = Fs(req).Read(fi->fh, static_cast<uint64_t>(off), std::span<char>(buf.get(), size));
  if (!n) return ReplyError(req, n.error(), "read");
  fuse_reply_buf(req, buf.get(), *n);
}

// The caller, where the daemon creates files for users other than itself
// and may give them away (root); else none: the daemon's user owns them.
std::optional<ShoalFs::Creator> CreatorOf(fuse_req_t req) {
  static const uid_t euid = ::geteuid();
  static const gid_t egid = ::getegid();
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (euid != 0 || (ctx->uid == euid && ctx->gid == egid)) return std::nullopt;
  return ShoalFs::Creator{static_cast<uint32_t>(ctx->uid), static_cast<uint32_t>(ctx->gid)};
}

void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  if (RefusedName(req, parent, name, "create")) return;
  auto c = Fs(req).Create(parent, name, fi->flags, static_cast<uint32_t>(mode & 07777), CreatorOf(req));
  if (!c) return ReplyError(req, c.error(), "create");
  fi->fh = c->open.fh;
  auto p = ToParam(c->entry);
  if (fuse_reply_create(req, &p, fi) == -ENOENT) {  // interrupted: nothing is written, the lookup is not held
    Fs(req).Discard(c->open.fh);
    Fs(req).Forget(c->entry.ino, 1);
  }
}

void OpWrite(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  auto n = Fs(req).Write(fi->fh, static_cast<uint64_t>(off), std::span<const char>(buf, size));
  if (!n) return ReplyError(req, n.error(), "write");
  fuse_reply_write(req, *n);
}

void OpFlush(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  auto st = Fs(req).Commit(fi->fh, true);
  if (!st.ok()) return ReplyError(req, st, "close");
  fuse_reply_err(req, 0);
}

void OpFsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info* fi) {
  auto st = Fs(req).Commit(fi->fh, false);
  if (!st.ok()) return ReplyError(req, st, "fsync");
  fuse_reply_err(req, 0);
}

void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (RefusedName(req, parent, name, "unlink")) return;
  auto st = Fs(req).Unlink(parent, name);
  if (!st.ok()) return ReplyError(req, st, "unlink");
  fuse_reply_err(req, 0);
}

void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  if (RefusedName(req, parent, name, "mkdir")) return;
  auto e = Fs(req).Mkdir(parent, name, static_cast<uint32_t>(mode & 07777), CreatorOf(req));
  if (!e) return ReplyError(req, e.error(), "mkdir");
  auto p = ToParam(*e);
  if (fuse_reply_entry(req, &p) == -ENOENT) Fs(req).Forget(e->ino, 1);
}

void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (RefusedName(req, parent, name, "rmdir")) return;
  auto st = Fs(req).Rmdir(parent, name);
  if (!st.ok()) return ReplyError(req, st, "rmdir");
  fuse_reply_err(req, 0);
}

void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent, const char* new_name,
              unsigned int flags) {
  if (flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) {
    return ReplyError(req,
                      Status(Code::kNotSupported,
                             "rename with flags " + std::to_string(flags) + " (RENAME_EXCHANGE, RENAME_WHITEOUT)"),
                      "rename");
  }
  if (RefusedName(req, parent, name, "rename") || RefusedName(req, new_parent, new_name, "rename")) return;
  auto st = Fs(req).Rename(parent, name, new_parent, new_name, flags & RENAME_NOREPLACE);
  if (!st.ok()) return ReplyError(req, st, "rename");
  fuse_reply_err(req, 0);
}

void OpSetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  ShoalFs::AttrChange c;
  c.size = to_set & FUSE_SET_ATTR_SIZE;
  c.new_size = c.size ? static_cast<uint64_t>(attr->st_size) : 0;
  if (to_set & FUSE_SET_ATTR_MODE) c.mode = static_cast<uint32_t>(attr->st_mode & 07777);
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    c.mtime_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    c.mtime_ns = static_cast<int64_t>(attr->st_mtim.tv_sec) * 1'000'000'000 + attr->st_mtim.tv_nsec;
  }
  if (to_set & FUSE_SET_ATTR_UID) c.uid = static_cast<uint32_t>(attr->st_uid);
  if (to_set & FUSE_SET_ATTR_GID) c.gid = static_cast<uint32_t>(attr->st_gid);
  auto e = Fs(req).SetAttr(ino, c, fi ? fi->fh : 0);
  if (!e) return ReplyError(req, e.error(), "setattr");
  fuse_reply_attr(req, &e->attr, e->timeout_s);
}

void OpRelease(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  Fs(req).Release(fi->fh);
  fuse_reply_err(req, 0);
}

void OpOpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto o = Fs(req).OpenDir(ino);
  if (!o) return ReplyError(req, o.error(), "opendir");
  fi->fh = o->fh;
  fi->cache_readdir = o->cache_listing;
  fi->keep_cache = o->keep_cache;
  if (fuse_reply_open(req, fi) == -ENOENT) Fs(req).ReleaseDir(o->fh);
}

// Directory offsets: 1 is after ".", 2 after "..", 2 + i + 1 after entry i.
void ReadDir(fuse_req_t req, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  ShoalFs& fs = Fs(req);
  auto entries = fs.Entries(fi->fh, off == 0);
  if (!entries) return ReplyError(req, entries.error(), plus ? "readdirplus" : "readdir");
  const auto& v = **entries;
  const uint64_t dir = fs.DirIno(fi->fh);
  std::unique_ptr<char[]> buf(new char[size]);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < v.size() + 2; ++i) {
    const char* name = i == 0 ? "." : i == 1 ? ".." : v[i - 2].name.c_str();
    size_t rest = size - used;
    size_t need;
    if (i < 2) {
      // No lookup is counted for "." and "..": the kernel takes none.
      fuse_entry_param p{};
      p.attr.st_ino = i == 0 ? dir : fs.inodes().Parent(dir).value_or(dir);
      p.attr.st_mode = S_IFDIR;
      need = plus ? fuse_add_direntry_plus(req, buf.get() + used, rest, name, &p, static_cast<off_t>(i + 1))
                  : fuse_add_direntry(req, buf.get() + used, rest, name, &p.attr, static_cast<off_t>(i + 1));
    } else if (plus) {
      FsEntry e = fs.LookupListed(fi->fh, v[i - 2]);
      auto p = ToParam(e);
      need = fuse_add_direntry_plus(req, buf.get() + used, rest, name, &p, static_cast<off_t>(i + 1));
      if (need > rest) fs.Forget(e.ino, 1);  // not sent: the kernel holds no lookup of it
    } else {
      struct stat st {};
      // An inode the kernel holds keeps its number; the others get a stable
      // stand-in (a lookup gives them a real one).
      st.st_ino = fs.inodes().Find(dir, v[i - 2].name).value_or(std::hash<std::string>()(v[i - 2].name) | (1ull << 63));
      st.st_mode = v[i - 2].status.is_dir ? S_IFDIR : S_IFREG;
      need = fuse_add_direntry(req, buf.get() + used, rest, name, &st, static_cast<off_t>(i + 1));
    }
    if (need > rest) break;
    used += need;
  }
  fuse_reply_buf(req, buf.get(), used);
}

void OpReadDir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  ReadDir(req, size, off, fi, false);
}
void OpReadDirPlus(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  ReadDir(req, size, off, fi, true);
}

void OpReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  Fs(req).ReleaseDir(fi->fh);
  fuse_reply_err(req, 0);
}

void OpStatFs(fuse_req_t req, fuse_ino_t) {
  auto s = Fs(req).StatFs();
  if (!s) return ReplyError(req, s.error(), "statfs");
  struct statvfs v {};
  v.f_bsize = kMaxRead;
  v.f_frsize = 4096;
  v.f_blocks = s->capacity_bytes / 4096;
  v.f_bfree = v.f_bavail = (s->capacity_bytes - s->used_bytes) / 4096;
  v.f_namemax = 255;
  fuse_reply_statfs(req, &v);
}

// No extended attributes. ENOSYS tells the kernel so once: it then answers
// EOPNOTSUPP itself without asking again, which spares `ls -l` a round trip
// per file (its ACL and security label look-ups).
void OpGetXattr(fuse_req_t req, fuse_ino_t, const char*, size_t) { fuse_reply_err(req, ENOSYS); }
void OpListXattr(fuse_req_t req, fuse_ino_t, size_t) { fuse_reply_err(req, ENOSYS); }

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetAttr;
  ops.access = OpAccess;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.release = OpRelease;
  ops.create = OpCreate;
  ops.write = OpWrite;
  ops.flush = OpFlush;
  ops.fsync = OpFsync;
  ops.unlink = OpUnlink;
  ops.mkdir = OpMkdir;
  ops.rmdir = OpRmdir;
  ops.rename = OpRename;
  ops.setattr = OpSetAttr;
  ops.opendir = OpOpenDir;
  ops.readdir = OpReadDir;
  ops.readdirplus = OpReadDirPlus;
  ops.releasedir = OpReleaseDir;
  ops.statfs = OpStatFs;
  ops.getxattr = OpGetXattr;
  ops.listxattr = OpListXattr;
  return ops;
}

sigset_t StopSignals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGHUP);
  return s;
}

// With allow_other, other local users reach the mount, and every request of
// theirs runs as the daemon's user: the kernel must check the modes the mount
// shows (directories 0755, files 0644, owned by the daemon's user) before it
// asks, so default_permissions comes with it. Others may then read and list,
// and only the mount's owner (and root) create, write, rename or delete.
bool AllowsOthers(const std::vector<std::string>& options, bool* checks_permissions) {
  bool others = false;
  *checks_permissions = false;
  for (const auto& opt : options) {
    std::string_view rest = opt;
    while (!rest.empty()) {
      const size_t comma = std::min(rest.find(','), rest.size());
      const std::string_view token = rest.substr(0, comma);
      if (token == "allow_other") others = true;
      if (token == "default_permissions") *checks_permissions = true;
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
  }
  return others;
}

// A session with the mount options `options` (libfuse writes what it
// rejects to stderr).
Result<fuse_session*> NewSession(const std::vector<std::string>& options, Session* session) {
  std::vector<std::string> args = {"shoal", "-o", "fsname=shoal,subtype=shoal,max_read=" + std::to_string(kMaxRead)};
  for (const auto& opt : options) {
    args.push_back("-o");
    args.push_back(opt);
  }
  if (bool checks = false; AllowsOthers(options, &checks) && !checks) {
    args.push_back("-o");
    args.push_back("default_permissions");
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  fuse_args fargs = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  static const fuse_lowlevel_ops ops = MakeOps();
  fuse_session* se = fuse_session_new(&fargs, &ops, sizeof ops, session);
  fuse_opt_free_args(&fargs);
  if (!se) {
    std::string list;
    for (const auto& opt : options) list += " -o " + opt;
    return Err(Code::kInvalidArgument, "the FUSE mount options" + (list.empty() ? std::string(" (none)") : list) +
                                           " were refused (libfuse's message above names the one it does not know)");
  }
  return se;
}

}  // namespace

Status CheckMountOptions(const std::vector<std::string>& options) {
  Session none;
  auto se = NewSession(options, &none);
  if (!se) return se.error();
  fuse_session_destroy(*se);
  return {};
}

void BlockStopSignals() {
  sigset_t s = StopSignals();
  ::pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

Status RunFuseMount(Client& client, const FuseMountOptions& o) {
  SHOAL_RETURN_IF_ERROR(CheckMountpoint(o.mountpoint));
  ShoalFs::Options fs_options;
  fs_options.base = o.base;
  auto fs = ShoalFs::Make(client, fs_options);
  if (!fs) return fs.error();

  Session session{fs->get(), o.on_ready};
  session.act_for_callers = o.act_for_callers;
  auto made = NewSession(o.options, &session);
  if (!made) return made.error();
  fuse_session* se = *made;
  session.se = se;
  if (fuse_session_mount(se, o.mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    return Status(Code::kIo, "cannot mount on " + o.mountpoint +
                                 ": libfuse's message is above (is /dev/fuse there and usable? -o allow_other "
                                 "needs user_allow_other in /etc/fuse.conf for users other than root)");
  }
  const std::string mp = AbsolutePath(o.mountpoint);
  if (bool checks = false; AllowsOthers(o.options, &checks)) {
    spdlog::info(
        "allow_other: other users may read and list {}; the kernel checks the shown modes "
        "(default_permissions), so only uid {} (and root) may create, write, rename or delete",
        mp, ::getuid());
  }
  // Before the session starts: INIT's answer can only lower it.
  RaiseReadAhead(mp, kReadAheadKiB);
  spdlog::info("mounted {} on {}", o.base, mp);

  // Stop signals: unmount (lazily: busy files keep it alive until closed;
  // the session ends when the kernel lets go). A second one exits at once.
  std::atomic<bool> done{false};
  std::thread signals([&] {
    sigset_t set = StopSignals();
    bool asked = false;
    while (!done.load()) {
      timespec tick{0, 200'000'000};
      int sig = ::sigtimedwait(&set, nullptr, &tick);
      if (sig <= 0) continue;
      if (asked) {
        spdlog::warn("{} again: exiting now; files still open on {} will fail", ::strsignal(sig), mp);
        std::_Exit(1);
      }
      asked = true;
      spdlog::info("{}: unmounting {}", ::strsignal(sig), mp);
      if (auto st = Unmount(mp, true); !st.ok()) spdlog::error("{}", st.message());
    }
  });

  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, o.max_threads);
  fuse_loop_cfg_set_idle_threads(cfg, 16);
  int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  done = true;
  signals.join();
  fuse_session_unmount(se);
  fuse_session_destroy(se);
  spdlog::info("unmounted {}", mp);
  if (rc < 0) return Status(Code::kIo, "the FUSE session on " + mp + " ended with an error: " + std::strerror(-rc));
  return {};
}

}  // namespace shoal::fuse
