#include "common/library_log.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "common/repeat_limiter.h"
#include "shoal/log.h"

namespace shoal {
namespace {

// How often one text may be printed: a DataLoader's eight worker processes
// each print an event once, not once per read.
constexpr std::chrono::seconds kRepeatInterval{10};

LogLevel ToLogLevel(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LogLevel::kDebug;
    case spdlog::level::info: return LogLevel::kInfo;
    case spdlog::level::warn: return LogLevel::kWarning;
    default: return LogLevel::kError;
  }
}

spdlog::level::level_enum ToSpdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarning: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

// Writes to stderr, or hands each message to the program's handler; warnings
// and errors pass the repeat limit first. base_sink serialises sink_it_.
class LibrarySink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void SetHandler(LogHandler handler) {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    if (msg.level >= spdlog::level::warn) {
      auto held = repeats_.Admit(text, RepeatLimiter::Clock::now());
      if (!held) return;
      if (*held > 0) text += " (" + std::to_string(*held) + " similar suppressed)";
    }
    if (handler_) {
      handler_(ToLogLevel(msg.level), text);
      return;
    }
    spdlog::details::log_msg shown = msg;
    shown.payload = text;
    spdlog::memory_buf_t line;
    formatter_->format(shown, line);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  LogHandler handler_;
  RepeatLimiter repeats_{kRepeatInterval};
};

struct LibraryLogger {
  std::shared_ptr<LibrarySink> sink = std::make_shared<LibrarySink>();
  std::shared_ptr<spdlog::logger> logger = std::make_shared<spdlog::logger>("shoal", sink);
};

LibraryLogger& Library() {
  static LibraryLogger* library = new LibraryLogger();  // never destroyed: threads may log at exit
  return *library;
}

}  // namespace

void UseLibraryLogger() {
  if (spdlog::default_logger_raw() != Library().logger.get()) spdlog::set_default_logger(Library().logger);
}

void UseLibraryLoggerOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    // spdlog's own default logger has no name (and writes to stdout); any
    // other is the program's choice, and keeps the library's messages.
    if (spdlog::default_logger_raw()->name().empty()) UseLibraryLogger();
  });
}

void SetLogHandler(LogHandler handler) {
  Library().sink->SetHandler(std::move(handler));
  UseLibraryLogger();
}

void SetLogLevel(LogLevel level) {
  Library().logger->set_level(ToSpdlog(level));
  UseLibraryLogger();
}

}  // namespace shoal
