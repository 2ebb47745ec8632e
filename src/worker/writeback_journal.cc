// The write-back journal: receiving writes, the on-disk journal, and replay.
// The uploader is in writeback_uploader.cc. Format: docs/protocol.md
// ("Write-back: the journal on disk").
#include "worker/writeback_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/metrics.h"
#include "ufs/write_options_codec.h"
#include "worker/writeback_entry.h"
#include "worker/writeback_records.h"

namespace shoal {

using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMaxFileSize = (1ull << 63) - 1;

Status Errno(const std::string& what) {
  int e = errno;
  return Status(e == ENOSPC || e == EDQUOT ? Code::kNoSpace : Code::kIo, what + ": " + std::strerror(e));
}

Status WriteAll(int fd, const char* p, size_t n, uint64_t at, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Errno(what);
    p += w;
    n -= static_cast<size_t>(w);
    at += static_cast<uint64_t>(w);
  }
  return {};
}

// A client's attrs, checked and written the one way the journal keeps them.
Result<std::string> CanonicalAttrs(const std::string& path, std::string_view attrs) {
  auto o = DecodeWriteOptions(attrs);
  if (!o) return Err(o.error().WithContext("write-back of " + path));
  return EncodeWriteOptions(*o);
}

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Counter& Committed() {
  static Counter& c = MetricsRegistry::Global().GetCounter(
      "shoal_writeback_committed_bytes_total", "Bytes of write-back writes committed (fsync'd and journaled) here");
  return c;
}
Counter& Busy() {
  static Counter& c = MetricsRegistry::Global().GetCounter(
      "shoal_writeback_busy_total", "Write-back writes refused because worker.write_back_max_pending was reached");
  return c;
}

}  // namespace

void WritebackJournal::RegisterMetrics() {
  Committed();
  Busy();
  RegisterUploadMetrics();
}

bool WritebackJournal::ValidId(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::vector<WorkerEntry>> WritebackJournal::ParseHolders(std::string_view text) {
  std::vector<WorkerEntry> out;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto one = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    auto e = ParseWorkerEntry(one);
    if (!e) return Err(e.error().WithContext("holders"));
    for (const auto& h : out) {
      if (h.id == e->id) return Err(Code::kInvalidArgument, "holders names worker " + e->id + " twice");
    }
    out.push_back(std::move(*e));
    if (out.size() > 16) return Err(Code::kInvalidArgument, "holders names more than 16 workers");
  }
  if (out.empty()) return Err(Code::kInvalidArgument, "holders names no worker");
  return out;
}

std::string WritebackJournal::FormatHolders(const std::vector<WorkerEntry>& holders) {
  std::string out;
  for (const auto& h : holders) out += (out.empty() ? "" : ",") + FormatWorkerEntry(h);
  return out;
}

WritebackJournal::WritebackJournal(Options options, Hooks hooks)
    : options_(std::move(options)), hooks_(std::move(hooks)) {}

