// QueuePolicy: the shared body of FIFO (a read changes nothing) and LRU (a
// read moves the page to the back). Each is registered from its own file.
#pragma once

#include "cache/policy/eviction_policy.h"
#include "cache/policy/keyed_queue.h"

namespace shoal {

template <bool kReadRefreshes>
class QueuePolicy : public EvictionPolicy {
 protected:
  struct None {};
  void DoInsert(const PageId& id, uint64_t bytes, Time) override { queue_.push_back({id, bytes, {}}); }
  void DoTouch(const PageId& id, Time) override {
    if constexpr (kReadRefreshes) {
      if (auto it = queue_.find(id); it != queue_.end()) queue_.move_to_back(it);
    }
  }
  std::optional<uint64_t> DoErase(const PageId& id) override {
    auto it = queue_.find(id);
    if (it == queue_.end()) return std::nullopt;
    return queue_.erase(it).bytes;
  }
  std::optional<PageId> DoVictim() override {
    if (queue_.empty()) return std::nullopt;
    return queue_.front().id;
  }
  size_t Size() const override { return queue_.size(); }
  void DoSave(std::vector<Entry>* out) const override {
    for (const auto& n : queue_) out->push_back({n.id, n.bytes, 0});
  }
  void DoRestore(const Entry& e, Time now) override { DoInsert(e.id, e.bytes, now); }

 private:
  KeyedQueue<None> queue_;  // front: the next victim
};

}  // namespace shoal
