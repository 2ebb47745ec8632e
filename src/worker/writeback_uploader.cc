// The write-back uploader: one thread per worker that takes committed writes
// in commit order and puts them into the under-store.
//
// Only the primary (the first holder) uploads. The rules that keep an older
// write from landing after a newer one of the same path:
//   - a pending write with a newer one of the same path on this worker is
//     superseded: it is never uploaded;
//   - before an upload the store is asked for the object: one modified after
//     this write began (a newer write through another primary, or this very
//     upload acknowledged by the store but not by us before a crash) makes it
//     superseded too.
// A failed upload is retried with exponential backoff (0.5 s doubling, at
// most 30 s) for as long as it takes; nothing is dropped. Once uploaded, the
// primary tells the other holders (POST /v1/wb/done) and then records the
// write done. A non-primary holder whose write is older than
// worker.write_back_takeover (times its place among the holders) asks the
// primary (GET /v1/wb/state): "done" drops its copy; an unreachable primary
// or one that does not know the write (it lost its disk) makes it upload.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cluster/router.h"
#include "common/metrics.h"
#include "ufs/http/call_deadline.h"
#include "ufs/under_store.h"
#include "ufs/write_options_codec.h"
#include "worker/writeback_entry.h"

namespace shoal {

using Clock = std::chrono::steady_clock;

namespace {

// Paths whose last upload's store version is kept (WritebackJournal::uploaded_versions_).
constexpr size_t kMaxUploadedVersions = 65536;

constexpr auto kFirstBackoff = std::chrono::milliseconds(500);
constexpr auto kMaxBackoff = std::chrono::seconds(30);
constexpr auto kPeerRetry = std::chrono::seconds(2);
constexpr auto kUploadDeadline = std::chrono::minutes(30);
constexpr size_t kPiece = 4 << 20;

struct UploadMetrics {
  Counter& done = MetricsRegistry::Global().GetCounter("shoal_writeback_uploads_total",
                                                       "Write-back writes uploaded to the under-store");
  Counter& bytes = MetricsRegistry::Global().GetCounter("shoal_writeback_uploaded_bytes_total",
                                                        "Bytes of write-back writes uploaded to the under-store");
  Counter& failed = MetricsRegistry::Global().GetCounter("shoal_writeback_upload_failures_total",
                                                         "Write-back upload attempts that failed (each is retried)");
  Counter& retries = MetricsRegistry::Global().GetCounter("shoal_writeback_upload_retries_total",
                                                          "Write-back upload attempts after a failed one");
  Counter& yields = MetricsRegistry::Global().GetCounter(
      "shoal_writeback_upload_yields_total",
      "Rounds of the write-back uploader that left committed writes waiting for writes streaming in");
  Counter& superseded = MetricsRegistry::Global().GetCounter(
      "shoal_writeback_superseded_total", "Write-back writes not uploaded because a newer write of the path exists");
  Counter& takeovers = MetricsRegistry::Global().GetCounter(
      "shoal_writeback_takeovers_total", "Write-back writes uploaded by a holder other than their lost primary");
  Gauge& pending_bytes = MetricsRegistry::Global().GetGauge(
      "shoal_writeback_pending_bytes", "Bytes of write-back writes committed here, not yet uploaded");
  Gauge& pending_files = MetricsRegistry::Global().GetGauge("shoal_writeback_pending_files",
                                                            "Write-back writes committed here, not yet uploaded");
  Gauge& oldest = MetricsRegistry::Global().GetGauge("shoal_writeback_oldest_pending_seconds",
                                                     "Age of the oldest write-back write pending here");
};

UploadMetrics& M() {
  static UploadMetrics m;
  return m;
}

}  // namespace

void WritebackJournal::RegisterUploadMetrics() { M(); }

void WritebackJournal::UploaderLoop() {
  for (;;) {
    std::vector<std::shared_ptr<Entry>> work;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (stopping_) return;
      // Writes begun and never committed for 10 minutes: the client is gone.
      for (auto it = open_.begin(); it != open_.end();) {
        if (Clock::now() - it->second->last_used > std::chrono::minutes(10)) {
          open_bytes_ -= std::min(open_bytes_, it->second->size);
          ::unlinkat(dir_fd_, (it->first + ".data").c_str(), 0);
          it = open_.erase(it);
        } else {
          ++it;
        }
      }
      for (auto it = retired_.begin(); it != retired_.end();) {
        if (Clock::now() - it->second.second > std::chrono::seconds(30)) {
          ::unlinkat(dir_fd_, (it->first + ".data").c_str(), 0);
          it = retired_.erase(it);
        } else {
          ++it;
        }
      }
      if (!paused_) {
        // Uploads yield to writes streaming into this worker: the disk and
        // the CPU go to acknowledging them first (a checkpoint's ranks save
        // at once, and the first to commit would slow the others), for at
        // most upload_yield_max after each commit.
        const auto now = Clock::now();
        const bool streaming = !open_.empty() && now - last_append_ < options_.upload_yield_window;
        bool yielded = false;
        for (const auto& [id, e] : entries_) {
          if (!streaming || now - e->committed_at >= options_.upload_yield_max) {
            work.push_back(e);
          } else {
            yielded = true;
          }
        }
        if (yielded) M().yields.Add();
      }
    }
    auto s = stats();
    M().pending_bytes.Set(static_cast<int64_t>(s.pending_bytes));
    M().pending_files.Set(static_cast<int64_t>(s.pending_files));
    M().oldest.Set(static_cast<int64_t>(s.oldest_pending_seconds));
    std::sort(work.begin(), work.end(), [](const auto& a, const auto& b) { return a->seq < b->seq; });
    for (const auto& e : work) {
      {
        std::lock_guard lock(mu_);
        if (stopping_ || paused_) break;
        if (!entries_.contains(e->commit.id)) continue;
      }
      Work(e);
    }
  }
}

