#include "cache/page_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "cache/policy/registry.h"
#include "cache/rules/retention.h"
#include "common/metrics.h"
#include "common/units.h"

namespace shoal {
namespace {

constexpr auto kFullDiskRetry = std::chrono::seconds(30);
constexpr int kBuckets = 256;       // subdirectories of a cache dir, by the first byte of a page's id
constexpr size_t kScanThreads = 32;  // reads in flight while the index is rebuilt at start

std::string Hex(uint64_t v) {
  static const char* k = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = k[v & 15];
  return s;
}

Result<uint64_t> StatvfsFreeBytes(const std::string& dir) {
  struct statvfs st;
  if (::statvfs(dir.c_str(), &st) != 0) {
    return Err(Code::kIo, "cannot measure the free space of '" + dir + "': " + std::strerror(errno));
  }
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

// Pages of a crash, written to tmp/ and never renamed into place.
void RemoveHalfWrittenPages(const std::string& root) {
  if (DIR* t = ::opendir((root + "/tmp").c_str())) {
    while (auto* e = ::readdir(t)) {
      if (e->d_name[0] != '.') ::unlink((root + "/tmp/" + e->d_name).c_str());
    }
    ::closedir(t);
  }
}

Status MakeDir(const std::string& d) {
  if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status(Code::kIo, "cannot create cache directory '" + d + "': " + std::strerror(errno));
  }
  return {};
}

}  // namespace

struct PageStore::Dir {
  std::string path;
  uint64_t capacity = 0;
  uint64_t effective_capacity = 0;  // what the file system can hold: lowered by ENOSPC or a lack of free space
  std::chrono::steady_clock::time_point full_since;  // when it was lowered
  bool logged_enospc = false;
  uint64_t used = 0;
  std::shared_ptr<BlockFiles> blocks;  // the layout kBlocks only
};

struct PageStore::Slot {
  Id id;
  uint16_t dir = 0;
  bool live = false;
  uint32_t header_len = 0;
  uint32_t data_len = 0;
  Retention::ClassId cls = 0;        // its rule class
  EvictionPolicy::Time cached_at{};  // when it was written (its file's mtime after a restart)
  PageKey key;
  BlockFiles::Slot block;   // the layout kBlocks: where it is
  uint64_t generation = 0;  // the layout kBlocks: its header's
  uint32_t slot_bytes = 0;  // the layout kBlocks: the slot's size, which it holds on disk
  uint64_t incarnation = 0;  // new each time a page is indexed in a slot
  // The layout kFiles: its page file held open (Options::open_page_files),
  // and the token of its entry in open_files_.
  std::shared_ptr<void> file;
  int file_fd = -1;
  uint64_t file_token = 0;
  // Its file's identity when all its chunks last checked (MarkVerified), and when.
  page_format::FileIdentity verified;
  std::chrono::steady_clock::time_point verified_at{};
  uint64_t bytes() const { return slot_bytes ? slot_bytes : header_len + data_len; }
};

PageRef& PageRef::operator=(PageRef&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0 && owns_fd_) ::close(fd_);
    fd_ = o.fd_;
    data_offset_ = o.data_offset_;
    length_ = o.length_;
    header_len_ = o.header_len_;
    page_offset_ = o.page_offset_;
    generation_ = o.generation_;
    lease_ = std::move(o.lease_);
    owns_fd_ = o.owns_fd_;
    key_ = std::move(o.key_);
    verified_ = o.verified_;
    o.fd_ = -1;
  }
  return *this;
}

PageRef::~PageRef() {
  if (fd_ >= 0 && owns_fd_) ::close(fd_);
}

