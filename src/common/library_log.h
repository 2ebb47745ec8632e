// The library's side of include/shoal/log.h: its logger, installed as spdlog's
// default logger (every Shoal library logs through that one, with spdlog::warn
// and friends), a sink that writes to stderr or to the program's LogHandler,
// and the repeat limit in front of it.
#pragma once

#include <string_view>

#include "shoal/status.h"

namespace shoal {

// Makes the library's logger spdlog's default, unless the program has set
// one of its own; once per process. Client::Open and Client::FromYaml call it.
void UseLibraryLoggerOnce();
// The same, whatever the default logger is now (the `shoal` binary: its own
// messages and the libraries' alike go to stderr, repeats held back).
void UseLibraryLogger();

// "text" (the default: spdlog's line) or "json": one object per line,
// {"time","level","pid","thread","msg"}, for log shippers (log.format,
// SHOAL_LOG_FORMAT). Applies to the library's logger, whatever writes to it.
Status SetLogFormat(std::string_view format);

}  // namespace shoal
