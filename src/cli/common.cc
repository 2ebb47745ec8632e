#include <cstdio>

#include "cli/commands.h"

namespace shoal::cli {

namespace {

// The process exit code for a failed command (README, "The CLI").
int ToExitCode(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument: return 2;
    case Code::kNotFound: return 3;
    case Code::kPermissionDenied: return 4;
    case Code::kUnavailable:
    case Code::kTimeout: return 5;
    default: return 1;
  }
}

}  // namespace

int Fail(const Status& s) {
  std::fprintf(stderr, "shoal: error: %s\n", s.message().c_str());
  return ToExitCode(s);
}

void AddConfigOption(CLI::App* cmd, std::string* path) {
  cmd->add_option("--config,-c", *path, "Client config file (default: $SHOAL_CONFIG; `shoal up` prints one)");
}

Result<std::unique_ptr<Client>> OpenClient(const std::string& config_path) { return Client::Open(config_path); }

}  // namespace shoal::cli
