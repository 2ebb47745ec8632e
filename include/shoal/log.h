// Where the Shoal library's log messages go.
//
// The library logs what no Status reports: a worker that went down and the
// reads that fell back to the under-store, a write whose cached metadata could
// not be dropped on every worker, a membership change. By default these go to
// stderr as "[time] [shoal] [warning] text" lines, at kInfo and above; never
// to stdout, which may carry a program's data.
//
// A warning or error with the same text as one printed in the last 10 s is
// held back (per process, however many Clients it has); the next one printed
// after that ends in "(N similar suppressed)".
//
// The library logs through spdlog's default logger. A program that set its
// own (spdlog::set_default_logger) before it opened a Client gets the
// library's messages there (without the repeat limit) until it calls SetLogHandler
// or SetLogLevel, which always take them back to the library's logger.
//
// Thread safety: both functions may be called from any thread at any time.
#pragma once

#include <functional>
#include <string_view>

namespace shoal {

enum class LogLevel { kDebug, kInfo, kWarning, kError, kOff };

// Receives each message (one line of text, without time or level) in place of
// stderr. Called on whichever thread logs, one call at a time; it must not
// block for long, nor log through Shoal.
using LogHandler = std::function<void(LogLevel level, std::string_view message)>;

// Sends the library's messages to `handler`; an empty handler sends them to
// stderr again.
void SetLogHandler(LogHandler handler);

// Passes on messages at `level` and above (default kInfo); kOff passes none.
void SetLogLevel(LogLevel level);

}  // namespace shoal
