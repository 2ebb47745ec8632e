// The client's side of write_mode: write-back (docs/protocol.md "Write-back").
//
// At Close, the writer's spill file (every byte written) is streamed to the
// k holders of the path, each over its own connection and in parallel:
// POST /v1/wb/begin, /v1/wb/append in pieces of kPiece bytes, then
// /v1/wb/commit with the size and XXH3-64 of the whole. A holder answers the
// commit only once the bytes, its journal record and its directory are
// fsync'd. The write is acknowledged only when all k answered OK; otherwise
// the writer aborts the write on every holder and writes through from the
// same spill file (WriterImpl, writer.cc). The holders are the owners of the
// path's metadata key in ring order, skipping workers marked down: the first
// is the path's stat owner, which then answers stat/open with the pending
// version "wb-<id>", and its reads (PendingRead) go to the holders too.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <nlohmann/json.hpp>
#include <random>

#include "client/client_impl.h"
#include "ufs/uri.h"

namespace shoal::detail {

namespace {

// One append's body: the worker's default request body limit.
constexpr uint64_t kPiece = 1 << 20;

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

Result<FileStatus> ClientImpl::WriteBack(const ResolvedPath& rp, int spill_fd, uint64_t size, uint64_t xxh3) {
  const std::vector<WorkerEntry> holders = WritebackHolders(rp);
  if (holders.empty()) return Err(Code::kUnavailable, "no live worker to hold a write-back of " + rp.ns_path);
  const Deadline deadline = NewDeadline();
  const std::string id = NewWriteId();
  const std::string q = "?id=" + id;
  const std::string begin = "/v1/wb/begin" + q + "&path=" + PercentEncode(rp.ns_path, true) +
                            "&holders=" + PercentEncode(WritebackHoldersText(holders), true);
  auto one = [&](const WorkerEntry& w) -> Result<FileStatus> {
    auto call = [&](const std::string& target, std::string_view body) -> Result<std::string> {
      auto r = caller_.Call(w, "POST", target, deadline, rp.ns_path, {}, body);
      if (r.worker_failed) router_.ReportFailure(w, r.status);
      if (!r.status.ok()) return Err(r.status.WithContext("worker " + WorkerName(w)));
      return std::move(r.body);
    };
    if (auto r = call(begin, {}); !r) return Err(r.error());
    std::unique_ptr<char[]> buf(new char[kPiece]);
    for (uint64_t off = 0; off < size;) {
      const uint64_t len = std::min(kPiece, size - off);
      ssize_t got = ::pread(spill_fd, buf.get(), len, static_cast<off_t>(off));
      if (got != static_cast<ssize_t>(len)) {
        return Err(Code::kIo,
                   "reading the writer's spill file: " + std::string(got < 0 ? std::strerror(errno) : "short read"));
      }
      if (auto r = call("/v1/wb/append" + q + "&offset=" + std::to_string(off), std::string_view(buf.get(), len)); !r) {
        return Err(r.error());
      }
      off += len;
    }
    auto r = call("/v1/wb/commit" + q + "&size=" + std::to_string(size) + "&xxh3=" + std::to_string(xxh3), {});
    if (!r) return Err(r.error());
    try {
      auto j = nlohmann::json::parse(*r);
      FileStatus s;
      s.path = rp.ns_path;
      s.size = j.at("size").get<uint64_t>();
      s.mtime_ns = j.at("mtime_ns").get<int64_t>();
      s.version = j.at("version").get<std::string>();
      if (s.size != size) return Err(Code::kIo, "worker " + WorkerName(w) + " committed a different size");
      return s;
    } catch (const std::exception& e) {
      return Err(Code::kIo, "malformed write-back commit answer from worker " + WorkerName(w) + ": " + e.what());
    }
  };
  std::vector<std::future<Result<FileStatus>>> running;
  for (const auto& w : holders) running.push_back(fanout_pool_.Submit([&one, &w] { return one(w); }));
  std::vector<Result<FileStatus>> answers;
  for (auto& f : running) answers.push_back(f.get());
  std::string failed;
  for (const auto& a : answers) {
    if (!a) failed += (failed.empty() ? "" : "; ") + a.error().message();
  }
  if (!failed.empty()) {
    // Never acknowledged: drop what any holder has (a committed copy is
    // dropped too, so it is never uploaded over the write-through that follows).
    for (const auto& w : holders) {
      auto r = caller_.Call(w, "POST", "/v1/wb/abort" + q, deadline, rp.ns_path);
      (void)r;
    }
    return Err(Code::kUnavailable, "write-back of " + rp.ns_path + " was not held by all " +
                                       std::to_string(holders.size()) + " workers (" + failed + ")");
  }
  FileStatus done = *answers.front();  // the primary's time
  return done;
}

std::string ClientImpl::WritebackHoldersText(const std::vector<WorkerEntry>& holders) {
  std::string out;
  for (const auto& h : holders) out += (out.empty() ? "" : ",") + FormatWorkerEntry(h);
  return out;
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
