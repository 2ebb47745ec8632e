// The file that keeps an eviction policy's state across a restart, one per
// cache dir. The page store rebuilds its index by scanning the page files;
// this file adds the order (recency, read counts, queues) that the files'
// mtimes cannot give. It is a hint: a missing, torn, corrupt or foreign file
// is refused whole, and the store falls back to the mtime order.
//
// Layout (little-endian), docs/page-format.md "Policy state":
//   "SHOALPS1"  u32 name length, name   u64 count
//   count x { u64 id.hi, u64 id.lo, u64 bytes, u32 tag }
//   u64 XXH3-64 of everything before it
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cache/policy/eviction_policy.h"
#include "shoal/status.h"

namespace shoal::policy_state {

struct Saved {
  std::string policy;  // the name of the policy that wrote it
  std::vector<EvictionPolicy::Entry> entries;
};

std::string Encode(std::string_view policy, const std::vector<EvictionPolicy::Entry>& entries);
// kCorruption naming what is wrong (bad magic, truncated, checksum).
Result<Saved> Decode(std::string_view bytes);

// Writes the state to `path` through a temporary file and a rename, so that a
// crash leaves the old file or the new one.
Status Write(const std::string& path, std::string_view policy, const std::vector<EvictionPolicy::Entry>& entries);
// kNotFound when there is none.
Result<Saved> Read(const std::string& path);

}  // namespace shoal::policy_state