Status PageFileWriter::WriteAt(int fd, uint64_t offset, std::span<const char> header, std::span<const char> data) {
  // Data first: a header that checks then means its data was written too (a
  // process killed mid-write leaves a slot whose old header, if any, no longer
  // matches its chunks, or whose new header was never written).
  for (auto [part, at] : {std::pair{data, offset + header.size()}, std::pair{header, offset}}) {
    for (size_t done = 0; done < part.size();) {
      ssize_t n = ::pwrite(fd, part.data() + done, part.size() - done, static_cast<off_t>(at + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int e = n < 0 ? errno : EIO;
        return Status(e == ENOSPC || e == EDQUOT ? Code::kNoSpace : Code::kIo,
                      "cannot write a page into a block file slot: " + std::string(std::strerror(e)));
      }
      done += static_cast<size_t>(n);
    }
  }
  return {};
}

Status PageFileWriter::WriteNew(const std::string& path, std::span<const char> header, std::span<const char> data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status(errno == ENOSPC ? Code::kNoSpace : Code::kIo,
                  "cannot create page file '" + path + "': " + std::strerror(errno));
  }
  iovec iov[2] = {{const_cast<char*>(header.data()), header.size()}, {const_cast<char*>(data.data()), data.size()}};
  size_t total = header.size() + data.size(), done = 0;
  while (done < total) {
    ssize_t n = ::writev(fd, iov, 2);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return Status(e == ENOSPC || e == EDQUOT ? Code::kNoSpace : Code::kIo,
                    "cannot write page file '" + path + "': " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
    // Advance the iovecs past what was written.
    size_t adv = static_cast<size_t>(n);
    for (auto& v : iov) {
      size_t take = std::min(adv, v.iov_len);
      v.iov_base = static_cast<char*>(v.iov_base) + take;
      v.iov_len -= take;
      adv -= take;
    }
  }
  if (::close(fd) != 0) {
    return Status(errno == ENOSPC ? Code::kNoSpace : Code::kIo,
                  "cannot close page file '" + path + "': " + std::strerror(errno));
  }
  return {};
}

PageStore::Id PageStore::IdOf(const PageKey& key) {
  XXH3_state_t st;
  XXH3_128bits_reset(&st);
  XXH3_128bits_update(&st, key.path.data(), key.path.size());
  XXH3_128bits_update(&st, "\n", 1);
  XXH3_128bits_update(&st, key.version.data(), key.version.size());
  XXH3_128bits_update(&st, "\n", 1);
  XXH3_128bits_update(&st, &key.offset, sizeof key.offset);
  auto h = XXH3_128bits_digest(&st);
  return Id{h.high64, h.low64};
}

std::string PageStore::PathOf(const Dir& dir, const Id& id) const {
  std::string hex = Hex(id.hi) + Hex(id.lo);
  return dir.path + "/" + hex.substr(0, 2) + "/" + hex + ".pg";
}

Result<std::unique_ptr<PageStore>> PageStore::Open(Options options) {
  if (options.dirs.empty()) {
    return Err(Code::kInvalidArgument, "no cache directories configured (worker.cache_dirs, or --cache-dir)");
  }
  std::unique_ptr<PageStore> s(new PageStore());
  s->page_size_ = options.page_size;
  s->open_files_cap_ = options.open_page_files;
  if (rlimit nofile{}; ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    s->open_files_cap_ = std::min<size_t>(s->open_files_cap_, nofile.rlim_cur / 16);
  }
  s->layout_ = options.layout;
  s->writer_ = options.writer ? options.writer : std::make_shared<PageFileWriter>();
  auto& m = options.metrics ? *options.metrics : MetricsRegistry::Global();
  s->evicted_bytes_ = &m.GetCounter("shoal_cache_evicted_bytes_total", "Bytes of pages evicted from the cache");
  s->used_gauge_ = &m.GetGauge("shoal_cache_used_bytes", "Bytes of the cache in use (headers included)");
  s->capacity_gauge_ = &m.GetGauge("shoal_cache_capacity_bytes", "Configured cache capacity in bytes");
  s->pages_gauge_ = &m.GetGauge("shoal_cache_pages", "Pages in the cache");
  constexpr const char* kCorruptHelp =
      "Pages dropped because their checksum failed or they held another page, by who found them";
  s->corrupt_ = &m.GetCounter("shoal_cache_corrupt_pages_total", kCorruptHelp, {{"found_by", "scan"}});
  s->corrupt_read_ = &m.GetCounter("shoal_cache_corrupt_pages_total", kCorruptHelp, {{"found_by", "read"}});
  s->corrupt_scrub_ = &m.GetCounter("shoal_cache_corrupt_pages_total", kCorruptHelp, {{"found_by", "scrub"}});
  s->checked_bytes_ = &m.GetCounter("shoal_cache_verified_bytes_total",
                                    "Bytes of cached pages read back and checked whole (worker.verify: once), by "
                                    "reads and by the scrubber");
  s->effective_gauge_ = &m.GetGauge("shoal_cache_effective_capacity_bytes",
                                    "Cache capacity the disks can hold now: the configured capacity, lowered by a full "
                                    "disk or a lack of free space");
  s->enospc_ = &m.GetCounter("shoal_cache_enospc_total", "Page writes that failed because a cache disk was full");
  s->free_bytes_ = options.free_bytes ? options.free_bytes : StatvfsFreeBytes;
  s->clock_ = options.clock ? options.clock : [] { return std::chrono::system_clock::now(); };
  s->on_remove_ = std::move(options.on_remove);
  if (options.high_watermark > 100 || (options.high_watermark > 0 && options.low_watermark >= options.high_watermark)) {
    return Err(Code::kInvalidArgument, "cache eviction watermarks: the high one must be at most 100 and above the low one "
                                       "(high " + std::to_string(options.high_watermark) + ", low " +
                                           std::to_string(options.low_watermark) + "); 0 for the high one turns them off");
  }
  s->high_watermark_ = options.high_watermark;
  s->low_watermark_ = options.low_watermark;
  s->background_evictions_ = &m.GetCounter("shoal_cache_evictions_total", "Pages evicted, by where the eviction ran",
                                           {{"where", "background"}});
  s->inline_evictions_ = &m.GetCounter("shoal_cache_evictions_total", "Pages evicted, by where the eviction ran",
                                       {{"where", "inline"}});
  s->reuse_window_ = options.reuse_window;
  s->old_format_ = &m.GetCounter("shoal_cache_old_format_pages_total",
                                 "Pages of an older page file format dropped at start (fetched again when read)");
  s->metrics_ = &m;
  s->expired_ = &m.GetCounter("shoal_cache_expired_pages_total", "Pages dropped because their path rule's ttl passed");
  s->admission_skips_ = &m.GetCounter("shoal_cache_admission_skips_total",
                                      "Pages served but not cached because their path rule says admission: skip");
  const char* refused_help = "Pages served but not cached because pinned pages fill the cache or a quota";
  s->refused_pinned_ = &m.GetCounter("shoal_cache_rule_refusals_total", refused_help, {{"reason", "pinned"}});
  s->refused_quota_ = &m.GetCounter("shoal_cache_rule_refusals_total", refused_help, {{"reason", "quota"}});
  s->pinned_gauge_ = &m.GetGauge("shoal_cache_pinned_bytes", "Bytes of cached pages that path rules pin");
  auto retention = Retention::Make(options.policy, options.dirs.size());
  if (!retention) return Err(retention.error());  // names worker.eviction and the choices
  s->retention_ = std::move(*retention);
  s->retention_->SetRules(std::move(options.rules), options.cluster_share);

  for (const auto& d : options.dirs) {
    SHOAL_RETURN_IF_ERROR(MakeDir(d.path));
    RemoveOtherLayout(d.path, s->layout_);
    auto dir = std::make_unique<Dir>();
    if (s->blocks()) {
      // Freed slots kept allocated for reuse: a few regions, or 1/32 of the capacity.
      const uint64_t slack = std::max(d.capacity / 32, std::min<uint64_t>(64 << 20, d.capacity / 4));
      auto files = BlockFiles::Open(d.path, s->page_size_, slack, s->writer_);
      if (!files) return Err(files.error());
      dir->blocks = std::move(*files);
    } else {
      SHOAL_RETURN_IF_ERROR(MakeDir(d.path + "/tmp"));
      for (int i = 0; i < kBuckets; ++i) {
        SHOAL_RETURN_IF_ERROR(MakeDir(d.path + "/" + Hex(static_cast<uint64_t>(i)).substr(14)));
      }
    }
    dir->path = d.path;
    dir->capacity = dir->effective_capacity = d.capacity;
    s->dirs_.push_back(std::move(dir));
  }

  // Warm restart: scan every directory in parallel, then insert into the
  // policies oldest first so recency survives the restart.
  const uint64_t old_before = s->old_format_->value();
  // The scan is bound by the disk's latency (an inode and a header block per
  // page, uncached after a reboot), not by CPU: many threads keep many reads
  // in flight. Work items are the 256 buckets of every directory.
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> found(s->dirs_.size());
  if (s->blocks()) {
    for (size_t i = 0; i < s->dirs_.size(); ++i) s->ScanBlocks(i, &found[i]);
    s->NextGeneration();  // past every generation found, and at least the time now
  } else {
    for (auto& d : s->dirs_) RemoveHalfWrittenPages(d->path);
    const size_t items = s->dirs_.size() * kBuckets;
    const size_t nthreads = std::min<size_t>(kScanThreads, items);
    std::atomic<size_t> next{0};
    std::mutex found_mu;
    std::vector<std::jthread> threads;
    for (size_t t = 0; t < nthreads; ++t) {
      threads.emplace_back([&] {
        std::vector<std::vector<std::pair<int64_t, uint32_t>>> mine(s->dirs_.size());
        for (size_t i; (i = next.fetch_add(1)) < items;) s->ScanBucket(i / kBuckets, i % kBuckets, &mine[i / kBuckets]);
        std::lock_guard lock(found_mu);
        for (size_t d = 0; d < mine.size(); ++d) found[d].insert(found[d].end(), mine[d].begin(), mine[d].end());
      });
    }
  }
  if (uint64_t old = s->old_format_->value() - old_before) {
    spdlog::info("dropped {} cached pages of an older page file format; they are fetched again when read", old);
  }
  std::vector<Result<policy_state::Saved>> saved;
  for (auto& d : s->dirs_) saved.push_back(policy_state::Read(s->StatePath(*d)));
  std::unique_lock lock(s->mu_);
  for (size_t i = 0; i < s->dirs_.size(); ++i) {
    s->RestorePolicyLocked(i, found[i], saved[i]);
    // A capacity lowered since the last run: evict down to it now.
    auto& dir = *s->dirs_[i];
    s->MeasureDirLocked(dir, "at start");
    while (dir.used > dir.capacity && s->EvictOneLocked(i)) {
    }
  }
  uint64_t cap = 0, effective = 0;
  for (auto& d : s->dirs_) cap += d->capacity, effective += d->effective_capacity;
  s->capacity_gauge_->Set(static_cast<int64_t>(cap));
  s->effective_gauge_->Set(static_cast<int64_t>(effective));
  s->opened_ = true;
  if (s->high_watermark_ > 0) {
    s->evictor_ = std::jthread([store = s.get()](std::stop_token stop) { store->EvictInBackground(stop); });
    for (auto& d : s->dirs_) s->MaybeWakeEvictorLocked(*d);
  }
  lock.unlock();
  if (auto every = options.state_save_interval; every.count() > 0) {
    s->saver_ = std::jthread([store = s.get(), every](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock l(m);
      while (!cv.wait_for(l, stop, every, [] { return false; }) && !stop.stop_requested()) {
        if (Status st = store->SaveState(); !st.ok()) spdlog::warn("{}", st.message());
      }
    });
  }
  if (auto every = options.ttl_sweep_interval; every.count() > 0) {
    // Bounded work per lock hold (kSweepBatch slots), the whole table per pass.
    s->sweeper_ = std::jthread([store = s.get(), every](std::stop_token stop) {
      constexpr size_t kSweepBatch = 4096;
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock l(m);
      while (!cv.wait_for(l, stop, every, [] { return false; }) && !stop.stop_requested()) {
        size_t total;
        {
          std::lock_guard lock(store->mu_);
          if (!store->retention_->any_ttl()) continue;
          total = store->slots_.size();
        }
        for (size_t done = 0; done < total && !stop.stop_requested(); done += kSweepBatch) {
          store->SweepExpired(kSweepBatch);
        }
      }
    });
  }
  return s;
}

PageStore::~PageStore() {
  if (evictor_.joinable()) {
    evictor_.request_stop();  // wakes its wait
    evictor_.join();
  }
  if (sweeper_.joinable()) {
    sweeper_.request_stop();
    sweeper_.join();
  }
  if (saver_.joinable()) {
    saver_.request_stop();
    saver_.join();
  }
  // A store that failed to open must not replace the state of the last run.
  if (!opened_) return;
  if (Status st = SaveState(); !st.ok()) spdlog::warn("{}", st.message());
}

void PageStore::RestorePolicyLocked(size_t i, std::vector<std::pair<int64_t, uint32_t>>& found,
                                    const Result<policy_state::Saved>& saved) {
  auto& dir = *dirs_[i];
  const std::string policy_name(retention_->policy_name());
  const auto now = clock_();
  std::unordered_set<Id, IdHash> restored;
  if (saved && saved->policy == policy_name) {
    for (auto e : saved->entries) {
      auto it = index_.find(e.id);
      // Pages gone while the worker was down, or named twice, are skipped.
      if (it == index_.end() || slots_[it->second].dir != i || !restored.insert(e.id).second) continue;
      e.bytes = slots_[it->second].bytes();
      retention_->Restore(i, slots_[it->second].cls, e, now);
    }
    spdlog::info("cache dir {}: {} eviction order of {} of {} pages restored from {}", dir.path, policy_name,
                 restored.size(), found.size(), StatePath(dir));
  } else if (saved) {
    spdlog::info("cache dir {}: {} was written by eviction policy {}, now {}: pages are ordered by their mtimes",
                 dir.path, StatePath(dir), saved->policy, policy_name);
  } else if (saved.error().code() != Code::kNotFound) {
    spdlog::warn("cache dir {}: {}; pages are ordered by their mtimes (it is rewritten at the next save)", dir.path,
                 saved.error().message());
  }
  std::sort(found.begin(), found.end());
  for (auto [mtime, slot] : found) {
    const auto& s = slots_[slot];
    if (!restored.contains(s.id)) retention_->Insert(i, s.cls, s.id, s.bytes(), now);
  }
}

std::string PageStore::StatePath(const Dir& dir) const { return dir.path + "/policy.state"; }

void PageStore::MaybeWakeEvictorLocked(const Dir& dir) {
  if (high_watermark_ == 0 || dir.used * 100 <= dir.effective_capacity * high_watermark_) return;
  if (!evict_wanted_) {
    evict_wanted_ = true;
    evict_cv_.notify_one();
  }
}

void PageStore::EvictInBackground(std::stop_token stop) {
  // Bounded work per lock hold: readers and writers get the lock in between.
  constexpr int kBatch = 32;
  std::unique_lock lock(mu_);
  while (evict_cv_.wait(lock, stop, [this] { return evict_wanted_; })) {
    evict_wanted_ = false;
    for (size_t i = 0; i < dirs_.size() && !stop.stop_requested(); ++i) {
      auto& dir = *dirs_[i];
      int batch = 0;
      while (dir.used * 100 > dir.effective_capacity * low_watermark_ && !stop.stop_requested() &&
             EvictOneLocked(i)) {
        background_evictions_->Add(1);
        if (++batch == kBatch) {
          batch = 0;
          lock.unlock();
          std::this_thread::yield();
          lock.lock();
        }
      }
    }
  }
}

bool PageStore::EvictOneLocked(size_t dir_index) {
  // A victim the index does not hold is a policy bug: drop it and ask again
  // (bounded: each pass removes an id from the policy).
  while (auto v = retention_->Victim(dir_index)) {
    auto [cls, id] = *v;
    auto it = index_.find(id);
    if (it == index_.end() || slots_[it->second].dir != dir_index || slots_[it->second].cls != cls) {
      spdlog::error("cache dir {}: eviction policy {} named a page it does not hold; skipped", dirs_[dir_index]->path,
                    retention_->policy_name());
      retention_->Erase(dir_index, cls, id, 0);
      continue;
    }
    evicted_bytes_->Add(slots_[it->second].bytes());
    RemoveSlotLocked(it->second, true);
    return true;
  }
  return false;
}

Status PageStore::SaveState() {
  std::lock_guard save(save_mu_);
  Status first;
  for (auto& d : dirs_) {
    std::vector<EvictionPolicy::Entry> entries;
    std::string name;
    {
      std::lock_guard lock(mu_);
      entries = retention_->Save(static_cast<size_t>(&d - dirs_.data()));
      name = retention_->policy_name();
    }
    Status st = policy_state::Write(StatePath(*d), name, entries);
    if (!st.ok() && first.ok()) {
      first = Status(st.code(), "cannot save the eviction policy state of cache dir " + d->path + " (" + st.message() +
                                    "); after a restart its pages are ordered by mtime");
    }
  }
  return first;
}

void PageStore::MeasureDirLocked(Dir& dir, const char* when) {
  auto free = free_bytes_(dir.path);
  if (!free) {
    spdlog::warn("cache dir {}: {}; keeping its capacity at {}", dir.path, free.error().message(),
                 FormatSize(dir.effective_capacity));
    return;
  }
  // Free block-file slots are room too: the file system counts them as used.
  uint64_t room = dir.used + *free + (dir.blocks ? dir.blocks->free_bytes() : 0);
  if (room < dir.capacity) {
    dir.full_since = std::chrono::steady_clock::now();
    SetEffectiveLocked(dir, room,
                       std::string("measured ") + when + ": its file system has " + FormatSize(*free) + " free and " +
                           FormatSize(dir.used) + " is cached, less than the configured capacity " +
                           FormatSize(dir.capacity) + " (is the disk shared, or the capacity too large?)");
  } else {
    SetEffectiveLocked(dir, dir.capacity, std::string("measured ") + when + ": room again");
  }
}

void PageStore::SetEffectiveLocked(Dir& dir, uint64_t effective, const std::string& why) {
  if (effective == dir.effective_capacity) return;
  if (effective < dir.effective_capacity) {
    spdlog::warn("cache dir {}: capacity lowered from {} to {}: {}", dir.path, FormatSize(dir.effective_capacity),
                 FormatSize(effective), why);
  } else {
    spdlog::info("cache dir {}: capacity back up from {} to {} ({})", dir.path, FormatSize(dir.effective_capacity),
                 FormatSize(effective), why);
  }
  effective_gauge_->Add(static_cast<int64_t>(effective) - static_cast<int64_t>(dir.effective_capacity));
  dir.effective_capacity = effective;
}

void PageStore::ScanBucket(size_t dir_index, int bucket, std::vector<std::pair<int64_t, uint32_t>>* found) {
  const std::string& root = dirs_[dir_index]->path;
  std::string header(page_format::kHeaderProbe, '\0');
  {
    std::string sub = root + "/" + Hex(static_cast<uint64_t>(bucket)).substr(14);
    DIR* d = ::opendir(sub.c_str());
    if (!d) return;
    while (auto* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() != 35 || !name.ends_with(".pg")) continue;
      std::string file = sub + "/" + name;
      int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat st;
      header.resize(page_format::kHeaderProbe);
      ssize_t n = ::fstat(fd, &st) == 0 ? ::pread(fd, header.data(), header.size(), 0) : -1;
      header.resize(n > 0 ? static_cast<size_t>(n) : 0);
      uint32_t claimed = page_format::HeaderLength(header);
      if (claimed > header.size() && claimed <= page_format::kMaxHeaderLen &&
          n == static_cast<ssize_t>(page_format::kHeaderProbe)) {
        header.resize(claimed);
        ssize_t m = ::pread(fd, header.data() + n, claimed - static_cast<size_t>(n), n);
        header.resize(static_cast<size_t>(n) + static_cast<size_t>(std::max<ssize_t>(m, 0)));
      }
      ::close(fd);
      // Only the header is checked here; the data is checked by every read.
      auto h = page_format::ParseHeader(header);
      bool ok = h && static_cast<uint64_t>(st.st_size) == uint64_t{h->header_len()} + h->data_len() &&
                h->data_len() <= page_size_ && h->offset() % page_size_ == 0;
      Id id;
      PageKey key;
      if (ok) {
        key = PageKey{std::string(h->path()), std::string(h->version()), h->offset()};
        id = IdOf(key);
        ok = PathOf(*dirs_[dir_index], id) == file;
      }
      if (!ok) {
        // A page of an older format (a cache: it is fetched again when read), a
        // corrupt header, a foreign file, or a page size change.
        ::unlink(file.c_str());
        (!h && h.error().code() == Code::kNotSupported ? old_format_ : corrupt_)->Add(1);
        continue;
      }
      Slot s;
      s.id = id;
      s.dir = static_cast<uint16_t>(dir_index);
      s.live = true;
      s.header_len = h->header_len();
      s.data_len = h->data_len();
      s.cached_at = EvictionPolicy::Time(std::chrono::duration_cast<EvictionPolicy::Time::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
      s.key = std::move(key);
      IndexFound(std::move(s), static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec, found);
    }
    ::closedir(d);
  }
}

void PageStore::ScanBlocks(size_t dir_index, std::vector<std::pair<int64_t, uint32_t>>* found) {
  auto& files = *dirs_[dir_index]->blocks;
  files.Scan([&](BlockFiles::Slot where, const page_format::HeaderView& h) {
    // Only the header is checked here; the data is checked by every read.
    if (h.data_len() > page_size_ || h.offset() % page_size_ != 0 || h.generation() == 0) {
      corrupt_->Add(1);  // a page size change, or not a slot this layout wrote
      return false;
    }
    Slot s;
    s.key = PageKey{std::string(h.path()), std::string(h.version()), h.offset()};
    s.id = IdOf(s.key);
    s.dir = static_cast<uint16_t>(dir_index);
    s.live = true;
    s.header_len = h.header_len();
    s.data_len = h.data_len();
    s.block = where;
    s.generation = h.generation();
    s.slot_bytes = files.slot_sizes()[where.cls];
    // The generation is the time the page was written, in ns (NextGeneration).
    s.cached_at = EvictionPolicy::Time(std::chrono::duration_cast<EvictionPolicy::Time::duration>(
        std::chrono::nanoseconds(h.generation())));
    for (uint64_t last = last_generation_.load(); last < h.generation();) {
      if (last_generation_.compare_exchange_weak(last, h.generation())) break;
    }
    // A second copy of a page (cached again after an eviction, and a crash
    // before the old slot's header was cleared) holds the same bytes: one is freed.
    return IndexFound(std::move(s), static_cast<int64_t>(h.generation()), found);
  });
}

bool PageStore::IndexFound(Slot s, int64_t time_ns, std::vector<std::pair<int64_t, uint32_t>>* found) {
  std::lock_guard lock(mu_);
  if (index_.contains(s.id)) return false;
  s.cls = retention_->ClassFor(s.key.path);
  uint32_t slot = AddSlotLocked(std::move(s));
  found->emplace_back(time_ns, slot);
  return true;
}

uint64_t PageStore::NextGeneration() {
  // Unique and increasing across restarts (past every generation the scan
  // found), and the time of the write, which a restart reads back as the
  // page's age (as page files have their mtime).
  const auto now = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  uint64_t last = last_generation_.load(), next;
  do {
    next = std::max(last + 1, now);
  } while (!last_generation_.compare_exchange_weak(last, next));
  return next;
}

void PageStore::RemoveOtherLayout(const std::string& dir, Layout layout) {
  // A cache: what the other layout held is fetched again when read.
  std::error_code ec;
  uint64_t removed = 0;
  if (layout == Layout::kBlocks) {
    for (int i = 0; i < kBuckets; ++i) {
      const std::string bucket = dir + "/" + Hex(static_cast<uint64_t>(i)).substr(14);
      if (std::filesystem::exists(bucket, ec)) removed += std::filesystem::remove_all(bucket, ec);
    }
    if (std::filesystem::exists(dir + "/tmp", ec)) removed += std::filesystem::remove_all(dir + "/tmp", ec);
  } else if (std::filesystem::exists(dir + "/blocks", ec)) {
    removed += std::filesystem::remove_all(dir + "/blocks", ec);
  }
  if (removed) {
    spdlog::info("cache dir {}: removed {} files of the {} layout (worker.page_store is now {}); their pages are "
                 "fetched again when read",
                 dir, removed, layout == Layout::kBlocks ? "files" : "blocks",
                 layout == Layout::kBlocks ? "blocks" : "files");
  }
}

uint32_t PageStore::AddSlotLocked(Slot s) {
  static std::atomic<uint64_t> incarnations{0};
  s.incarnation = incarnations.fetch_add(1) + 1;
  s.file.reset();
  s.file_fd = -1;
  s.file_token = 0;
  s.verified = {};
  s.verified_at = {};
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  auto& dir = *dirs_[s.dir];
  dir.used += s.bytes();
  index_[s.id] = slot;
  by_path_[s.key.path][s.key.version].insert(slot);
  slots_[slot] = std::move(s);
  used_gauge_->Add(static_cast<int64_t>(slots_[slot].bytes()));
  pages_gauge_->Add(1);
  return slot;
}

void PageStore::RemoveSlotLocked(uint32_t slot, bool unlink_file) {
  auto& s = slots_[slot];
  if (!s.live) return;
  auto& dir = *dirs_[s.dir];
  retention_->Erase(s.dir, s.cls, s.id, s.bytes());
  dir.used -= s.bytes();
  used_gauge_->Add(-static_cast<int64_t>(s.bytes()));
  pages_gauge_->Add(-1);
  index_.erase(s.id);
  auto pit = by_path_.find(s.key.path);
  if (pit != by_path_.end()) {
    auto vit = pit->second.find(s.key.version);
    if (vit != pit->second.end()) {
      vit->second.erase(slot);
      if (vit->second.empty()) pit->second.erase(vit);
    }
    if (pit->second.empty()) by_path_.erase(pit);
  }
  if (unlink_file) {
    if (dir.blocks) {
      dir.blocks->Free(s.block);
    } else {
      ::unlink(PathOf(dir, s.id).c_str());
    }
  }
  s = Slot{};
  free_slots_.push_back(slot);
  if (on_remove_) on_remove_();
}

std::optional<uint32_t> PageStore::ReadLocked(const Id& id, uint32_t reads) {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  auto& s = slots_[it->second];
  const auto now = clock_();
  if (retention_->Expired(s.cls, s.cached_at, now)) {  // a read of an expired page is a miss
    expired_->Add(1);
    RemoveSlotLocked(it->second, true);
    return std::nullopt;
  }
  if (now - s.cached_at >= reuse_window_) {
    for (uint32_t i = 0; i < reads; ++i) retention_->Touch(s.dir, s.cls, s.id, now);
  }
  return it->second;
}

uint32_t PageStore::Touch(const PageKey& key, uint32_t reads) {
  std::lock_guard lock(mu_);
  auto slot = ReadLocked(IdOf(key), reads);
  return slot ? slots_[*slot].data_len : 0;
}

std::optional<PageRef> PageStore::Get(const PageKey& key, uint32_t reads) {
  Id id = IdOf(key);
  std::string path;
  uint64_t data_off;
  uint32_t len;
  std::optional<BlockFiles::Handle> held;
  uint64_t page_offset = 0, generation = 0;
  uint32_t slot = 0;
  uint64_t incarnation = 0;
  std::shared_ptr<void> file;
  int file_fd = -1;
  page_format::FileIdentity verified;
  // The ref names its page, so that its reader checks the header names it too.
  auto named = [&key, &verified](PageRef ref) {
    ref.SetKey(key, verified);
    return std::optional<PageRef>(std::move(ref));
  };
  {
    std::lock_guard lock(mu_);
    auto found = ReadLocked(id, reads);
    if (!found) return std::nullopt;
    slot = *found;
    auto& s = slots_[slot];
    data_off = s.header_len;
    len = s.data_len;
    verified = s.verified;
    if (auto& files = dirs_[s.dir]->blocks) {
      // Held before the lock is let go: the slot cannot be freed and reused in between.
      auto h = files->Hold(s.block);
      if (!h) {
        spdlog::warn("{}", h.error().message());
        return std::nullopt;
      }
      held = std::move(*h);
      page_offset = files->offset(s.block);
      generation = s.generation;
    } else if (s.file) {
      file = s.file;
      file_fd = s.file_fd;
    } else {
      path = PathOf(*dirs_[s.dir], s.id);
      incarnation = s.incarnation;
    }
  }
  if (held) return named(PageRef(held->fd, page_offset, static_cast<uint32_t>(data_off), len, generation, held->lease));
  const auto header_len = static_cast<uint32_t>(data_off);
  if (file) return named(PageRef(file_fd, 0, header_len, len, 0, std::move(file)));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // evicted between the lookup and the open
  if (open_files_cap_ == 0) return named(PageRef(fd, data_off, len));
  struct OpenPageFile {
    int fd;
    ~OpenPageFile() { ::close(fd); }
  };
  file = std::make_shared<OpenPageFile>(fd);
  std::lock_guard lock(mu_);
  // Kept for the next reads only if the slot held this page all along (the
  // same incarnation): then the file opened is the one the slot names, as a
  // page file is never written once named and only unlinked with its slot.
  if (auto& s = slots_[slot]; s.live && s.incarnation == incarnation && !s.file) {
    s.file = file;
    s.file_fd = fd;
    s.file_token = ++open_file_tokens_;
    open_files_.emplace_back(slot, s.file_token);
    while (open_files_.size() > open_files_cap_) {
      auto [old, token] = open_files_.front();
      open_files_.pop_front();
      if (auto& o = slots_[old]; o.file_token == token) {
        o.file.reset();  // closed once the last reference to it goes
        o.file_fd = -1;
        o.file_token = 0;
      }
    }
  }
  return named(PageRef(fd, 0, header_len, len, 0, std::move(file)));
}

Result<page_format::FileIdentity> PageStore::Verify(const PageRef& ref, std::string& scratch) {
  // The identity before the reads: a write during them moves the ctime past
  // it, and the page is checked again next time.
  const auto id = page_format::IdentityOf(ref.fd());
  page_format::PageFileReader reader;
  SHOAL_RETURN_IF_ERROR(ref.BeginRead(reader));
  const uint64_t len = reader.header().data_len();
  constexpr uint64_t kBatch = 256 * 1024;
  if (scratch.size() < kBatch) scratch.resize(kBatch);
  for (uint64_t pos = 0; pos < len;) {
    const uint64_t stop = reader.NextStop(pos, kBatch, len);
    if (stop - pos > scratch.size()) scratch.resize(stop - pos);
    SHOAL_RETURN_IF_ERROR(reader.Read(pos, std::span<char>(scratch.data(), stop - pos)));
    pos = stop;
  }
  checked_bytes_->Add(len);
  return MarkVerified(ref, id) ? id : page_format::FileIdentity{};
}

bool PageStore::MarkVerified(const PageRef& ref, const page_format::FileIdentity& id) {
  if (!page_format::Settled(id)) return false;
  std::lock_guard lock(mu_);
  auto it = index_.find(IdOf(ref.key()));
  if (it == index_.end()) return false;
  auto& s = slots_[it->second];
  // A block-file slot must still hold the page checked; a page file the
  // slot now names is another inode, whose identity never matches this one.
  if (blocks() && s.generation != ref.generation()) return false;
  s.verified = id;
  s.verified_at = std::chrono::steady_clock::now();
  return true;
}

std::vector<PageKey> PageStore::PagesToCheck(size_t* cursor, size_t max, const std::string& prefix,
                                             std::chrono::steady_clock::time_point verified_since) {
  std::vector<PageKey> out;
  std::lock_guard lock(mu_);
  for (; *cursor < slots_.size() && out.size() < max; ++*cursor) {
    const auto& s = slots_[*cursor];
    if (!s.live || (s.verified.known() && s.verified_at >= verified_since)) continue;
    if (!prefix.empty() && prefix != "/" && s.key.path != prefix &&
        !(s.key.path.starts_with(prefix) && s.key.path[prefix.size()] == '/')) {
      continue;
    }
    out.push_back(s.key);
  }
  return out;
}

bool PageStore::DropCorrupt(const PageKey& key, const PageRef& ref, std::string_view found_by) {
  Id id = IdOf(key);
  std::string path;
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return false;
    if (blocks()) {
      // The slot's page must be the one the reader read: the generation is new for every page written.
      if (slots_[it->second].generation != ref.generation()) return false;
      CorruptCounter(found_by).Add(1);
      RemoveSlotLocked(it->second, true);
      return true;
    }
    auto& s = slots_[it->second];
    if (s.file && s.file_fd == ref.fd()) {
      // The reader's file is the one held open (the same descriptor): it is
      // never handed out again, even when the path names another file now
      // (two Puts of the page raced, and the later rename replaced it).
      s.file.reset();
      s.file_fd = -1;
      s.file_token = 0;
    }
    path = PathOf(*dirs_[s.dir], id);
  }
  const int fd = ref.fd();
  // The reader's file must be the one indexed: a page dropped and fetched
  // again meanwhile has a new file with good bytes, which stays.
  struct stat held, now;
  if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &now) != 0 || now.st_ino != held.st_ino ||
      now.st_dev != held.st_dev) {
    return false;
  }
  std::lock_guard lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  CorruptCounter(found_by).Add(1);
  RemoveSlotLocked(it->second, true);
  return true;
}

