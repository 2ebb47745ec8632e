// PageStore: the on-disk page cache of one worker.
//
// A cached file version is a set of fixed-size pages (the last one shorter).
// Every page on disk starts with a header (key, offset, length, a checksum per
// chunk of data and one of the header itself; see cache/page_format.h and
// docs/page-format.md). Options::layout (worker.page_store) says where pages
// sit:
// - kFiles: each page in its own file under one of the cache directories,
//   written under a temporary name and renamed into place, so a crash never
//   leaves a half page under a real name.
// - kBlocks: each page in a slot of a preallocated block file, reused in place
//   (cache/block_files.h): a miss creates no file and an eviction deletes
//   none. The header carries a generation, new for every page written; a slot
//   is written data first, header last, and a half-written slot never has a
//   header that checks together with its data, so a crash never serves a
//   torn page. Capacity counts whole slots.
//
// Reads hand out a PageRef (an open fd plus the data's offset and length).
// Whoever reads through it checks what it reads (page_format::PageFileReader
// verifies every chunk a read touches, on every read), and reports a page that
// fails with DropCorrupt(): the store itself never reads page data back, so a
// page that changes on disk while the worker runs is caught by its next
// reader, not at the next restart. An evicted page stays readable through
// refs already handed out (a block-file slot is not reused while a ref to it
// lives). The in-memory index is rebuilt at Open() by a parallel scan of the
// directories or of the slot headers (warm restart), which checks each header
// and drops pages of an older format.
//
// Each directory has a capacity; when a Put would exceed it, pages are evicted
// in the order of the EvictionPolicy (Options::policy, a registered name; see
// cache/policy/registry.h). The policy sees each page by its PageId, the
// 128-bit hash that also names its file. Its state (recency, read counts,
// queues) survives a restart: it is saved to `policy.state` in each cache dir
// every Options::state_save_interval and when the store is destroyed, and
// restored at Open() for the pages the scan finds; pages it does not name (or
// all, when the file is missing, corrupt or from another policy) are added
// oldest mtime first. The effective capacity is what the file
// system can really hold: at Open it is lowered (with a warning) to what is
// cached plus the free space, a full disk (ENOSPC) lowers it to what is cached
// (logged, counted) and fails the Put with kNoSpace — callers serve the data
// they already hold and carry on — and it is measured again every 30 s.
//
// Thread safety: all methods are safe from any thread. No lock is held across
// disk I/O.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/block_files.h"
#include "cache/page_format.h"
#include "cache/policy/eviction_policy.h"
#include "cache/policy/policy_state.h"
#include "common/config.h"
#include "common/path_rules.h"
#include "shoal/status.h"

namespace shoal {

class MetricsRegistry;
class Counter;
class Gauge;
class Retention;

// An open page: a descriptor of its page file (or block file), where its
// header starts (page_offset: 0 in a page file, the slot's offset in a block
// file), the data's offset and length, and the generation its header must
// carry. Move-only; closes an fd it owns on destruction (a shared one stays open while its
// lease lives). While it lives, a block-file
// slot is not reused (its lease), so the bytes a reader checked are the bytes
// it sends.
class PageRef {
 public:
  PageRef(int fd, uint64_t data_offset, uint32_t length)
      : fd_(fd), data_offset_(data_offset), length_(length), header_len_(static_cast<uint32_t>(data_offset)) {}
  // A slot of a block file: `fd` is the file's own, kept open by `lease` (not closed here).
  PageRef(int fd, uint64_t page_offset, uint32_t header_len, uint32_t length, uint64_t generation,
          std::shared_ptr<void> lease)
      : fd_(fd), data_offset_(page_offset + header_len), length_(length), header_len_(header_len),
        page_offset_(page_offset), generation_(generation), lease_(std::move(lease)), owns_fd_(false) {}
  PageRef(PageRef&& o) noexcept
      : fd_(o.fd_),
        data_offset_(o.data_offset_),
        length_(o.length_),
        header_len_(o.header_len_),
        page_offset_(o.page_offset_),
        generation_(o.generation_),
        lease_(std::move(o.lease_)),
        owns_fd_(o.owns_fd_),
        key_(std::move(o.key_)),
        verified_(o.verified_) {
    o.fd_ = -1;
  }
  PageRef& operator=(PageRef&& o) noexcept;
  PageRef(const PageRef&) = delete;
  ~PageRef();

