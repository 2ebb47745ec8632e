#include "common/library_log.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
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

// The length of the UTF-8 sequence at the start of `s`, 0 when it is not one.
size_t Utf8Length(std::string_view s) {
  const auto b = static_cast<unsigned char>(s[0]);
  const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<unsigned char>(s[i]) >> 6) != 0x2) return 0;
  }
  return n;
}

// A JSON string's contents for `s`: quotes, backslashes and control
// characters escaped, a byte that starts no UTF-8 sequence as U+FFFD.
void AppendJsonEscaped(std::string* out, std::string_view s) {
  while (!s.empty()) {
    const auto c = static_cast<unsigned char>(s[0]);
    const size_t n = Utf8Length(s);
    if (n == 0) {
      *out += "\\ufffd";
      s.remove_prefix(1);
      continue;
    }
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      *out += buf;
    } else {
      out->append(s.substr(0, n));
    }
    s.remove_prefix(n);
  }
}

// {"time":"2026-12-06T18:50:01.123456Z","level":"warn","pid":123,"thread":456,"msg":"..."}
std::string JsonLine(const spdlog::details::log_msg& msg, std::string_view text) {
  using namespace std::chrono;
  const auto since = msg.time.time_since_epoch();
  const std::time_t secs = static_cast<std::time_t>(duration_cast<seconds>(since).count());
  const auto micros = duration_cast<microseconds>(since).count() % 1'000'000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char when[40];
  const size_t n = std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(when + n, sizeof when - n, ".%06lldZ", static_cast<long long>(micros));
  const auto level = spdlog::level::to_string_view(msg.level);
  std::string line = "{\"time\":\"";
  line += when;
  line += "\",\"level\":\"";
  line.append(level.data(), level.size());
  line += "\",\"pid\":" + std::to_string(::getpid()) + ",\"thread\":" + std::to_string(msg.thread_id) + ",\"msg\":\"";
  AppendJsonEscaped(&line, text);
  // A message about one request ends with "[request ID]" (the id the client
  // sent): a field of its own, so the client's, the worker's and the audit's
  // lines join on it.
  constexpr std::string_view kTag = "[request ";
  if (auto at = text.rfind(kTag); at != std::string_view::npos && text.ends_with(']')) {
    line += "\",\"request_id\":\"";
    AppendJsonEscaped(&line, text.substr(at + kTag.size(), text.size() - 1 - at - kTag.size()));
  }
  line += "\"}\n";
  return line;
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
    if (json_.load(std::memory_order_relaxed)) {
      const std::string line = JsonLine(msg, text);
      std::fwrite(line.data(), 1, line.size(), stderr);
      return;
    }
    spdlog::details::log_msg shown = msg;
    shown.payload = text;
    spdlog::memory_buf_t line;
    formatter_->format(shown, line);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }

 public:
  std::atomic<bool> json_{false};

 protected:
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

Status SetLogFormat(std::string_view format) {
  if (format != "text" && format != "json") {
    return Status(Code::kInvalidArgument, "log format '" + std::string(format) + "' is neither text nor json");
  }
  Library().sink->json_.store(format == "json", std::memory_order_relaxed);
  return {};
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
