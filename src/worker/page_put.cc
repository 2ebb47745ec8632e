#include "worker/page_put.h"

#include <spdlog/spdlog.h>

#include <tuple>

#include "common/metrics.h"
#include "worker/worker_service.h"

namespace shoal {

Result<uint64_t> ExpectedPageLength(const PagePush& push, uint64_t page_size, std::string_view path) {
  const std::string at = std::string(path) + " version " + push.version;
  if (push.version.empty())
    return Err(Code::kInvalidArgument, "a pushed page of " + std::string(path) + " names no version");
  if (push.size > WorkerService::kMaxFileSize) {
    return Err(Code::kInvalidArgument,
               "size=" + std::to_string(push.size) + " of " + at + " is larger than any file can be");
  }
  if (push.offset % page_size != 0) {
    return Err(Code::kInvalidArgument, "offset=" + std::to_string(push.offset) + " of a page of " + at +
                                           " is not a multiple of this worker's page size (" +
                                           std::to_string(page_size) +
                                           "); worker.page_size must be the same everywhere");
  }
  if (push.offset >= push.size) {
    return Err(Code::kInvalidArgument, "offset=" + std::to_string(push.offset) + " is at or past the end of " + at +
                                           " (size=" + std::to_string(push.size) + ")");
  }
  return std::min(page_size, push.size - push.offset);
}

namespace {
struct PushCounters {
  Counter& pushed = MetricsRegistry::Global().GetCounter("shoal_cache_pushed_bytes_total",
                                                         "Bytes of pages pushed by cache-through writers and cached");
  Counter& refused = MetricsRegistry::Global().GetCounter(
      "shoal_cache_push_refused_total",
      "Pages pushed by cache-through writers that were refused (bad claims, stale version)");
};
PushCounters& Push() {
  static PushCounters c;
  return c;
}
}  // namespace

void WorkerService::RegisterPushMetrics() { Push(); }

Status WorkerService::PutPushedPage(const ResolvedPath& p, const PagePush& push, std::string_view data) {
  Counter& pushed = Push().pushed;
  Counter& refused = Push().refused;
  auto fail = [&](Status st) {
    refused.Add(1);
    return st;
  };
  auto want = ExpectedPageLength(push, page_size_, p.ns_path);
  if (!want) return fail(want.error());
  if (data.size() != *want) {
    return fail(Status(Code::kInvalidArgument, "a pushed page at offset " + std::to_string(push.offset) + " of " +
                                                   p.ns_path + " (size=" + std::to_string(push.size) + ") holds " +
                                                   std::to_string(data.size()) + " bytes; it must hold " +
                                                   std::to_string(*want)));
  }
  // The version must be the store's current one: a cached stat that says so,
  // else one HEAD of the store (only the under-store's word counts; a version
  // a request names could be made up). What the store said is remembered
  // (pushed_versions_), so the later pages of the same push are checked from
  // memory even when the metadata cache declined the stat.
  auto cached = meta_.LookupStat(p.ns_path, *p.mount);
  bool is_dir = false;
  std::string version;
  uint64_t size = 0;
  if (cached && *cached && !(*cached)->is_dir && (*cached)->Version() == push.version) {
    version = push.version;
    size = (*cached)->size;
  } else {
    std::lock_guard lock(pushed_mu_);
    auto it = pushed_versions_.find(p.ns_path);
    if (it != pushed_versions_.end() && it->second.first == push.version) std::tie(version, size) = it->second;
  }
  if (version.empty()) {
    auto store = StoreFor(p);
    if (!store) return fail(store.error());
    const uint64_t generation = meta_.generation();
    auto fresh = (*store)->Stat(p.key);
    if (!fresh) return fail(fresh.error().WithContext("checking a pushed page of " + p.ns_path));
    meta_.InsertStat(p.ns_path, *fresh, generation);
    is_dir = fresh->is_dir;
    if (!is_dir) {
      version = fresh->Version();
      size = fresh->size;
      bool changed = false;
      {
        std::lock_guard lock(inflight_mu_);
        changed = NoteVersionLocked(p.ns_path, version);
      }
      if (changed) pages_->DropOtherVersions(p.ns_path, version);
      std::lock_guard lock(pushed_mu_);
      if (pushed_versions_.size() >= 10'000) pushed_versions_.clear();  // a bound, not a policy
      pushed_versions_[p.ns_path] = {version, size};
    }
  }
  if (is_dir || version != push.version) {
    return fail(Status(Code::kVersionMismatch, "a pushed page of " + p.ns_path + " names version " + push.version +
                                                   ", but the under-store holds " +
                                                   (is_dir ? std::string("a directory") : "version " + version) +
                                                   "; the file changed since it was written"));
  }
  if (size != push.size) {
    return fail(Status(Code::kInvalidArgument, "size=" + std::to_string(push.size) + " contradicts " + p.ns_path +
                                                   " version " + push.version + " in the under-store (" +
                                                   std::to_string(size) + " bytes)"));
  }
  if (Status st = pages_->Put(PageKey{p.ns_path, push.version, push.offset}, std::span<const char>(data)); !st.ok()) {
    return st.WithContext("caching a pushed page of " + p.ns_path);
  }
  pushed.Add(data.size());
  return {};
}

}  // namespace shoal
