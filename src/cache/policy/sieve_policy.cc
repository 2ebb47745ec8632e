// SIEVE (Zhang et al., NSDI'24): a FIFO queue with one "visited" bit per page
// and a hand that walks from the oldest page towards the newest. A read only
// sets the bit. To evict, the hand clears the bits of visited pages as it
// passes them and stops at the first unvisited one, which goes; the hand then
// continues from there. New pages enter at the newest end, so a page read once
// survives one sweep, and a scan of pages read once leaves the hot set alone.
#include "cache/policy/keyed_queue.h"
#include "cache/policy/registry.h"

namespace shoal {
namespace {

class SievePolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "sieve"; }

 protected:
  struct Bits {
    bool visited = false;
  };
  void DoInsert(const PageId& id, uint64_t bytes, Time) override { queue_.push_back({id, bytes, {}}); }
  void DoTouch(const PageId& id, Time) override {
    if (auto it = queue_.find(id); it != queue_.end()) it->extra.visited = true;
  }
  std::optional<uint64_t> DoErase(const PageId& id) override {
    auto it = queue_.find(id);
    if (it == queue_.end()) return std::nullopt;
    if (hand_ == it) hand_ = std::next(it);  // the hand keeps its place in the sweep
    return queue_.erase(it).bytes;
  }
  std::optional<PageId> DoVictim() override {
    if (queue_.empty()) return std::nullopt;
    auto it = hand_;
    // Each step clears a bit, so at most one full turn passes before a stop.
    for (;;) {
      if (it == queue_.end()) it = queue_.begin();
      if (!it->extra.visited) break;
      it->extra.visited = false;
      ++it;
    }
    hand_ = it;
    return it->id;
  }
  size_t Size() const override { return queue_.size(); }
  // Oldest first; bit 0: visited, bit 1: the hand is here.
  void DoSave(std::vector<Entry>* out) const override {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      uint32_t tag = (it->extra.visited ? 1u : 0u) | (it == KeyedQueue<Bits>::const_iterator(hand_) ? 2u : 0u);
      out->push_back({it->id, it->bytes, tag});
    }
  }
  void DoRestore(const Entry& e, Time) override {
    auto it = queue_.push_back({e.id, e.bytes, Bits{(e.tag & 1) != 0}});
    if (e.tag & 2) hand_ = it;
  }

 private:
  KeyedQueue<Bits> queue_;                          // front: the oldest page
  KeyedQueue<Bits>::iterator hand_ = queue_.end();  // end(): start at the oldest
};

}  // namespace

SHOAL_REGISTER_EVICTION_POLICY(sieve, "sieve", "SIEVE (NSDI'24): FIFO with a visited bit and a sweeping hand",
                               new SievePolicy());

}  // namespace shoal
