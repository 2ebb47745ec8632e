// Epoch: for datasets larger than the cache, read in a new random order each
// epoch. LRU and FIFO cycle such a dataset through the cache and evict each
// page just before its next read (and S3-FIFO, seeing no page read twice in
// its small queue, does the same); this policy keeps a stable subset instead,
// so each epoch hits about cache/dataset of its pages.
//
// It is S3-FIFO's structure with one change, a tie-break by hash:
//  - New pages enter a probation FIFO (1% of the cached bytes: between two
//    bursts of eviction, below, new pages have their window to be read again
//    anyway; 2% cost the epochs 0.01 of the ideal). A page read there joins
//    the main queue; one that reaches the front unread leaves, and
//    its id is remembered in a small ghost queue (a tenth of the pages): a
//    page missed again while its id is a ghost joins the main queue directly.
//  - The main queue is a FIFO with a 2-bit read count (a CLOCK): its front
//    page goes if unread, else it is reinserted at the back with its count
//    lowered.
//  - The change: an unread page at the front of probation is compared with the
//    unread main page of the highest id hash, and takes its place if its own
//    hash is lower; failing that, with the main queue's CLOCK victim. Ids are
//    hashes, so this prefers a fixed random subset of the dataset. Against the
//    highest hash, the first epoch (every page read once, none twice) ends
//    with exactly the lowest-hash pages cached, so the second epoch already
//    hits cache/dataset of them; each such swap drops a page already read in
//    that epoch, which costs nothing. (Compared with the CLOCK victim only, the
//    subset formed over many epochs, each swap costing a miss in the epoch it
//    happened: bench/epoch_bench.sh measured 0.71 x cache/dataset over the
//    first three epochs.) A newcomer of a higher hash no longer displaces the
//    subset: a scan of pages read once leaves the main queue alone, as in
//    S3-FIFO, and a shuffled epoch keeps it too.
//  - Probation may run up to two of its front pages below its share before
//    victims come from the main queue: pages differ in size, and a page that
//    needs more room than its victim freed takes a second one. Taken from the
//    main queue's CLOCK, that second victim was a random member of the subset
//    (pages of 110-150 KiB: 0.82 x cache/dataset; with the slack 0.93 x, as
//    with equal pages; bench/policy_sim, epochs-1.5x-sizes).
//  - While the cache is filling (probation holds more than the main queue:
//    an empty cache, or one emptied by drops), pages leaving probation join
//    the main queue rather than leave, until probation is down to its share:
//    the cache starts holding the first pages read instead of cycling them.
//    Not whenever main is below its share: the worker evicts between
//    watermarks (above 98% of a dir, down to 96% at once; 95 and 90 before),
//    and the first Victim() of each burst finds probation holding every page
//    read since the last one. Moved to main unread, those displaced the
//    subset (0.40 of the ideal on a real cluster with 95/90,
//    bench/epoch_bench.sh; 0.94 with the watermarks off; 0.84 with this fix,
//    0.91 with the narrower watermarks).
//
// O(log pages) per call, amortised (the main queue's pages are also kept
// ordered by hash).
#include <algorithm>
#include <set>
#include <utility>

#include "cache/policy/keyed_queue.h"
#include "cache/policy/registry.h"

namespace shoal {
namespace {

class EpochPolicy final : public EvictionPolicy {
 public:
  std::string_view name() const override { return "epoch"; }

