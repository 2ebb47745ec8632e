#include "cache/policy/eviction_policy.h"

namespace shoal {

void EvictionPolicy::Insert(const PageId& id, uint64_t bytes, Time now) { DoInsert(id, bytes, now); }

void EvictionPolicy::Touch(const PageId& id, Time now) {
  if (!demoted_index_.contains(id)) DoTouch(id, now);  // a demoted page stays first
}

void EvictionPolicy::Erase(const PageId& id) {
  if (auto it = demoted_index_.find(id); it != demoted_index_.end()) {
    demoted_.erase(it->second);
    demoted_index_.erase(it);
    return;
  }
  (void)DoErase(id);
}

void EvictionPolicy::Demote(const PageId& id) {
  if (demoted_index_.contains(id)) return;
  auto bytes = DoErase(id);
  if (!bytes) return;
  demoted_.push_back(Entry{id, *bytes, kDemotedTag});
  demoted_index_[id] = std::prev(demoted_.end());
}

std::optional<PageId> EvictionPolicy::Victim() {
  if (!demoted_.empty()) return demoted_.front().id;
  return DoVictim();
}

std::vector<EvictionPolicy::Entry> EvictionPolicy::Save() const {
  std::vector<Entry> out(demoted_.begin(), demoted_.end());
  out.reserve(size());
  DoSave(&out);
  return out;
}

void EvictionPolicy::Restore(const Entry& e, Time now) {
  if (e.tag == kDemotedTag) {
    if (demoted_index_.contains(e.id)) return;
    demoted_.push_back(e);
    demoted_index_[e.id] = std::prev(demoted_.end());
    return;
  }
  DoRestore(e, now);
}

}  // namespace shoal