bool PageStore::Drop(const PageKey& key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(IdOf(key));
  if (it == index_.end()) return false;
  RemoveSlotLocked(it->second, true);
  return true;
}

bool PageStore::Contains(const PageKey& key) {
  std::lock_guard lock(mu_);
  return index_.contains(IdOf(key));
}

size_t PageStore::ChooseDirLocked(uint64_t bytes) const {
  size_t best = 0;
  double best_fill = 2;
  for (size_t i = 0; i < dirs_.size(); ++i) {
    const auto& d = *dirs_[i];
    if (d.effective_capacity < bytes) continue;
    double fill = static_cast<double>(d.used) / static_cast<double>(d.effective_capacity);
    if (fill < best_fill) {
      best_fill = fill;
      best = i;
    }
  }
  return best;
}

Status PageStore::Put(const PageKey& key, std::span<const char> data) {
  if (data.size() > page_size_ || key.offset % page_size_ != 0) {
    return Status(Code::kInternal, "PageStore::Put: page of " + std::to_string(data.size()) + " bytes at offset " +
                                       std::to_string(key.offset) + " does not fit the page size");
  }
  Id id = IdOf(key);
  const uint64_t generation = blocks() ? NextGeneration() : 0;
  std::string header = page_format::EncodeHeader(key, data, page_format::kChunkSize, generation);
  uint64_t bytes = header.size() + data.size();
  uint16_t size_class = 0;
  if (blocks()) {
    // Every dir has the same slot sizes; the page takes up a whole slot.
    auto c = dirs_[0]->blocks->ClassFor(bytes);
    if (!c) {
      return Status(Code::kInvalidArgument, "page of " + key.path + " not cached: its path and version (" +
                                                std::to_string(key.path.size() + key.version.size()) +
                                                " bytes) do not fit a block-file slot");
    }
    size_class = *c;
    bytes = dirs_[0]->blocks->slot_sizes()[size_class];
  }
  size_t dir_index;
  Retention::ClassId cls;
  std::string tmp, final_path;
  {
    std::lock_guard lock(mu_);
    if (index_.contains(id)) return {};
    cls = retention_->ClassFor(key.path);
    if (!retention_->class_of(cls).admit) {
      admission_skips_->Add(1);
      return {};
    }
    if (!MakeQuotaRoomLocked(cls, bytes, key.path)) {
      return Status(Code::kNoSpace, "the quota of a path rule over " + key.path + " is full of pinned pages");
    }
    // A disk that was full may have room again (files deleted by others): try
    // the configured capacity again now and then.
    auto now = std::chrono::steady_clock::now();
    for (auto& d : dirs_) {
      if (d->effective_capacity < d->capacity && now - d->full_since > kFullDiskRetry) MeasureDirLocked(*d, "again");
    }
    dir_index = ChooseDirLocked(bytes);
    auto& dir = *dirs_[dir_index];
    if (dir.effective_capacity < bytes) {
      return Status(Code::kNoSpace, "cache directory '" + dir.path + "' has no room for a page");
    }
    // Reserve the space now, evicting as needed, so concurrent Puts cannot overshoot.
    while (dir.used + bytes > dir.effective_capacity && EvictOneLocked(dir_index)) {
      inline_evictions_->Add(1);
    }
    if (dir.used + bytes > dir.effective_capacity && retention_->pinned_bytes() > 0) {
      // Nothing evictable is left: pinned pages fill the dir. New pages are
      // served but not cached until something is unpinned.
      refused_pinned_->Add(1);
      if (!logged_pinned_full_) {
        logged_pinned_full_ = true;
        spdlog::warn(
            "cache dir {}: pinned pages fill it ({} pinned, capacity {}): new pages are served but not "
            "cached; unpin a path (shoal unpin PATH) or add capacity",
            dir.path, FormatSize(retention_->pinned_bytes()), FormatSize(dir.effective_capacity));
      }
      return Status(Code::kNoSpace, "cache directory '" + dir.path + "' is full of pinned pages");
    }
    logged_pinned_full_ = false;
    dir.used += bytes;
    retention_->Reserve(cls, static_cast<int64_t>(bytes));
    MaybeWakeEvictorLocked(dir);
    if (!blocks()) {
      tmp = dir.path + "/tmp/" + std::to_string(tmp_counter_.fetch_add(1)) + ".pg";
      final_path = PathOf(dir, id);
    }
  }
  Status st;
  BlockFiles::Slot where;
  if (auto& files = dirs_[dir_index]->blocks) {
    auto slot = files->Allocate(size_class);
    if (slot) {
      where = *slot;
      st = files->Write(where, header, data);
      if (!st.ok()) files->Free(where);
    } else {
      st = slot.error();
    }
  } else {
    st = writer_->WriteNew(tmp, header, data);
    if (st.ok() && ::rename(tmp.c_str(), final_path.c_str()) != 0) {
      st = Status(Code::kIo, "cannot rename page into '" + final_path + "': " + std::strerror(errno));
    }
  }
  std::lock_guard lock(mu_);
  auto& dir = *dirs_[dir_index];
  dir.used -= bytes;
  retention_->Reserve(cls, -static_cast<int64_t>(bytes));
  if (!st.ok()) {
    if (!blocks()) ::unlink(tmp.c_str());
    if (st.code() == Code::kNoSpace) {
      // The disk is fuller than our accounting thinks (shared disk): stop at what we hold.
      enospc_->Add(1);
      std::string why = "the disk is full (" + st.message() + ")";
      if (!dir.logged_enospc) {
        dir.logged_enospc = true;
        why += "; pages that do not fit are served from memory and not cached";
      }
      // What the disk holds now, the failed page's file removed: what we
      // hold (pages and writes in flight) plus what is still free. Not what we
      // hold alone: two page writes failing at once left that at 0, a dir
      // that took nothing while the disk had room for a page.
      auto free = free_bytes_(dir.path);
      const uint64_t room = dir.used + (free ? *free : 0) + (dir.blocks ? dir.blocks->free_bytes() : 0);
      SetEffectiveLocked(dir, std::min(dir.effective_capacity, room), why);
      dir.full_since = std::chrono::steady_clock::now();
    }
    return st;
  }
  if (index_.contains(id)) {  // a concurrent Put of the same page won; same bytes
    if (dir.blocks) dir.blocks->Free(where);
    return {};
  }
  Slot s;
  s.id = id;
  s.dir = static_cast<uint16_t>(dir_index);
  s.live = true;
  s.header_len = static_cast<uint32_t>(header.size());
  s.data_len = static_cast<uint32_t>(data.size());
  s.key = key;
  s.cls = cls;
  s.cached_at = clock_();
  if (dir.blocks) {
    s.block = where;
    s.generation = generation;
    s.slot_bytes = static_cast<uint32_t>(bytes);
  }
  AddSlotLocked(std::move(s));
  retention_->Insert(dir_index, cls, id, bytes, clock_());
  return {};
}

