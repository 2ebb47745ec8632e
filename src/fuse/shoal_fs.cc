#include "fuse/shoal_fs.h"

#include "fuse/file_handle.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <thread>

namespace shoal::fuse {
namespace {

constexpr blksize_t kBlockSize = 1 << 20;  // st_blksize: what cp, tar and stdio size their reads by
constexpr auto kStatFsFor = std::chrono::seconds(5);

std::string BaseName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

uint64_t VersionHash(const std::string& version) {
  uint64_t h = std::hash<std::string>()(version);
  return h == 0 ? 1 : h;  // 0 means "nothing cached"
}

bool ValidName(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

struct ShoalFs::DirHandle {
  uint64_t ino = 0;
  Resolved where;
  std::mutex mu;
  bool listed = false;
  std::vector<FsDirEntry> entries;
};

ShoalFs::ShoalFs(Client& client, MountView view, Options options)
    : client_(client),
      view_(std::move(view)),
      options_(std::move(options)),
      uid_(::getuid()),
      gid_(::getgid()),
      start_ns_(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count()) {}

ShoalFs::~ShoalFs() = default;

Result<std::unique_ptr<ShoalFs>> ShoalFs::Make(Client& client, const Options& options) {
  auto view = MountView::Make(client.Mounts(), options.base);
  if (!view) return Err(view.error());
  Options o = options;
  if (o.staging_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o.staging_dir = tmp && *tmp ? tmp : "/tmp";
  }
  return std::unique_ptr<ShoalFs>(new ShoalFs(client, std::move(*view), std::move(o)));
}

Result<ShoalFs::Resolved> ShoalFs::Resolve(uint64_t ino) const {
  auto rel = inodes_.Path(ino);
  if (!rel) return Err(Code::kNotFound, "inode " + std::to_string(ino) + " is no longer known");
  Resolved r;
  r.ns = view_.NsPath(*rel);
  r.place = view_.Classify(r.ns);
  return r;
}

Result<ShoalFs::Resolved> ShoalFs::ResolveChild(uint64_t parent, std::string_view name) const {
  if (!ValidName(name)) return Err(Code::kInvalidArgument, "invalid name '" + std::string(name) + "'");
  auto rel = inodes_.Path(parent);
  if (!rel) return Err(Code::kNotFound, "inode " + std::to_string(parent) + " is no longer known");
  Resolved r;
  r.ns = view_.NsPath(rel->empty() ? std::string(name) : *rel + "/" + std::string(name));
  r.place = view_.Classify(r.ns);
  return r;
}

bool ShoalFs::NameTooLong(uint64_t parent, std::string_view name) const {
  constexpr size_t kNameMax = 255, kPathMax = 4095;
  if (name.size() > kNameMax) return true;
  auto rel = inodes_.Path(parent);
  if (!rel) return false;  // answered as a stale inode later
  return view_.NsPath(*rel).size() + 1 + name.size() > kPathMax;
}

struct stat ShoalFs::Attr(uint64_t ino, const FileStatus& st, const CacheRule& rule) const {
  struct stat a {};
  a.st_ino = ino;
  // The store's mode where it keeps them (without write bits on a read-only mount).
  const mode_t kept = rule.read_only ? (st.mode & ~0222u) : st.mode;
  if (st.is_dir) {
    a.st_mode = S_IFDIR | (st.mode != 0 ? kept : (rule.read_only ? 0555 : 0755));
    a.st_nlink = 2;
  } else {
    a.st_mode = S_IFREG | (st.mode != 0 ? kept : (rule.read_only ? 0444 : 0644));
    a.st_nlink = 1;
    a.st_size = static_cast<off_t>(st.size);
    a.st_blocks = static_cast<blkcnt_t>((st.size + 511) / 512);
  }
  // The store's owner where it keeps one, else the daemon's user.
  a.st_uid = st.uid >= 0 ? static_cast<uid_t>(st.uid) : uid_;
  a.st_gid = st.gid >= 0 ? static_cast<gid_t>(st.gid) : gid_;
  a.st_blksize = kBlockSize;
  int64_t t = st.mtime_ns != 0 ? st.mtime_ns : start_ns_;
  a.st_mtim.tv_sec = t / 1'000'000'000;
  a.st_mtim.tv_nsec = t % 1'000'000'000;
  a.st_atim = a.st_mtim;
  a.st_ctim = a.st_mtim;
  if (st.ctime_ns != 0) {  // the store's, where it keeps one (file://)
    a.st_ctim.tv_sec = st.ctime_ns / 1'000'000'000;
    a.st_ctim.tv_nsec = st.ctime_ns % 1'000'000'000;
  }
  return a;
}

Result<FileStatus> ShoalFs::StatPath(const Resolved& r) const {
  if (r.place.kind == MountView::Kind::kOutside) return Err(Code::kNotFound, "no such file or directory: " + r.ns);
  if (r.place.kind == MountView::Kind::kAboveMount) {
    FileStatus st;
    st.path = r.ns;
    st.is_dir = true;
    return st;
  }
  return client_.Stat(r.ns);
}

Result<FsEntry> ShoalFs::Lookup(uint64_t parent, std::string_view name) {
  auto r = ResolveChild(parent, name);
  if (!r) return Err(r.error());
  auto st = StatPath(*r);
  if (!st) {
    if (st.error().code() != Code::kNotFound) return Err(st.error());
    // A new file being written here is not in the store until its commit.
    if (auto ino = inodes_.Find(parent, name)) {
      if (auto e = WritingAttr(*ino, *r)) {
        e->ino = inodes_.Lookup(parent, name, false);
        return *e;
      }
    }
    FsEntry negative;
    negative.timeout_s = r->place.rule.timeout_s;
    return negative;
  }
  FsEntry e;
  e.ino = inodes_.Lookup(parent, name, st->is_dir);
  e.attr = Attr(e.ino, *st, r->place.rule);
  e.timeout_s = r->place.rule.timeout_s;
  return e;
}

Result<FsEntry> ShoalFs::GetAttr(uint64_t ino) {
  auto r = Resolve(ino);
  if (!r) return Err(r.error());
  if (auto e = WritingAttr(ino, *r)) return *e;
  auto st = StatPath(*r);
  if (!st) return Err(st.error());
  auto was_dir = inodes_.IsDir(ino);
  if (was_dir && *was_dir != st->is_dir) {
    // Replaced by the other type: this inode is gone; a new lookup makes a new one.
    return Err(Code::kNotFound, r->ns + " was replaced by a " + (st->is_dir ? "directory" : "file"));
  }
  FsEntry e;
  e.ino = ino;
  e.attr = Attr(ino, *st, r->place.rule);
  e.timeout_s = r->place.rule.timeout_s;
  return e;
}

Status ShoalFs::Access(uint64_t ino, int mask) {
  auto r = Resolve(ino);
  if (!r) return r.error();
  auto is_dir = inodes_.IsDir(ino);
  if ((mask & W_OK) && r->place.rule.read_only) return Status(Code::kReadOnly, r->ns + " is on a read-only mount");
  if ((mask & X_OK) && is_dir && !*is_dir) return Status(Code::kPermissionDenied, r->ns + " is not executable");
  return {};
}

Result<FsOpen> ShoalFs::Open(uint64_t ino, int flags) {
  auto r = Resolve(ino);
  if (!r) return Err(r.error());
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_APPEND))) {
    if (r->place.rule.read_only) return Err(Code::kReadOnly, r->ns + " is on a read-only mount");
    if (r->place.kind != MountView::Kind::kInMount) return Err(Code::kIsDirectory, r->ns + " is a directory");
    return OpenWriter(ino, *r, flags, false);
  }
  if (r->place.kind != MountView::Kind::kInMount) return Err(Code::kIsDirectory, r->ns + " is a directory");
  // When the kernel served the last open from its page cache, this one most
  // likely will too: the open only checks the version, without the file's
  // first bytes (a read that does reach the mount fetches them then).
  OpenOptions options;
  if (inodes_.PagesHeld(ino)) options.prefetch = 0;
  auto f = client_.OpenFile(r->ns, options);
  if (!f) return Err(f.error());
  auto h = std::make_unique<FileHandle>();
  h->ino = ino;
  h->ns = r->ns;
  uint64_t v = VersionHash((*f)->status().version);
  h->file = std::move(*f);
  const uint64_t before = inodes_.SwapPageVersion(ino, v);
  FsOpen o;
  o.keep_cache = before == v;
  h->keep_cache = o.keep_cache;
  o.version_changed = before != 0 && before != v;
  if (o.version_changed) spdlog::info("{} has a new version: the kernel's cached pages are dropped", r->ns);
  o.fh = reinterpret_cast<uint64_t>(h.release());
  return o;
}

