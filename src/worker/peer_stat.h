// The answer to a cache-only stat, GET /v1/stat?path=P&cache_only=1
// (docs/protocol.md): a worker's fresh cached stat of P and its age, for a
// worker that took over P's metadata after a ring change (peer_fetch.h).
//
// The age (how long ago the store gave the entry, or last confirmed it) is a
// duration, not a time of day: the two workers' clocks need not agree. The
// taker counts it from when it sent the request, so the entry only looks
// older than it is, never younger, and the mount's revalidation rule counts
// from the store's answer (MetadataCache::InsertAgedStat).
//
// Decode treats the body as untrusted: every field is checked (types, the
// path is the one asked, sizes and string lengths bounded, the version is the
// one the fields make, the age not negative and bounded).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "meta/metadata_cache.h"
#include "shoal/status.h"

namespace shoal::peer_stat {

inline constexpr size_t kMaxBodyBytes = 64 * 1024;
inline constexpr size_t kMaxVersionBytes = 1024;  // an ETag or "<mtime_ns>-<size>"
inline constexpr std::chrono::hours kMaxAge{24 * 3650};
inline constexpr uint64_t kMaxFileSize = (1ull << 63) - 1;  // as WorkerService::kMaxFileSize

// The JSON body (one line) answering a cache-only stat of `ns_path`.
std::string Encode(const std::string& ns_path, const MetadataCache::AgedStat& s);

// The entry in `body`, which answered a cache-only stat of `ns_path`; its
// FileInfo gets `key` (the path's key in its mount). kInvalidArgument naming
// the field when any is missing, of the wrong type, out of bounds or
// inconsistent.
Result<MetadataCache::AgedStat> Decode(std::string_view body, const std::string& ns_path, const std::string& key);

}  // namespace shoal::peer_stat
