// Least-recently-used: an intrusive doubly linked list over slot ids.
#include <vector>

#include "cache/policy/eviction_policy.h"

namespace shoal {
namespace {

class LruPolicy final : public EvictionPolicy {
 public:
  void Insert(uint32_t slot) override {
    Grow(slot);
    PushBack(slot);
  }
  void Touch(uint32_t slot) override {
    if (!Linked(slot)) return;
    Unlink(slot);
    PushBack(slot);
  }
  void Erase(uint32_t slot) override {
    if (Linked(slot)) Unlink(slot);
  }
  void Demote(uint32_t slot) override {
    if (!Linked(slot)) return;
    Unlink(slot);
    PushFront(slot);
  }
  std::optional<uint32_t> Victim() const override {
    if (head_ == kNil) return std::nullopt;
    return head_;
  }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Link {
    uint32_t prev = kNil, next = kNil;
    bool linked = false;
  };

  void Grow(uint32_t slot) {
    if (slot >= links_.size()) links_.resize(slot + 1);
  }
  bool Linked(uint32_t slot) const { return slot < links_.size() && links_[slot].linked; }
  void Unlink(uint32_t s) {
    auto& l = links_[s];
    if (l.prev != kNil) links_[l.prev].next = l.next;
    else head_ = l.next;
    if (l.next != kNil) links_[l.next].prev = l.prev;
    else tail_ = l.prev;
    l = Link{};
  }
  void PushBack(uint32_t s) {
    auto& l = links_[s];
    l.prev = tail_;
    l.next = kNil;
    l.linked = true;
    if (tail_ != kNil) links_[tail_].next = s;
    else head_ = s;
    tail_ = s;
  }
  void PushFront(uint32_t s) {
    auto& l = links_[s];
    l.prev = kNil;
    l.next = head_;
    l.linked = true;
    if (head_ != kNil) links_[head_].prev = s;
    else tail_ = s;
    head_ = s;
  }

  std::vector<Link> links_;
  uint32_t head_ = kNil;  // least recently used
  uint32_t tail_ = kNil;  // most recently used
};

}  // namespace

Result<std::unique_ptr<EvictionPolicy>> MakeEvictionPolicy(std::string_view name) {
  if (name.empty() || name == "lru") return std::make_unique<LruPolicy>();
  return Err(Code::kInvalidArgument, "unknown eviction policy '" + std::string(name) + "' (available: lru)");
}

}  // namespace shoal
