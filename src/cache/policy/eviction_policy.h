// EvictionPolicy: decides which cached page goes first when a cache dir is full.
//
// Pages are named by a dense integer slot id that the PageStore assigns. The
// policy only orders slots; the store owns the data. Called under the store's
// lock on every access, so implementations are O(1) and never do I/O.
//
// Thread safety: none; the PageStore serialises calls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void Insert(uint32_t slot) = 0;   // a new page
  virtual void Touch(uint32_t slot) = 0;    // a page was read
  virtual void Erase(uint32_t slot) = 0;    // a page left the cache
  virtual void Demote(uint32_t slot) = 0;   // evict this page before any other (superseded versions)
  virtual std::optional<uint32_t> Victim() const = 0;  // the next page to evict, without removing it
};

// "lru" (the default). Unknown names are kInvalidArgument naming the choices.
Result<std::unique_ptr<EvictionPolicy>> MakeEvictionPolicy(std::string_view name);

}  // namespace shoal
