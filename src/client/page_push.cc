// ClientImpl::PushWrittenPages: the cache fill of a cache-through write.
//
// The pages' ring keys (path, version, shard) are only known once the store
// has committed the object and named its version, so the writer keeps what it
// wrote in a spill file and pushes it here, after Close: each page to the
// worker that owns its shard (POST /v1/page, docs/protocol.md), which checks
// the version against the store before caching it. The write is already
// durable; a page that cannot be pushed only costs a later read one fetch.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>

#include "client/client_impl.h"
#include "ufs/uri.h"

namespace shoal::detail {

void ClientImpl::PushWrittenPages(const ResolvedPath& rp, const FileStatus& st, int spill_fd, uint64_t spilled) {
  PushWrittenPages(rp, st, spilled, [spill_fd](uint64_t offset, std::span<char> out) -> Status {
    ssize_t got = ::pread(spill_fd, out.data(), out.size(), static_cast<off_t>(offset));
    if (got == static_cast<ssize_t>(out.size())) return {};
    return Status(Code::kIo,
                  std::string("reading the writer's spill file: ") + (got < 0 ? std::strerror(errno) : "short read"));
  });
}

void ClientImpl::PushWrittenPages(const ResolvedPath& rp, const FileStatus& st, uint64_t spilled,
                                  const std::function<Status(uint64_t, std::span<char>)>& read_page) {
  const uint64_t page_size = config_.worker.page_size;
  const uint64_t shard_size = config_.cluster.shard_size;
  // Only whole pages (the last one of the file may be short).
  const uint64_t usable = std::min(spilled, st.size);
  const uint64_t pages = usable == st.size ? (st.size + page_size - 1) / page_size : usable / page_size;
  if (pages == 0 || config_.cluster.workers.empty()) return;
  const Deadline deadline = NewDeadline();

  std::atomic<uint64_t> next{0};
  std::mutex mu;
  uint64_t failed = 0;
  std::string first_error;
  auto note_failure = [&](const std::string& why) {
    cache_push_failures_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mu);
    if (failed++ == 0) first_error = why;
  };
  // max_parallel pushers, each with one page of memory, take pages in order.
  auto pusher = [&] {
    std::unique_ptr<char[]> buf;
    for (uint64_t i; (i = next.fetch_add(1)) < pages;) {
      const uint64_t offset = i * page_size;
      const uint64_t len = std::min(page_size, st.size - offset);
      if (!buf) buf = std::make_unique_for_overwrite<char[]>(page_size);
      if (Status got = read_page(offset, std::span<char>(buf.get(), len)); !got.ok()) {
        note_failure(got.message());
        continue;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        note_failure("no time left (client.timeout)");
        continue;
      }
      const std::string target = "/v1/page?path=" + PercentEncode(rp.ns_path, true) +
                                 "&version=" + PercentEncode(st.version, false) + "&size=" + std::to_string(st.size) +
                                 "&offset=" + std::to_string(offset);
      const std::string_view body(buf.get(), len);
      auto r = router_.Route<void>(
          HashRing::DataKey(rp.ns_path, st.version, offset / shard_size), deadline, "cache " + rp.ns_path,
          [&](const WorkerEntry& w) -> WorkerAttempt<void> {
            auto reply = caller_.Call(w, "POST", target, deadline, rp.ns_path, {}, body);
            if (reply.worker_failed) return WorkerFailed<void>(reply.status);
            if (!reply.status.ok()) return {Err(reply.status.WithContext("worker " + WorkerName(w)))};
            return {};
          },
          [] { return Result<void>(Err(Code::kUnavailable, "no live worker owns the page")); });
      if (!r) {
        note_failure(r.error().message());
        continue;
      }
      cache_pushed_bytes_.fetch_add(len, std::memory_order_relaxed);
    }
  };
  const size_t n = static_cast<size_t>(std::min<uint64_t>(pages, std::max(1, config_.client.max_parallel)));
  std::vector<std::future<void>> running;
  for (size_t k = 0; k < n; ++k) running.push_back(fanout_pool_.Submit(pusher));
  for (auto& f : running) f.get();
  if (failed) {
    spdlog::warn(
        "{} was written, but {} of its {} pages could not be cached (first: {}); reads fetch them from "
        "the under-store",
        rp.ns_path, failed, pages, first_error);
  }
}

void ClientImpl::QueueCacheFill(const std::string& path, uint64_t bytes, std::function<void()> fill) {
  if (fills_.queued_bytes.fetch_add(bytes) + bytes > kMaxQueuedFillBytes) {
    fills_.queued_bytes.fetch_sub(bytes);
    cache_push_failures_.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("{}: not cached after the write: {} bytes of other written files wait to be cached already", path,
                 kMaxQueuedFillBytes);
    return;
  }
  fills_.pool.Submit([this, bytes, fill = std::move(fill)] {
    if (!fills_.closing) fill();
    fills_.queued_bytes.fetch_sub(bytes);
  });
}

}  // namespace shoal::detail
