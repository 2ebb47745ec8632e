#include <csignal>
#include <cstdlib>

#include "cli/commands.h"
#include "common/end_user.h"

int main(int argc, char** argv) {
  // Every shoal process writes to sockets whose peer may leave at any time
  // (sendfile cannot be told MSG_NOSIGNAL): a write to a closed peer must
  // fail with EPIPE, never kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  shoal::cli::SetUpLogging();
  shoal::SetDoorName("cli");  // fuse and s3 say otherwise when they start

  CLI::App app{"Shoal: a distributed read-through cache for AI training data"};
  app.require_subcommand(1);
  app.set_version_flag("--version", shoal::cli::VersionText(), "Print the version, commit and build type, and exit");
  int exit_code = 0;
  shoal::cli::AddUp(app, &exit_code);
  shoal::cli::AddWorker(app, &exit_code);
  shoal::cli::AddClientCommands(app, &exit_code);
  shoal::cli::AddReadCommands(app, &exit_code);
  shoal::cli::AddWriteCommands(app, &exit_code);
  shoal::cli::AddFuse(app, &exit_code);
  shoal::cli::AddS3(app, &exit_code);
  shoal::cli::AddLoadCommands(app, &exit_code);
  shoal::cli::AddScrubCommand(app, &exit_code);
  shoal::cli::AddTokenCommands(app, &exit_code);
  shoal::cli::AddPolicyCommands(app, &exit_code);
  shoal::cli::AddRulesCommands(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return shoal::cli::ReportParseError(app, e);
  }
  return exit_code;
}
