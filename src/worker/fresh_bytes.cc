#include "worker/fresh_bytes.h"

#include <algorithm>

namespace shoal {

std::string FreshBytes::Key(std::string_view path, std::string_view version, uint64_t offset) {
  std::string k;
  k.reserve(path.size() + version.size() + 24);
  k.append(path).push_back('\n');
  k.append(version).push_back('\n');
  k.append(std::to_string(offset));
  return k;
}

void FreshBytes::Credit(std::string_view path, std::string_view version, uint64_t offset, uint64_t bytes) {
  if (bytes == 0) return;
  std::string key = Key(path, version, offset);
  std::lock_guard lock(mu_);
  auto [it, added] = left_.try_emplace(key, 0);
  it->second += bytes;
  if (!added) return;
  order_.push_back(std::move(key));
  // The bound: the oldest credit goes first. order_ may name keys already
  // taken to zero; it is trimmed as it is walked.
  while (left_.size() > kMaxPages && !order_.empty()) {
    left_.erase(order_.front());
    order_.pop_front();
  }
  if (order_.size() > 2 * kMaxPages) {
    std::erase_if(order_, [this](const std::string& k) { return !left_.contains(k); });
  }
  count_.store(left_.size(), std::memory_order_relaxed);
}

uint64_t FreshBytes::Take(std::string_view path, std::string_view version, uint64_t offset, uint64_t bytes) {
  if (count_.load(std::memory_order_relaxed) == 0 || bytes == 0) return 0;
  const std::string key = Key(path, version, offset);
  std::lock_guard lock(mu_);
  auto it = left_.find(key);
  if (it == left_.end()) return 0;
  const uint64_t taken = std::min(bytes, it->second);
  it->second -= taken;
  if (it->second == 0) {
    left_.erase(it);
    if (left_.empty()) order_.clear();
    count_.store(left_.size(), std::memory_order_relaxed);
  }
  return taken;
}

void FreshBytes::Forget(std::string_view path, std::string_view version, uint64_t first, uint64_t last,
                        uint64_t page_size) {
  if (count_.load(std::memory_order_relaxed) == 0 || page_size == 0) return;
  std::lock_guard lock(mu_);
  for (uint64_t p = first; p <= last && !left_.empty(); p += page_size) left_.erase(Key(path, version, p));
  if (left_.empty()) order_.clear();
  count_.store(left_.size(), std::memory_order_relaxed);
}

}  // namespace shoal
