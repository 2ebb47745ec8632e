// Least recently used: a read moves the page to the back of the queue.
#include "cache/policy/queue_policy.h"
#include "cache/policy/registry.h"

namespace shoal {
namespace {

class LruPolicy final : public QueuePolicy<true> {
 public:
  std::string_view name() const override { return "lru"; }
};

}  // namespace

SHOAL_REGISTER_EVICTION_POLICY(lru, "lru", "least recently used first", new LruPolicy());

}  // namespace shoal
