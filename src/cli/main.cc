#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Shoal: a distributed read-through cache for AI training data"};
  app.require_subcommand(1);
  int exit_code = 0;
  shoal::cli::AddUp(app, &exit_code);
  shoal::cli::AddWorker(app, &exit_code);
  shoal::cli::AddClientCommands(app, &exit_code);
  shoal::cli::AddReadCommands(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