Result<size_t> ShoalFs::Read(uint64_t fh, uint64_t offset, std::span<char> out) {
  auto* h = reinterpret_cast<FileHandle*>(fh);
  if (h->writing) return ReadWriting(*h, offset, out);
  if (!h->read_seen.load(std::memory_order_relaxed)) h->read_seen.store(true, std::memory_order_relaxed);
  if (offset == h->next.load(std::memory_order_relaxed)) {
    std::unique_lock seq(h->seq_mu, std::try_to_lock);
    if (seq.owns_lock() && offset == h->next.load(std::memory_order_relaxed)) {
      size_t done = 0;
      while (done < out.size()) {
        auto n = h->file->Read(out.subspan(done));
        if (!n) return Err(n.error());
        if (*n == 0) break;
        done += *n;
      }
      h->next.store(offset + done, std::memory_order_relaxed);
      return done;
    }
  }
  size_t done = 0;
  while (done < out.size()) {
    auto n = h->file->Pread(offset + done, out.subspan(done));
    if (!n) return Err(n.error());
    if (*n == 0) break;
    done += *n;
  }
  return done;
}

void ShoalFs::Release(uint64_t fh) {
  // A file changed since its last commit (or a new, empty one) is committed
  // now; the kernel takes no answer from release, so a failure is only logged.
  auto* h = reinterpret_cast<FileHandle*>(fh);
  if (h->writing) {
    (void)Commit(fh, false);
    {
      std::lock_guard lock(writing_mu_);
      if (auto it = writing_.find(h->ino); it != writing_.end() && it->second == h) writing_.erase(it);
    }
    // Unregistered, nobody finds it any more; one that found it before (a
    // rename committing it) holds its lock: wait for it before the delete.
    std::lock_guard wait(h->write_mu);
  } else if (h->file) {
    inodes_.SetPagesHeld(h->ino, h->keep_cache && !h->read_seen.load(std::memory_order_relaxed));
  }
  delete h;
}

