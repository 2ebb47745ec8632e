#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/commands.h"
#include "common/library_log.h"
#include "ufs/under_store.h"

namespace shoal::cli {

namespace {

// The process exit code for a failed command (README, "The CLI").
int ToExitCode(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument: return 2;
    case Code::kNotFound: return 3;
    case Code::kPermissionDenied:
    case Code::kReadOnly: return 4;
    case Code::kUnavailable:
    case Code::kTimeout: return 5;
    default: return 1;
  }
}

// What a failed mkdir or create in a local directory says to the user's exit code.
Code CodeForErrno(int err) {
  switch (err) {
    case EROFS: return Code::kReadOnly;
    case EACCES:
    case EPERM: return Code::kPermissionDenied;
    case ENOTDIR:
    case EEXIST: return Code::kInvalidArgument;  // a file where a directory belongs
    default: return Code::kIo;
  }
}

}  // namespace

int Fail(const Status& s) {
  std::fprintf(stderr, "shoal: error: %s\n", s.message().c_str());
  return ToExitCode(s);
}

void AddClientOptions(CLI::App* cmd, ClientOptions* options) {
  cmd->add_option("--config,-c", options->config, "Client config file (default: $SHOAL_CONFIG; `shoal up` prints one)");
  cmd->add_flag("-v,--verbose", options->verbose, "Also log warnings and info (a failing worker, fallbacks) to stderr");
}

Result<std::unique_ptr<Client>> OpenClient(const ClientOptions& options) {
  if (const char* level = std::getenv("SHOAL_LOG"); !level || !*level) {
    spdlog::set_level(options.verbose ? spdlog::level::info : spdlog::level::err);
  }
  return Client::Open(options.config);
}

void SetUpLogging() {
  UseLibraryLogger();
  if (const char* level = std::getenv("SHOAL_LOG")) spdlog::set_level(spdlog::level::from_str(level));
  if (const char* format = std::getenv("SHOAL_LOG_FORMAT"); format && *format) {
    if (auto st = SetLogFormat(format); !st.ok())
      std::fprintf(stderr, "shoal: SHOAL_LOG_FORMAT: %s\n", st.message().c_str());
  }
}

Status MakeDirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    const std::string cur = dir.substr(0, i);
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      const int err = errno;
      return Status(CodeForErrno(err), "cannot create directory '" + cur + "': " + std::strerror(err));
    }
  }
  return {};
}

Status CheckCacheDir(const std::string& dir) {
  if (auto made = MakeDirs(dir); !made.ok()) {
    return Status(made.code(), "cache dir '" + dir + "': " + made.message() + " (give a writable --cache-dir)");
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(Code::kInvalidArgument, "cache dir '" + dir + "' is not a directory: give a directory");
  }
  // The one way to know that the worker can write its page files there.
  std::string probe = dir + "/.shoal-write-check-XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const int err = errno;
    return Status(CodeForErrno(err), "cache dir '" + dir + "' cannot be written: " + std::strerror(err) +
                                         " (give a writable --cache-dir)");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

Status ValidateMounts(const Config& config) {
  for (const auto& m : config.mounts) {
    if (auto st = ValidateMount(m); !st.ok()) return st.WithContext("mount " + m.path);
  }
  return {};
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "shoal";
}

void RaiseOpenFilesLimit() {
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0) return;
  const rlim_t want = std::min<rlim_t>(nofile.rlim_max, 65536);
  if (nofile.rlim_cur >= want) return;
  nofile.rlim_cur = want;
  ::setrlimit(RLIMIT_NOFILE, &nofile);
}

}  // namespace shoal::cli
