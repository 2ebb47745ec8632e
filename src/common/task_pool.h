// TaskPool: a fixed set of threads running submitted tasks, for fan-out of
// blocking work (parallel shard reads, read-ahead) in the client.
//
// Thread safety: Submit may be called from any thread, including pool threads
// (but a pool task must not block waiting on tasks queued behind it).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/end_user.h"

namespace shoal {

class TaskPool {
 public:
  explicit TaskPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { Loop(); });
    }
  }
  ~TaskPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    threads_.clear();  // joins
  }

  // The task is destroyed once it has run. (A packaged_task would keep it in
  // the future's shared state: a task holding a pointer to whatever holds its
  // future would then never be freed.)
  template <typename F>
  auto Submit(F f) -> std::future<std::invoke_result_t<F>> {
    using R = std::invoke_result_t<F>;
    auto promise = std::make_shared<std::promise<R>>();
    auto fut = promise->get_future();
    {
      std::lock_guard lock(mu_);
      // The task runs for the submitter's end user (common/end_user.h).
      queue_.emplace_back([promise, f = std::move(f), user = CurrentEndUser()]() mutable {
        ActingFor acting(std::move(user));
        try {
          if constexpr (std::is_void_v<R>) {
            f();
            promise->set_value();
          } else {
            promise->set_value(f());
          }
        } catch (...) {
          promise->set_exception(std::current_exception());
        }
      });
    }
    cv_.notify_one();
    return fut;
  }

  size_t size() const { return threads_.size(); }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::jthread> threads_;
};

}  // namespace shoal
