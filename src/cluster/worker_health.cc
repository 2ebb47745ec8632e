#include "cluster/worker_health.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace shoal {

WorkerHealth::WorkerHealth(Probe probe, Options options) : probe_(std::move(probe)), options_(options) {}

WorkerHealth::~WorkerHealth() {
  std::unique_ptr<std::thread> t;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (!t) return;
  if (thread_pid_ == ::getpid()) {
    t->join();
  } else {
    (void)t.release();  // the parent's thread: it does not exist in this process
  }
}

bool WorkerHealth::IsDown(const WorkerEntry& worker) const {
  if (down_count_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard lock(mu_);
  auto it = workers_.find(Key(worker));
  return it != workers_.end() && it->second.down;
}

std::optional<Status> WorkerHealth::DownReason(const WorkerEntry& worker) const {
  if (down_count_.load(std::memory_order_acquire) == 0) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = workers_.find(Key(worker));
  if (it == workers_.end() || !it->second.down) return std::nullopt;
  return it->second.why;
}

bool WorkerHealth::MarkDown(const WorkerEntry& worker, const Status& why) {
  std::chrono::milliseconds backoff;
  {
    std::lock_guard lock(mu_);
    auto& s = workers_[Key(worker)];
    if (s.down) return false;
    auto now = Clock::now();
    // Back within max_backoff of coming up: a flapping worker probes (and logs) less often each time.
    bool flapping = s.backoff.count() > 0 && now - s.up_since < options_.max_backoff;
    s.entry = worker;
    s.down = true;
    s.why = why;
    s.backoff = flapping ? std::min(s.backoff * 2, options_.max_backoff) : options_.first_backoff;
    s.next_probe = now + s.backoff;
    backoff = s.backoff;
    down_count_.fetch_add(1, std::memory_order_acq_rel);
    EnsureProbeThreadLocked();
  }
  cv_.notify_all();
  std::string name = worker.id == worker.address ? worker.address : worker.id + " at " + worker.address;
  spdlog::warn("worker {} is down ({}); calls skip it until it answers a health check (next in {} ms)", name,
               why.message(), backoff.count());
  return true;
}

void WorkerHealth::EnsureProbeThreadLocked() {
  pid_t pid = ::getpid();
  if (thread_ && thread_pid_ == pid) return;
  if (thread_) (void)thread_.release();  // forked: the parent's probe thread is not ours to join
  thread_pid_ = pid;
  thread_ = std::make_unique<std::thread>([this] { ProbeLoop(); });
}

void WorkerHealth::ProbeLoop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto now = Clock::now();
    auto next = Clock::time_point::max();
    std::vector<WorkerEntry> due;
    for (auto& [key, s] : workers_) {
      if (!s.down) continue;
      if (s.next_probe <= now) {
        due.push_back(s.entry);
      } else {
        next = std::min(next, s.next_probe);
      }
    }
    if (due.empty()) {
      if (next == Clock::time_point::max()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, next);
      }
      continue;
    }
    for (const auto& w : due) {
      lock.unlock();  // no lock across I/O
      Status st = probe_(w);
      lock.lock();
      if (stop_) return;
      auto it = workers_.find(Key(w));
      if (it == workers_.end() || !it->second.down) continue;
      auto& s = it->second;
      if (st.ok()) {
        s.down = false;
        s.up_since = Clock::now();
        down_count_.fetch_sub(1, std::memory_order_acq_rel);
        std::string name = w.id == w.address ? w.address : w.id + " at " + w.address;
        lock.unlock();
        spdlog::info("worker {} answers again; using it", name);
        lock.lock();
      } else {
        s.backoff = std::min(s.backoff * 2, options_.max_backoff);
        s.next_probe = Clock::now() + s.backoff;
      }
    }
  }
}

}  // namespace shoal
