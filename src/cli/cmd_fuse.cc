// shoal fuse MOUNTPOINT [--config FILE] [--path /data] [-o OPTION]... [--foreground] [--log FILE]
// shoal fuse --unmount MOUNTPOINT
//
// Without --foreground it behaves like mount(8): it starts the mount daemon
// (this binary again, with --foreground, in its own session, logging to a
// file), waits until the kernel has initialised the mount, prints
// `mounted: MOUNTPOINT (pid PID, log FILE)` and returns. The daemon tells it
// through a pipe (--ready-fd): "ok" once usable, or the error line.
//
// The daemon leaves a pid file beside its log so that --unmount can wait
// for it to exit.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "cli/commands.h"
#include "common/end_user.h"
#include "common/service_notify.h"
#include "fuse/fuse_mount.h"
#include "fuse/mount_view.h"

namespace shoal::cli {
namespace {

using namespace std::chrono_literals;

// How long `shoal fuse` waits for its daemon to have the mount ready.
constexpr auto kReadyTimeout = 60s;
// How long --unmount waits for the daemon to exit after the unmount.
constexpr auto kExitTimeout = 30s;

struct FuseArgs {
  ClientOptions client;
  std::string mountpoint;
  std::string path = "/";
  std::vector<std::string> options;
  bool foreground = false;
  bool unmount = false;
  std::string log;
  int ready_fd = -1;
};

// Where the daemon of a mount point logs and leaves its pid:
// /tmp/shoal-UID/fuse/<mount point with '/' as '_'>.{log,pid}.
std::string RuntimeBase(const std::string& mountpoint) {
  std::string dir = "/tmp/shoal-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  dir += "/fuse";
  ::mkdir(dir.c_str(), 0700);
  std::string abs = fuse::AbsolutePath(mountpoint);
  std::string name;
  for (char c : abs) name += c == '/' ? '_' : c;
  while (!name.empty() && name.front() == '_') name.erase(0, 1);
  return dir + "/" + (name.empty() ? "root" : name);
}

bool ProcessGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  // A zombie (exited, not yet reaped by its parent) is gone too.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

int RunUnmount(const FuseArgs& a) {
  std::string type;
  if (!fuse::IsMounted(a.mountpoint, &type)) {
    return Fail(Status(Code::kNotFound, a.mountpoint + " is not mounted"));
  }
  if (type != "fuse.shoal") {
    return Fail(Status(Code::kInvalidArgument,
                       a.mountpoint + " is a " + type + " mount, not a Shoal one: unmount it with umount"));
  }
  const std::string base = RuntimeBase(a.mountpoint);
  pid_t pid = 0;
  std::ifstream(base + ".pid") >> pid;
  if (auto st = fuse::Unmount(a.mountpoint, false); !st.ok()) return Fail(st);
  if (pid > 0) {
    auto end = std::chrono::steady_clock::now() + kExitTimeout;
    while (!ProcessGone(pid) && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(20ms);
    if (!ProcessGone(pid)) {
      return Fail(Status(Code::kTimeout, "unmounted " + a.mountpoint + ", but its daemon (pid " + std::to_string(pid) +
                                             ") has not exited after " + std::to_string(kExitTimeout.count()) +
                                             " s; see " + base + ".log"));
    }
  }
  std::printf("unmounted: %s\n", a.mountpoint.c_str());
  return 0;
}

void WriteAllFd(int fd, const std::string& s) {
  for (size_t done = 0; done < s.size();) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Whether the mount names each calling process's user to the workers: when
// its own credential may act for others. Asked once, at mount. When the
// workers cannot say, the mount names its callers anyway: that is never more
// than they may do (a worker refuses a name from a door it does not trust).
bool ActsForCallers(Client& client) {
  if (!client.presents_credential()) return false;  // anonymous: it speaks for nobody
  auto id = client.WhoAmI();
  if (!id) {
    spdlog::warn(
        "could not ask the workers who this mount is ({}): requests name their calling user, and are refused "
        "unless the mount's credential is in security.proxy_users",
        id.error().message());
    return true;
  }
  if (id->may_act_for_others) {
    spdlog::info("the mount is {} ({}): each request names the calling process's user and groups", id->user, id->proof);
    return true;
  }
  spdlog::info("the mount is {} ({}), not in security.proxy_users: every request is made as {}", id->user, id->proof,
               id->user);
  return false;
}

// The daemon: serves the mount until it ends.
int RunForeground(const FuseArgs& a) {
  auto fail = [&](const Status& st) {
    if (a.ready_fd >= 0) {
      WriteAllFd(a.ready_fd, st.message() + "\n");
      ::close(a.ready_fd);
    }
    return Fail(st);
  };
  auto client = OpenClient(a.client);
  if (!client) return fail(client.error());
  // The daemon's log keeps warnings (a failing worker, a fallback) and its
  // start and end; SHOAL_LOG overrides.
  if (const char* level = std::getenv("SHOAL_LOG"); !level || !*level) {
    spdlog::set_level(a.client.verbose ? spdlog::level::debug : spdlog::level::info);
  }
  const std::string pid_file = RuntimeBase(a.mountpoint) + ".pid";
  bool ready = false;
  fuse::FuseMountOptions o;
  o.mountpoint = a.mountpoint;
  o.base = a.path;
  o.options = a.options;
  o.on_ready = [&] {
    ready = true;
    std::ofstream(pid_file) << ::getpid() << "\n";
    std::printf("mounted: %s\n", a.mountpoint.c_str());
    std::fflush(stdout);
    // Under systemd (Type=notify): ready once mounted.
    if (auto st = NotifyServiceManager("READY=1\nSTATUS=mounted on " + a.mountpoint); !st.ok()) {
      spdlog::warn("{}", st.message());
    }
    if (a.ready_fd >= 0) {
      WriteAllFd(a.ready_fd, "ok\n");
      ::close(a.ready_fd);
    }
  };
  o.act_for_callers = ActsForCallers(**client);
  Status st = fuse::RunFuseMount(**client, o);
  if (ready) ::unlink(pid_file.c_str());
  if (!st.ok()) return ready ? Fail(st) : fail(st);
  return 0;
}

// Starts the daemon and waits until the mount is usable.
int RunBackground(const FuseArgs& a, const std::vector<std::string>& argv) {
  const std::string log = a.log.empty() ? RuntimeBase(a.mountpoint) + ".log" : fuse::AbsolutePath(a.log);
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return Fail(Status(Code::kIo, "cannot open log file " + log + ": " + std::strerror(errno)));
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return Fail(Status(Code::kIo, std::string("pipe: ") + std::strerror(errno)));
  std::vector<std::string> args = argv;
  args.push_back("--foreground");
  args.push_back("--ready-fd");
  args.push_back(std::to_string(ready[1]));
  std::vector<char*> cargv;
  for (auto& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  const std::string exe = SelfExe();
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    ::setsid();
    if (::chdir("/") != 0) ::_exit(126);
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::fcntl(ready[1], F_SETFD, 0);
    ::execv(exe.c_str(), cargv.data());
    ::_exit(127);
  }
  ::close(ready[1]);
  ::close(log_fd);
  if (pid < 0) return Fail(Status(Code::kIo, std::string("cannot start the mount daemon: ") + std::strerror(errno)));

  std::string answer;
  auto end = std::chrono::steady_clock::now() + kReadyTimeout;
  while (answer.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{ready[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char buf[4096];
    ssize_t n = ::read(ready[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the daemon exited (or closed the pipe) without an answer
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(ready[0]);
  if (answer == "ok\n") {
    std::printf("mounted: %s (pid %d, log %s)\n", a.mountpoint.c_str(), static_cast<int>(pid), log.c_str());
    return 0;
  }
  if (answer.empty()) {
    // Neither ready nor failed in time: do not leave a half-started daemon.
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!answer.empty()) {
    while (!answer.empty() && answer.back() == '\n') answer.pop_back();
    std::fprintf(stderr, "shoal: error: %s\n", answer.c_str());
    return WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
  }
  return Fail(Status(Code::kUnavailable, "the mount daemon did not get " + a.mountpoint + " ready within " +
                                             std::to_string(kReadyTimeout.count()) + " s; its log is " + log));
}

int RunFuse(const FuseArgs& a, const std::vector<std::string>& argv) {
  if (a.unmount) return RunUnmount(a);
  SetDoorName("fuse");
  // Before any thread exists: the stop signals are taken by the session's
  // own thread (fuse_mount.h).
  fuse::BlockStopSignals();
  if (a.foreground) return RunForeground(a);
  // Checked here too, so that the usual mistakes are one line now.
  if (auto st = fuse::CheckMountpoint(a.mountpoint); !st.ok()) return Fail(st);
  if (auto st = fuse::CheckMountOptions(a.options); !st.ok()) return Fail(st);
  {
    auto client = OpenClient(a.client);
    if (!client) return Fail(client.error());
    auto view = fuse::MountView::Make((*client)->Mounts(), a.path);
    if (!view) return Fail(view.error());
  }
  return RunBackground(a, argv);
}

}  // namespace

void AddFuse(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<FuseArgs>();
  auto* cmd = app.add_subcommand("fuse", "Mount the Shoal namespace as a file system (FUSE), or unmount it");
  AddClientOptions(cmd, &a->client);
  cmd->add_option("mountpoint", a->mountpoint, "An existing directory to mount on")->required();
  cmd->add_option("--path", a->path, "The namespace path to show at the mount's root (default: / with every mount)")
      ->capture_default_str();
  cmd->add_option("-o,--option", a->options, "A FUSE mount option, e.g. -o allow_other (repeatable)");
  cmd->add_flag("-f,--foreground", a->foreground, "Stay in the foreground, logging to stderr, until unmounted");
  cmd->add_option("--log", a->log, "The daemon's log file (default: /tmp/shoal-UID/fuse/MOUNTPOINT.log)");
  cmd->add_flag("-u,--unmount", a->unmount, "Unmount MOUNTPOINT and wait for its daemon to exit");
  cmd->add_option("--ready-fd", a->ready_fd)->group("");  // internal: the pipe to the starting `shoal fuse`
  cmd->callback([a, exit_code] {
    // The daemon is started with the same arguments, then --foreground,
    // from "/" (so that it keeps no directory busy): paths made absolute.
    std::vector<std::string> argv = {"shoal", "fuse", fuse::AbsolutePath(a->mountpoint), "--path", a->path};
    if (!a->client.config.empty()) argv.insert(argv.end(), {"--config", fuse::AbsolutePath(a->client.config)});
    if (a->client.verbose) argv.push_back("-v");
    for (const auto& o : a->options) argv.insert(argv.end(), {"-o", o});
    *exit_code = RunFuse(*a, argv);
  });
}

}  // namespace shoal::cli
