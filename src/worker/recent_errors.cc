#include "worker/recent_errors.h"

#include <chrono>
#include <ctime>

namespace shoal {

void RecentErrors::Add(std::string kind, std::string message, std::string request_id) {
  constexpr size_t kMaxMessage = 400;  // one line on a page, not a document
  if (message.size() > kMaxMessage) message = message.substr(0, kMaxMessage) + "...";
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  Entry e{std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count(),
          std::move(kind), std::move(message), std::move(request_id)};
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(e));
  if (entries_.size() > keep_) entries_.pop_front();
  ++total_;
}

std::vector<RecentErrors::Entry> RecentErrors::Newest(size_t n) const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  for (auto it = entries_.rbegin(); it != entries_.rend() && out.size() < n; ++it) out.push_back(*it);
  return out;
}

uint64_t RecentErrors::total() const {
  std::lock_guard lock(mu_);
  return total_;
}

std::string FormatRecentError(const RecentErrors::Entry& e) {
  std::time_t t = static_cast<std::time_t>(e.unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string out = std::string(when) + " " + e.kind + ": " + e.message;
  if (!e.request_id.empty()) out += " [request " + e.request_id + "]";
  return out;
}

}  // namespace shoal