 protected:
  struct Reads {
    uint8_t n = 0;
  };
  void DoInsert(const PageId& id, uint64_t bytes, Time) override {
    if (auto g = ghost_.find(id); g != ghost_.end()) {
      ghost_.erase(g);
      PushMain({id, bytes, Reads{1}});
      return;
    }
    probation_.push_back({id, bytes, {}});
  }
  void DoTouch(const PageId& id, Time) override {
    auto it = probation_.find(id);
    if (it == probation_.end()) it = main_.find(id);
    if (it != main_.end() && it != probation_.end() && it->extra.n < kMaxReads) ++it->extra.n;
  }
  std::optional<uint64_t> DoErase(const PageId& id) override {
    if (pending_ == id) pending_.reset();
    if (auto it = probation_.find(id); it != probation_.end()) {
      Remember(id);
      return probation_.erase(it).bytes;
    }
    if (auto it = main_.find(id); it != main_.end()) {
      by_hash_.erase({id.lo, id.hi});
      return main_.erase(it).bytes;
    }
    return std::nullopt;
  }
  std::optional<PageId> DoVictim() override {
    if (pending_) return pending_;  // chosen before, not yet erased
    // Each pass stops, moves a page from probation to main, or lowers a read
    // count: it ends within (pages + total reads) passes.
    for (;;) {
      if (probation_.empty() && main_.empty()) return std::nullopt;
      const uint64_t share = (probation_.bytes() + main_.bytes()) / kProbationShare;
      if (!probation_.empty() && probation_.bytes() + kSlackPages * probation_.front().bytes >= share) {
        auto& f = probation_.front();
        // Filling: from when probation holds more than main (an empty cache
        // filled, or one emptied by drops) until probation is down to its
        // share. Not after a burst of eviction between watermarks, where
        // probation holds the pages read since the last burst (5% of the cache
        // by default): they are compared by hash like any other.
        if (main_.bytes() < probation_.bytes()) filling_ = true;
        if (probation_.bytes() <= share + f.bytes) filling_ = false;
        if (f.extra.n > 0 || filling_ || main_.empty()) {
          // Read in probation, or the main queue is filling: it joins main.
          auto n = probation_.erase(probation_.begin());
          n.extra.n = 0;
          PushMain(std::move(n));
          continue;
        }
        // The unread main page of the highest hash, else the CLOCK victim.
        auto m = main_.find(PageId{by_hash_.rbegin()->second, by_hash_.rbegin()->first});
        if (m->extra.n > 0 || f.id.lo >= m->id.lo) m = MainVictim();
        if (f.id.lo < m->id.lo) {
          PushMain(probation_.erase(probation_.begin()));
          return pending_ = m->id;
        }
        return pending_ = f.id;
      }
      if (main_.empty()) return pending_ = probation_.front().id;
      return pending_ = MainVictim()->id;
    }
  }
  size_t Size() const override { return probation_.size() + main_.size(); }
  // Probation then main, each oldest first; bits 0-1: reads, bit 2: main,
  // bit 3: filling (on every entry).
  void DoSave(std::vector<Entry>* out) const override {
    const uint32_t filling = filling_ ? 8u : 0u;
    for (const auto& n : probation_) out->push_back({n.id, n.bytes, n.extra.n | filling});
    for (const auto& n : main_) out->push_back({n.id, n.bytes, n.extra.n | 4u | filling});
  }
  void DoRestore(const Entry& e, Time) override {
    if (e.tag & 8) filling_ = true;
    Reads r{static_cast<uint8_t>(std::min<uint32_t>(e.tag & 3, kMaxReads))};
    if (e.tag & 4) {
      PushMain({e.id, e.bytes, r});
    } else {
      probation_.push_back({e.id, e.bytes, r});
    }
  }

 private:
  static constexpr uint8_t kMaxReads = 3;
  static constexpr uint64_t kProbationShare = 100;  // probation holds 1/100 of the bytes
  static constexpr uint64_t kSlackPages = 2;       // probation's front pages it may run below that
  static constexpr size_t kGhostShare = 10;        // the ghost, 1/10 as many ids as pages
  struct None {};

  // The front of the main queue after a CLOCK sweep: an unread page.
  // REQUIRES: main_ not empty.
  KeyedQueue<Reads>::iterator MainVictim() {
    while (main_.front().extra.n > 0) {
      --main_.front().extra.n;
      main_.move_to_back(main_.begin());
    }
    return main_.begin();
  }
  void PushMain(KeyedQueue<Reads>::Node n) {
    by_hash_.insert({n.id.lo, n.id.hi});
    main_.push_back(std::move(n));
  }
  // Enough ids to catch a page becoming popular, too few to hold the whole
  // rest of a dataset read in epochs (which would let it displace the subset).
  void Remember(const PageId& id) {
    if (!ghost_.contains(id)) ghost_.push_back({id, 0, {}});
    while (ghost_.size() > std::max<size_t>(1, Size() / kGhostShare)) ghost_.erase(ghost_.begin());
  }

  KeyedQueue<Reads> probation_, main_;  // front: the oldest
  KeyedQueue<None> ghost_;
  std::set<std::pair<uint64_t, uint64_t>> by_hash_;  // main's pages: (id.lo, id.hi)
  std::optional<PageId> pending_;
  bool filling_ = false;  // moving probation's unread pages to main (see DoVictim)
};

}  // namespace

SHOAL_REGISTER_EVICTION_POLICY(epoch, "epoch",
                               "S3-FIFO with a hash tie-break: keeps a stable subset of a dataset larger than the "
                               "cache read in shuffled epochs",
                               new EpochPolicy());

}  // namespace shoal