WritebackJournal::~WritebackJournal() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (uploader_.joinable()) uploader_.join();
  if (journal_fd_ >= 0) ::close(journal_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

Result<std::unique_ptr<WritebackJournal>> WritebackJournal::Open(Options options, Hooks hooks) {
  if (::mkdir(options.dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Err(Errno("cannot create the write-back journal directory " + options.dir +
                     " (in the first cache dir; check its permissions)"));
  }
  std::unique_ptr<WritebackJournal> j(new WritebackJournal(std::move(options), std::move(hooks)));
  j->dir_fd_ = ::open(j->options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (j->dir_fd_ < 0) return Err(Errno("cannot open " + j->options_.dir));
  SHOAL_RETURN_IF_ERROR(j->Replay());
  j->uploader_ = std::thread([p = j.get()] { p->UploaderLoop(); });
  return j;
}

// journal.log is a sequence of records: u32 length (little endian), u64
// XXH3-64 of the payload, the payload (JSON: a commit or a done). Replay reads
// records until the first that is short or fails its checksum (a torn tail:
// the write that made it was never acknowledged) and cuts the file there.
Status WritebackJournal::Replay() {
  const std::string log = options_.dir + "/journal.log";
  journal_fd_ = ::open(log.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (journal_fd_ < 0) return Errno("cannot open the write-back journal " + log);
  struct stat sb {};
  if (::fstat(journal_fd_, &sb) != 0) return Errno("cannot stat " + log);
  std::string bytes(static_cast<size_t>(sb.st_size), '\0');
  for (size_t got = 0; got < bytes.size();) {
    ssize_t n = ::pread(journal_fd_, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("cannot read " + log);
    got += static_cast<size_t>(n);
  }
  writeback_records::Replayed replayed = writeback_records::Parse(bytes);
  const size_t at = replayed.valid_bytes;
  if (!replayed.malformed.empty()) {
    spdlog::error(
        "write-back journal {}: a record at byte {} passed its checksum but is malformed ({}); "
        "the rest of the journal is ignored",
        log, at, replayed.malformed);
  } else if (at < bytes.size()) {
    spdlog::warn(
        "write-back journal {}: {} bytes of a torn record at its end are dropped (a write that was never "
        "acknowledged)",
        log, bytes.size() - at);
  }
  std::map<std::string, std::string>& inline_data = replayed.inline_data;
  // Check each committed write's data file; whatever else is in the directory goes.
  std::vector<WritebackCommit> live;
  for (const WritebackCommit& c : replayed.commits) {
    const std::string& id = c.id;
    const std::string data = options_.dir + "/" + id + ".data";
    std::string bad;
    if (auto in = inline_data.find(id); in != inline_data.end()) {
      // Its data file may not have reached the disk: written again from the
      // record, and made durable before the journal is rewritten without it.
      int out = ::open(data.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      Status st = out < 0 ? Errno("cannot write " + data)
                          : WriteAll(out, in->second.data(), in->second.size(), 0, "writing " + data);
      if (st.ok() && ::fdatasync(out) != 0) st = Errno("fsync " + data);
      if (out >= 0) ::close(out);
      if (!st.ok()) return st.WithContext("write-back journal replay (the journal is kept as it is)");
    }
    int fd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      bad = std::string("its data file is missing: ") + std::strerror(errno);
    } else {
      XXH3_state_t* h = XXH3_createState();
      XXH3_64bits_reset(h);
      std::vector<char> buf(4 << 20);
      uint64_t total = 0;
      for (;;) {
        ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          bad = std::string("reading its data file: ") + std::strerror(errno);
          break;
        }
        if (n == 0) break;
        XXH3_64bits_update(h, buf.data(), static_cast<size_t>(n));
        total += static_cast<uint64_t>(n);
      }
      if (bad.empty() && total != c.size)
        bad = "its data file holds " + std::to_string(total) + " bytes, not " + std::to_string(c.size);
      if (bad.empty() && XXH3_64bits_digest(h) != c.xxh3) bad = "its data file fails its checksum";
      XXH3_freeState(h);
      ::close(fd);
    }
    if (!bad.empty()) {
      spdlog::error(
          "write-back journal: write {} of {} cannot be finished from this worker ({}); its other holders "
          "({}) finish it",
          id, c.path, bad, FormatHolders(c.holders));
      continue;
    }
    live.push_back(c);
  }
  if (DIR* d = ::opendir(options_.dir.c_str())) {
    while (dirent* de = ::readdir(d)) {
      std::string name = de->d_name;
      if (name == "." || name == ".." || name == "journal.log") continue;
      bool keep = false;
      for (const auto& c : live) keep = keep || name == c.id + ".data";
      if (!keep) ::unlinkat(dir_fd_, name.c_str(), 0);
    }
    ::closedir(d);
  }
  // Rewrite the journal with the live commits only (temp, fsync, rename, fsync
  // dir); the dir fsync also makes the data files rewritten above durable.
  std::string out;
  for (const auto& c : live) {
    out += writeback_records::EncodeRecord(writeback_records::CommitPayload(c));
  }
  const std::string tmp = options_.dir + "/journal.tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot write " + tmp);
  Status st = WriteAll(fd, out.data(), out.size(), 0, "writing " + tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Errno("fsync " + tmp);
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), log.c_str()) != 0) st = Errno("renaming " + tmp);
  if (st.ok() && ::fsync(dir_fd_) != 0) st = Errno("fsync " + options_.dir);
  if (!st.ok()) return st;
  ::close(journal_fd_);
  journal_fd_ = ::open(log.c_str(), O_RDWR | O_CLOEXEC);
  if (journal_fd_ < 0) return Errno("cannot open " + log);
  journal_size_ = out.size();
  auto now = Clock::now();
  for (auto& c : live) {
    auto e = std::make_shared<Entry>();
    e->commit = c;
    e->seq = next_seq_++;
    // The age counts from the write's own time, so a restart does not reset takeover.
    e->committed_at = now - std::chrono::nanoseconds(std::max<int64_t>(0, WallNs() - c.mtime_ns));
    pending_bytes_ += c.size;
    entries_[c.id] = std::move(e);
  }
  if (!live.empty()) spdlog::info("write-back journal: {} pending writes replayed; their upload resumes", live.size());
  return {};
}

Status WritebackJournal::AppendRecord(const std::string& payload) {
  const std::string rec = writeback_records::EncodeRecord(payload);
  Status st = WriteAll(journal_fd_, rec.data(), rec.size(), journal_size_, "appending to the write-back journal");
  if (st.ok() && ::fdatasync(journal_fd_) != 0) st = Errno("fsync of the write-back journal");
  if (!st.ok()) {
    // Whatever part of the record reached the disk is a torn tail: cut it so the next record follows a good one.
    (void)::ftruncate(journal_fd_, static_cast<off_t>(journal_size_));
    return st;
  }
  journal_size_ += rec.size();
  return {};
}

Status WritebackJournal::CheckNewWrite(const std::string& id, const std::string& path,
                                       const std::vector<WorkerEntry>& holders, uint64_t more) {
  if (!ValidId(id)) return Status(Code::kInvalidArgument, "write-back id '" + id + "' is not 32 lowercase hex digits");
  SHOAL_RETURN_IF_ERROR(writeback_records::Recordable(path, holders));
  bool mine = false;
  for (const auto& h : holders) mine = mine || h.id == options_.self_id;
  if (!mine) {
    return Status(Code::kInvalidArgument, "write-back of " + path + ": holders (" + FormatHolders(holders) +
                                              ") does not name this worker (" + options_.self_id + ")");
  }
  if (open_.contains(id) || entries_.contains(id) || done_.contains(id)) {
    return Status(Code::kAlreadyExists, "write-back id " + id + " is already in use; begin with a new id");
  }
  if (open_.size() >= options_.max_open_writes) {
    Busy().Add(1);
    return Status(Code::kUnavailable, "worker " + options_.self_id + " is busy: " + std::to_string(open_.size()) +
                                          " write-back writes are open; write through or retry later");
  }
  if (pending_bytes_ + open_bytes_ + more >= options_.max_pending) {
    Busy().Add(1);
    return Status(Code::kUnavailable, "worker " + options_.self_id +
                                          " is busy: " + std::to_string(pending_bytes_ + open_bytes_) +
                                          " bytes of write-back are pending upload (worker.write_back_max_pending=" +
                                          std::to_string(options_.max_pending) + "); write through or retry later");
  }
  return {};
}

Status WritebackJournal::Begin(const std::string& id, const std::string& path, const std::vector<WorkerEntry>& holders,
                               std::string_view attrs) {
  auto canonical = CanonicalAttrs(path, attrs);
  if (!canonical) return canonical.error();
  auto o = std::make_shared<OpenWrite>();
  const std::string data = options_.dir + "/" + id + ".data";
  {
    std::lock_guard lock(mu_);
    SHOAL_RETURN_IF_ERROR(CheckNewWrite(id, path, holders, 0));
    o->fd = ::open(data.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (o->fd < 0) return Errno("cannot create write-back data file " + data);
    o->path = path;
    o->holders = holders;
    o->attrs = std::move(*canonical);
    o->mtime_ns = WallNs();
    o->last_used = Clock::now();
    o->hash = XXH3_createState();
    XXH3_64bits_reset(o->hash);
    open_[id] = o;
  }
  // The data file's name is made durable now, while the bytes stream in, so
  // that the commit needs no directory fsync.
  if (::fsync(dir_fd_) != 0) {
    Status st = Errno("fsync of " + options_.dir);
    Abort(id);
    return st;
  }
  return {};
}

Result<WritebackCommit> WritebackJournal::Put(const std::string& id, const std::string& path,
                                              const std::vector<WorkerEntry>& holders, std::string_view data,
                                              uint64_t size, uint64_t xxh3, std::string_view attrs) {
  auto canonical = CanonicalAttrs(path, attrs);
  if (!canonical) return Err(canonical.error());
  if (data.size() > kMaxInline) {
    return Err(Code::kInvalidArgument, "write-back put of " + path + ": " + std::to_string(data.size()) +
                                           " bytes; a put takes at most " + std::to_string(kMaxInline) +
                                           " (stream larger files with begin/append/commit)");
  }
  if (size != data.size()) {
    return Err(Code::kInvalidArgument, "write-back put of " + path + " claims " + std::to_string(size) + " bytes; " +
                                           std::to_string(data.size()) + " were received");
  }
  if (xxh3 != XXH3_64bits(data.data(), data.size())) {
    return Err(Code::kInvalidArgument, "write-back put of " + path +
                                           ": the bytes received fail the checksum the client sent; write the file "
                                           "again");
  }
  WritebackCommit c;
  c.id = id;
  c.path = path;
  c.size = size;
  c.xxh3 = xxh3;
  c.mtime_ns = WallNs();
  c.holders = holders;
  c.attrs = std::move(*canonical);
  {
    std::lock_guard lock(mu_);
    SHOAL_RETURN_IF_ERROR(CheckNewWrite(id, path, holders, data.size()));
    open_bytes_ += data.size();  // counted as open until committed below
  }
  auto unopen = [&] {
    std::lock_guard lock(mu_);
    open_bytes_ -= std::min<uint64_t>(open_bytes_, data.size());
  };
  // The data file serves reads and the upload; the journal record, which
  // carries the bytes too, is what makes the write durable (one fdatasync).
  const std::string file = options_.dir + "/" + id + ".data";
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  Status st = fd < 0 ? Errno("cannot create write-back data file " + file)
                     : WriteAll(fd, data.data(), data.size(), 0, "writing write-back data of " + path);
  if (fd >= 0) ::close(fd);
  if (!st.ok()) {
    if (fd >= 0) ::unlinkat(dir_fd_, (id + ".data").c_str(), 0);  // not another put's file of the same id
    unopen();
    return Err(st);
  }
  const std::string payload = writeback_records::CommitPayload(c, data);
  {
    std::lock_guard jl(journal_mu_);
    if (Status rec = AppendRecord(payload); !rec.ok()) {
      ::unlinkat(dir_fd_, (id + ".data").c_str(), 0);
      unopen();
      return Err(rec.WithContext("committing write-back of " + path));
    }
    std::lock_guard lock(mu_);
    open_bytes_ -= std::min<uint64_t>(open_bytes_, data.size());
    AddCommitted(c);
  }
  Committed().Add(size);
  cv_.notify_all();
  return c;
}

void WritebackJournal::AddCommitted(const WritebackCommit& c) {
  auto e = std::make_shared<Entry>();
  e->commit = c;
  e->seq = next_seq_++;
  e->committed_at = Clock::now();
  pending_bytes_ += c.size;
  entries_[c.id] = std::move(e);
  if (hooks_.committed) hooks_.committed(c.path);
}

Result<std::shared_ptr<WritebackJournal::OpenWrite>> WritebackJournal::OpenForAppend(const std::string& id,
                                                                                     uint64_t more) {
  std::lock_guard lock(mu_);
  auto it = open_.find(id);
  if (it == open_.end()) {
    return Err(Code::kNotFound, "write-back id " + id +
                                    " is not open here (never begun, committed, aborted or "
                                    "timed out); begin the write again");
  }
  if (pending_bytes_ + open_bytes_ + more > options_.max_pending + (64ull << 20)) {
    Busy().Add(1);
    return Err(Code::kUnavailable, "worker " + options_.self_id +
                                       " is busy: the write-back pending bound "
                                       "(worker.write_back_max_pending) is reached");
  }
  return it->second;
}

Status WritebackJournal::AppendPiece(OpenWrite& o, std::string_view data) {
  if (data.size() > kMaxFileSize - o.size) {
    o.failed = true;
    return Status(Code::kInvalidArgument, "write-back file too large");
  }
  if (Status st = WriteAll(o.fd, data.data(), data.size(), o.size, "writing write-back data of " + o.path); !st.ok()) {
    o.failed = true;
    return st;
  }
  // Start writing the bytes to disk now, so the commit's fdatasync finds
  // little left to do (the holder's disk works while the client streams).
  (void)::sync_file_range(o.fd, static_cast<off_t>(o.size), static_cast<off_t>(data.size()), SYNC_FILE_RANGE_WRITE);
  XXH3_64bits_update(o.hash, data.data(), data.size());
  o.size += data.size();
  o.last_used = Clock::now();
  std::lock_guard lock(mu_);
  open_bytes_ += data.size();
  last_append_ = o.last_used;
  return {};
}

namespace {

Status AppendOrder(const std::string& path, uint64_t offset, uint64_t expected) {
  return Status(Code::kInvalidArgument, "write-back append to " + path + " at offset " + std::to_string(offset) +
                                            ": the next byte expected is at " + std::to_string(expected) +
                                            " (appends must be in order)");
}

}  // namespace

Status WritebackJournal::Append(const std::string& id, uint64_t offset, std::string_view data) {
  auto o = OpenForAppend(id, data.size());
  if (!o) return o.error();
  std::lock_guard lock((*o)->mu);
  if ((*o)->failed) return Status(Code::kIo, "write-back id " + id + " failed earlier; begin the write again");
  if (offset != (*o)->size) return AppendOrder((*o)->path, offset, (*o)->size);
  return AppendPiece(**o, data);
}

Result<uint64_t> WritebackJournal::AppendFrom(const std::string& id, uint64_t offset, const BodySource& next) {
  auto o = OpenForAppend(id, 0);
  if (!o) return Err(o.error());
  OpenWrite& w = **o;
  std::lock_guard lock(w.mu);
  if (w.failed) return Err(Code::kIo, "write-back id " + id + " failed earlier; begin the write again");
  if (offset != w.size) return Err(AppendOrder(w.path, offset, w.size));
  uint64_t taken = 0;
  for (;;) {
    auto piece = next();
    if (!piece) {
      w.failed = true;
      return Err(piece.error().code(), "write-back append to " + w.path + " stopped after " + std::to_string(taken) +
                                           " bytes (" + piece.error().message() + "); begin the write again");
    }
    if (piece->empty()) return taken;
    if (auto busy = OpenForAppend(id, piece->size()); !busy) {
      w.failed = true;
      return Err(busy.error());
    }
    SHOAL_RETURN_IF_ERROR(AppendPiece(w, *piece));
    taken += piece->size();
  }
}

Result<WritebackCommit> WritebackJournal::Commit(const std::string& id, uint64_t size, uint64_t xxh3,
                                                 std::optional<std::string_view> attrs) {
  std::shared_ptr<OpenWrite> o;
  {
    std::lock_guard lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end())
      return Err(Code::kNotFound, "write-back id " + id + " is not open here; begin the write again");
    o = it->second;
  }
  std::lock_guard olock(o->mu);
  if (o->failed) return Err(Code::kIo, "write-back id " + id + " failed earlier; begin the write again");
  if (size != o->size) {
    return Err(Code::kInvalidArgument, "write-back commit of " + o->path + " claims " + std::to_string(size) +
                                           " bytes; " + std::to_string(o->size) + " were received");
  }
  if (xxh3 != XXH3_64bits_digest(o->hash)) {
    return Err(Code::kInvalidArgument, "write-back commit of " + o->path +
                                           ": the bytes received fail the checksum the "
                                           "client sent; write the file again");
  }
  WritebackCommit c;
  c.id = id;
  c.path = o->path;
  c.size = size;
  c.xxh3 = xxh3;
  c.mtime_ns = o->mtime_ns;
  c.holders = o->holders;
  c.attrs = o->attrs;
  if (attrs) {
    auto canonical = CanonicalAttrs(o->path, *attrs);
    if (!canonical) return Err(canonical.error());
    c.attrs = std::move(*canonical);
  }
  // The data file's name was made durable at begin.
  if (::fdatasync(o->fd) != 0) {
    o->failed = true;
    return Err(Errno("fsync of write-back data of " + o->path));
  }
  {
    std::lock_guard jl(journal_mu_);
    if (Status st = AppendRecord(writeback_records::CommitPayload(c)); !st.ok()) {
      o->failed = true;
      return Err(st.WithContext("committing write-back of " + o->path));
    }
    // Under journal_mu_, so an emptying journal cannot be cut between the record and the entry.
    std::lock_guard lock(mu_);
    open_.erase(id);
    open_bytes_ -= std::min(open_bytes_, o->size);
    AddCommitted(c);
  }
  ::close(o->fd);
  o->fd = -1;
  Committed().Add(size);
  cv_.notify_all();
  return c;
}

void WritebackJournal::Abort(const std::string& id) {
  std::shared_ptr<OpenWrite> o;
  {
    std::lock_guard lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) {
      if (!entries_.contains(id)) return;
      // Committed here but not on every holder: never acknowledged, never uploaded.
      o = nullptr;
    } else {
      o = it->second;
      open_.erase(it);
    }
  }
  if (!o) {
    (void)Done(id);
    return;
  }
  {
    std::lock_guard lock(mu_);
    open_bytes_ -= std::min(open_bytes_, o->size);
  }
  ::unlinkat(dir_fd_, (id + ".data").c_str(), 0);
}

