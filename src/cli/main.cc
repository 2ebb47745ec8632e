#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include "cli/commands.h"

int main(int argc, char** argv) {
  // Every shoal process writes to sockets whose peer may leave at any time
  // (sendfile cannot be told MSG_NOSIGNAL): a write to a closed peer must
  // fail with EPIPE, never kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  // Descriptors are what a cache holds: open page files, page files a same-host
  // client holds (leases), connections. Their caps follow RLIMIT_NOFILE, whose
  // soft limit is often 1024 against a much higher hard one: raise it to the
  // hard limit (at most 65536), as any process may. Children (`shoal up`'s
  // workers) inherit it.
  if (rlimit nofile{}; ::getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    const rlim_t want = std::min<rlim_t>(nofile.rlim_max, 65536);
    if (nofile.rlim_cur < want) {
      nofile.rlim_cur = want;
      ::setrlimit(RLIMIT_NOFILE, &nofile);
    }
  }
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
