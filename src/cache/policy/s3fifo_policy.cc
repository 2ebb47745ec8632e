// S3-FIFO (Yang et al., SOSP'23): three FIFO queues. New pages enter a small
// queue (10% of the cached bytes); a page read while there moves on to the
// main queue when it reaches the front, one never read goes, and its id is
// remembered in a ghost queue. A page missed again while its id is a ghost
// enters the main queue directly. The main queue is a FIFO with a 2-bit read
// count: the page at its front goes if unread, else it is reinserted at the
// back with its count lowered. One-hit wonders (most of a scan) thus leave
// after a short stay in the small queue, without disturbing the main one.
//
// The queue sizes follow the bytes the policy holds, so it needs no capacity:
// when the cache is full, that is the capacity.
#include <algorithm>

#include "cache/policy/keyed_queue.h"
#include "cache/policy/registry.h"

namespace shoal {
namespace {

class S3FifoPolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "s3fifo"; }

 protected:
  struct Freq {
    uint8_t reads = 0;
  };
  void DoInsert(const PageId& id, uint64_t bytes, Time) override {
    if (auto g = ghost_.find(id); g != ghost_.end()) {
      ghost_.erase(g);
      main_.push_back({id, bytes, {}});
    } else {
      small_.push_back({id, bytes, {}});
    }
  }
  void DoTouch(const PageId& id, Time) override {
    auto it = small_.find(id);
    if (it == small_.end()) it = main_.find(id);
    if (it != main_.end() && it != small_.end() && it->extra.reads < kMaxReads) ++it->extra.reads;
  }
  std::optional<uint64_t> DoErase(const PageId& id) override {
    if (auto it = small_.find(id); it != small_.end()) {
      uint64_t bytes = small_.erase(it).bytes;
      Remember(id);
      return bytes;
    }
    if (auto it = main_.find(id); it != main_.end()) return main_.erase(it).bytes;
    return std::nullopt;
  }
  std::optional<PageId> DoVictim() override {
    // Each pass either stops, moves a page from small to main, or lowers a
    // read count: it ends within (pages + total reads) passes.
    for (;;) {
      if (small_.empty() && main_.empty()) return std::nullopt;
      bool from_small = !small_.empty() && (main_.empty() || small_.bytes() * 10 >= small_.bytes() + main_.bytes());
      if (from_small) {
        auto& f = small_.front();
        if (f.extra.reads == 0) return f.id;
        auto n = small_.erase(small_.begin());
        n.extra.reads = 0;
        main_.push_back(std::move(n));
      } else {
        auto& f = main_.front();
        if (f.extra.reads == 0) return f.id;
        --f.extra.reads;
        main_.move_to_back(main_.begin());
      }
    }
  }
  size_t Size() const override { return small_.size() + main_.size(); }
  // Small queue then main queue, each oldest first; bits 0-1: reads, bit 2: main.
  void DoSave(std::vector<Entry>* out) const override {
    for (const auto& n : small_) out->push_back({n.id, n.bytes, n.extra.reads});
    for (const auto& n : main_) out->push_back({n.id, n.bytes, n.extra.reads | 4u});
  }
  void DoRestore(const Entry& e, Time) override {
    Freq f{static_cast<uint8_t>(std::min<uint32_t>(e.tag & 3, kMaxReads))};
    (e.tag & 4 ? main_ : small_).push_back({e.id, e.bytes, f});
  }

 private:
  static constexpr uint8_t kMaxReads = 3;
  struct None {};
  // The ghost queue holds as many ids as the main queue holds pages (at least
  // 90% of all pages, the main queue's share when the cache is full).
  void Remember(const PageId& id) {
    if (!ghost_.contains(id)) ghost_.push_back({id, 0, {}});
    size_t cap = std::max(main_.size(), (small_.size() + main_.size()) * 9 / 10);
    while (ghost_.size() > cap) ghost_.erase(ghost_.begin());
  }

  KeyedQueue<Freq> small_, main_;  // front: the oldest
  KeyedQueue<None> ghost_;         // ids only, of pages that left the small queue unread
};

}  // namespace

SHOAL_REGISTER_EVICTION_POLICY(s3fifo, "s3fifo",
                               "S3-FIFO (SOSP'23): small, main and ghost FIFO queues; one-hit pages leave first",
                               new S3FifoPolicy());

}  // namespace shoal
