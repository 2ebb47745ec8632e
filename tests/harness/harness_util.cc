#include "tests/harness/harness_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace shoal::testing {

std::vector<std::string> SourceRoots() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("SHOAL_SOURCE_DIR"); env && *env) roots.push_back(env);
  roots.push_back(SHOAL_HARNESS_SOURCE_DIR);
  return roots;
}

std::string SourceDir() { return SourceRoots().front(); }

Result<std::string> MakeTempDir(std::string_view name, std::string_view what) {
  std::string tmpl = "/tmp/shoal-" + std::string(name) + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) return Err(Code::kIo, "cannot create a temporary directory for " + std::string(what));
  return tmpl;
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return s;
}

namespace {

// Whether every thread of `pid` is stopped ('T' in /proc/PID/task/TID/stat).
bool AllThreadsStopped(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
  if (ec) return true;  // gone: nothing left running
  for (const auto& task : it) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = stat.rfind(')');  // "TID (comm) STATE ..."
    if (paren == std::string::npos || paren + 2 >= stat.size()) continue;
    char state = stat[paren + 2];
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') return false;
  }
  return true;
}

}  // namespace

bool FreezeProcess(pid_t pid) {
  if (pid <= 0) return false;
  ::kill(-pid, SIGSTOP);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!AllThreadsStopped(pid)) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void ThawProcess(pid_t pid) {
  if (pid > 0) ::kill(-pid, SIGCONT);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

Result<std::shared_ptr<ScratchDir>> MakeScratchDir(std::string_view name, std::string_view what) {
  auto path = MakeTempDir(name, what);
  if (!path) return Err(path.error());
  auto dir = std::make_shared<ScratchDir>();
  dir->path = std::move(*path);
  return dir;
}

LoopbackListener::LoopbackListener(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 || ::pipe2(stop_, O_CLOEXEC) != 0) {
    return;  // port() stays 0
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Loop(); });
}

LoopbackListener::~LoopbackListener() {
  if (stop_[1] >= 0) (void)!::write(stop_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {fd_, stop_[0], stop_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void LoopbackListener::Loop() {
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[1].revents) return;
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    serve_(c);
    ::close(c);
  }
}

}  // namespace shoal::testing
