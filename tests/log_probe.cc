// A program that uses the client library the way the README's shoal_cat does,
// for tests/library_log_test.cc: it opens COUNT clients one after the other
// (as the processes of a DataLoader would, each with its own Client) and
// writes the bytes of PATH to stdout once per client.
//
//   log_probe CONFIG PATH COUNT [default|handler|errors-only]
//
// default:     the library's logging untouched (stderr).
// handler:     shoal::SetLogHandler; each message the handler receives is
//              written to stderr as "hook: LEVEL: TEXT".
// errors-only: shoal::SetLogLevel(kError).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/client.h"
#include "shoal/log.h"

namespace {

const char* Name(shoal::LogLevel level) {
  switch (level) {
    case shoal::LogLevel::kDebug: return "debug";
    case shoal::LogLevel::kInfo: return "info";
    case shoal::LogLevel::kWarning: return "warning";
    case shoal::LogLevel::kError: return "error";
    case shoal::LogLevel::kOff: return "off";
  }
  return "?";
}

int Cat(const std::string& config, const char* path) {
  auto client = shoal::Client::Open(config);
  if (!client) return std::fprintf(stderr, "log_probe: %s\n", client.error().ToString().c_str()), 1;
  auto file = (*client)->OpenFile(path);
  if (!file) return std::fprintf(stderr, "log_probe: %s\n", file.error().ToString().c_str()), 1;
  std::vector<char> buf(1 << 20);
  while (true) {
    auto n = (*file)->Read(buf);
    if (!n) return std::fprintf(stderr, "log_probe: %s\n", n.error().ToString().c_str()), 1;
    if (*n == 0) return 0;
    std::fwrite(buf.data(), 1, *n, stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return std::fprintf(stderr, "usage: log_probe CONFIG PATH COUNT [default|handler|errors-only]\n"), 2;
  const std::string mode = argc > 4 ? argv[4] : "default";
  if (mode == "handler") {
    shoal::SetLogHandler([](shoal::LogLevel level, std::string_view text) {
      std::fprintf(stderr, "hook: %s: %.*s\n", Name(level), static_cast<int>(text.size()), text.data());
    });
  } else if (mode == "errors-only") {
    shoal::SetLogLevel(shoal::LogLevel::kError);
  }
  for (int i = 0, count = std::stoi(argv[3]); i < count; ++i) {
    if (int rc = Cat(argv[1], argv[2]); rc != 0) return rc;
  }
  return 0;
}
