// SingleFlight: concurrent calls for one key share one run of the work.
//
// Do(key, work) runs `work` unless a call for `key` is in flight; then it
// waits for that call and returns a copy of its result. Detach() makes later
// callers of the matching keys start a new run (the result in flight may
// predate a change), while the callers already waiting still get it.
//
// Thread safety: all methods may be called from any thread. A waiter waits as
// long as the running call takes: bound the work itself (its deadlines).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace shoal {

template <typename T>
class SingleFlight {
 public:
  template <typename Work>
  T Do(const std::string& key, Work&& work) {
    std::shared_ptr<Call> call;
    bool leader = false;
    {
      std::lock_guard lock(mu_);
      auto& slot = calls_[key];
      if (!slot) {
        slot = std::make_shared<Call>();
        leader = true;
      } else {
        ++slot->waiters;
      }
      call = slot;
    }
    if (!leader) {
      std::unique_lock lock(call->mu);
      call->cv.wait(lock, [&] { return call->result.has_value(); });
      return *call->result;
    }
    T result = std::forward<Work>(work)();
    {
      std::lock_guard lock(mu_);
      auto it = calls_.find(key);
      if (it != calls_.end() && it->second == call) calls_.erase(it);  // unless Detach() let it go
    }
    {
      std::lock_guard lock(call->mu);
      call->result = result;
    }
    call->cv.notify_all();
    return result;
  }

  // Callers waiting for the call in flight for `key` (0 when none is).
  size_t waiting(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(key);
    return it == calls_.end() ? 0 : it->second->waiters;
  }

  // Detaches the calls in flight whose key satisfies `pred`.
  template <typename Pred>
  void Detach(Pred pred) {
    std::lock_guard lock(mu_);
    std::erase_if(calls_, [&](const auto& e) { return pred(e.first); });
  }

 private:
  struct Call {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<T> result;
    size_t waiters = 0;  // GUARDED_BY(SingleFlight::mu_)
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Call>> calls_;
};

}  // namespace shoal
