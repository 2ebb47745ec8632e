// Internal to src/net: how an answer travels from a handler (any thread) to
// its connection (a strand), and the error body the server uses by default.
// No Asio here: the connection arms the Event with a wake function that posts
// to its strand.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "net/http_server.h"

namespace shoal::net {

// {"code": CodeName, "message": ...} with the given HTTP status.
HttpResponse DefaultErrorResponse(int http_status, const Status& status);

namespace detail {

// A one-shot event: set from any thread, awaited by one connection on its
// strand. The wake function (which posts to that strand) runs under the lock,
// and Disarm takes the lock: so a wake never runs once the connection that
// armed it has stopped waiting, and never after the io_context is gone.
class Event {
 public:
  void Set() {
    std::lock_guard lock(mu_);
    if (set_) return;
    set_ = true;
    if (wake_) wake_();
  }
  bool is_set() {
    std::lock_guard lock(mu_);
    return set_;
  }
  void Arm(std::function<void()> wake) {
    std::lock_guard lock(mu_);
    wake_ = std::move(wake);
  }
  void Disarm() {
    std::function<void()> old;  // destroyed after the lock is released
    std::lock_guard lock(mu_);
    old.swap(wake_);
  }

 private:
  std::mutex mu_;
  bool set_ = false;
  std::function<void()> wake_;
};

struct PendingResponse {
  Event event;
  // Written before event.Set(), read after is_set() (the event's lock orders them).
  HttpResponse response;
  bool dropped = false;
};

// What a Responder and its copies share: the last copy to go answers 500 if
// nobody answered.
struct ResponderState {
  std::shared_ptr<PendingResponse> pending;
  std::atomic<bool> answered{false};

  ~ResponderState() {
    if (!answered.exchange(true)) {
      pending->dropped = true;
      pending->event.Set();
    }
  }
};

}  // namespace detail
}  // namespace shoal::net