bool WritebackJournal::PrimaryGone(const Entry& e) {
  const WorkerEntry& primary = e.commit.holders.front();
  auto state = hooks_.get_peer(primary, "/v1/wb/state?id=" + e.commit.id);
  if (!state) return true;  // unreachable past the takeover time
  if (state->find("\"done\"") != std::string::npos) {
    if (RecordDone(e.commit.id).ok()) Forget(e.commit.id);
    return false;
  }
  return state->find("\"unknown\"") != std::string::npos;
}

void WritebackJournal::Work(const std::shared_ptr<Entry>& e) {
  const WritebackCommit& c = e->commit;
  const auto now = Clock::now();
  if (now < e->next_try) return;
  size_t place = 0;
  while (place < c.holders.size() && c.holders[place].id != options_.self_id) ++place;
  if (place != 0 && !e->took_over && !e->uploaded) {
    if (now - e->committed_at < options_.takeover * static_cast<int64_t>(place)) return;
    if (!PrimaryGone(*e)) {
      e->next_try = now + kPeerRetry;
      return;
    }
    spdlog::warn("write-back of {} ({}): primary {} is unreachable or lost it; worker {} uploads it", c.path, c.id,
                 WorkerName(c.holders.front()), options_.self_id);
    M().takeovers.Add(1);
    e->took_over = true;
  }
  if (!e->uploaded) {
    bool newer = false;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, other] : entries_) newer = newer || (other->commit.path == c.path && other->seq > e->seq);
    }
    if (newer) {
      M().superseded.Add(1);
    } else {
      if (e->attempts > 0) M().retries.Add(1);
      Status st = Upload(*e);
      if (!st.ok()) {
        ++e->attempts;
        M().failed.Add(1);
        auto backoff = std::min<Clock::duration>(kMaxBackoff, kFirstBackoff * (1 << std::min(e->attempts - 1, 6)));
        e->next_try = Clock::now() + backoff;
        spdlog::warn("write-back upload of {} ({} bytes) failed (attempt {}): {}; retrying in {} ms", c.path, c.size,
                     e->attempts, st.ToString(),
                     std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count());
        return;
      }
    }
    e->uploaded = true;
    e->uploaded_at = Clock::now();
    e->told.assign(c.holders.size(), false);
    if (hooks_.uploaded) hooks_.uploaded(c.path);
  }
  // Tell the other holders; one that stays unreachable past the takeover time
  // is given up on (when it comes back it asks, finds "done" or, if this
  // worker forgot, checks the store's object time before uploading).
  bool all = true;
  for (size_t i = 0; i < c.holders.size(); ++i) {
    if (e->told[i] || c.holders[i].id == options_.self_id) continue;
    Status st = hooks_.call_peer(c.holders[i], "/v1/wb/done?id=" + c.id);
    if (st.ok() || st.code() == Code::kNotFound) {
      e->told[i] = true;
    } else {
      all = false;
    }
  }
  if (!all && Clock::now() - e->uploaded_at < options_.takeover) {
    e->next_try = Clock::now() + kPeerRetry;
    return;
  }
  if (Status st = RecordDone(c.id); !st.ok()) {
    spdlog::warn("write-back of {}: uploaded, but the done record could not be written ({}); retrying", c.path,
                 st.ToString());
    e->next_try = Clock::now() + kPeerRetry;
    return;
  }
  Forget(c.id);
}

