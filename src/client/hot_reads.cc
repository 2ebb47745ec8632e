// Reads of hot shards (cluster/hot_shards.h): spread over the owner and the
// next workers on the ring while a worker says the shard is hot.
#include <algorithm>

#include "client/client_impl.h"

namespace shoal::detail {

Router::RouteKey ClientImpl::ReadKey(const std::string& ring_key, size_t replicas, uint64_t bytes) {
  const uint32_t hot = hot_.Spread(ring_key, HotKeys::Clock::now());
  if (hot == 0) return Router::RouteKey(ring_key, replicas, bytes);
  return Router::RouteKey(ring_key, std::max<size_t>(replicas, hot), bytes, true);
}

std::string ClientImpl::SpreadParam(const Router::RouteKey& key, size_t replicas, const WorkerEntry& w) {
  if (!key.spread) return {};
  auto holders = router_.Holders(key.key, replicas).second;
  if (std::any_of(holders.begin(), holders.end(), [&](const WorkerEntry* h) { return h->id == w.id; })) return {};
  spread_reads_.fetch_add(1, std::memory_order_relaxed);
  return "&spread=1";
}

void ClientImpl::NoteHeat(const std::string& ring_key, const WorkerEntry& w, uint32_t hot) {
  if (hot > 0) return hot_.Mark(ring_key, hot, HotKeys::Clock::now());
  if (hot_.empty() || hot_.Spread(ring_key, HotKeys::Clock::now()) == 0) return;
  // Only the owner's word cools a key: the next worker sees part of its reads.
  auto owner = router_.Holders(ring_key, 1).second;
  if (!owner.empty() && owner.front()->id == w.id) hot_.Clear(ring_key);
}

}  // namespace shoal::detail
