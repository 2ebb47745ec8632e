// EvictionPolicy: decides which cached page goes first when a cache dir is full.
//
// The policy sees each page by a stable id (PageId: the 128-bit hash of the
// page's path, version and offset, the same id that names its file), its size
// in bytes, and the time of each call (passed in, so tests drive the clock).
// The store owns the data; the policy only orders ids. The PageStore calls a
// policy under its lock on every access, so every operation is O(1) or
// O(log n) and never does I/O.
//
// Demote() is handled here, once, for every policy: a demoted page (a
// superseded version) leaves the policy's own order and goes first.
//
// Policies are built by name through the registry (cache/policy/registry.h);
// each registers itself in its own file.
//
// Thread safety: none; the PageStore serialises calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shoal {

struct PageId {
  uint64_t hi = 0, lo = 0;
  bool operator==(const PageId&) const = default;
  auto operator<=>(const PageId&) const = default;
};
struct PageIdHash {
  size_t operator()(const PageId& id) const { return id.lo ^ (id.hi * 0x9e3779b97f4a7c15ull); }
};

class EvictionPolicy {
 public:
  using Time = std::chrono::system_clock::time_point;
  // One page in a saved state: Save() lists them in the order in which
  // Restore() must be called to rebuild the same order; `tag` is the policy's
  // own per-page state (a frequency, a queue, a visited bit).
  struct Entry {
    PageId id;
    uint64_t bytes = 0;
    uint32_t tag = 0;
  };
  static constexpr uint32_t kDemotedTag = 0x8000'0000u;  // reserved: a demoted page

  virtual ~EvictionPolicy() = default;
  virtual std::string_view name() const = 0;

  // A page entered the cache. REQUIRES: `id` is not in the policy.
  void Insert(const PageId& id, uint64_t bytes, Time now);
  // A cached page was read. An id not in the policy is ignored.
  void Touch(const PageId& id, Time now);
  // A page left the cache (evicted, dropped, corrupt). An id not in the policy is ignored.
  void Erase(const PageId& id);
  // Evict this page before any other (a superseded version).
  void Demote(const PageId& id);
  // The page to evict next, or nullopt when the policy holds none. Not const:
  // choosing may move the policy's state (SIEVE's hand, S3-FIFO's moves from
  // the small to the main queue). The page stays in the policy until Erase();
  // asking again with no call in between names the same page.
  std::optional<PageId> Victim();
  // Pages in the policy.
  size_t size() const { return demoted_.size() + Size(); }

  // The policy's state, for a restart: every page with its tag, in the order
  // Restore() replays them (demoted pages first).
  std::vector<Entry> Save() const;
  // Re-adds one page from a saved state, after the ones restored before it.
  // Pages not in the saved state are then added with Insert(), after all of
  // these. REQUIRES: `e.id` is not in the policy.
  void Restore(const Entry& e, Time now);

 protected:
  virtual void DoInsert(const PageId& id, uint64_t bytes, Time now) = 0;
  virtual void DoTouch(const PageId& id, Time now) = 0;
  // Returns the bytes the page was inserted with, or nullopt when absent.
  virtual std::optional<uint64_t> DoErase(const PageId& id) = 0;
  virtual std::optional<PageId> DoVictim() = 0;
  virtual size_t Size() const = 0;
  virtual void DoSave(std::vector<Entry>* out) const = 0;
  virtual void DoRestore(const Entry& e, Time now) = 0;

 private:
  std::list<Entry> demoted_;  // oldest first
  std::unordered_map<PageId, std::list<Entry>::iterator, PageIdHash> demoted_index_;
};

}  // namespace shoal