size_t PageStore::DropPath(const std::string& path, bool recursive) {
  std::lock_guard lock(mu_);
  std::vector<uint32_t> victims;
  auto collect = [&](const std::map<std::string, std::set<uint32_t>>& versions) {
    for (const auto& [v, slots] : versions) victims.insert(victims.end(), slots.begin(), slots.end());
  };
  if (auto it = by_path_.find(path); it != by_path_.end()) collect(it->second);
  if (recursive) {
    std::string prefix = path == "/" ? "/" : path + "/";
    for (auto it = by_path_.lower_bound(prefix); it != by_path_.end() && it->first.starts_with(prefix); ++it) {
      collect(it->second);
    }
  }
  for (auto slot : victims) RemoveSlotLocked(slot, true);
  return victims.size();
}

size_t PageStore::DropOtherVersions(const std::string& path, const std::string& current) {
  std::lock_guard lock(mu_);
  auto it = by_path_.find(path);
  if (it == by_path_.end()) return 0;
  std::vector<uint32_t> victims;
  for (const auto& [v, slots] : it->second) {
    if (v != current) victims.insert(victims.end(), slots.begin(), slots.end());
  }
  for (auto slot : victims) RemoveSlotLocked(slot, true);
  return victims.size();
}

bool PageStore::MakeQuotaRoomLocked(uint16_t cls, uint64_t bytes, const std::string& path) {
  // Bounded: each pass evicts a page, or stops.
  while (auto quota = retention_->OverQuota(cls, bytes)) {
    auto v = retention_->QuotaVictim(*quota);
    if (!v) {
      refused_quota_->Add(1);
      if (!logged_quota_full_) {
        logged_quota_full_ = true;
        spdlog::warn(
            "path rule {}: its quota is full of pinned pages; new pages of {} are served but not cached "
            "(raise the quota or unpin)",
            *quota, path);
      }
      return false;
    }
    auto it = index_.find(v->id);
    if (it == index_.end()) {  // a policy bug, as in EvictOneLocked
      retention_->Erase(v->dir, v->cls, v->id, 0);
      continue;
    }
    evicted_bytes_->Add(slots_[it->second].bytes());
    RemoveSlotLocked(it->second, true);
  }
  logged_quota_full_ = false;
  return true;
}

