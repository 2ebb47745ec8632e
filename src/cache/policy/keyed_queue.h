// KeyedQueue: a queue of pages with O(1) lookup, move and removal by id, the
// building block of the queue-based policies (FIFO, LRU, SIEVE, S3-FIFO).
// Front is the oldest end. Iterators stay valid until their element is erased.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>

#include "cache/policy/eviction_policy.h"

namespace shoal {

template <typename Extra>
class KeyedQueue {
 public:
  struct Node {
    PageId id;
    uint64_t bytes = 0;
    Extra extra{};
  };
  using iterator = typename std::list<Node>::iterator;
  using const_iterator = typename std::list<Node>::const_iterator;

  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  uint64_t bytes() const { return bytes_; }
  iterator begin() { return list_.begin(); }
  iterator end() { return list_.end(); }
  const_iterator begin() const { return list_.begin(); }
  const_iterator end() const { return list_.end(); }
  Node& front() { return list_.front(); }

  iterator find(const PageId& id) {
    auto it = index_.find(id);
    return it == index_.end() ? list_.end() : it->second;
  }
  bool contains(const PageId& id) const { return index_.contains(id); }

  iterator push_back(Node n) {
    bytes_ += n.bytes;
    list_.push_back(std::move(n));
    auto it = std::prev(list_.end());
    index_[it->id] = it;
    return it;
  }
  void move_to_back(iterator it) { list_.splice(list_.end(), list_, it); }
  // Removes `it`; returns the node.
  Node erase(iterator it) {
    Node n = std::move(*it);
    bytes_ -= n.bytes;
    index_.erase(n.id);
    list_.erase(it);
    return n;
  }

 private:
  std::list<Node> list_;
  std::unordered_map<PageId, iterator, PageIdHash> index_;
  uint64_t bytes_ = 0;
};

}  // namespace shoal
