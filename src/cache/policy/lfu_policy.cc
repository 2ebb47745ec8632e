// Least frequently used: the page read the fewest times since it was cached
// goes first; among pages read equally often, the one read longest ago.
// O(log n): an ordered set of (reads, last use). Counts do not decay, so pages
// that were hot long ago stay; choose lfu for stable popularity.
#include <set>
#include <tuple>
#include <unordered_map>

#include "cache/policy/registry.h"

namespace shoal {
namespace {

class LfuPolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "lfu"; }

 protected:
  void DoInsert(const PageId& id, uint64_t bytes, Time) override { Add(id, bytes, 1); }
  void DoTouch(const PageId& id, Time) override {
    auto it = pages_.find(id);
    if (it == pages_.end()) return;
    auto& p = it->second;
    order_.erase({p.count, p.seq, id});
    if (p.count < kMaxCount) ++p.count;
    p.seq = ++seq_;
    order_.insert({p.count, p.seq, id});
  }
  std::optional<uint64_t> DoErase(const PageId& id) override {
    auto it = pages_.find(id);
    if (it == pages_.end()) return std::nullopt;
    uint64_t bytes = it->second.bytes;
    order_.erase({it->second.count, it->second.seq, id});
    pages_.erase(it);
    return bytes;
  }
  std::optional<PageId> DoVictim() override {
    if (order_.empty()) return std::nullopt;
    return std::get<2>(*order_.begin());
  }
  size_t Size() const override { return pages_.size(); }
  void DoSave(std::vector<Entry>* out) const override {
    for (const auto& [count, seq, id] : order_) out->push_back({id, pages_.at(id).bytes, count});
  }
  // Saved in victim order: fresh sequence numbers in that order keep it.
  void DoRestore(const Entry& e, Time) override { Add(e.id, e.bytes, std::clamp<uint32_t>(e.tag, 1, kMaxCount)); }

 private:
  static constexpr uint32_t kMaxCount = 0x7fff'ffff;  // below kDemotedTag
  struct Page {
    uint32_t count = 0;
    uint64_t seq = 0;
    uint64_t bytes = 0;
  };
  void Add(const PageId& id, uint64_t bytes, uint32_t count) {
    Page p{count, ++seq_, bytes};
    pages_[id] = p;
    order_.insert({p.count, p.seq, id});
  }

  std::unordered_map<PageId, Page, PageIdHash> pages_;
  std::set<std::tuple<uint32_t, uint64_t, PageId>> order_;  // first: the victim
  uint64_t seq_ = 0;
};

}  // namespace

SHOAL_REGISTER_EVICTION_POLICY(lfu, "lfu", "fewest reads first, ties by least recent read", new LfuPolicy());

}  // namespace shoal
