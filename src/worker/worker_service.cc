#include "worker/worker_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/local_wire.h"
#include "common/metrics.h"
#include "meta/etcd_mounts.h"
#include "ufs/accounting_store.h"
#include "worker/idle_writer.h"
#include "worker/peer_fetch.h"
#include "worker/writeback_journal.h"

namespace shoal {

namespace {

// Pages waiting for the idle-priority writer hold at most this much memory;
// past it, pages are written by the UFS pool at normal priority.
constexpr uint64_t kIdleWriteBytes = 256ull << 20;

// After the under-store of a mount was found unreachable, stale metadata is
// served without asking it again for this long.
constexpr auto kOutageRetry = std::chrono::seconds(5);

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// n bytes for an under-store read to fill. Not zeroed first: that would cost a
// memset and a page fault per 4 KiB of a whole page (1 MiB) for every cold
// read, on a file that is usually much smaller. Only bytes the read wrote are
// ever used.
std::string ReadBuffer(size_t n) {
  std::string s;
  s.resize_and_overwrite(n, [](char*, size_t len) { return len; });
  return s;
}

}  // namespace

void Fetch::OnDone(std::function<void()> cb) {
  {
    std::lock_guard lock(mu_);
    if (!done_) {
      waiters_.push_back(std::move(cb));
      return;
    }
  }
  cb();
}

void Fetch::Finish(Result<std::string> r) {
  std::vector<std::function<void()>> waiters;
  {
    std::lock_guard lock(mu_);
    result_ = std::move(r);
    done_ = true;
    waiters.swap(waiters_);
  }
  for (auto& w : waiters) w();
}

WorkerService::WorkerService(const Config& config, Executor ufs_executor)
    : config_(config),
      mounts_(config.mounts, EtcdMountLoader(config.cluster.etcd, /*with_secrets=*/true)),
      ufs_executor_(std::move(ufs_executor)),
      meta_(config.worker.metadata_entries),
      page_size_(config.worker.page_size),
      // One UFS request covers at most this much: large enough to amortise the
      // first-byte latency of an object store, small enough to start serving soon.
      max_fetch_bytes_(std::max<uint64_t>(config.worker.page_size, 8ull << 20)),
      stores_(LiveMountTable::kMaxMounts),
      outage_until_(new std::atomic<int64_t>[LiveMountTable::kMaxMounts]()) {
  auto& m = MetricsRegistry::Global();
  hit_bytes_ = &m.GetCounter("shoal_cache_hit_bytes_total",
                             "Bytes served that the store did not send for the read (cached before it)");
  miss_bytes_ = &m.GetCounter("shoal_cache_miss_bytes_total",
                              "Bytes served that the store sent for the read (worker/fresh_bytes.h)");
  for (int d = 0; d < kDoors; ++d) {
    static constexpr const char* kDoorNames[kDoors] = {"http", "short_circuit", "s3"};
    read_latency_[d] = &m.GetHistogram("shoal_read_latency_seconds",
                                       "Latency of a read request, first byte to last, by the door it left through",
                                       {{"door", kDoorNames[d]}});
    served_bytes_[d] = &m.GetCounter("shoal_served_bytes_total", "Bytes of reads served, by the door they left through",
                                     {{"door", kDoorNames[d]}});
  }
  for (size_t c = 0; c < kClientDoorCount; ++c) {
    const std::string client(kClientDoors[c]);
    client_latency_[c] = &m.GetHistogram("shoal_client_read_latency_seconds",
                                         "Latency of a read request this worker served, by the client's door (fuse, "
                                         "python, cli, s3, native, load, other)",
                                         {{"client", client}});
    client_bytes_[c] =
        &m.GetCounter("shoal_client_served_bytes_total",
                      "Bytes of reads served, by the client's door (fuse, python, cli, s3, native, load, "
                      "other), leased short-circuit reads included",
                      {{"client", client}});
  }
  const char* stale_help =
      "Metadata answers served stale because the under-store could not be reached (stale_if_error)";
  stale_stats_ = &m.GetCounter("shoal_stale_served_total", stale_help, {{"kind", "stat"}});
  stale_lists_ = &m.GetCounter("shoal_stale_served_total", stale_help, {{"kind", "list"}});
  for (const auto& mount : config.mounts) SavedBytes(mount);  // each series there from the start
  idle_writer_ = std::make_unique<IdleWriter>(kIdleWriteBytes);
  meta_.OnChange([this] { epoch_.Bump(); });
}

WorkerService::~WorkerService() = default;

Result<std::unique_ptr<WorkerService>> WorkerService::Create(const Config& config, Executor ufs_executor) {
  std::unique_ptr<WorkerService> s(new WorkerService(config, std::move(ufs_executor)));
  // The mounts published in etcd join the config's before the worker serves.
  if (auto added = s->mounts_.Reload(); !added) return Err(added.error());
  PageStore::Options o;
  o.dirs = config.worker.cache_dirs;
  o.page_size = config.worker.page_size;
  o.policy = config.worker.eviction;
  o.high_watermark = static_cast<unsigned>(config.worker.eviction_high_watermark);
  o.low_watermark = static_cast<unsigned>(config.worker.eviction_low_watermark);
  o.layout = config.worker.page_store == "blocks" ? PageStore::Layout::kBlocks : PageStore::Layout::kFiles;
  auto book = RuleBook::Open(config.worker.cache_dirs.at(0).path, config.rules);
  if (!book) return Err(book.error());
  s->rules_ = std::move(*book);
  o.rules = s->rules_->Effective();
  o.cluster_share = ClusterShare(config);
  o.on_remove = [epoch = &s->epoch_] { epoch->Bump(); };
  auto store = PageStore::Open(o);
  if (!store) return Err(store.error());
  s->pages_ = std::move(*store);
  RegisterPushMetrics();
  WritebackJournal::RegisterMetrics();
  // Each mount's store is opened on first use (one unreachable store does not
  // stop the worker); a first use now, off the start, so that its series
  // (shoal_ufs_*{ufs=...}) exist at 0 before any request. A cloud store's
  // open is where its credentials are found (no request to the store
  // itself): that happens now, and a worker without credentials for a
  // mount does not start.
  for (const auto& m : s->mounts_.Current()->mounts()) {
    auto rp = s->mounts_.Resolve(m.path);
    if (!rp) continue;
    if (m.ufs.starts_with("s3://") || m.ufs.starts_with("gs://") || m.ufs.starts_with("az://")) {
      if (auto st = s->StoreFor(*rp); !st) return Err(st.error());
      continue;
    }
    s->ufs_executor_([svc = s.get(), rp = *rp] {
      if (auto st = svc->StoreFor(rp); !st)
        spdlog::debug("mount {} not opened yet: {}", rp.mount->path, st.error().ToString());
    });
  }
  return s;
}

Result<std::shared_ptr<UnderStore>> WorkerService::StoreFor(const ResolvedPath& p) {
  std::lock_guard lock(stores_mu_);
  auto& slot = stores_[p.mount_index];
  if (!slot) {
    // Opened on first use, so that one unreachable store does not stop the worker.
    auto s = OpenUnderStore(*p.mount);
    if (!s) return Err(s.error().WithContext("mount " + p.mount->path));
    slot = WithAccounting(std::move(*s), config_.worker.ufs_max_concurrency);
  }
  return slot;
}

Result<FileInfo> WorkerService::Stat(const ResolvedPath& p, const StatOptions& o) {
  if (auto cached = meta_.LookupStat(p.ns_path, *p.mount)) return *cached;
  if (p.key.empty()) {  // a mount root is a directory, even on an object store
    FileInfo root;
    root.is_dir = true;
    return root;
  }
  // Concurrent misses on one path share one under-store request (single-flight):
  // two readers opening the same cold file must not fetch it twice.
  return stats_in_flight_.Do(p.ns_path, [&] { return StatMiss(p, o); });
}

Result<FileInfo> WorkerService::StatMiss(const ResolvedPath& p, const StatOptions& o) {
  // Another worker's cached entry first, when the ring changed or the path
  // is replicated (no store request). During a recent outage of the store,
  // stale metadata is served without asking it again; otherwise the store is
  // asked, and an outage falls back to stale metadata.
  Result<FileInfo> r = Err(Code::kUnavailable, "the under-store of mount " + p.mount->path + " cannot be reached");
  std::optional<FileInfo> stale;
  if (auto from_peer = StatFromPeer(p)) {
    r = std::move(*from_peer);
  } else if (InOutage(p)) {
    stale = meta_.LookupStaleStat(p.ns_path, *p.mount);
  }
  if (!r && !stale) {
    r = StatFromStore(p, o);
    if (!r && IsOutage(r.error())) {
      NoteOutage(p);
      stale = meta_.LookupStaleStat(p.ns_path, *p.mount);
    }
  }
  if (!r && stale) {
    NoteStaleServed(p, "stat", r.error());
    r = *stale;
  }
  return r;
}

Result<FileInfo> WorkerService::StatFromStore(const ResolvedPath& p, const StatOptions& o) {
  auto store = StoreFor(p);
  if (!store) return Err(store.error());
  const uint64_t generation = meta_.generation();
  // A file with nothing cached is stat'ed by reading its first page: one
  // request answers the stat and fills page 0, which lives on this worker (the
  // ring places shard 0 with the path's metadata), so a cold small file costs
  // one under-store request. A file with cached pages is only revalidated.
  Result<FileInfo> r = Err(Code::kInternal, "unset");
  // When another worker may hold the first page (the ring changed, or the
  // path is replicated), a plain stat: the page then comes from that worker.
  // A path that is never cached (admission: skip) gets a plain stat too: its
  // first page would otherwise linger in flight and serve later readers.
  const bool peer_may_hold = peers_ && peers_->MayHold(p.ns_path);
  // A path with a fetch in flight (another stat's first page not yet written,
  // or pages on the way) is revalidated with a plain stat too: reading its
  // first page again would fetch those bytes twice (ClusterTest.
  // ConcurrentMissesShareOneFetch: a second stat 8 ms after the first read
  // page 0 again while the idle writer still held it; 1 run in ~40 under load).
  bool fetching = false;
  {
    std::lock_guard lock(inflight_mu_);
    fetching = inflight_paths_.contains(p.ns_path);
  }
  const bool plain = fetching || pages_->HasPath(p.ns_path) || peer_may_hold || !pages_->Admits(p.ns_path);
  std::string first = ReadBuffer(plain ? 0 : page_size_);
  Result<UnderStore::ReadWithInfoResult> rw = Err(Code::kNotFound, "not tried");
  if (!first.empty()) rw = (*store)->ReadWithInfo(p.key, 0, std::span<char>(first.data(), first.size()));
  if (rw && !rw->info.is_dir && rw->bytes == std::min<uint64_t>(page_size_, rw->info.size)) {
    r = rw->info;
    ufs_read_bytes_.fetch_add(rw->bytes, std::memory_order_relaxed);
    if (rw->bytes > 0) {
      // The page is written to disk off the stat's path, at idle priority
      // (IdleWriter): until then readers find it in flight, already complete,
      // and are served from memory. With o.write_first_page it is written
      // before the stat returns (it is in flight meanwhile all the same).
      if (o.fetched_first_page) *o.fetched_first_page = true;
      first.resize(rw->bytes);
      if (!o.write_first_page)
        first.shrink_to_fit();  // a small file's page holds its size, not page_size, until written
      FileRef file{p, rw->info.Version(), rw->info.size};
      fresh_.Credit(file.resolved.ns_path, file.version, 0, rw->bytes);
      auto fetch = std::make_shared<Fetch>(0, rw->bytes);
      fetch->Finish(std::move(first));
      {
        std::lock_guard lock(inflight_mu_);
        inflight_[InflightKey(file, 0)] = fetch;
        AddInflightPathLocked(file.resolved.ns_path);
      }
      std::function<void()> write = [this, file, fetch] {
        const std::string& data = *fetch->result();
        const PageKey key{file.resolved.ns_path, file.version, 0};
        {
          // A short-circuit open may have written it already (WriteFetchedPage).
          std::lock_guard written(fetch->write_mu());
          if (!pages_->Contains(key)) {
            auto st = pages_->Put(key, std::span<const char>(data));
            if (!st.ok() && st.code() != Code::kNoSpace) spdlog::warn("caching a page failed: {}", st.ToString());
          }
        }
        std::lock_guard lock(inflight_mu_);
        auto it = inflight_.find(InflightKey(file, 0));
        if (it != inflight_.end() && it->second == fetch) inflight_.erase(it);
        DropInflightPathLocked(file.resolved.ns_path);
      };
      if (o.write_first_page) {
        write();
      } else if (!idle_writer_->Submit(fetch->result()->size(), write)) {
        ufs_executor_(std::move(write));
      }
    }
  } else if (!rw && rw.error().code() != Code::kNotFound && rw.error().code() != Code::kInvalidArgument) {
    r = Err(rw.error());  // unreachable, refused, timed out: asking again would only double the wait
  } else {
    r = (*store)->Stat(p.key);  // a directory, or a store that could not answer in one go
  }
  if (!r && r.error().code() == Code::kNotFound) {
    // Cached as said to the client: a later (cached) answer must read the same.
    r = Err(Code::kNotFound, "no such file or directory: " + p.ns_path);
  }
  meta_.InsertStat(p.ns_path, r, generation);
  if (r && !r->is_dir) {
    std::string version = r->Version();
    bool changed = false;
    {
      std::lock_guard lock(inflight_mu_);
      changed = NoteVersionLocked(p.ns_path, version);
    }
    if (changed) pages_->DropOtherVersions(p.ns_path, version);
  }
  return r;
}

std::optional<FileInfo> WorkerService::StatFromPeer(const ResolvedPath& p) {
  if (!peers_ || p.mount->consistency == Consistency::kAlways || !peers_->MayHold(p.ns_path)) return std::nullopt;
  const uint64_t generation = meta_.generation();
  return peers_->Stat(p, [&](const MetadataCache::AgedStat& got) {
    return meta_.InsertAgedStat(p.ns_path, got.info, got.age, generation, *p.mount);
  });
}

bool WorkerService::InOutage(const ResolvedPath& p) const {
  return SteadyNs() < outage_until_[p.mount_index].load(std::memory_order_relaxed);
}

void WorkerService::NoteOutage(const ResolvedPath& p) {
  outage_until_[p.mount_index].store(SteadyNs() + std::chrono::nanoseconds(kOutageRetry).count(),
                                     std::memory_order_relaxed);
}

bool WorkerService::IsOutage(const Status& s) { return s.code() == Code::kUnavailable || s.code() == Code::kTimeout; }

void WorkerService::NoteStaleServed(const ResolvedPath& p, const char* what, const Status& why) {
  (std::string_view(what) == "list" ? stale_lists_ : stale_stats_)->Add(1);
  {
    std::lock_guard lock(stale_mu_);
    if (stale_logged_.size() >= 10'000) stale_logged_.clear();  // a bound, not a policy
    if (!stale_logged_.emplace(std::string(what) + p.ns_path, true).second) return;
  }
  spdlog::warn(
      "serving cached {} of {} past its revalidation time: the under-store of mount {} cannot be reached "
      "({}); stale_if_error allows up to {} ms",
      what, p.ns_path, p.mount->path, why.message(), p.mount->stale_if_error.count());
}

Result<std::vector<FileInfo>> WorkerService::List(const ResolvedPath& p) {
  if (auto cached = meta_.LookupList(p.ns_path, *p.mount)) return *cached;
  // Concurrent misses on one directory share one listing: the workers of a
  // load ask the directory's owner for it at the same time as the owner's own
  // walk does (LoadJobs), and each listing is a store request per
  // thousand entries.
  return lists_in_flight_.Do(p.ns_path, [&] { return ListMiss(p); });
}

Result<std::vector<FileInfo>> WorkerService::ListMiss(const ResolvedPath& p) {
  Status outage(Code::kUnavailable, "the under-store of mount " + p.mount->path + " cannot be reached");
  if (InOutage(p)) {
    if (auto stale = meta_.LookupStaleList(p.ns_path, *p.mount)) {
      NoteStaleServed(p, "list", outage);
      return *stale;
    }
  }
  auto store = StoreFor(p);
  if (!store) return Err(store.error());
  const uint64_t generation = meta_.generation();
  auto listed = ListDirectory(**store, p.key);
  if (!listed && IsOutage(listed.error())) {
    NoteOutage(p);
    if (auto stale = meta_.LookupStaleList(p.ns_path, *p.mount)) {
      NoteStaleServed(p, "list", listed.error());
      return *stale;
    }
  }
  if (!listed) return Err(listed.error());
  std::vector<FileInfo> out = std::move(*listed);
  if (out.empty() && !p.key.empty()) {
    // Nothing under it: a file lists as itself, a missing path is an error.
    auto st = Stat(p);
    if (!st) return Err(st.error());
    if (!st->is_dir) out.push_back(*st);
  }
  meta_.InsertList(p.ns_path, out, generation);
  return out;
}

size_t WorkerService::Refresh(const std::string& ns_path, bool recursive, bool data) {
  {
    // A stat or listing in flight may carry the answer from before the change
    // that caused this refresh: later callers start a new one instead of joining it.
    const std::string prefix = ns_path == "/" ? "/" : ns_path + "/";
    auto under = [&](const std::string& path) { return path == ns_path || (recursive && path.starts_with(prefix)); };
    stats_in_flight_.Detach(under);
    lists_in_flight_.Detach(under);
  }
  size_t n = meta_.Invalidate(ns_path, recursive);
  if (data) n += pages_->DropPath(ns_path, recursive);
  return n;
}

std::string WorkerService::InflightKey(const FileRef& f, uint64_t page) const {
  std::string k = f.resolved.ns_path;
  k += '\n';
  k += f.version;
  k += '\n';
  k += std::to_string(page);
  return k;
}

std::shared_ptr<Fetch> WorkerService::StartFetchLocked(const FileRef& file, uint64_t first, uint64_t last,
                                                       bool credit) {
  uint64_t stop = first + page_size_;
  for (uint64_t p = first + page_size_; p <= last; p += page_size_) {
    if (inflight_.contains(InflightKey(file, p)) || pages_->Contains(PageKey{file.resolved.ns_path, file.version, p})) {
      break;
    }
    stop = p + page_size_;
  }
  auto fetch = std::make_shared<Fetch>(first, std::min(stop, file.size));
  for (uint64_t p = first; p < fetch->end(); p += page_size_) {
    inflight_[InflightKey(file, p)] = fetch;
    // Credited before any reader can be handed the fetch (PlanRead holds inflight_mu_).
    if (credit) fresh_.Credit(file.resolved.ns_path, file.version, p, std::min(page_size_, fetch->end() - p));
  }
  AddInflightPathLocked(file.resolved.ns_path);
  ufs_executor_([this, file, fetch] { RunFetch(file, fetch); });
  return fetch;
}

void WorkerService::SetPeerFetch(std::unique_ptr<PeerFetch> peers) { peers_ = std::move(peers); }

void WorkerService::CachePages(const FileRef& file, uint64_t start, const std::string& bytes) {
  for (uint64_t off = start; off < start + bytes.size(); off += page_size_) {
    uint64_t len = std::min<uint64_t>(page_size_, start + bytes.size() - off);
    auto st = pages_->Put(PageKey{file.resolved.ns_path, file.version, off},
                          std::span<const char>(bytes.data() + (off - start), len));
    if (!st.ok() && st.code() != Code::kNoSpace) spdlog::warn("caching a page failed: {}", st.ToString());
  }
}

void WorkerService::RunFetch(FileRef file, std::shared_ptr<Fetch> fetch) {
  Result<std::string> result = Err(Code::kInternal, "unset");
  // Another worker's cache first (a ring change or a replica): no egress.
  // Its pages passed their version check when it fetched them.
  std::optional<std::string> from_peer;
  if (peers_) from_peer = peers_->Fetch(file, fetch->start(), fetch->end());
  auto store = from_peer ? Result<std::shared_ptr<UnderStore>>(nullptr) : StoreFor(file.resolved);
  if (from_peer) {
    // Not sent by the store: served, they are hits.
    fresh_.Forget(file.resolved.ns_path, file.version, fetch->start(), fetch->end() - 1, page_size_);
    CachePages(file, fetch->start(), *from_peer);
    result = std::move(*from_peer);
  } else if (!store) {
    result = Err(store.error());
  } else {
    // The size is the requester's claim. A fetch that ends at it reads one
    // byte more: if that byte exists the claim was short, and caching the
    // fetch would plant a truncated last page under the real version.
    uint64_t want = fetch->end() - fetch->start();
    bool to_claimed_end = fetch->end() == file.size;
    std::string buf = ReadBuffer(want + (to_claimed_end ? 1 : 0));
    ReadOptions o;
    o.if_version = file.version;
    auto n = (*store)->Read(file.resolved.key, fetch->start(), std::span<char>(buf.data(), buf.size()), o);
    if (!n) {
      result = Err(n.error());
    } else if (*n < want) {
      // Shorter than the size its version promised: the object changed under us.
      result = Err(Code::kVersionMismatch,
                   file.resolved.ns_path + " changed in the under-store while being read; open it again");
    } else if (*n > want) {
      result = Err(Code::kInvalidArgument,
                   "size=" + std::to_string(file.size) + " is wrong for " + file.resolved.ns_path + " version " +
                       file.version + ": the under-store holds more bytes; stat the file again and use its size");
    } else {
      buf.resize(want);
      bool superseded = false;
      {
        std::lock_guard lock(inflight_mu_);
        superseded = NoteVersionLocked(file.resolved.ns_path, file.version);
      }
      if (superseded) pages_->DropOtherVersions(file.resolved.ns_path, file.version);
      ufs_read_bytes_.fetch_add(*n, std::memory_order_relaxed);
      CachePages(file, fetch->start(), buf);
      if (peers_ && peers_->Replicas(file.resolved.ns_path) > 1) {
        ufs_executor_([this, file, start = fetch->start(), copy = buf] {
          // A holder that fetched a replicated file's pages for a read (which names
          // version and size, so no stat reached it) keeps the file's metadata too:
          // once the other holder is lost, a stat sent here must not need the store
          // (ReplicaFailoverTest: NotFound with the store gone, 1 CI run in ~20).
          // The stat is normally answered by the holder that stat'ed the file for
          // the reader (a replicated path asks its holders' caches first).
          if (start == 0 && !meta_.LookupStat(file.resolved.ns_path, *file.resolved.mount)) {
            if (auto st = Stat(file.resolved); !st) {
              spdlog::debug("metadata of replicated {} not kept: {}", file.resolved.ns_path, st.error().ToString());
            }
          }
          peers_->Replicate(file, start, copy);
        });
      }
      result = std::move(buf);
    }
  }
  {
    std::lock_guard lock(inflight_mu_);
    for (uint64_t p = fetch->start(); p < fetch->end(); p += page_size_) inflight_.erase(InflightKey(file, p));
    DropInflightPathLocked(file.resolved.ns_path);
  }
  if (!result) fresh_.Forget(file.resolved.ns_path, file.version, fetch->start(), fetch->end() - 1, page_size_);
  fetch->Finish(std::move(result));
}

bool WorkerService::NoteVersionLocked(const std::string& path, const std::string& version) {
  if (latest_version_.size() >= 100'000) latest_version_.clear();  // a bound, not a cache policy
  auto& latest = latest_version_[path];
  bool changed = !latest.empty() && latest != version;
  latest = version;
  return changed;
}

bool WorkerService::NoteRead(const FileRef& file, uint64_t offset, uint64_t end) {
  bool sequential = false;
  {
    std::lock_guard lock(inflight_mu_);
    std::string stream = file.resolved.ns_path + '\n' + file.version;
    auto it = stream_end_.find(stream);
    if (it != stream_end_.end()) {
      // Near the end of the previous read counts as sequential: a client's
      // parallel requests for consecutive chunks arrive slightly out of order.
      uint64_t prev = it->second;
      sequential = offset + 2 * max_fetch_bytes_ >= prev && offset <= prev + 2 * max_fetch_bytes_;
      it->second = std::max(prev, end);
    } else {
      if (stream_end_.size() > 4096) stream_end_.clear();
      stream_end_[stream] = end;
      sequential = offset == 0;
    }
  }
  return sequential;
}

std::optional<PageRef> WorkerService::WriteFetchedPage(const FileRef& file, uint64_t page) {
  std::shared_ptr<Fetch> fetch;
  {
    std::lock_guard lock(inflight_mu_);
    auto it = inflight_.find(InflightKey(file, page));
    if (it == inflight_.end()) return std::nullopt;
    fetch = it->second;
  }
  if (!fetch->done() || !fetch->result() || page < fetch->start() || page >= fetch->end()) return std::nullopt;
  const std::string& bytes = *fetch->result();
  const uint64_t from = page - fetch->start();
  if (bytes.size() != fetch->end() - fetch->start()) return std::nullopt;
  const PageKey key{file.resolved.ns_path, file.version, page};
  {
    // The idle writer may be writing it now: wait for it rather than write it twice.
    std::lock_guard written(fetch->write_mu());
    if (!pages_->Contains(key)) {
      auto st = pages_->Put(
          key, std::span<const char>(bytes.data() + from, std::min<uint64_t>(page_size_, bytes.size() - from)));
      if (!st.ok()) {
        if (st.code() != Code::kNoSpace) spdlog::warn("caching a page failed: {}", st.ToString());
        return std::nullopt;
      }
    }
  }
  return pages_->Get(key);
}

std::vector<Segment> WorkerService::CachedPrefix(const FileRef& file, uint64_t offset, uint64_t end,
                                                 size_t max_segments, bool write_fetched) {
  std::vector<Segment> segs;
  bool sequential = NoteRead(file, offset, end);
  for (uint64_t page = offset / page_size_ * page_size_; page < end && segs.size() < max_segments; page += page_size_) {
    Segment seg;
    seg.offset = std::max(offset, page);
    seg.length = std::min(end, page + page_size_) - seg.offset;
    seg.skip = seg.offset - page;
    auto ref = pages_->Get(PageKey{file.resolved.ns_path, file.version, page});
    if (!ref && write_fetched) {
      ref = WriteFetchedPage(file, page);
    }
    if (!ref || ref->length() < seg.skip + seg.length) break;
    seg.page = std::move(*ref);
    segs.push_back(std::move(seg));
  }
  // The reader takes what is missing over TCP (a normal read); read-ahead
  // keeps the pages after this range coming meanwhile.
  if (sequential) ReadAhead(file, end);
  return segs;
}

std::optional<std::vector<Segment>> WorkerService::CachedRange(const FileRef& file, uint64_t offset, uint64_t end) {
  std::vector<Segment> segs;
  for (uint64_t page = offset / page_size_ * page_size_; page < end; page += page_size_) {
    Segment seg;
    seg.offset = std::max(offset, page);
    seg.length = std::min(end, page + page_size_) - seg.offset;
    seg.skip = seg.offset - page;
    auto ref = pages_->Get(PageKey{file.resolved.ns_path, file.version, page});
    if (!ref || ref->length() < seg.skip + seg.length) return std::nullopt;
    // The file's last page must end exactly at the claimed size: a longer one
    // means the claim is short, and the bytes would plant a truncated page.
    if (end == file.size && page + page_size_ >= end && page + ref->length() != end) return std::nullopt;
    seg.page = std::move(*ref);
    segs.push_back(std::move(seg));
  }
  return segs;
}

Status WorkerService::CheckClaims(const FileRef& file) {
  const std::string& path = file.resolved.ns_path;
  if (file.size > kMaxFileSize) {
    return Status(Code::kInvalidArgument,
                  "size=" + std::to_string(file.size) + " is larger than any file can be (at most " +
                      std::to_string(kMaxFileSize) + " bytes); stat " + path + " and use its size");
  }
  if (auto cached = meta_.LookupStat(path, *file.resolved.mount); cached && *cached) {
    const FileInfo& st = **cached;
    if (!st.is_dir && st.size != file.size && st.Version() == file.version) {
      return Status(Code::kInvalidArgument, "size=" + std::to_string(file.size) +
                                                " contradicts what this worker knows of " + path + " version " +
                                                file.version + ": its stat says " + std::to_string(st.size) +
                                                " bytes; stat the file again and use its size");
    }
  }
  return {};
}

Result<std::vector<Segment>> WorkerService::PlanRead(const FileRef& file, uint64_t offset, uint64_t end) {
  std::vector<Segment> segs;
  bool sequential = NoteRead(file, offset, end);

  uint64_t last_page = (end - 1) / page_size_ * page_size_;
  for (uint64_t page = offset / page_size_ * page_size_; page < end; page += page_size_) {
    Segment seg;
    seg.offset = std::max(offset, page);
    seg.length = std::min(end, page + page_size_) - seg.offset;
    seg.skip = seg.offset - page;
    PageKey key{file.resolved.ns_path, file.version, page};
    // Each page is looked up at most twice: once more only when a fetch
    // finished (and its page appeared) between the lookup and taking the lock.
    for (int look = 0;; ++look) {
      if (auto ref = pages_->Get(key)) {
        if (ref->length() < seg.skip + seg.length) {
          // A cached page is a fact about the version: a page shorter than the
          // range needs is its last, and the claimed size is wrong.
          return Err(Code::kInvalidArgument, "size=" + std::to_string(file.size) +
                                                 " contradicts what this worker knows of " + file.resolved.ns_path +
                                                 " version " + file.version + ": its cached page at offset " +
                                                 std::to_string(page) + " holds " + std::to_string(ref->length()) +
                                                 " bytes, so the version is " + std::to_string(page + ref->length()) +
                                                 " bytes long; stat the file again and use its size");
        }
        seg.page = std::move(*ref);
        break;
      }
      std::unique_lock lock(inflight_mu_);
      auto it = inflight_.find(InflightKey(file, page));
      if (it != inflight_.end()) {
        seg.fetch = it->second;
        break;
      }
      if (look == 0 && pages_->Contains(key)) continue;
      seg.fetch = StartFetchLocked(file, page, std::min(last_page, page + max_fetch_bytes_ - page_size_));
      break;
    }
    segs.push_back(std::move(seg));
  }
  if (sequential) ReadAhead(file, end);
  return segs;
}

std::shared_ptr<Fetch> WorkerService::RefetchCorruptPage(const FileRef& file, uint64_t page, const PageRef& ref,
                                                         const Status& why) {
  bool dropped = pages_->DropCorrupt(PageKey{file.resolved.ns_path, file.version, page}, ref);
  spdlog::warn("{}; {}, reading it again from the under-store", why.message(),
               dropped ? "dropped the page" : "the page was already dropped");
  std::lock_guard lock(inflight_mu_);
  auto it = inflight_.find(InflightKey(file, page));
  if (it != inflight_.end()) return it->second;
  return StartFetchLocked(file, page, page, /*credit=*/false);
}

void WorkerService::ReadAhead(const FileRef& file, uint64_t from) {
  // Only within the shard the reader is in: the next shard belongs to another worker.
  uint64_t shard = config_.cluster.shard_size;
  if (from == 0 || config_.worker.readahead == 0) return;
  uint64_t limit = std::min({file.size, from + config_.worker.readahead, ((from - 1) / shard + 1) * shard});
  if (from >= limit) return;
  std::lock_guard lock(inflight_mu_);
  uint64_t page = (from + page_size_ - 1) / page_size_ * page_size_;
  uint64_t last = (limit - 1) / page_size_ * page_size_;
  while (page <= last) {
    if (inflight_.contains(InflightKey(file, page)) ||
        pages_->Contains(PageKey{file.resolved.ns_path, file.version, page})) {
      page += page_size_;
      continue;
    }
    auto f = StartFetchLocked(file, page, std::min(last, page + max_fetch_bytes_ - page_size_));
    page = (f->end() + page_size_ - 1) / page_size_ * page_size_;
  }
}

uint64_t WorkerService::NoteLeasedReads(const ResolvedPath& p, uint64_t offset, uint64_t length, uint32_t reads,
                                        std::string_view client) {
  // Bounded: a policy needs to see re-use, not every read of a hot file.
  constexpr uint32_t kMaxReadsSeen = 64;
  if (reads == 0) return 0;
  auto cached = meta_.LookupFreshStat(p.ns_path, *p.mount);
  if (!cached || cached->info.is_dir) return 0;
  if (offset >= cached->info.size) return 0;
  const uint64_t end = offset + std::min(length, cached->info.size - offset);
  const uint64_t first = offset / page_size_ * page_size_;
  if (end - first > local_wire::kMaxSegments * page_size_) return 0;  // more than any answer covers
  const std::string version = cached->info.Version();
  // What the counters see is bounded by what the worker knows, not by the
  // client's count: the bytes the pages hold, once per entry (a client
  // reports a lease's reads in one entry per batch).
  uint64_t bytes = 0, fresh = 0;
  for (uint64_t page = first; page < end; page += page_size_) {
    const uint32_t held = pages_->Touch(PageKey{p.ns_path, version, page}, std::min(reads, kMaxReadsSeen));
    if (held == 0) return 0;
    const uint64_t from = std::max(page, offset), to = std::min<uint64_t>(page + held, end);
    const uint64_t n = to > from ? to - from : 0;
    // Bytes fetched for a read and not yet served are its misses, as when the worker serves them.
    fresh += fresh_.Take(p.ns_path, version, page, n);
    bytes += n;
  }
  // No latency: the worker did not serve them.
  hit_bytes_->Add(bytes - fresh);
  miss_bytes_->Add(fresh);
  if (p.mount) SavedBytes(*p.mount)->Add(bytes - fresh);
  served_bytes_[static_cast<int>(Door::kShortCircuit)]->Add(bytes);
  client_bytes_[ClientDoorIndex(client)]->Add(bytes);
  return bytes;
}

Counter* WorkerService::SavedBytes(const MountConfig& mount) {
  std::lock_guard lock(saved_mu_);
  auto it = saved_.find(mount.path);
  if (it == saved_.end() || it->second.first.ufs != mount.ufs) {
    Counter* c = &MetricsRegistry::Global().GetCounter("shoal_egress_saved_bytes_total",
                                                       "Bytes served that the mount's store did not send (its hits)",
                                                       {{"mount", mount.path}});
    it = saved_.insert_or_assign(mount.path, std::pair{mount, c}).first;
  }
  return it->second.second;
}

std::vector<WorkerService::MountEgress> WorkerService::Egress() const {
  std::lock_guard lock(saved_mu_);
  std::vector<MountEgress> out;
  for (const auto& [path, entry] : saved_) {
    out.push_back({path, entry.first.ufs, entry.second->value(), EgressPricePerGb(entry.first)});
  }
  return out;
}

void WorkerService::CountServed(const ResolvedPath& where, uint64_t hit, uint64_t miss, double seconds, Door door,
                                std::string_view client) {
  if (hit && where.mount) SavedBytes(*where.mount)->Add(hit);
  if (hit) hit_bytes_->Add(hit);
  if (miss) miss_bytes_->Add(miss);
  const int d = static_cast<int>(door);
  const size_t c = ClientDoorIndex(client);
  if (hit + miss) served_bytes_[d]->Add(hit + miss), client_bytes_[c]->Add(hit + miss);
  if (seconds >= 0) read_latency_[d]->Observe(seconds), client_latency_[c]->Observe(seconds);
}

WorkerService::Totals WorkerService::totals() const {
  return {hit_bytes_->value(), miss_bytes_->value(), ufs_read_bytes_.load()};
}

}  // namespace shoal