void PageStore::SetRules(PathRules rules, double cluster_share) {
  std::lock_guard lock(mu_);
  retention_->SetRules(std::move(rules), cluster_share);
  const auto now = clock_();
  size_t dropped = 0;
  for (auto& [path, versions] : std::map(by_path_)) {
    auto cls = retention_->ClassFor(path);
    bool admit = retention_->class_of(cls).admit;
    for (const auto& [v, slots] : versions) {
      for (uint32_t slot : slots) {
        auto& s = slots_[slot];
        if (!admit) {
          RemoveSlotLocked(slot, true);
          ++dropped;
          continue;
        }
        retention_->Move(s.dir, s.cls, cls, s.id, s.bytes(), now);
        s.cls = cls;
      }
    }
  }
  if (dropped)
    spdlog::info("path rules: dropped {} cached pages of paths whose rule now says admission: skip", dropped);
  // A quota lowered below what its prefix holds: evict down to it now.
  for (const auto& q : retention_->quotas()) {
    while (retention_->QuotaUsed(q.path) > q.limit) {
      auto v = retention_->QuotaVictim(q.path);
      auto it = v ? index_.find(v->id) : index_.end();
      if (it == index_.end()) break;
      evicted_bytes_->Add(slots_[it->second].bytes());
      RemoveSlotLocked(it->second, true);
    }
  }
}

