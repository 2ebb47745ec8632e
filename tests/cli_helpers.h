// What the `shoal` command-line tests share: running one command, running
// `shoal up` until it is ready (or has failed), and reading workers' HTTP
// endpoints.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "shoal/status.h"

namespace shoal::testing {

struct Run {
  int exit_code = -1;  // -1: killed by a signal or still running at the timeout
  std::string out;
  std::string err;
};

// Runs `shoal ARGS...` to completion.
Run Shoal(std::vector<std::string> args, std::chrono::seconds timeout = std::chrono::seconds(120));
// Runs any command to completion (argv[0] is looked up on PATH).
Run Command(std::vector<std::string> argv, std::chrono::seconds timeout = std::chrono::seconds(120));

// `shoal up ARGS...`, launched and waited on until it prints `ready:` or exits.
struct Up {
  Subprocess proc;
  bool ready = false;
  int exit_code = -1;   // when it exited before `ready:`
  std::string config;   // the config path of its `ready:` line
  std::string err_file; // its stderr
  std::string err() const;
};
Up LaunchUp(std::vector<std::string> args, const std::string& err_file);

std::string Slurp(const std::string& path);

// The number of lines of `text` holding `needle`.
int CountLines(const std::string& text, const std::string& needle);

// Whether `mp` is a mount point of this process's mount namespace.
bool Mounted(const std::string& mp);

}  // namespace shoal::testing
