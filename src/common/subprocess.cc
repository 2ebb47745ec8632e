#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace shoal {

using Clock = std::chrono::steady_clock;

Result<Subprocess> Subprocess::Start(const Options& o) {
  if (o.argv.empty()) return Err(Code::kInvalidArgument, "Subprocess: empty argv");
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return Err(Code::kIo, std::string("pipe: ") + std::strerror(errno));
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Err(Code::kIo, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    // The parent may block signals to take them synchronously; the child starts clean.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(pipefd[1], 1);
    if (o.stderr_to_stdout) ::dup2(pipefd[1], 2);
    if (!o.stderr_file.empty()) {
      int fd = ::open(o.stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) ::dup2(fd, 2);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) ::_exit(126);
    for (const auto& [k, v] : o.env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(pipefd[1]);
  Subprocess p;
  p.pid_ = pid;
  p.out_fd_ = pipefd[0];
  return p;
}

Subprocess::Subprocess(Subprocess&& o) noexcept { *this = std::move(o); }

Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0) Stop();
    if (out_fd_ >= 0) ::close(out_fd_);
    pid_ = o.pid_;
    out_fd_ = o.out_fd_;
    status_ = o.status_;
    out_ = std::move(o.out_);
    scanned_ = o.scanned_;
    o.pid_ = -1;
    o.out_fd_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0) Stop();
  if (out_fd_ >= 0) ::close(out_fd_);
}

Result<std::string> Subprocess::WaitForLine(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    // Look for a complete line containing the needle.
    size_t start = scanned_;
    for (;;) {
      size_t nl = out_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line = out_.substr(start, nl - start);
      start = nl + 1;
      scanned_ = start;
      if (line.find(needle) != std::string::npos) return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Err(Code::kTimeout, "no line with '" + needle + "' within " + std::to_string(timeout.count()) +
                                     " ms; output so far:\n" + out_);
    }
    if (out_fd_ < 0) return Err(Code::kUnavailable, "process exited before printing '" + needle + "':\n" + out_);
    pollfd pfd{out_fd_, POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    if (rc < 0 && errno != EINTR) return Err(Code::kIo, std::string("poll: ") + std::strerror(errno));
    if (rc > 0) {
      char buf[4096];
      ssize_t n = ::read(out_fd_, buf, sizeof buf);
      if (n > 0) {
        out_.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        ::close(out_fd_);
        out_fd_ = -1;
        if (out_.find(needle, scanned_) != std::string::npos) {
          out_ += '\n';
          continue;
        }
        return Err(Code::kUnavailable, "process exited before printing '" + needle + "'; its output:\n" + out_);
      }
    }
  }
}

void Subprocess::Signal(int sig) {
  if (pid_ > 0) ::kill(-pid_, sig);
}

bool Subprocess::running() {
  if (pid_ <= 0) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = st;
    ::kill(-pid_, SIGKILL);  // any grandchildren left in the group
    pid_ = -1;
    return false;
  }
  return true;
}

int Subprocess::Wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() >= deadline) return -1;
    // Drain stdout so a chatty child never blocks on a full pipe.
    if (out_fd_ >= 0) {
      pollfd pfd{out_fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 10) > 0) {
        char buf[4096];
        ssize_t n = ::read(out_fd_, buf, sizeof buf);
        if (n > 0) out_.append(buf, static_cast<size_t>(n));
        else if (n == 0) {
          ::close(out_fd_);
          out_fd_ = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // Whatever the child wrote just before exiting is still in the pipe.
  while (out_fd_ >= 0) {
    pollfd pfd{out_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) break;
    char buf[65536];
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) {
      ::close(out_fd_);
      out_fd_ = -1;
      break;
    }
    out_.append(buf, static_cast<size_t>(n));
  }
  return status_;
}

int Subprocess::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return status_;
  Signal(SIGTERM);
  int st = Wait(grace);
  if (st == -1 && pid_ > 0) {
    Signal(SIGKILL);
    st = Wait(std::chrono::milliseconds(10'000));
  }
  return st;
}

}  // namespace shoal
