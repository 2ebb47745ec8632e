#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>

#include "cli/commands.h"

int main(int argc, char** argv) {
  // Every shoal process writes to sockets whose peer may leave at any time
  // (sendfile cannot be told MSG_NOSIGNAL): a write to a closed peer must
  // fail with EPIPE, never kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  // Logs go to stderr: stdout carries command output (and `listening:` / `ready:` lines).
  spdlog::set_default_logger(spdlog::stderr_logger_mt("shoal"));
  if (const char* level = std::getenv("SHOAL_LOG")) spdlog::set_level(spdlog::level::from_str(level));

  CLI::App app{"Shoal: a distributed read-through cache for AI training data"};
  app.require_subcommand(1);
  int exit_code = 0;
  shoal::cli::AddUp(app, &exit_code);
  shoal::cli::AddWorker(app, &exit_code);
  shoal::cli::AddClientCommands(app, &exit_code);
  shoal::cli::AddReadCommands(app, &exit_code);
  shoal::cli::AddWriteCommands(app, &exit_code);
  shoal::cli::AddFuse(app, &exit_code);
  shoal::cli::AddS3(app, &exit_code);
  shoal::cli::AddLoadCommands(app, &exit_code);
  shoal::cli::AddRulesCommands(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
