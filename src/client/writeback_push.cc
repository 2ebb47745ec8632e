// The client's side of write_mode: write-back (docs/protocol.md "Write-back"):
// the holders of a path, the stream of one write to them (WritebackStream,
// writeback_stream.h) and the reads of a pending write.
//
// The holders are the owners of the path's metadata key in ring order,
// skipping workers marked down: the first is the path's stat owner, which
// then answers stat/open with the pending version "wb-<id>", and its reads
// (ReadPending) go to the holders too. A holder answers a commit only once
// the bytes and its journal record are on its disk.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <nlohmann/json.hpp>
#include <random>

#include "client/client_impl.h"
#include "client/writeback_stream.h"
#include "ufs/uri.h"

namespace shoal::detail {

namespace {

std::string NewWriteId() {
  static thread_local std::mt19937_64 rng{
      std::random_device{}() ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

}  // namespace

std::vector<WorkerEntry> ClientImpl::WritebackHolders(const ResolvedPath& rp) const {
  auto [snap, members] = router_.Members();
  std::vector<WorkerEntry> out;
  if (snap->workers.empty()) return out;
  // A path rule's `replicas` overrides the mount's write_back_replicas.
  const size_t want = static_cast<size_t>(std::max(1, rules().For(rp.ns_path).replicas.value_or(rp.mount->write_back_replicas)));
  for (size_t i : snap->ring.Owners(HashRing::MetaKey(rp.ns_path), snap->workers.size())) {
    if (members[i].down) continue;
    out.push_back(snap->workers[i]);
    if (out.size() == want) break;
  }
  return out;
}

WorkerReply ClientImpl::CallWorker(const WorkerEntry& w, std::string_view method, const std::string& target,
                                   Deadline deadline, std::string_view path, std::string_view body) {
  auto r = caller_.Call(w, method, target, deadline, path, {}, body);
  if (r.worker_failed) router_.ReportFailure(w, r.status);
  return r;
}

// ---- WritebackStream -------------------------------------------------------

WritebackStream::WritebackStream(ClientImpl& client, ResolvedPath rp, std::vector<WorkerEntry> holders, int spill_fd,
                                 std::string attrs)
    : client_(client),
      rp_(std::move(rp)),
      holders_(std::move(holders)),
      spill_fd_(spill_fd),
      id_(NewWriteId()),
      attrs_param_(attrs.empty() ? std::string() : "&attrs=" + PercentEncode(attrs, true)),
      sent_(holders_.size(), 0) {
  committed_.reserve(holders_.size());
  for (size_t i = 0; i < holders_.size(); ++i) committed_.push_back(Err(Code::kInternal, "not committed"));
}

WritebackStream::~WritebackStream() { Abort(); }

void WritebackStream::Fail(const Status& why) {
  if (failed_.ok()) failed_ = why;
  cv_.notify_all();
}

void WritebackStream::StartThreads() {
  if (!threads_.empty()) return;
  begun_ = true;
  for (size_t i = 0; i < holders_.size(); ++i) threads_.emplace_back([this, i] { Run(i); });
}

Status WritebackStream::Offer(uint64_t written) {
  std::unique_lock lock(mu_);
  if (!failed_.ok()) return failed_;
  ready_ = written;
  if (ready_ > kInlineMax) StartThreads();
  if (threads_.empty()) return {};
  cv_.notify_all();
  // Wait while the slowest holder lags too far behind: its own deadline per wait.
  const Deadline deadline = client_.NewDeadline();
  auto caught_up = [&] {
    if (!failed_.ok()) return true;
    for (uint64_t s : sent_) {
      if (ready_ - std::min(ready_, s) > kMaxLag) return false;
    }
    return true;
  };
  if (!cv_.wait_until(lock, deadline, caught_up)) {
    Fail(Status(Code::kTimeout,
                "a holder of the write-back of " + rp_.ns_path + " took no bytes within client.timeout"));
  }
  return failed_;
}

// One holder: begin, then every piece as it becomes ready, then the commit.
void WritebackStream::Run(size_t h) {
  const WorkerEntry& w = holders_[h];
  const std::string q = "?id=" + id_;
  auto call = [&](const std::string& target, std::string_view body) -> Result<std::string> {
    auto r = client_.CallWorker(w, "POST", target, client_.NewDeadline(), rp_.ns_path, body);
    if (!r.status.ok()) return Err(r.status.WithContext("worker " + WorkerName(w)));
    return std::move(r.body);
  };
  auto fail = [&](const Status& why) {
    std::lock_guard lock(mu_);
    Fail(why);
  };
  if (auto r = call("/v1/wb/begin" + q + "&path=" + PercentEncode(rp_.ns_path, true) +
                        "&holders=" + PercentEncode(ClientImpl::WritebackHoldersText(holders_), true) + attrs_param_,
                    {});
      !r) {
    return fail(r.error());
  }
  std::unique_ptr<char[]> buf(new char[kPiece]);
  uint64_t off = 0;
  for (;;) {
    uint64_t len = 0;
    {
      std::unique_lock lock(mu_);
      // Whole pieces while the writer writes; the rest once it closed.
      cv_.wait(lock, [&] { return !failed_.ok() || ready_ >= off + kPiece || closing_; });
      if (!failed_.ok()) return;
      len = std::min(kPiece, ready_ - off);
      if (len == 0) break;  // closing, and everything is sent
    }
    ssize_t got = ::pread(spill_fd_, buf.get(), len, static_cast<off_t>(off));
    if (got != static_cast<ssize_t>(len)) {
      return fail(Status(
          Code::kIo, "reading the writer's spill file: " + std::string(got < 0 ? std::strerror(errno) : "short read")));
    }
    if (auto r = call("/v1/wb/append" + q + "&offset=" + std::to_string(off), std::string_view(buf.get(), len)); !r) {
      return fail(r.error());
    }
    off += len;
    std::lock_guard lock(mu_);
    sent_[h] = off;
    cv_.notify_all();
  }
  uint64_t size, xxh3;
  std::string attrs;
  {
    std::lock_guard lock(mu_);
    size = size_;
    xxh3 = xxh3_;
    if (commit_attrs_changed_) attrs = commit_attrs_param_.empty() ? "&attrs=" : commit_attrs_param_;
  }
  auto r = call("/v1/wb/commit" + q + "&size=" + std::to_string(size) + "&xxh3=" + std::to_string(xxh3) + attrs, {});
  if (!r) return fail(r.error());
  auto st = ParseCommitted(w, *r, size);
  std::lock_guard lock(mu_);
  if (!st) Fail(st.error());
  committed_[h] = std::move(st);
}

Result<FileStatus> WritebackStream::ParseCommitted(const WorkerEntry& w, const std::string& body, uint64_t size) const {
  try {
    auto j = nlohmann::json::parse(body);
    FileStatus s;
    s.path = rp_.ns_path;
    s.size = j.at("size").get<uint64_t>();
    s.mtime_ns = j.at("mtime_ns").get<int64_t>();
    s.version = j.at("version").get<std::string>();
    if (s.size != size) return Err(Code::kIo, "worker " + WorkerName(w) + " committed a different size");
    return s;
  } catch (const std::exception& e) {
    return Err(Code::kIo, "malformed write-back commit answer from worker " + WorkerName(w) + ": " + e.what());
  }
}

// A small file in one request per holder: begin, its bytes and the commit.
Result<FileStatus> WritebackStream::Put(const WorkerEntry& w, uint64_t size, uint64_t xxh3) {
  std::string body(size, '\0');
  if (size > 0) {
    ssize_t got = ::pread(spill_fd_, body.data(), size, 0);
    if (got != static_cast<ssize_t>(size)) {
      return Err(Code::kIo,
                 "reading the writer's spill file: " + std::string(got < 0 ? std::strerror(errno) : "short read"));
    }
  }
  const std::string target = "/v1/wb/put?id=" + id_ + "&path=" + PercentEncode(rp_.ns_path, true) +
                             "&holders=" + PercentEncode(ClientImpl::WritebackHoldersText(holders_), true) +
                             "&size=" + std::to_string(size) + "&xxh3=" + std::to_string(xxh3) + commit_attrs_param_;
  auto r = client_.CallWorker(w, "POST", target, client_.NewDeadline(), rp_.ns_path, body);
  if (!r.status.ok()) return Err(r.status.WithContext("worker " + WorkerName(w)));
  return ParseCommitted(w, r.body, size);
}

Result<FileStatus> WritebackStream::Commit(uint64_t size, uint64_t xxh3, std::optional<std::string> attrs) {
  std::vector<Result<FileStatus>> answers;
  {
    std::unique_lock lock(mu_);
    if (!failed_.ok()) return Err(failed_);
    ready_ = size;
    size_ = size;
    xxh3_ = xxh3;
    commit_attrs_changed_ = attrs.has_value();
    commit_attrs_param_ = !attrs           ? attrs_param_
                          : attrs->empty() ? std::string()
                                           : "&attrs=" + PercentEncode(*attrs, true);
    closing_ = true;
    if (threads_.empty() && size > kInlineMax) StartThreads();
    cv_.notify_all();
  }
  if (threads_.empty()) {
    {
      std::lock_guard lock(mu_);
      begun_ = true;
    }
    std::vector<std::future<Result<FileStatus>>> running;
    for (const auto& w : holders_) {
      running.push_back(client_.fanout_pool().Submit([this, &w, size, xxh3] { return Put(w, size, xxh3); }));
    }
    for (auto& f : running) answers.push_back(f.get());
  } else {
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::lock_guard lock(mu_);
    answers = committed_;
    // A holder that stopped before its commit (a refused append: disk full,
    // journal unwritable) left why in failed_, not in its answer.
    if (!failed_.ok()) {
      for (auto& a : answers) {
        if (!a) a = Err(failed_);
      }
    }
  }
  std::string failed;
  for (const auto& a : answers) {
    if (!a && failed.find(a.error().message()) == std::string::npos) {
      failed += (failed.empty() ? "" : "; ") + a.error().message();
    }
  }
  if (!failed.empty()) {
    {
      std::lock_guard lock(mu_);
      Fail(Status(Code::kUnavailable, failed));
    }
    Abort();
    return Err(Code::kUnavailable, "write-back of " + rp_.ns_path + " was not held by all " +
                                       std::to_string(holders_.size()) + " workers (" + failed + ")");
  }
  std::lock_guard lock(mu_);
  finished_ = true;
  return *answers.front();  // the primary's time
}

void WritebackStream::Abort() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    Fail(Status(Code::kUnavailable, "the write-back of " + rp_.ns_path + " was abandoned"));
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  TellAbort();
}

// Never acknowledged: drop what any holder has (a committed copy is dropped
// too, so it is never uploaded over the write-through that follows).
void WritebackStream::TellAbort() {
  if (!begun_) return;
  const Deadline deadline = client_.NewDeadline();
  for (const auto& w : holders_) (void)client_.CallWorker(w, "POST", "/v1/wb/abort?id=" + id_, deadline, rp_.ns_path);
}

std::string ClientImpl::WritebackHoldersText(const std::vector<WorkerEntry>& holders) {
  std::string out;
  for (const auto& h : holders) out += (out.empty() ? "" : ",") + FormatWorkerEntry(h);
  return out;
}

uint64_t ClientImpl::ReadPendingLocal(const ResolvedPath& rp, const FileStatus& st, uint64_t offset,
                                      std::span<char> out, Deadline deadline) {
  if (!config_.client.short_circuit || out.empty()) return 0;
  auto [snap, members] = router_.Members();
  for (size_t i : snap->ring.Owners(HashRing::MetaKey(rp.ns_path), std::min<size_t>(snap->workers.size(), 16))) {
    if (members[i].down) continue;
    const WorkerEntry& w = snap->workers[i];
    if (!DiscoverLocal(w, deadline).ok() || !local_.IsLocal(w.address)) continue;
    const uint64_t n = local_.Read(w.address, rp.ns_path, st.version, st.size, offset, out);
    local_read_bytes_.fetch_add(n, std::memory_order_relaxed);
    worker_read_bytes_.fetch_add(n, std::memory_order_relaxed);
    if (n > 0) return n;
  }
  return 0;
}

Status ClientImpl::ReadPending(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out,
                               Deadline deadline) {
  auto [snap, members] = router_.Members();
  const std::string target = "/v1/read?path=" + PercentEncode(rp.ns_path, true) +
                             "&version=" + PercentEncode(st.version, false) + "&size=" + std::to_string(st.size) +
                             "&offset=" + std::to_string(offset) + "&length=" + std::to_string(out.size());
  std::string tried;
  // The holders are the first owners of the path's metadata key; the stat
  // owner first. A worker that does not hold the write answers kVersionMismatch.
  for (size_t i : snap->ring.Owners(HashRing::MetaKey(rp.ns_path), std::min<size_t>(snap->workers.size(), 16))) {
    if (members[i].down) continue;
    const WorkerEntry& w = snap->workers[i];
    if (config_.client.short_circuit && DiscoverLocal(w, deadline).ok()) {
      // A holder on this host hands over its data file (worker ServeLocalPending).
      const uint64_t n = local_.Read(w.address, rp.ns_path, st.version, st.size, offset, out);
      local_read_bytes_.fetch_add(n, std::memory_order_relaxed);
      worker_read_bytes_.fetch_add(n, std::memory_order_relaxed);
      if (n == out.size()) return {};
      if (n > 0) return ReadPending(rp, st, offset + n, out.subspan(n), deadline);
    }
    auto r = caller_.Call(w, "GET", target, deadline, rp.ns_path, out);
    if (r.worker_failed) router_.ReportFailure(w, r.status);
    if (r.status.ok()) {
      worker_read_bytes_.fetch_add(out.size(), std::memory_order_relaxed);
      return {};
    }
    tried += (tried.empty() ? "" : "; ") + WorkerName(w) + ": " + r.status.message();
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  ForgetMetadata(rp.ns_path, deadline);
  return Status(Code::kVersionMismatch, rp.ns_path + " version " + st.version +
                                            " (a pending write-back) is no longer held by a live worker (" + tried +
                                            "); it was uploaded or its holders are down: open it again");
}

}  // namespace shoal::detail