Status WritebackJournal::Upload(const Entry& e) {
  const WritebackCommit& c = e.commit;
  std::string key;
  auto store = hooks_.store_for(c.path, &key);
  if (!store) return store.error();
  CallDeadline bound(Clock::now() + kUploadDeadline);
  auto there = (*store)->Stat(key);
  // An object newer than this write is another writer's, which this write
  // must not replace, unless it is an older write of this path uploaded from
  // here meanwhile (its upload gave it a later time than this write's).
  auto ours_and_older = [&] {
    std::lock_guard lock(mu_);
    auto it = uploaded_versions_.find(c.path);
    return it != uploaded_versions_.end() && it->second.version == there->Version() &&
           it->second.write_mtime_ns <= c.mtime_ns;
  };
  if (there && !there->is_dir && there->mtime_ns > c.mtime_ns && !ours_and_older()) {
    spdlog::info(
        "write-back of {} ({}) is not uploaded: the store's object is newer (modified after this write "
        "began)",
        c.path, c.id);
    M().superseded.Add(1);
    return {};
  }
  const std::string data = options_.dir + "/" + c.id + ".data";
  int fd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(Code::kIo, "cannot open write-back data " + data + ": " + std::strerror(errno));
  auto options = DecodeWriteOptions(c.attrs);  // checked when the write began
  auto out = options ? (*store)->OpenWriter(key, *options) : Err(options.error());
  if (!out) {
    ::close(fd);
    return out.error();
  }
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  std::vector<char> buf(kPiece);
  uint64_t done = 0;
  Status st;
  while (st.ok() && done < c.size) {
    ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), c.size - done), static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      st = Status(Code::kIo, "reading write-back data " + data + ": " + (n < 0 ? std::strerror(errno) : "short file"));
      break;
    }
    XXH3_64bits_update(h, buf.data(), static_cast<size_t>(n));
    st = (*out)->Append(std::span<const char>(buf.data(), static_cast<size_t>(n)));
    done += static_cast<uint64_t>(n);
  }
  const bool sum_ok = XXH3_64bits_digest(h) == c.xxh3;
  XXH3_freeState(h);
  if (st.ok() && !sum_ok) st = Status(Code::kCorruption, "write-back data " + data + " fails its checksum");
  if (!st.ok()) {
    ::close(fd);
    (*out)->Abort();
    return st;
  }
  st = (*out)->Close();
  if (st.ok()) {
    M().done.Add(1);
    M().bytes.Add(c.size);
    // Readers still see the pending version until this returns: the bytes
    // are cached under the store's new version first, so a read right after
    // the switch is a cache hit. The store names the version; an object of
    // another size is another writer's, not ours to cache.
    auto as = (*store)->Stat(key);
    if (as && !as->is_dir && as->size == c.size) {
      {
        std::lock_guard lock(mu_);
        const uint64_t order = next_upload_order_++;
        uploaded_versions_.insert_or_assign(c.path, UploadedVersion{as->Version(), c.mtime_ns, order});
        uploaded_order_.emplace_back(c.path, order);
        // The least recently uploaded paths go first: a newer write of theirs
        // has had the longest to upload. Stale entries (a path uploaded again
        // since) only bound the queue.
        while (uploaded_versions_.size() > kMaxUploadedVersions || uploaded_order_.size() > 2 * kMaxUploadedVersions) {
          const auto& [path, at] = uploaded_order_.front();
          if (auto old = uploaded_versions_.find(path); old != uploaded_versions_.end() && old->second.order == at) {
            uploaded_versions_.erase(old);
          }
          uploaded_order_.pop_front();
        }
      }
      if (hooks_.cache_uploaded) hooks_.cache_uploaded(c, *as, fd);
    }
  }
  ::close(fd);
  return st;
}

}  // namespace shoal
