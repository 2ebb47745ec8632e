// FreshBytes: which cached bytes the under-store sent that no read has been
// served yet, so that the hit ratio is true.
//
// A hit is a byte served that the store did not send for this read. A worker
// fetches more than a read asks for (whole pages, read-ahead, a stat's first
// page), and those bytes then sit in the cache when the same reader asks for
// them a moment later: served from the cache, but only because this read made
// the store send them. So every byte the worker asks the store for a reader
// is credited here, per page, when the fetch starts; every byte served (from
// a cached page or a fetch) takes what credit its page has left, and what it
// takes counts as a miss, the rest as a hit. A `shoal load` gives its credit
// back: preloaded bytes are hits by definition.
//
// Bounded: at most kMaxPages pages carry credit; past that the oldest credit
// is dropped (those bytes would count as hits: a reader that leaves 64k
// fetched pages unread before coming back). Cheap when idle: a warm read
// finds the ledger empty with one atomic load and no lock.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace shoal {

class FreshBytes {
 public:
  static constexpr size_t kMaxPages = 1 << 16;

  // The store is sending `bytes` of the page at `offset` of (path, version).
  void Credit(std::string_view path, std::string_view version, uint64_t offset, uint64_t bytes);
  // `bytes` of that page are being served: returns how many of them the
  // store sent and no read has been served yet (count them as a miss).
  uint64_t Take(std::string_view path, std::string_view version, uint64_t offset, uint64_t bytes);
  // Drops the credit of the pages in [first, last] (their bytes count as hits
  // from now on): a preload, a fetch that failed or came from a peer's cache.
  void Forget(std::string_view path, std::string_view version, uint64_t first, uint64_t last, uint64_t page_size);

  size_t pages() const { return count_.load(std::memory_order_relaxed); }

 private:
  static std::string Key(std::string_view path, std::string_view version, uint64_t offset);

  mutable std::mutex mu_;
  std::unordered_map<std::string, uint64_t> left_;
  std::deque<std::string> order_;  // keys in the order credited, for the bound (may name dropped keys)
  std::atomic<size_t> count_{0};
};

}  // namespace shoal