  int fd() const { return fd_; }
  uint64_t data_offset() const { return data_offset_; }
  uint32_t length() const { return length_; }
  uint32_t header_len() const { return header_len_; }
  uint64_t page_offset() const { return page_offset_; }
  uint64_t generation() const { return generation_; }
  // Starts `reader` on this page (PageFileReader::Begin with its position
  // and generation), whose header must name the page's key.
  Status BeginRead(page_format::PageFileReader& reader) const {
    if (!key_.path.empty()) reader.ExpectKey(&key_);
    return reader.Begin(fd_, header_len_, page_offset_, generation_);
  }
  // The page it holds (empty for a ref made without one).
  const PageKey& key() const { return key_; }
  // The identity of its file when all of its chunks last checked
  // (PageStore::MarkVerified), unknown when they never have.
  const page_format::FileIdentity& verified() const { return verified_; }
  // Whether its file still has the identity under which the page checked:
  // then its bytes are trusted without checking them again.
  bool Trusted() const { return verified_.known() && page_format::IdentityOf(fd_) == verified_; }
  void SetKey(PageKey key, const page_format::FileIdentity& verified) {
    key_ = std::move(key);
    verified_ = verified;
  }
  void SetVerified(const page_format::FileIdentity& verified) { verified_ = verified; }

 private:
  int fd_;
  uint64_t data_offset_;
  uint32_t length_;
  uint32_t header_len_;
  uint64_t page_offset_ = 0;
  uint64_t generation_ = 0;
  std::shared_ptr<void> lease_;
  bool owns_fd_ = true;  // a page file's descriptor, opened for this reference
  PageKey key_;
  page_format::FileIdentity verified_;
};

// Writes pages to disk. The seam tests use to inject ENOSPC, I/O errors and torn writes.
class PageFileWriter {
 public:
  virtual ~PageFileWriter() = default;
  // Creates `path` (which must not exist) holding header then data.
  virtual Status WriteNew(const std::string& path, std::span<const char> header, std::span<const char> data);
  // Writes a page into the block-file slot at `offset` of `fd`: the data
  // (after the header's place) first, then the header.
  virtual Status WriteAt(int fd, uint64_t offset, std::span<const char> header, std::span<const char> data);
};

class PageStore {
 public:
  // How pages sit on disk (worker.page_store): a file per page, or slots of
  // block files reused in place (cache/block_files.h).
  enum class Layout { kFiles, kBlocks };

