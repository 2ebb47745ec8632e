#include "cache/scrubber.h"

#include <spdlog/spdlog.h>

#include "cache/page_store.h"
#include "common/metrics.h"

namespace shoal {
namespace {

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point t) { return std::chrono::duration<double>(SteadyClock::now() - t).count(); }

}  // namespace

Scrubber::Scrubber(PageStore& store, Options options) : store_(store), options_(options) {
  auto& m = options_.metrics ? *options_.metrics : MetricsRegistry::Global();
  scrubbed_bytes_ =
      &m.GetCounter("shoal_cache_scrubbed_bytes_total", "Bytes of cached pages the scrubber read back and checked");
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

Scrubber::~Scrubber() {
  thread_.request_stop();
  cv_.notify_all();
}

Scrubber::Progress Scrubber::Start(const std::string& path, bool now) {
  std::lock_guard lock(mu_);
  wanted_ = Progress();
  wanted_.pass = progress_.pass + 1;
  wanted_.asked = true;
  wanted_.now = now;
  wanted_.path = path.empty() ? "/" : path;
  wanted_.running = true;
  asked_ = true;
  cv_.notify_all();
  return wanted_;
}

Scrubber::Progress Scrubber::progress() const {
  std::lock_guard lock(mu_);
  return progress_;
}

void Scrubber::Run(std::stop_token stop) {
  auto next_background = SteadyClock::now();  // the first pass at start
  while (!stop.stop_requested()) {
    Progress want;
    {
      std::unique_lock lock(mu_);
      auto ready = [this, &next_background] {
        return asked_ || (options_.rate > 0 && SteadyClock::now() >= next_background);
      };
      if (options_.rate > 0) {
        cv_.wait_until(lock, stop, next_background, ready);
      } else {
        cv_.wait(lock, stop, ready);
      }
      if (stop.stop_requested()) return;
      if (!ready()) continue;
      want = asked_ ? wanted_ : Progress{.asked = false, .path = "/"};
      asked_ = false;
    }
    const auto started = SteadyClock::now();
    if (!want.asked) next_background = started + options_.interval;
    if (!Pass(stop, want.path, want.asked, want.now)) return;
  }
}

bool Scrubber::Pass(std::stop_token& stop, const std::string& path, bool asked, bool now) {
  const auto started = SteadyClock::now();
  // A background pass skips pages a read checked within the interval; an asked one checks all.
  const auto verified_since = asked ? SteadyClock::time_point::max() : started - options_.interval;
  {
    std::lock_guard lock(mu_);
    const uint64_t n = progress_.pass + 1;
    progress_ = Progress{.pass = n, .running = true, .asked = asked, .now = now, .path = path};
  }
  auto finish = [this, started] {
    std::lock_guard lock(mu_);
    progress_.running = false;
    progress_.seconds = SecondsSince(started);
    spdlog::info("scrub pass {} of {}: {} pages ({} bytes) checked, {} corrupt dropped, in {:.1f} s", progress_.pass,
                 progress_.path, progress_.pages, progress_.bytes, progress_.corrupt, progress_.seconds);
  };
  std::string scratch;
  uint64_t bytes = 0;
  size_t cursor = 0;
  for (;;) {
    auto keys = store_.PagesToCheck(&cursor, 64, path == "/" ? "" : path, verified_since);
    if (keys.empty()) break;
    for (const auto& key : keys) {
      {
        std::lock_guard lock(mu_);
        if (asked_) {  // a new pass was asked for: it replaces this one
          progress_.running = false;
          progress_.seconds = SecondsSince(started);
          return true;
        }
      }
      if (stop.stop_requested()) return false;
      auto ref = store_.Get(key, /*reads=*/0);
      if (!ref) continue;  // evicted meanwhile
      auto checked = store_.Verify(*ref, scratch);
      bool dropped = false;
      if (!checked && (checked.error().code() == Code::kCorruption || checked.error().code() == Code::kIo)) {
        dropped = store_.DropCorrupt(key, *ref, "scrub");
        spdlog::warn("scrub: {}; {}", checked.error().message(),
                     dropped ? "dropped the page (its next read fetches it again)" : "the page was already dropped");
      }
      bytes += ref->length();
      scrubbed_bytes_->Add(ref->length());
      {
        std::lock_guard lock(mu_);
        ++progress_.pages;
        progress_.bytes = bytes;
        progress_.corrupt += dropped;
        progress_.seconds = SecondsSince(started);
      }
      // Paced: `bytes` take bytes / rate seconds; a Start or a stop ends the wait.
      if (!now && options_.rate > 0) {
        const auto due = started + std::chrono::duration_cast<SteadyClock::duration>(
                                       std::chrono::duration<double>(static_cast<double>(bytes) / options_.rate));
        std::unique_lock lock(mu_);
        cv_.wait_until(lock, stop, due, [this] { return asked_; });
      }
    }
  }
  finish();
  return !stop.stop_requested();
}

}  // namespace shoal
