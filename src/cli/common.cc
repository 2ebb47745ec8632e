#include <cstdio>

#include "cli/commands.h"

namespace shoal::cli {

int Fail(const Status& s) {
  std::fprintf(stderr, "shoal: error: %s\n", s.message().c_str());
  return ToExitCode(s);
}

void AddConfigOption(CLI::App* cmd, std::string* path) {
  cmd->add_option("--config,-c", *path, "Client config file (default: $SHOAL_CONFIG; `shoal up` prints one)");
}

Result<std::unique_ptr<Client>> OpenClient(const std::string& config_path) { return Client::Open(config_path); }

}  // namespace shoal::cli