bool PageStore::Admits(const std::string& path) {
  std::lock_guard lock(mu_);
  return retention_->class_of(retention_->ClassFor(path)).admit;
}

size_t PageStore::SweepExpired(size_t max_pages) {
  std::lock_guard lock(mu_);
  if (!retention_->any_ttl() || slots_.empty()) return 0;
  const auto now = clock_();
  size_t dropped = 0;
  for (size_t n = 0; n < max_pages && n < slots_.size(); ++n) {
    if (sweep_cursor_ >= slots_.size()) sweep_cursor_ = 0;
    auto slot = static_cast<uint32_t>(sweep_cursor_++);
    const auto& s = slots_[slot];
    if (s.live && retention_->Expired(s.cls, s.cached_at, now)) {
      RemoveSlotLocked(slot, true);
      ++dropped;
    }
  }
  expired_->Add(dropped);
  return dropped;
}

void PageStore::UpdateRuleGauges() {
  std::lock_guard lock(mu_);
  pinned_gauge_->Set(static_cast<int64_t>(retention_->pinned_bytes()));
  for (const auto& q : retention_->quotas()) {
    metrics_
        ->GetGauge("shoal_cache_quota_bytes", "Bytes cached under a quota rule's prefix on this worker",
                   {{"rule", q.path}})
        .Set(static_cast<int64_t>(q.used));
    metrics_->GetGauge("shoal_cache_quota_limit_bytes", "A quota rule's limit on this worker", {{"rule", q.path}})
        .Set(static_cast<int64_t>(q.limit));
  }
}