  struct Options {
    std::vector<CacheDirConfig> dirs;
    Layout layout = Layout::kFiles;
    uint64_t page_size = 1 << 20;
    std::string policy;  // "": the default (kDefaultEvictionPolicy)
    // How often the policy's state is saved (also at destruction); 0: only at destruction.
    std::chrono::milliseconds state_save_interval{60'000};
    // The time the policy sees; null: the system clock.
    std::function<std::chrono::system_clock::time_point()> clock;
    std::shared_ptr<PageFileWriter> writer;  // null: the real one
    MetricsRegistry* metrics = nullptr;      // null: MetricsRegistry::Global()
    // Bytes the file system holding `dir` can still take; null: statvfs(2).
    std::function<Result<uint64_t>(const std::string& dir)> free_bytes;
    // The path rules (cache/rules/retention.h) and this worker's share of
    // each cluster_quota; SetRules replaces them while running.
    PathRules rules;
    double cluster_share = 1;
    // How often the ttl sweep runs (only while a rule has a ttl); 0: never
    // (expired pages are then only dropped when read).
    std::chrono::milliseconds ttl_sweep_interval{1'000};
    // Reads of a page within this time of its write are not re-uses: they are
    // the access that fetched it (a stat that brought the first page and the
    // read after it, read-ahead and the read it was for, a page read in
    // pieces), and the policy sees only reads after it. Without this, every
    // page of a one-pass scan or a shuffled epoch looks read twice, and the
    // scan-resistant policies let it displace pages that are re-used.
    std::chrono::milliseconds reuse_window{1'000};
    // Page files (the layout kFiles) held open between reads, so that a read
    // of a warm page opens and closes nothing: at most this many (and at
    // most a sixteenth of RLIMIT_NOFILE), the least recently opened let go
    // first; a page's is let go when the page leaves the cache. 0: every Get
    // opens its page file.
    size_t open_page_files = 1024;
    // Called, under the store's lock (it must not call back), after a page
    // leaves the store for any reason: the worker's epoch
    // (common/shared_epoch.h), which tells holders of its answers.
    std::function<void()> on_remove;
    // Eviction off the read path: once a cache dir holds more than
    // high_watermark percent of its capacity, a background thread evicts (in
    // the policy's order) down to low_watermark percent, so a Put evicts
    // itself only when its dir is full (the thread fell behind).
    // high_watermark 0: off (a Put evicts what it needs, as at capacity).
    unsigned high_watermark = 98;
    unsigned low_watermark = 96;
  };

  struct Stats {
    uint64_t used_bytes = 0;
    uint64_t capacity_bytes = 0;            // configured
    uint64_t effective_capacity_bytes = 0;  // what the disks can hold now (<= capacity_bytes)
    uint64_t pages = 0;
    uint64_t evicted_bytes = 0;
    uint64_t dropped_corrupt = 0;     // failed a checksum (at the scan, or reported by a reader)
    uint64_t dropped_old_format = 0;  // found at Open() in an older page format
    uint64_t pinned_bytes = 0;        // held by pinned rules (never evicted)
    uint64_t expired_pages = 0;       // dropped by a rule's ttl
    uint64_t admission_skips = 0;     // pages not cached: their rule says admission: skip
    uint64_t rule_refusals = 0;       // pages not cached: quota or cache full of pinned pages
    struct Quota {
      std::string path;
      uint64_t used = 0, limit = 0;
    };
    std::vector<Quota> quotas;  // per quota rule: bytes held here and this worker's limit
    struct DirUse {
      std::string path;
      uint64_t used = 0, capacity = 0, effective_capacity = 0;
    };
    std::vector<DirUse> dirs;  // each cache dir, in the config's order
  };

  static Result<std::unique_ptr<PageStore>> Open(Options options);
  ~PageStore();

  uint64_t page_size() const { return page_size_; }

  // A ref to the page, or nullopt on a miss (absent or evicted). Its bytes
  // are unchecked: read them with a page_format::PageFileReader. Refs to a
  // page file share one descriptor while the store holds it open
  // (Options::open_page_files): read it with pread/sendfile at offsets, never
  // through its file position.
  // `reads`: how many reads the eviction policy sees (0 for the scrubber's, which are not uses).
  std::optional<PageRef> Get(const PageKey& key, uint32_t reads = 1);
  // Up to `max` keys of cached pages from slot `*cursor` on, advancing it
  // (the scrubber's walk; an empty answer: the walk is done). Only pages
  // under `prefix` ("": all), and not those checked whole since
  // `verified_since` while their file kept that identity.
  std::vector<PageKey> PagesToCheck(size_t* cursor, size_t max, const std::string& prefix,
                                    std::chrono::steady_clock::time_point verified_since);
  // A reader found the page `ref` (from Get) failing its checksum: deletes
  // it, so that the next read fetches the page again, and counts it. A page
  // already dropped, or since replaced (a new file, or a new generation in a
  // block-file slot), is left alone. Returns whether this call dropped it.
  // `found_by` labels the count (shoal_cache_corrupt_pages_total): "read" or "scrub".
  bool DropCorrupt(const PageKey& key, const PageRef& ref, std::string_view found_by = "read");
  // Every chunk of the page `ref` (from Get) checked, its file having
  // identity `id` before the check: later refs to it carry `id`
  // (PageRef::Trusted). A page since replaced is left alone; an identity that
  // has not settled (page_format::Settled) is not recorded.
  // Returns whether it was recorded.
  bool MarkVerified(const PageRef& ref, const page_format::FileIdentity& id);
  // Reads and checks all of the page `ref` (from Get): its header, that it
  // names ref.key(), and every chunk; marks it verified when it checks. The
  // caller drops a page that fails (DropCorrupt). `scratch` is reused
  // between calls. Returns the identity under which the page is now trusted
  // (unknown when its file changed too recently to trust it: Settled).
  Result<page_format::FileIdentity> Verify(const PageRef& ref, std::string& scratch);
  bool Contains(const PageKey& key);
  // `reads` reads of the page served without a Get (from a ref a client
  // held, common/local_wire.h leases): the policy sees them as Get would.
  // The page's data length; 0 when it is not cached (an expired one is dropped).
  uint32_t Touch(const PageKey& key, uint32_t reads);
  // Deletes one page (an extra copy no longer wanted); whether it was cached.
  bool Drop(const PageKey& key);
  // Caches one page. REQUIRES: data.size() <= page_size(); key.offset a multiple of it.
  Status Put(const PageKey& key, std::span<const char> data);

  // Deletes every page of `path` (every version), or of every path under it when
  // `recursive`. Returns the number of pages dropped.
  size_t DropPath(const std::string& path, bool recursive);
  // Deletes the pages of every version of `path` other than `current`.
  size_t DropOtherVersions(const std::string& path, const std::string& current);

  // Whether any page of any version of `path` is cached.
  bool HasPath(const std::string& path) const;
  // Bytes of the pages of `prefix` and every path under it.
  uint64_t BytesUnder(const std::string& prefix) const;

  // Replaces the path rules: every cached page moves to its new rule class;
  // pages of a path that is no longer admitted are dropped.
  void SetRules(PathRules rules, double cluster_share);
  // Whether pages of `path` are cached at all (its rule's admission).
  bool Admits(const std::string& path);
  // Drops expired pages: at most `max_pages` slots looked at from where the
  // last call stopped. Returns the pages dropped. The sweep thread calls it.
  size_t SweepExpired(size_t max_pages);
  // Sets the rule gauges (pinned bytes, per-quota bytes) to what is held now.
  void UpdateRuleGauges();

  Stats stats() const;

  // Writes each cache dir's policy state now (Open's background thread and the
  // destructor call it too). Returns the first failure; the others are still tried.
  Status SaveState();

 private:
  struct Dir;
  struct Slot;
  using Id = PageId;
  using IdHash = PageIdHash;

  PageStore() = default;
  static Id IdOf(const PageKey& key);
  std::string PathOf(const Dir& dir, const Id& id) const;
  // Indexes the pages of one bucket (subdirectory) of a cache dir; appends
  // (mtime, slot) of each to `found`. Safe from several threads at once.
  void ScanBucket(size_t dir_index, int bucket, std::vector<std::pair<int64_t, uint32_t>>* found);
  // The same for the block files of a cache dir (the layout kBlocks).
  void ScanBlocks(size_t dir_index, std::vector<std::pair<int64_t, uint32_t>>* found);
  // Indexes a page found at Open (by either scan); false when the index
  // already holds a newer copy. Appends (time, slot) to `found`. Takes mu_.
  bool IndexFound(Slot s, int64_t time_ns, std::vector<std::pair<int64_t, uint32_t>>* found);
  // Removes the page files, or the block files, that the other layout left.
  static void RemoveOtherLayout(const std::string& dir, Layout layout);
  uint64_t NextGeneration();
  bool blocks() const { return layout_ == Layout::kBlocks; }
  uint32_t AddSlotLocked(Slot slot);
  void RemoveSlotLocked(uint32_t slot, bool unlink_file);
  // `reads` reads of page `id`, as the policy sees them (none within the
  // reuse window of its write): its slot, or nullopt when it is not cached
  // (an expired page is dropped). REQUIRES: mu_ held.
  std::optional<uint32_t> ReadLocked(const Id& id, uint32_t reads);
  size_t ChooseDirLocked(uint64_t bytes) const;
  // Sets a directory's effective capacity to min(capacity, used + free space),
  // logging a change. REQUIRES: mu_ held.
  void MeasureDirLocked(Dir& dir, const char* when);
  void SetEffectiveLocked(Dir& dir, uint64_t effective, const std::string& why);
  // Evicts the retention layer's victim in dirs_[dir]; false when it holds
  // none (empty, or only pinned pages). REQUIRES: mu_ held.
  bool EvictOneLocked(size_t dir);
  // Evicts the pages of quota rule `quota` (and the others of class `cls`)
  // until `bytes` more fit; false (logged, counted) when pinned pages fill it.
  bool MakeQuotaRoomLocked(uint16_t cls, uint64_t bytes, const std::string& path);
  // Adds the pages a scan found to the policy of dirs_[i]: those named in its
  // saved state in the saved order, then the rest oldest mtime first.
  void RestorePolicyLocked(size_t i, std::vector<std::pair<int64_t, uint32_t>>& found,
                           const Result<policy_state::Saved>& saved);
  std::string StatePath(const Dir& dir) const;

  uint64_t page_size_ = 0;
  Layout layout_ = Layout::kFiles;
  std::shared_ptr<PageFileWriter> writer_;
  std::atomic<uint64_t> last_generation_{0};  // of the pages written to block files

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Dir>> dirs_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::unordered_map<Id, uint32_t, IdHash> index_;
  // path -> version -> slots, for DropPath / DropOtherVersions.
  std::map<std::string, std::map<std::string, std::set<uint32_t>>> by_path_;
  std::atomic<uint64_t> tmp_counter_{0};
  // The page files held open (Options::open_page_files), oldest first, as
  // (slot, token): an entry whose slot has another token is stale.
  std::deque<std::pair<uint32_t, uint64_t>> open_files_;
  uint64_t open_file_tokens_ = 0;
  size_t open_files_cap_ = 0;

  Counter* evicted_bytes_ = nullptr;
  Gauge* used_gauge_ = nullptr;
  Gauge* capacity_gauge_ = nullptr;
  Gauge* effective_gauge_ = nullptr;
  Counter* enospc_ = nullptr;
  std::function<Result<uint64_t>(const std::string& dir)> free_bytes_;
  Gauge* pages_gauge_ = nullptr;
  // Pages dropped as corrupt, by who found them: the start-up scan, a read, the scrubber.
  Counter* corrupt_ = nullptr;  // found by the scan
  Counter* corrupt_read_ = nullptr;
  Counter* corrupt_scrub_ = nullptr;
  Counter* checked_bytes_ = nullptr;  // shoal_cache_checked_bytes_total
  Counter& CorruptCounter(std::string_view found_by) {
    return found_by == "scrub" ? *corrupt_scrub_ : found_by == "scan" ? *corrupt_ : *corrupt_read_;
  }
  Counter* old_format_ = nullptr;
  std::function<std::chrono::system_clock::time_point()> clock_;
  std::chrono::milliseconds reuse_window_{0};
  std::function<void()> on_remove_;
  std::mutex save_mu_;   // one SaveState at a time
  bool opened_ = false;  // Open() finished: only then is there a policy state worth saving
  std::jthread saver_;   // saves the policy state every state_save_interval

  std::unique_ptr<Retention> retention_;  // the rule classes and their policies
  size_t sweep_cursor_ = 0;
  bool logged_pinned_full_ = false, logged_quota_full_ = false;
  Counter* expired_ = nullptr;
  Counter* admission_skips_ = nullptr;
  Counter* refused_pinned_ = nullptr;
  Counter* refused_quota_ = nullptr;
  Gauge* pinned_gauge_ = nullptr;
  MetricsRegistry* metrics_ = nullptr;
  std::jthread sweeper_;  // the ttl sweep
  // Eviction between the watermarks (Options::high_watermark).
  unsigned high_watermark_ = 0, low_watermark_ = 0;
  bool evict_wanted_ = false;  // under mu_
  std::condition_variable_any evict_cv_;
  Counter* background_evictions_ = nullptr;
  Counter* inline_evictions_ = nullptr;
  // Wakes the evictor when `dir` is above the high watermark. REQUIRES: mu_ held.
  void MaybeWakeEvictorLocked(const Dir& dir);
  void EvictInBackground(std::stop_token stop);
  std::jthread evictor_;  // last: stopped first
};

}  // namespace shoal