std::optional<WritebackCommit> WritebackJournal::Pending(const std::string& path) const {
  std::lock_guard lock(mu_);
  const Entry* best = nullptr;
  for (const auto& [id, e] : entries_) {
    if (e->commit.path == path && (!best || e->seq > best->seq)) best = e.get();
  }
  if (!best) return std::nullopt;
  return best->commit;
}

std::vector<WritebackCommit> WritebackJournal::PendingUnder(const std::string& dir) const {
  std::lock_guard lock(mu_);
  std::map<std::string, const Entry*> newest;
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  for (const auto& [id, e] : entries_) {
    const std::string& p = e->commit.path;
    if (!p.starts_with(prefix) || p.find('/', prefix.size()) != std::string::npos) continue;
    auto& slot = newest[p];
    if (!slot || e->seq > slot->seq) slot = e.get();
  }
  std::vector<WritebackCommit> out;
  for (const auto& [p, e] : newest) out.push_back(e->commit);
  return out;
}

std::vector<std::string> WritebackJournal::PendingDirsUnder(const std::string& dir) const {
  std::lock_guard lock(mu_);
  std::set<std::string> dirs;
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  for (const auto& [id, e] : entries_) {
    const std::string& p = e->commit.path;
    if (!p.starts_with(prefix)) continue;
    const size_t slash = p.find('/', prefix.size());
    if (slash != std::string::npos && slash > prefix.size()) dirs.insert(p.substr(0, slash));
  }
  return {dirs.begin(), dirs.end()};
}

