// The last errors a worker met, kept for people: answers it gave with a 5xx
// status or a refusal (401/403), and corrupt pages it dropped, each with the
// time and the request id the client sent (X-Shoal-Request-Id), so a line on
// the status page or in `shoal status` leads to the client's own log and the
// audit line. Bounded: the newest `keep` entries.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace shoal {

class RecentErrors {
 public:
  struct Entry {
    int64_t unix_ms = 0;
    std::string kind;        // "server error", "refused", "corrupt page"
    std::string message;     // what failed, one line
    std::string request_id;  // "" when the client sent none
  };

  explicit RecentErrors(size_t keep = 50) : keep_(keep) {}

  void Add(std::string kind, std::string message, std::string request_id = {});
  std::vector<Entry> Newest(size_t n) const;  // newest first
  uint64_t total() const;                     // ever added

 private:
  const size_t keep_;
  mutable std::mutex mu_;
  std::deque<Entry> entries_;
  uint64_t total_ = 0;
};

// "2026-12-07T01:02:03Z server error: GET /v1/read: HTTP 503 ... [request R]"
std::string FormatRecentError(const RecentErrors::Entry& e);

}  // namespace shoal
