// First in, first out: the oldest page goes first, whatever was read.
#include "cache/policy/queue_policy.h"
#include "cache/policy/registry.h"

namespace shoal {
namespace {

class FifoPolicy final : public QueuePolicy<false> {
 public:
  std::string_view name() const override { return "fifo"; }
};

}  // namespace

SHOAL_REGISTER_EVICTION_POLICY(fifo, "fifo", "oldest page first; reads change nothing", new FifoPolicy());

}  // namespace shoal