bool WritebackJournal::HasPendingBelow(const std::string& dir) const {
  std::lock_guard lock(mu_);
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  for (const auto& [id, e] : entries_) {
    if (e->commit.path.starts_with(prefix)) return true;
  }
  return false;
}

Result<WritebackData> WritebackJournal::Data(const std::string& id, const std::string& path) const {
  WritebackCommit c;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    auto old = retired_.find(id);
    if (it == entries_.end() && old != retired_.end() && old->second.first.path == path) {
      c = old->second.first;
    } else if (it == entries_.end() || it->second->commit.path != path) {
      return Err(Code::kVersionMismatch, path + " version " + std::string(kWritebackVersionPrefix) + id +
                                             " is no longer pending here (uploaded, or not held by this worker); "
                                             "open it again");
    } else {
      c = it->second->commit;
    }
  }
  const std::string data = options_.dir + "/" + id + ".data";
  int fd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Err(Code::kVersionMismatch, path + " version " + c.version() + " was just uploaded; open it again");
  }
  auto holder = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
  return WritebackData{std::move(holder), std::move(c)};
}

void WritebackJournal::Pause(bool paused) {
  {
    std::lock_guard lock(mu_);
    paused_ = paused;
  }
  cv_.notify_all();
}

WritebackJournal::Stats WritebackJournal::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  s.pending_bytes = pending_bytes_;
  s.pending_files = entries_.size();
  s.open_bytes = open_bytes_;
  s.paused = paused_;
  auto now = Clock::now();
  for (const auto& [id, e] : entries_) {
    s.oldest_pending_seconds =
        std::max(s.oldest_pending_seconds, std::chrono::duration<double>(now - e->committed_at).count());
  }
  return s;
}

