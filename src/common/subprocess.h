// Subprocess: a child process with its stdout on a pipe, for `shoal up` and
// for tests that start real servers. The child gets its own process group and
// is killed (SIGTERM, then SIGKILL) when the Subprocess is destroyed, and it
// dies with us (PR_SET_PDEATHSIG) if we die first.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

class Subprocess {
 public:
  struct Options {
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;  // added to (or overriding) the parent's
    std::string cwd;
    bool stderr_to_stdout = false;            // else stderr is inherited
    std::string stderr_file;                  // when set, stderr goes here
  };

  static Result<Subprocess> Start(const Options& options);

  Subprocess() = default;
  Subprocess(Subprocess&& o) noexcept;
  Subprocess& operator=(Subprocess&& o) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }

  // Reads stdout lines until one contains `needle`; returns that line. Fails on
  // timeout or when the child exits first (the message holds what it printed).
  Result<std::string> WaitForLine(const std::string& needle, std::chrono::milliseconds timeout);

  // Sends `sig` to the child's process group.
  void Signal(int sig);
  // SIGTERM, waits up to `grace`, then SIGKILL. Returns the exit status (as from waitpid).
  int Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // Waits for exit; returns the raw wait status, or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout);
  bool running();

  // Everything read from stdout so far.
  const std::string& output() const { return out_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int status_ = -1;
  std::string out_;
  size_t scanned_ = 0;
};

}  // namespace shoal