Result<FsOpen> ShoalFs::OpenDir(uint64_t ino) {
  auto r = Resolve(ino);
  if (!r) return Err(r.error());
  auto h = std::make_unique<DirHandle>();
  h->ino = ino;
  h->where = *r;
  FsOpen o;
  auto window = r->place.rule.listing;
  if (window.count() > 0) {
    o.cache_listing = true;
    o.keep_cache = inodes_.KeepListing(ino, InodeTable::Clock::now() + window);
  }
  o.fh = reinterpret_cast<uint64_t>(h.release());
  return o;
}

Result<const std::vector<FsDirEntry>*> ShoalFs::Entries(uint64_t fh, bool restart) {
  auto* h = reinterpret_cast<DirHandle*>(fh);
  std::lock_guard lock(h->mu);
  if (h->listed && !restart) return &h->entries;
  h->entries.clear();
  const Resolved& r = h->where;
  if (r.place.kind == MountView::Kind::kAboveMount) {
    for (auto& name : view_.ChildrenAbove(r.ns)) {
      FsDirEntry e;
      e.name = name;
      e.status.path = (r.ns == "/" ? "" : r.ns) + "/" + name;
      e.status.is_dir = true;
      h->entries.push_back(std::move(e));
    }
  } else if (r.place.kind == MountView::Kind::kInMount) {
    auto listed = client_.List(r.ns);
    if (!listed) return Err(listed.error());
    for (auto& st : *listed) {
      std::string name = BaseName(st.path);
      if (!ValidName(name)) {
        spdlog::warn("listing {}: skipped an entry the kernel cannot show: '{}'", r.ns, name);
        continue;
      }
      if (st.path == r.ns) continue;  // a file lists as itself
      h->entries.push_back({std::move(name), std::move(st)});
    }
    if (r.place.rule.stat_each_listed) StatListedFiles(h->entries);
  } else {
    return Err(Code::kNotFound, "no such directory: " + r.ns);
  }
  h->listed = true;
  return &h->entries;
}