std::string WritebackJournal::State(const std::string& id) const {
  std::lock_guard lock(mu_);
  if (entries_.contains(id)) return "pending";
  if (done_.contains(id)) return "done";
  return "unknown";
}

Status WritebackJournal::Done(const std::string& id) {
  {
    std::lock_guard lock(mu_);
    if (!entries_.contains(id)) return {};
  }
  SHOAL_RETURN_IF_ERROR(RecordDone(id));
  Forget(id);
  return {};
}

Status WritebackJournal::RecordDone(const std::string& id) {
  std::lock_guard jl(journal_mu_);
  return AppendRecord(writeback_records::DonePayload(id));
}

void WritebackJournal::Forget(const std::string& id) {
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    pending_bytes_ -= std::min(pending_bytes_, it->second->commit.size);
    if (retired_.size() < 10'000) retired_[id] = {it->second->commit, Clock::now()};
    else ::unlinkat(dir_fd_, (id + ".data").c_str(), 0);
    entries_.erase(it);
    if (done_.size() >= 100'000) done_.clear();  // a bound; "unknown" is then answered
    done_[id] = Clock::now();
  }
  // An empty journal is cut back to nothing (the done records only cancel commits).
  std::lock_guard jl(journal_mu_);
  std::lock_guard lock(mu_);
  if (entries_.empty() && journal_size_ > 0) {
    if (::ftruncate(journal_fd_, 0) == 0 && ::fdatasync(journal_fd_) == 0) journal_size_ = 0;
  }
}

}  // namespace shoal
