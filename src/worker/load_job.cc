#include "worker/load_job.h"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <nlohmann/json.hpp>
#include <thread>

#include "cache/page_format.h"
#include "client/worker_caller.h"
#include "cluster/hash_ring.h"
#include "cluster/membership.h"
#include "ufs/uri.h"
#include "worker/worker_service.h"

namespace shoal {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Entries kept per job of failed files and of verify mismatches (the counts are exact).
constexpr size_t kMaxListed = 100;
constexpr size_t kMaxPathLen = 4096;
// A directory's listing from its owner: the owner may be listing it at the
// under-store (a request per thousand entries) meanwhile.
constexpr std::chrono::seconds kOwnerListTimeout{120};

Status Bad(const std::string& what) { return Status(Code::kInvalidArgument, what); }

Result<uint64_t> Number(const std::string& name, const std::string& v) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) {
    return Err(Bad("query parameter " + name + "=" + v + " must be a non-negative integer below 2^64"));
  }
  return n;
}

Result<bool> Flag(const std::string& name, const std::string& v) {
  if (v.empty() || v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  return Err(Bad("query parameter " + name + "=" + v + " must be 1, true, 0 or false"));
}

bool IdChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

// A ring member name as config.h's ParseWorkerEntry accepts it.
bool MemberName(const std::string& m) {
  if (m.empty() || m.size() > 128) return false;
  return std::all_of(m.begin(), m.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':' || c == '[' ||
           c == ']';
  });
}