FsEntry ShoalFs::LookupListed(uint64_t fh, const FsDirEntry& entry) {
  auto* h = reinterpret_cast<DirHandle*>(fh);
  FsEntry e;
  e.ino = inodes_.Lookup(h->ino, entry.name, entry.status.is_dir);
  // Below a directory above mounts, an entry may be a mount root with its own rule.
  const CacheRule rule = h->where.place.kind == MountView::Kind::kAboveMount ? view_.Classify(entry.status.path).rule
                                                                             : h->where.place.rule;
  e.attr = Attr(e.ino, entry.status, rule);
  e.timeout_s = rule.timeout_s;
  return e;
}

// The listing of an object store lacks the mode, owner and time each object
// keeps in its metadata: its stat has them (a request to a worker per file,
// and a HEAD to the store for each the workers have not seen), so they are
// asked in parallel, as `ls -l` would otherwise wait for each in turn.
void ShoalFs::StatListedFiles(std::vector<FsDirEntry>& entries) {
  constexpr size_t kListStatsInFlight = 16;
  std::vector<FsDirEntry*> files;
  for (auto& e : entries) {
    if (!e.status.is_dir) files.push_back(&e);
  }
  std::atomic<size_t> next{0};
  auto stat_some = [&] {
    for (size_t k = next.fetch_add(1); k < files.size(); k = next.fetch_add(1)) {
      // A file the stat cannot reach keeps what the listing said.
      if (auto st = client_.Stat(files[k]->status.path); st && !st->is_dir) files[k]->status = std::move(*st);
    }
  };
  std::vector<std::jthread> helpers;
  for (size_t t = 1; t < std::min(kListStatsInFlight, files.size()); ++t) helpers.emplace_back(stat_some);
  stat_some();
}

uint64_t ShoalFs::DirIno(uint64_t fh) const { return reinterpret_cast<DirHandle*>(fh)->ino; }

void ShoalFs::ReleaseDir(uint64_t fh) { delete reinterpret_cast<DirHandle*>(fh); }

Result<FsStats> ShoalFs::StatFs() {
  std::lock_guard lock(statfs_mu_);
  auto now = std::chrono::steady_clock::now();
  if (statfs_at_ != std::chrono::steady_clock::time_point{} && now - statfs_at_ < kStatFsFor) return statfs_;
  FsStats s;
  for (const auto& w : client_.ClusterStatus()) {
    if (!w.up) continue;
    s.capacity_bytes += w.cache_effective_capacity_bytes;
    s.used_bytes += std::min(w.cache_used_bytes, w.cache_effective_capacity_bytes);
  }
  statfs_ = s;
  statfs_at_ = now;
  return s;
}

}  // namespace shoal::fuse