uint64_t PageStore::BytesUnder(const std::string& prefix) const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  auto add = [&](const std::map<std::string, std::set<uint32_t>>& versions) {
    for (const auto& [v, slots] : versions) {
      for (auto slot : slots) n += slots_[slot].bytes();
    }
  };
  if (auto it = by_path_.find(prefix); it != by_path_.end()) add(it->second);
  std::string under = prefix == "/" ? "/" : prefix + "/";
  for (auto it = by_path_.lower_bound(under); it != by_path_.end() && it->first.starts_with(under); ++it)
    add(it->second);
  return n;
}

bool PageStore::HasPath(const std::string& path) const {
  std::lock_guard lock(mu_);
  return by_path_.contains(path);
}

PageStore::Stats PageStore::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  for (const auto& d : dirs_) {
    s.used_bytes += d->used;
    s.capacity_bytes += d->capacity;
    s.effective_capacity_bytes += d->effective_capacity;
    s.dirs.push_back({d->path, d->used, d->capacity, d->effective_capacity});
  }
  s.pages = index_.size();
  s.evicted_bytes = evicted_bytes_->value();
  s.dropped_corrupt = corrupt_->value() + corrupt_read_->value() + corrupt_scrub_->value();
  s.dropped_old_format = old_format_->value();
  s.pinned_bytes = retention_->pinned_bytes();
  s.expired_pages = expired_->value();
  s.admission_skips = admission_skips_->value();
  s.rule_refusals = refused_pinned_->value() + refused_quota_->value();
  for (const auto& q : retention_->quotas()) s.quotas.push_back({q.path, q.used, q.limit});
  return s;
}

}  // namespace shoal