// A version that is the MD5 of the object's bytes: a single-part S3 ETag.
bool IsMd5Etag(const std::string& mount_ufs, const std::string& version) {
  if (!mount_ufs.starts_with("s3://") || version.size() != 32) return false;
  return std::all_of(version.begin(), version.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string Hex(const unsigned char* p, unsigned n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}

std::string ChildPath(const ResolvedPath& parent, const FileInfo& entry) {
  const std::string& mp = parent.mount->path;
  return (mp == "/" ? "" : mp) + "/" + entry.key;
}

}  // namespace

struct LoadJobs::Job {
  Params p;
  uint64_t seq = 0;
  std::thread thread;
  std::atomic<bool> stop{false};

  mutable std::mutex mu;
  std::condition_variable cv;
  std::string state = "running";  // running, done, stopped, failed
  std::string error;              // why a failed job failed
  bool listing_done = false;
  uint64_t files_total = 0, files_done = 0, files_skipped = 0, files_failed = 0;
  uint64_t bytes_total = 0, bytes_done = 0, bytes_fetched = 0, bytes_cached = 0;
  uint64_t dirs_skipped = 0;                                    // subdirectories left out (no -r)
  uint64_t files_not_admitted = 0;                              // under a rule that says admission: skip: never fetched
  std::vector<std::pair<std::string, std::string>> failures;    // path, why (first kMaxListed)
  std::vector<std::pair<std::string, std::string>> mismatches;  // path, what (first kMaxListed)
  uint64_t mismatch_count = 0, pages_checked = 0, files_md5_checked = 0, files_checksums_only = 0;
  Clock::time_point started = Clock::now(), finished;
  Clock::time_point next_send = Clock::now();  // bandwidth pacing

  // REQUIRES: mu held.
  void FailFile(const std::string& path, const std::string& why) {
    if (failures.size() < kMaxListed) failures.emplace_back(path, why);
  }
  void Mismatch(const std::string& path, const std::string& what) {
    std::lock_guard lock(mu);
    ++mismatch_count;
    if (mismatches.size() < kMaxListed) mismatches.emplace_back(path, what);
  }

  Json ToJson() const {
    std::lock_guard lock(mu);
    auto pairs = [](const auto& v, const char* second) {
      Json a = Json::array();
      for (const auto& [path, why] : v) a.push_back(Json{{"path", path}, {second, why}});
      return a;
    };
    auto end = state == "running" ? Clock::now() : finished;
    return Json{{"id", p.id},
                {"path", p.path},
                {"state", state},
                {"error", error},
                {"recursive", p.recursive},
                {"listing_done", listing_done},
                {"files_total", files_total},
                {"files_done", files_done},
                {"files_skipped", files_skipped},
                {"files_failed", files_failed},
                {"dirs_skipped", dirs_skipped},
                {"files_not_admitted", files_not_admitted},
                {"bytes_total", bytes_total},
                {"bytes_done", bytes_done},
                {"bytes_fetched", bytes_fetched},
                {"bytes_cached", bytes_cached},
                {"elapsed_s", std::chrono::duration<double>(end - started).count()},
                {"failures", pairs(failures, "error")},
                {"verify", Json{{"on", p.verify},
                                {"mismatches", mismatch_count},
                                {"pages_checked", pages_checked},
                                {"files_md5_checked", files_md5_checked},
                                {"files_checksums_only", files_checksums_only},
                                {"mismatch_list", pairs(mismatches, "what")}}}};
  }
};

namespace {

// The files of one job: the job's thread walks the path and queues the files;
// `concurrency` loader threads take them one at a time, fetch the missing
// pages of the shards this worker owns (a shard's fetches at once) and wait
// for them.
class Loader {
 public:
  Loader(WorkerService* svc, WorkerCaller* caller, std::shared_ptr<const Membership> membership,
         std::shared_ptr<LoadJobs::Job> job)
      : svc_(svc),
        caller_(caller),
        membership_(std::move(membership)),
        job_(std::move(job)),
        ring_(job_->p.members, job_->p.weights),
        page_(svc->config().worker.page_size),
        shard_(svc->config().cluster.shard_size),
        chunk_(std::max<uint64_t>(page_, 8ull << 20)),
        threads_(job_->p.concurrency ? job_->p.concurrency
                                     : static_cast<uint64_t>(std::max(1, svc->config().worker.ufs_threads))) {}

  // Walks the job's path and loads what this worker owns; returns when done.
  void Run() {
    const auto& p = job_->p;
    auto rp = svc_->mounts().Resolve(p.path);
    if (!rp) return Finish(rp.error().message());
    // The under-store's word, not this worker's cached metadata, for a verify.
    if (p.verify) svc_->Refresh(rp->ns_path, p.recursive, /*data=*/false);
    std::vector<std::thread> threads;
    for (uint64_t i = 0; i < threads_; ++i) threads.emplace_back([this] { Work(); });
    std::string error;
    if (!p.file_version.empty()) {
      Queue(Item{*rp, p.file_version, p.file_size});
    } else {
      error = Walk(*rp);
    }
    {
      std::lock_guard lock(queue_mu_);
      walked_ = true;
    }
    items_cv_.notify_all();
    for (auto& t : threads) t.join();
    Finish(error);
  }

 private:
  struct Item {
    ResolvedPath rp;
    std::string version;
    uint64_t size = 0;
  };

  void Finish(const std::string& error) {
    std::lock_guard lock(job_->mu);
    job_->error = error;
    job_->state = !error.empty() ? "failed" : job_->stop ? "stopped" : "done";
    job_->finished = Clock::now();
    job_->listing_done = true;
  }

  // Waits for room in the queue (a bounded number of files waits in memory).
  // One condition per side, each woken once per item: a loader thread wakes
  // for an item, the walker for room (one shared condition woken for all at
  // every push and pop cost a dozen thread wake-ups per file).
  void Queue(Item item) {
    {
      std::unique_lock lock(queue_mu_);
      room_cv_.wait(lock, [&] { return queue_.size() < 4 * threads_ + 16 || job_->stop; });
      if (job_->stop) return;
      queue_.push_back(std::move(item));
    }
    items_cv_.notify_one();
  }

  void Work() {
    for (;;) {
      Item item;
      {
        std::unique_lock lock(queue_mu_);
        items_cv_.wait(lock, [&] { return !queue_.empty() || walked_ || job_->stop; });
        if (job_->stop || queue_.empty()) {
          lock.unlock();
          room_cv_.notify_all();   // a walker waiting for room sees the stop
          items_cv_.notify_all();  // and so do the other loader threads
          return;
        }
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      room_cv_.notify_one();
      LoadFile(item.rp, item.version, item.size);
    }
  }

  // The job-level error, or "".
  std::string Walk(const ResolvedPath& root) {
    std::vector<std::pair<ResolvedPath, size_t>> dirs{{root, 0}};
    uint64_t files = 0;
    while (!dirs.empty() && !job_->stop) {
      auto [dir, depth] = std::move(dirs.back());
      dirs.pop_back();
      // The directory's owner lists it (once for the whole cluster: every
      // worker of the load walks the same tree at the same time); a verify
      // takes the under-store's word, not another worker's cached listing.
      std::optional<std::vector<FileInfo>> from_owner;
      if (!job_->p.verify) from_owner = ListFromOwner(dir);
      auto listed = from_owner ? Result<std::vector<FileInfo>>(std::move(*from_owner)) : svc_->List(dir);
      if (!listed) {
        if (depth == 0) return listed.error().message();
        std::lock_guard lock(job_->mu);
        job_->FailFile(dir.ns_path, "listing failed: " + listed.error().message());
        ++job_->files_failed;
        continue;
      }
      for (const auto& e : *listed) {
        if (job_->stop) break;
        auto crp = svc_->mounts().Resolve(ChildPath(dir, e));
        if (!crp) continue;  // a name the namespace cannot hold
        if (e.is_dir) {
          std::lock_guard lock(job_->mu);
          if (!job_->p.recursive) {
            ++job_->dirs_skipped;
          } else if (depth + 1 >= LoadJobs::kMaxDepth) {
            job_->FailFile(crp->ns_path,
                           "deeper than " + std::to_string(LoadJobs::kMaxDepth) + " directories; load it on its own");
            ++job_->files_failed;
          } else {
            dirs.emplace_back(std::move(*crp), depth + 1);
          }
          continue;
        }
        if (++files > LoadJobs::kMaxFiles) {
          return "more than " + std::to_string(LoadJobs::kMaxFiles) + " files under " + root.ns_path +
                 "; load its subdirectories one by one";
        }
        // Only files with a shard this worker owns: the others cost a loader nothing but a wake-up.
        if (OwnsAny(crp->ns_path, e.Version(), e.size)) Queue(Item{std::move(*crp), e.Version(), e.size});
      }
    }
    return "";
  }

  // The listing of `dir` from the member that owns its metadata on the job's
  // ring (GET /v1/list there: the owner shares one store listing among
  // concurrent askers and keeps it under the mount's rule). nullopt when this
  // worker is the owner, the client gave no addresses or one it may not call
  // (below), or the owner could not
  // answer or answered something malformed: the caller lists the store itself.
  // The answer is another worker's word: every entry is checked (a name
  // directly under `dir`, bounded fields), one bad entry discards it all.
  // Pending writes are left out: they are not in the under-store yet.
  std::optional<std::vector<FileInfo>> ListFromOwner(const ResolvedPath& dir) {
    const auto& p = job_->p;
    if (p.addresses.empty() || !caller_) return std::nullopt;
    const size_t owner = ring_.Owner(HashRing::MetaKey(dir.ns_path));
    if (p.members[owner] == p.self) return std::nullopt;
    const WorkerEntry w{p.members[owner], p.addresses[owner]};
    // The address is the request's word, and the call carries the cluster
    // secret. A worker that knows the members (etcd, or a cluster.workers
    // list) calls only an address it has for that member. One that knows none
    // (`shoal up` starts workers on free ports) relies on the request: with a
    // cluster secret only its holders can post a load; without one, anybody
    // could, so it calls nobody.
    const auto snapshot = membership_ ? membership_->Current() : nullptr;
    if (snapshot && !snapshot->workers.empty()) {
      if (std::none_of(snapshot->workers.begin(), snapshot->workers.end(),
                       [&](const WorkerEntry& m) { return m.id == w.id && m.address == w.address; })) {
        spdlog::warn("load job {}: {} is not at {} in this worker's membership; listing {} at the under-store", p.id,
                     w.id, w.address, dir.ns_path);
        return std::nullopt;
      }
    } else if (svc_->config().cluster.secret.empty()) {
      return std::nullopt;
    }
    auto r = caller_->Call(w, "GET", "/v1/list?path=" + PercentEncode(dir.ns_path, true),
                           Clock::now() + kOwnerListTimeout, dir.ns_path);
    auto fallback = [&](const std::string& why) -> std::optional<std::vector<FileInfo>> {
      spdlog::warn("load job {}: listing {} from its owner {} failed ({}); listing it at the under-store", p.id,
                   dir.ns_path, w.id, why);
      return std::nullopt;
    };
    if (!r.status.ok()) return fallback(r.status.message());
    const std::string prefix = dir.ns_path == "/" ? "/" : dir.ns_path + "/";
    const std::string key_prefix = dir.key.empty() ? "" : dir.key + "/";
    std::vector<FileInfo> out;
    try {
      auto j = Json::parse(r.body);
      if (j.at("path").get<std::string>() != dir.ns_path) return fallback("the answer names another path");
      for (const auto& e : j.at("entries")) {
        if (e.value("pending", false)) continue;
        auto path = e.at("path").get<std::string>();
        if (!path.starts_with(prefix) || path.size() == prefix.size() || path.size() > kMaxPathLen ||
            path.find('/', prefix.size()) != std::string::npos) {
          return fallback("entry '" + path.substr(0, 200) + "' is not directly under the directory");
        }
        FileInfo f;
        f.key = key_prefix + path.substr(prefix.size());
        f.is_dir = e.at("is_dir").get<bool>();
        f.size = e.at("size").get<uint64_t>();
        f.mtime_ns = e.at("mtime_ns").get<int64_t>();
        f.etag = e.at("version").get<std::string>();  // Version() is then the owner's version
        if (f.size > WorkerService::kMaxFileSize || f.etag.size() > LoadJobs::kMaxVersionLen ||
            (!f.is_dir && f.etag.empty())) {
          return fallback("entry '" + path + "' has a size or version out of bounds");
        }
        out.push_back(std::move(f));
      }
    } catch (const std::exception& e) {
      return fallback(std::string("malformed answer: ") + e.what());
    }
    return out;
  }

  bool Owns(const std::string& path, const std::string& version, uint64_t shard) const {
    return ring_.members()[ring_.Owner(HashRing::DataKey(path, version, shard))] == job_->p.self;
  }
  bool OwnsAny(const std::string& path, const std::string& version, uint64_t size) const {
    const uint64_t shards = std::max<uint64_t>(1, (size + shard_ - 1) / shard_);
    for (uint64_t s = 0; s < shards; ++s) {
      if (Owns(path, version, s)) return true;
    }
    return false;
  }

  // Waits until `bytes` may be fetched under the job's bandwidth; false when the job stops.
  bool Pace(uint64_t bytes) {
    std::unique_lock lock(job_->mu);
    if (job_->p.bandwidth && bytes) {
      auto at = std::max(Clock::now(), job_->next_send);
      job_->next_send = at + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                 static_cast<double>(bytes) / static_cast<double>(job_->p.bandwidth)));
      job_->cv.wait_until(lock, at, [&] { return job_->stop.load(); });
    }
    return !job_->stop;
  }

  void Count(uint64_t fetched, uint64_t cached) {
    std::lock_guard lock(job_->mu);
    job_->bytes_done += fetched + cached;
    job_->bytes_fetched += fetched;
    job_->bytes_cached += cached;
  }

  void LoadFile(const ResolvedPath& rp, const std::string& version, uint64_t size) {
    const std::string& path = rp.ns_path;
    uint64_t shards = std::max<uint64_t>(1, (size + shard_ - 1) / shard_);
    std::vector<uint64_t> owned;
    uint64_t owned_bytes = 0;
    for (uint64_t s = 0; s < shards; ++s) {
      if (!Owns(path, version, s)) continue;
      owned.push_back(s);
      owned_bytes += std::min(size, (s + 1) * shard_) - s * shard_;
    }
    if (owned.empty()) return;
    const bool first = owned.front() == 0;  // this worker counts the file
    if (!svc_->pages().Admits(path)) {
      // Its rule says admission: skip: the pages would be dropped as they
      // came, so the store is not asked for them at all.
      std::lock_guard lock(job_->mu);
      if (first) ++job_->files_not_admitted;
      return;
    }
    {
      std::lock_guard lock(job_->mu);
      job_->bytes_total += owned_bytes;
      if (first) ++job_->files_total;
    }
    auto fail = [&](const std::string& why) {
      std::lock_guard lock(job_->mu);
      job_->FailFile(path, why);
      if (first) ++job_->files_failed;
    };
    const bool had_path = svc_->pages().HasPath(path);
    if (job_->p.skip_if_exists && had_path) {
      Count(0, owned_bytes);
      std::lock_guard lock(job_->mu);
      if (first) ++job_->files_skipped, ++job_->files_done;
      return;
    }
    FileRef file{rp, version, size};
    if (auto st = svc_->CheckClaims(file); !st.ok()) return fail(st.message());
    // A changed object: its stat (below) or fetches would drop the old pages
    // silently; a verify reports them.
    if (job_->p.verify) DropOlderVersions(path, version);
    // The owner of shard 0 holds the path's metadata too: its stat warms it,
    // and for a file with nothing cached reads the first page with it (one
    // request), which the loop below then finds cached. The stat writes that
    // page before it returns (not at idle priority later): a load is done only
    // when its pages are cached, and an idle-priority write on a busy node may
    // come seconds after the job said so.
    bool stat_fetched = false;
    // The stat may read the first page: paced before it, and not again below
    // (the bytes of a small file were charged twice, so a load ran at about
    // half its --bandwidth).
    const uint64_t prepaid = first && !had_path && size > 0 ? std::min(page_, size) : 0;
    if (first) {
      if (!Pace(prepaid)) return;
      WorkerService::StatOptions so;
      so.write_first_page = true;
      so.fetched_first_page = &stat_fetched;
      auto st = svc_->Stat(rp, so);
      if (!st) return fail(st.error().message());
      if (st->is_dir || st->Version() != version || st->size != size) {
        return fail("changed in the under-store while being loaded; run the load again");
      }
    }
    if (job_->p.verify) Verify(file, owned, shards);
    bool failed = false;
    for (uint64_t s : owned) {
      if (job_->stop) return;
      uint64_t end = std::min(size, (s + 1) * shard_);
      std::vector<std::pair<uint64_t, uint64_t>> runs;  // missing pages, [start, end) each at most a chunk
      uint64_t cached = 0;
      for (uint64_t off = s * shard_; off < end; off += page_) {
        uint64_t len = std::min(page_, end - off);
        if (svc_->pages().Contains(PageKey{path, version, off}) && !(stat_fetched && off == 0)) {
          cached += len;
        } else if (!runs.empty() && runs.back().second == off && off - runs.back().first < chunk_) {
          runs.back().second = off + len;
        } else {
          runs.emplace_back(off, off + len);
        }
      }
      Count(0, cached);
      failed = !FetchRuns(file, runs, stat_fetched && s == 0, s == 0 ? prepaid : 0) || failed;
      // Preloaded bytes are hits when a reader comes (worker/fresh_bytes.h).
      if (end > s * shard_) svc_->ForgetFresh(file, s * shard_, end - 1);
    }
    if (job_->stop) return;
    std::lock_guard lock(job_->mu);
    if (first) ++(failed ? job_->files_failed : job_->files_done);
  }

  // Fetches the runs (pacing each) and waits for them; false when one failed.
  // With `stat_fetched`, the page at offset 0 was read by this job's stat.
  // `prepaid`: bytes from offset 0 already paced (before the stat).
  bool FetchRuns(const FileRef& file, const std::vector<std::pair<uint64_t, uint64_t>>& runs, bool stat_fetched,
                 uint64_t prepaid) {
    struct Wait {
      std::mutex mu;
      std::condition_variable cv;
      size_t left = 0;
    };
    auto wait = std::make_shared<Wait>();
    std::vector<std::pair<std::shared_ptr<Fetch>, uint64_t>> fetches;  // each with the bytes it brings us
    bool ok = true;
    for (const auto& [start, end] : runs) {
      if (!Pace(end - start - (start == 0 ? std::min(prepaid, end - start) : 0))) break;
      auto planned = svc_->PlanRead(file, start, end);
      if (!planned) {
        std::lock_guard lock(job_->mu);
        job_->FailFile(file.resolved.ns_path, planned.error().message());
        ok = false;
        break;
      }
      uint64_t cached = 0, fetched = 0;
      for (const auto& seg : *planned) {
        if (seg.page && stat_fetched && seg.offset == 0) {
          fetched += seg.length;
        } else if (seg.page) {
          cached += seg.length;  // appeared meanwhile (a reader fetched it)
        } else if (!fetches.empty() && fetches.back().first == seg.fetch) {
          fetches.back().second += seg.length;
        } else {
          fetches.emplace_back(seg.fetch, seg.length);
        }
      }
      Count(fetched, cached);
    }
    {
      std::lock_guard lock(wait->mu);
      wait->left = fetches.size();
    }
    for (auto& [fetch, bytes] : fetches) {
      fetch->OnDone([wait] {
        std::lock_guard lock(wait->mu);
        if (--wait->left == 0) wait->cv.notify_all();
      });
    }
    std::unique_lock lock(wait->mu);
    wait->cv.wait(lock, [&] { return wait->left == 0; });
    lock.unlock();
    for (auto& [fetch, bytes] : fetches) {
      if (fetch->result()) {
        Count(bytes, 0);
      } else {
        ok = false;
        std::lock_guard jl(job_->mu);
        job_->FailFile(file.resolved.ns_path, fetch->result().error().message());
      }
    }
    return ok;
  }

  void DropOlderVersions(const std::string& path, const std::string& version) {
    if (size_t n = svc_->pages().DropOtherVersions(path, version)) {
      job_->Mismatch(path, std::to_string(n) +
                               " cached pages of an older version (the object changed in the "
                               "under-store): dropped, loading the current one");
    }
  }

  // Checks what is cached of the owned shards of `file` (see load_job.h).
  void Verify(const FileRef& file, const std::vector<uint64_t>& owned, uint64_t shards) {
    const std::string& path = file.resolved.ns_path;
    auto& pages = svc_->pages();
    bool whole = owned.size() == shards && IsMd5Etag(file.resolved.mount->ufs, file.version);
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md5(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (whole) whole = md5 && EVP_DigestInit_ex(md5.get(), EVP_md5(), nullptr) == 1;
    std::string buf(page_, '\0');
    uint64_t checked = 0;
    for (uint64_t s : owned) {
      uint64_t end = std::min(file.size, (s + 1) * shard_);
      for (uint64_t off = s * shard_; off < end; off += page_) {
        uint64_t len = std::min(page_, end - off);
        PageKey key{path, file.version, off};
        auto ref = pages.Get(key);
        if (!ref) {
          whole = false;  // not cached: the load fetches it
          continue;
        }
        page_format::PageFileReader reader;
        Status st = ref->BeginRead(reader);
        if (st.ok() && ref->length() != len) {
          st = Status(Code::kCorruption,
                      "holds " + std::to_string(ref->length()) + " bytes, not " + std::to_string(len));
        }
        if (st.ok()) st = reader.Read(0, std::span<char>(buf.data(), len));
        if (!st.ok()) {
          pages.DropCorrupt(key, *ref);
          job_->Mismatch(path, "page at offset " + std::to_string(off) + " failed its check (" + st.message() +
                                   "): dropped, loading it again");
          whole = false;
          continue;
        }
        ++checked;
        if (whole) EVP_DigestUpdate(md5.get(), buf.data(), len);
      }
    }
    bool md5_checked = false;
    if (whole) {
      unsigned char digest[EVP_MAX_MD_SIZE];
      unsigned n = 0;
      if (EVP_DigestFinal_ex(md5.get(), digest, &n) == 1) {
        md5_checked = true;
        if (Hex(digest, n) != file.version) {
          size_t dropped = pages.DropPath(path, false);
          job_->Mismatch(path, "the MD5 of the cached bytes differs from the under-store's ETag " + file.version +
                                   ": dropped " + std::to_string(dropped) + " pages, loading them again");
        }
      }
    }
    std::lock_guard lock(job_->mu);
    job_->pages_checked += checked;
    if (owned.front() == 0) ++(md5_checked ? job_->files_md5_checked : job_->files_checksums_only);
  }

  WorkerService* svc_;
  WorkerCaller* caller_;
  std::shared_ptr<const Membership> membership_;  // this worker's view of the members; may be null
  std::shared_ptr<LoadJobs::Job> job_;
  HashRing ring_;
  uint64_t page_, shard_, chunk_, threads_;
  std::mutex queue_mu_;
  std::condition_variable items_cv_, room_cv_;
  std::deque<Item> queue_;
  bool walked_ = false;
};

}  // namespace

LoadJobs::LoadJobs(WorkerService* svc, std::vector<std::string> self_names)
    : svc_(svc),
      self_names_(std::move(self_names)),
      caller_(std::make_unique<WorkerCaller>(WorkerCaller::OptionsFor(svc->config()))) {}

void LoadJobs::SetMembership(std::shared_ptr<const Membership> membership) {
  std::lock_guard lock(mu_);
  membership_ = std::move(membership);
}

LoadJobs::~LoadJobs() {
  std::map<std::string, std::shared_ptr<Job>> jobs;
  {
    std::lock_guard lock(mu_);
    jobs.swap(jobs_);
  }
  for (auto& [id, job] : jobs) {
    job->stop = true;
    job->cv.notify_all();
  }
  for (auto& [id, job] : jobs) {
    if (job->thread.joinable()) job->thread.join();
  }
}

Status LoadJobs::CheckId(const std::string& id) {
  if (id.empty() || id.size() > kMaxIdLen || !std::all_of(id.begin(), id.end(), IdChar)) {
    return Bad("load job id '" + id.substr(0, kMaxIdLen) + "' must be 1 to " + std::to_string(kMaxIdLen) +
               " letters, digits, '-', '_' or '.'");
  }
  return {};
}

Result<LoadJobs::Params> LoadJobs::ParseParams(const std::map<std::string, std::string>& q) const {
  static const char* known[] = {"id",      "path", "recursive", "verify", "skip_if_exists", "bandwidth", "concurrency",
                                "members", "self", "version",   "size",   "weights",        "addresses"};
  for (const auto& [k, v] : q) {
    if (std::find_if(std::begin(known), std::end(known), [&](const char* n) { return k == n; }) == std::end(known)) {
      return Err(Bad("unknown query parameter '" + k.substr(0, 64) + "' for /v1/load; see docs/protocol.md"));
    }
  }
  auto get = [&](const char* k) -> const std::string* {
    auto it = q.find(k);
    return it == q.end() ? nullptr : &it->second;
  };
  Params p;
  auto id = get("id");
  if (!id) return Err(Bad("missing query parameter 'id' (the load job's id)"));
  SHOAL_RETURN_IF_ERROR(CheckId(*id));
  p.id = *id;
  auto path = get("path");
  if (!path || path->empty()) return Err(Bad("missing query parameter 'path'"));
  if (path->size() > kMaxPathLen) return Err(Bad("path is longer than " + std::to_string(kMaxPathLen) + " bytes"));
  auto rp = svc_->mounts().Resolve(*path);
  if (!rp) return Err(rp.error());
  p.path = rp->ns_path;
  for (auto [name, out] : {std::pair{"recursive", &p.recursive}, std::pair{"verify", &p.verify},
                           std::pair{"skip_if_exists", &p.skip_if_exists}}) {
    if (auto v = get(name)) {
      auto f = Flag(name, *v);
      if (!f) return Err(f.error());
      *out = *f;
    }
  }
  if (auto v = get("bandwidth")) {
    auto n = Number("bandwidth", *v);
    if (!n) return Err(n.error());
    p.bandwidth = *n;
  }
  if (auto v = get("concurrency")) {
    auto n = Number("concurrency", *v);
    if (!n) return Err(n.error());
    if (*n < 1 || *n > kMaxConcurrency) {
      return Err(Bad("concurrency=" + *v + " must be 1 to " + std::to_string(kMaxConcurrency)));
    }
    p.concurrency = *n;
  }
  auto members = get("members");
  if (!members || members->empty()) {
    return Err(Bad("missing query parameter 'members' (the ring's worker ids, comma-separated, in ring order)"));
  }
  for (size_t at = 0; at <= members->size();) {
    size_t comma = std::min(members->find(',', at), members->size());
    std::string m = members->substr(at, comma - at);
    if (!MemberName(m)) {
      return Err(
          Bad("members: '" + m.substr(0, 130) + "' is not a worker id (1 to 128 of letters, digits, - _ . : [ ])"));
    }
    if (std::find(p.members.begin(), p.members.end(), m) != p.members.end()) {
      return Err(Bad("members: worker id '" + m + "' appears twice"));
    }
    p.members.push_back(std::move(m));
    if (p.members.size() > kMaxMembers)
      return Err(Bad("members: more than " + std::to_string(kMaxMembers) + " workers"));
    at = comma + 1;
  }
  // The ring's weights, so that the job's owners are the clients' owners
  // when members have different capacities (etcd membership).
  if (auto w = get("weights"); w && !w->empty()) {
    for (size_t at = 0; at <= w->size();) {
      size_t comma = std::min(w->find(',', at), w->size());
      auto n = Number("weights", w->substr(at, comma - at));
      if (!n) return Err(n.error());
      p.weights.push_back(*n);
      at = comma + 1;
    }
    if (p.weights.size() != p.members.size()) {
      return Err(Bad("weights: " + std::to_string(p.weights.size()) + " given for " + std::to_string(p.members.size()) +
                     " members (one per member, in the same order)"));
    }
  }
  if (auto a = get("addresses"); a && !a->empty()) {
    for (size_t at = 0; at <= a->size();) {
      size_t comma = std::min(a->find(',', at), a->size());
      std::string addr = a->substr(at, comma - at);
      size_t colon = addr.rfind(':');
      if (!MemberName(addr) || colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) {
        return Err(Bad("addresses: '" + addr.substr(0, 130) + "' is not host:port"));
      }
      p.addresses.push_back(std::move(addr));
      if (p.addresses.size() > p.members.size()) break;
      at = comma + 1;
    }
    if (p.addresses.size() != p.members.size()) {
      return Err(Bad("addresses: " + std::to_string(p.addresses.size()) + " given for " +
                     std::to_string(p.members.size()) + " members (one per member, in the same order)"));
    }
  }
  auto self = get("self");
  if (!self) return Err(Bad("missing query parameter 'self' (this worker's id among the members)"));
  if (std::find(p.members.begin(), p.members.end(), *self) == p.members.end()) {
    return Err(Bad("self='" + self->substr(0, 130) + "' is not among the members"));
  }
  if (std::find(self_names_.begin(), self_names_.end(), *self) == self_names_.end()) {
    return Err(Bad("this worker is " + self_names_.at(0) + ", not '" + *self +
                   "': the client's config names another worker at this address; fix cluster.workers"));
  }
  p.self = *self;
  auto version = get("version");
  auto size = get("size");
  if (!version != !size) return Err(Bad("'version' and 'size' come together (a file's stat), or not at all"));
  if (version) {
    if (version->empty() || version->size() > kMaxVersionLen) {
      return Err(Bad("version must be 1 to " + std::to_string(kMaxVersionLen) + " bytes"));
    }
    auto n = Number("size", *size);
    if (!n) return Err(n.error());
    if (*n > WorkerService::kMaxFileSize) return Err(Bad("size=" + *size + " is larger than any file can be"));
    p.file_version = *version;
    p.file_size = *n;
  }
  return p;
}

Result<std::string> LoadJobs::Start(Params params) {
  auto job = std::make_shared<Job>();
  job->p = std::move(params);
  std::lock_guard lock(mu_);
  size_t running = 0;
  for (const auto& [id, j] : jobs_) {
    std::lock_guard jl(j->mu);
    if (j->state == "running") {
      if (id == job->p.id) {
        return Err(Code::kAlreadyExists, "load job " + id +
                                             " is already running on this worker; see its status or "
                                             "stop it (shoal load --stop --id " +
                                             id + ")");
      }
      ++running;
    }
  }
  if (running >= kMaxRunning) {
    return Err(Code::kUnavailable, std::to_string(running) + " load jobs are running on this worker (at most " +
                                       std::to_string(kMaxRunning) + "); wait for one or stop one (shoal load --stop)");
  }
  if (auto it = jobs_.find(job->p.id); it != jobs_.end() && it->second->thread.joinable()) it->second->thread.join();
  job->seq = ++started_;
  jobs_[job->p.id] = job;
  spdlog::info("load job {} of {} started", job->p.id, job->p.path);
  job->thread = std::thread([this, job] { Run(job); });
  Forget();
  return job->ToJson().dump(-1, ' ', false, Json::error_handler_t::replace);
}

void LoadJobs::Run(std::shared_ptr<Job> job) {
  try {
    std::shared_ptr<const Membership> membership;
    {
      std::lock_guard lock(mu_);
      membership = membership_;
    }
    Loader(svc_, caller_.get(), std::move(membership), job).Run();
  } catch (const std::exception& e) {
    std::lock_guard lock(job->mu);
    job->state = "failed";
    job->error = std::string("BUG: ") + e.what();
    job->finished = Clock::now();
  }
  auto j = job->ToJson();
  spdlog::info("load job {} of {} {}: {} files, {} bytes fetched", job->p.id, job->p.path,
               j["state"].get<std::string>(), j["files_done"].get<uint64_t>(), j["bytes_fetched"].get<uint64_t>());
}

void LoadJobs::Forget() {
  std::vector<std::pair<uint64_t, std::string>> finished;
  for (const auto& [id, j] : jobs_) {
    std::lock_guard jl(j->mu);
    if (j->state != "running") finished.emplace_back(j->seq, id);
  }
  if (finished.size() <= kKeptJobs) return;
  std::sort(finished.begin(), finished.end());
  for (size_t i = 0; i + kKeptJobs < finished.size(); ++i) {
    auto it = jobs_.find(finished[i].second);
    if (it->second->thread.joinable()) it->second->thread.join();  // finished: returns at once
    jobs_.erase(it);
  }
}

Result<std::string> LoadJobs::StatusJson(const std::string& id) const {
  Json jobs = Json::array();
  std::lock_guard lock(mu_);
  if (id.empty() || id == "all") {
    for (const auto& [_, j] : jobs_) jobs.push_back(j->ToJson());
  } else {
    SHOAL_RETURN_IF_ERROR(CheckId(id));
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      return Err(Code::kNotFound, "no load job " + id +
                                      " on this worker (jobs live in memory: a restarted worker "
                                      "has lost it; run the same `shoal load` again to resume)");
    }
    jobs.push_back(it->second->ToJson());
  }
  return Json{{"jobs", std::move(jobs)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::string> FreePath(WorkerService& svc, const std::map<std::string, std::string>& q) {
  bool recursive = false;
  std::string path;
  for (const auto& [k, v] : q) {
    if (k == "path") {
      path = v;
    } else if (k == "recursive") {
      auto f = Flag(k, v);
      if (!f) return Err(f.error());
      recursive = *f;
    } else {
      return Err(Bad("unknown query parameter '" + k.substr(0, 64) + "' for /v1/free; see docs/protocol.md"));
    }
  }
  if (path.empty()) return Err(Bad("missing query parameter 'path'"));
  if (path.size() > kMaxPathLen) return Err(Bad("path is longer than " + std::to_string(kMaxPathLen) + " bytes"));
  std::string ns;
  if (auto rp = svc.mounts().Resolve(path)) {
    ns = rp->ns_path;
  } else {
    auto n = MountTable::NormalisePath(path);  // "/" and paths above the mounts hold pages under them
    if (!n) return Err(n.error());
    ns = *n;
  }
  uint64_t before = svc.pages().stats().used_bytes;
  size_t pages = svc.pages().DropPath(ns, recursive);
  uint64_t after = svc.pages().stats().used_bytes;
  uint64_t freed = pages && before > after ? before - after : 0;
  return Json{{"path", ns}, {"pages", pages}, {"bytes", freed}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<size_t> LoadJobs::Stop(const std::string& id) {
  bool all = id.empty() || id == "all";
  if (!all) SHOAL_RETURN_IF_ERROR(CheckId(id));
  std::lock_guard lock(mu_);
  if (!all && !jobs_.contains(id)) {
    return Err(Code::kNotFound, "no load job " + id + " on this worker; `shoal load --status` lists the jobs");
  }
  size_t n = 0;
  for (auto& [jid, j] : jobs_) {
    if (!all && jid != id) continue;
    std::lock_guard jl(j->mu);
    if (j->state != "running") continue;
    j->stop = true;
    j->cv.notify_all();
    ++n;
  }
  return n;
}

}  // namespace shoal
