// Access: what a route of a listener needs from the request's identity. Every
// route of every listener (the worker's native API, the S3 endpoint) names
// one in its route table, and one check (security/request_guard.h) applies it
// before any handler runs; nothing else decides access.
#pragma once

#include <string_view>

namespace shoal::security {

enum class Access {
  kPublic,   // health probes: answered for anyone, even with security.required
  kMetrics,  // /metrics: open unless security.required (scrape it from worker.metrics_listen then)
  kRead,     // reads, stats, listings, status
  kWrite,    // writes (write-back streams, refresh after a write)
  kAdmin,    // cache management: load, free, rules, scrub
  kPeer,     // worker-to-worker traffic: page pushes, write-back holders telling each other
};

inline std::string_view AccessName(Access a) {
  switch (a) {
    case Access::kPublic: return "public";
    case Access::kMetrics: return "metrics";
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
    case Access::kAdmin: return "admin";
    case Access::kPeer: return "peer";
  }
  return "?";
}

}  // namespace shoal::security
