// What the test-server harnesses (s3rver, Azurite, WebHDFS) share: where the
// repository's test tools are, and scratch directories for the servers' data.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "shoal/status.h"

namespace shoal::testing {

// Repository roots to look for test tools in, in order: $SHOAL_SOURCE_DIR
// when set, then the source tree the harness was built from.
std::vector<std::string> SourceRoots();
// The first of SourceRoots().
std::string SourceDir();

// Creates /tmp/shoal-<name>-XXXXXX. On failure the error says it was for `what`.
Result<std::string> MakeTempDir(std::string_view name, std::string_view what);

// n random bytes from `seed` (the same bytes for the same seed).
std::string RandomBytes(size_t n, uint64_t seed);

// Polls `done` every 20 ms until it holds or `timeout` passes.
template <class F>
bool WaitFor(F done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // poll interval
  }
  return done();
}

// SIGSTOPs process `pid` (the leader of its own process group: the whole
// group is signalled) and waits, up to 10 s, until every thread of it is
// stopped: kill() returns before the stop takes effect, and a thread that is
// still running could answer one more request. False on timeout.
bool FreezeProcess(pid_t pid);
// SIGCONTs the group again.
void ThawProcess(pid_t pid);

// A TCP listener on an ephemeral 127.0.0.1 port for a server a test runs in
// its own process (a fake store, a paced one). One thread accepts and hands
// each connection to `serve`, one at a time, then closes it. The destructor
// stops: it wakes the accept loop and anything polling stop_fd(), and joins.
// A test that cannot listen fails (ADD_FAILURE is the caller's: port() is 0).
class LoopbackListener {
 public:
  explicit LoopbackListener(std::function<void(int fd)> serve);
  ~LoopbackListener();
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  int port() const { return port_; }
  // Readable once the listener is stopping: poll it beside a connection.
  int stop_fd() const { return stop_[0]; }

 private:
  void Loop();

  std::function<void(int)> serve_;
  int fd_ = -1, port_ = 0, stop_[2] = {-1, -1};
  std::thread thread_;
};

// A directory removed, with everything in it, when its last owner lets go.
struct ScratchDir {
  std::string path;
  ~ScratchDir();
};
// MakeTempDir() owned by a ScratchDir.
Result<std::shared_ptr<ScratchDir>> MakeScratchDir(std::string_view name, std::string_view what);

}  // namespace shoal::testing
