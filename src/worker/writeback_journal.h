// WritebackJournal: the worker's side of write_mode: write-back
// (docs/protocol.md "Write-back", docs/writeback-journal.md for the format).
//
// A client streams a file's bytes to k workers (the holders) with
// begin/append/commit. Each holder keeps the bytes in one data file per write
// under <first cache dir>/writeback/ (its name fsync'd at begin; the bytes
// flushed as they arrive), and on commit fdatasyncs the data file, appends a
// checksummed commit record to journal.log and fdatasyncs that, and only then
// answers: an acknowledged write survives a crash of the holder. A small file
// comes in one `put` whose record carries its bytes: one fdatasync. The uploader (writeback_uploader.cc) then puts committed writes
// into the under-store in commit order; only the primary (the first holder)
// uploads, the others keep their copy until the primary says it is done, or
// take over when the primary is gone past worker.write_back_takeover.
//
// Until its upload is done, a holder answers stat/open/read of the path from
// the pending write (version "wb-<id>"): read-your-writes.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/config.h"
#include "shoal/status.h"

namespace shoal {

class UnderStore;
struct FileInfo;

// The version a pending write is read under.
inline constexpr std::string_view kWritebackVersionPrefix = "wb-";

// A committed, not yet finished write as the journal holds it.
struct WritebackCommit {
  std::string id;    // 32 hex digits, the same on every holder
  std::string path;  // namespace path
  uint64_t size = 0;
  uint64_t xxh3 = 0;                 // XXH3-64 of the bytes
  int64_t mtime_ns = 0;              // wall clock at the first holder's begin (the client's claim is not trusted: ours)
  std::vector<WorkerEntry> holders;  // primary first
  // The write's options for the store (content type, metadata, ETag, mode)
  // as EncodeWriteOptions wrote them; "" for none.
  std::string attrs;
  std::string version() const { return std::string(kWritebackVersionPrefix) + id; }
};

// An open data file of a committed write (for reads).
struct WritebackData {
  std::shared_ptr<const int> fd;  // closed when the last user lets go
  WritebackCommit commit;
};

class WritebackJournal {
 public:
  // What the journal needs of the rest of the worker.
  struct Hooks {
    // The under-store of a namespace path and the key in it.
    std::function<Result<std::shared_ptr<UnderStore>>(const std::string& path, std::string* key)> store_for;
    // After an upload: drop the worker's cached metadata of the path (and its parents).
    std::function<void(const std::string& path)> uploaded;
    // After an upload, before readers are switched to the store's version:
    // cache what this worker can of the bytes (`fd`, the data file) under
    // `as`, the store's status of the object. Best effort.
    std::function<void(const WritebackCommit& c, const FileInfo& as, int fd)> cache_uploaded;
    // POST `target` to a peer worker; its answer's status (kNotFound: it holds nothing of it).
    std::function<Status(const WorkerEntry& peer, const std::string& target)> call_peer;
    // GET `target` of a peer: the body, or why not.
    std::function<Result<std::string>(const WorkerEntry& peer, const std::string& target)> get_peer;
    // A write was committed here (Put or Commit): its version is what readers
    // get from now on. Called under the journal's locks: it must not call back.
    std::function<void(const std::string& path)> committed;
  };
  struct Options {
    std::string dir;           // <first cache dir>/writeback
    std::string self_id;       // this worker's ring id
    uint64_t max_pending = 0;  // bytes; begin is refused as busy past it
    std::chrono::milliseconds takeover{60'000};
    size_t max_open_writes = 1024;  // begun, not committed
    // Uploads yield to writes streaming in (bytes received within
    // upload_yield_window), for at most upload_yield_max after their commit:
    // a holder's disk and CPU go to acknowledging writes first.
    std::chrono::milliseconds upload_yield_window{300};
    std::chrono::milliseconds upload_yield_max{10'000};
  };

  // Creates the directory, replays the journal (a torn tail is cut off, data
  // files without a commit record are deleted, committed ones are checked
  // against their size and checksum) and starts the uploader.
  static Result<std::unique_ptr<WritebackJournal>> Open(Options options, Hooks hooks);
  ~WritebackJournal();

  // The protocol (every argument is the client's claim, checked here).
  // `attrs`: the write's options for the store (EncodeWriteOptions' text,
  // checked here), kept with the write and given to its upload.
  Status Begin(const std::string& id, const std::string& path, const std::vector<WorkerEntry>& holders,
               std::string_view attrs = {});
  Status Append(const std::string& id, uint64_t offset, std::string_view data);
  // The same, with the bytes taken from `next` (a request body) piece by
  // piece until it gives an empty one, each written as it comes (a piece
  // stays valid until the next call): no copy of the body is made. The
  // bytes taken, or why not; a body that stops part-way fails the write.
  using BodySource = std::function<Result<std::string_view>()>;
  Result<uint64_t> AppendFrom(const std::string& id, uint64_t offset, const BodySource& next);
  // `attrs`, when given, replaces the options given at Begin (a writer that
  // learned the ETag only from the bytes).
  Result<WritebackCommit> Commit(const std::string& id, uint64_t size, uint64_t xxh3,
                                 std::optional<std::string_view> attrs = std::nullopt);
  // A whole small file at once (begin, append and commit): its bytes go into
  // the journal record itself, so it costs one fdatasync. At most kMaxInline.
  static constexpr uint64_t kMaxInline = 512 << 10;
  Result<WritebackCommit> Put(const std::string& id, const std::string& path, const std::vector<WorkerEntry>& holders,
                              std::string_view data, uint64_t size, uint64_t xxh3, std::string_view attrs = {});
  void Abort(const std::string& id);
  // From the primary: the upload of `id` is done; drop the copy. OK when unknown.
  Status Done(const std::string& id);
  // "pending", "done" (a recent write uploaded) or "unknown".
  std::string State(const std::string& id) const;

  // The newest pending write of `path`, if any.
  std::optional<WritebackCommit> Pending(const std::string& path) const;
  // Pending writes directly under directory `dir` (for listings).
  std::vector<WritebackCommit> PendingUnder(const std::string& dir) const;
  // The directories directly under `dir` that hold pending writes deeper down
  // (full paths, sorted): a pending file's directories may exist nowhere else
  // until its upload makes them.
  std::vector<std::string> PendingDirsUnder(const std::string& dir) const;
  // Whether any pending write lies somewhere below directory `dir`.
  bool HasPendingBelow(const std::string& dir) const;
  // The data of pending write `id` of `path` (kVersionMismatch once it is uploaded).
  Result<WritebackData> Data(const std::string& id, const std::string& path) const;

  // Tests and maintenance: hold uploads back (nothing is lost; they resume on false).
  void Pause(bool paused);

  struct Stats {
    uint64_t pending_bytes = 0;  // committed, not yet done
    uint64_t pending_files = 0;
    double oldest_pending_seconds = 0;
    uint64_t open_bytes = 0;  // begun, not committed
    bool paused = false;
  };
  Stats stats() const;

  static bool ValidId(std::string_view id);
  // Registers its counters (at 0) before the first write-back arrives.
  static void RegisterMetrics();
  static void RegisterUploadMetrics();  // writeback_uploader.cc's
  // "id@host:port,id@host:port" (the holders query parameter).
  static Result<std::vector<WorkerEntry>> ParseHolders(std::string_view text);
  static std::string FormatHolders(const std::vector<WorkerEntry>& holders);

 private:
  struct OpenWrite;
  struct Entry;
  WritebackJournal(Options options, Hooks hooks);
  Status Replay();
  Status AppendRecord(const std::string& payload);  // REQUIRES: journal_mu_ held
  // The open write `id`, or why an append to it is refused.
  Result<std::shared_ptr<OpenWrite>> OpenForAppend(const std::string& id, uint64_t more);
  // `data` at the write's end. REQUIRES: o.mu held, o not failed
  Status AppendPiece(OpenWrite& o, std::string_view data);
  // Why a new write (begin or put of `more` bytes) is refused, if it is. REQUIRES: mu_ held
  Status CheckNewWrite(const std::string& id, const std::string& path, const std::vector<WorkerEntry>& holders,
                       uint64_t more);
  // A commit whose record is written becomes pending upload. REQUIRES: journal_mu_ and mu_ held
  void AddCommitted(const WritebackCommit& c);
  Status RecordDone(const std::string& id);
  void Forget(const std::string& id);  // drops the entry and its data file
  void UploaderLoop();
  // One step of the uploader for one entry; returns false when it must wait.
  void Work(const std::shared_ptr<Entry>& e);
  Status Upload(const Entry& e);
  bool PrimaryGone(const Entry& e);

  Options options_;
  Hooks hooks_;
  int journal_fd_ = -1;
  int dir_fd_ = -1;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<OpenWrite>> open_;             // id -> write being received
  std::map<std::string, std::shared_ptr<Entry>> entries_;              // id -> committed, not done
  std::map<std::string, std::chrono::steady_clock::time_point> done_;  // recently done ids
  // Uploaded writes whose data files are kept a while (kRetireAfter) for
  // readers that opened the pending version just before the upload finished.
  std::map<std::string, std::pair<WritebackCommit, std::chrono::steady_clock::time_point>> retired_;
  // The store version each path's last upload from here made, with the
  // time of the write it uploaded: a later write of the path that finds that
  // version in the store, newer than itself, finds its own older write, not
  // another writer's (Upload). Bounded: kMaxUploadedVersions.
  struct UploadedVersion {
    std::string version;
    int64_t write_mtime_ns = 0;
    uint64_t order = 0;  // its place in uploaded_order_
  };
  std::map<std::string, UploadedVersion> uploaded_versions_;  // path -> the last upload's
  // (path, order) per upload recorded, oldest first; an entry whose record
  // was replaced since (a later upload of the path) is stale and skipped.
  std::deque<std::pair<std::string, uint64_t>> uploaded_order_;
  uint64_t next_upload_order_ = 1;
  uint64_t next_seq_ = 1;
  uint64_t pending_bytes_ = 0;
  uint64_t open_bytes_ = 0;
  std::chrono::steady_clock::time_point last_append_;  // the last bytes any open write received
  bool paused_ = false;
  bool stopping_ = false;

  std::mutex journal_mu_;  // appends to journal.log
  uint64_t journal_size_ = 0;

  std::thread uploader_;
};

}  // namespace shoal
