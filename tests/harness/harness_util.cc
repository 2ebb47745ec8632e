#include "tests/harness/harness_util.h"

#include <signal.h>
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

}  // namespace shoal::testing
