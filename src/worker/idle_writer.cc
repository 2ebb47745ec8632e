#include "worker/idle_writer.h"

#include <pthread.h>
#include <sched.h>

namespace shoal {

IdleWriter::IdleWriter(uint64_t max_pending_bytes) : max_pending_(max_pending_bytes) {
  thread_ = std::thread([this] { Loop(); });
  // Where SCHED_IDLE is refused the thread keeps the normal policy: only the
  // priority is lost, not the work.
  sched_param p{};
  p.sched_priority = 0;
  pthread_setschedparam(thread_.native_handle(), SCHED_IDLE, &p);
}

IdleWriter::~IdleWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  // What is left is drained at normal priority, so shutting down does not
  // wait for an idle core.
  sched_param p{};
  p.sched_priority = 0;
  pthread_setschedparam(thread_.native_handle(), SCHED_OTHER, &p);
  cv_.notify_all();
  thread_.join();
}

bool IdleWriter::Submit(uint64_t bytes, std::function<void()>& task) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || pending_ + bytes > max_pending_) return false;
    pending_ += bytes;
    queue_.emplace_back(bytes, std::move(task));
  }
  cv_.notify_one();
  return true;
}

uint64_t IdleWriter::pending_bytes() const {
  std::lock_guard lock(mu_);
  return pending_;
}

void IdleWriter::Loop() {
  for (;;) {
    std::pair<uint64_t, std::function<void()>> item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    item.second();
    std::lock_guard lock(mu_);
    pending_ -= item.first;
  }
}

}  // namespace shoal
