#include "worker/local_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "common/end_user.h"
#include "common/metrics.h"

namespace shoal {

namespace {

constexpr size_t kMaxConnections = 256;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) {
    return Err(Code::kInvalidArgument, "worker.local_socket '" + path + "' must be a path of 1 to " +
                                           std::to_string(sizeof a.sun_path - 1) + " bytes");
  }
  std::memcpy(a.sun_path, path.data(), path.size());
  return a;
}

// 0 when a worker listens at `a` now; otherwise connect's errno
// (ECONNREFUSED: a socket file nobody listens on any more).
int ProbeErrno(const sockaddr_un& a) {
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

}  // namespace

class LocalServer::Impl {
 public:
  Impl(std::string path, std::string token, Handler handler, int epoch_fd, std::chrono::milliseconds hello_deadline)
      : path_(std::move(path)),
        token_(std::move(token)),
        handler_(std::move(handler)),
        epoch_fd_(epoch_fd),
        hello_deadline_(hello_deadline) {}

  ~Impl() {
    if (stop_w_ >= 0) {
      char c = 1;
      (void)!::write(stop_w_, &c, 1);  // wakes the acceptor
    }
    if (acceptor_.joinable()) acceptor_.join();
    std::list<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      // Wakes every connection blocked in its receive (it then reads the end).
      for (const auto& [c, state] : live_) ::shutdown(c, SHUT_RDWR);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      ::unlink(path_.c_str());
    }
    if (stop_r_ >= 0) ::close(stop_r_);
    if (stop_w_ >= 0) ::close(stop_w_);
  }

  Status Listen() {
    auto addr = UnixAddress(path_);
    if (!addr) return addr.error();
    struct stat st;
    if (::lstat(path_.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        return Status(Code::kAlreadyExists, "worker.local_socket " + path_ + " exists and is not a socket");
      }
      if (ProbeErrno(*addr) == 0) {
        return Status(Code::kAlreadyExists, "worker.local_socket " + path_ + " belongs to a live worker");
      }
      ::unlink(path_.c_str());  // left by a worker that died
    }
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Status(Code::kIo, Errno("pipe"));
    stop_r_ = pipe_fds[0];
    stop_w_ = pipe_fds[1];
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status(Code::kIo, Errno("socket(AF_UNIX)"));
    // Only this user may connect (SO_PEERCRED checks it again at accept).
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
      Status s(Code::kIo, Errno("cannot bind worker.local_socket " + path_));
      ::close(fd);
      return s;
    }
    if (::chmod(path_.c_str(), 0600) != 0 || ::listen(fd, 64) != 0) {
      Status s(Code::kIo, Errno("cannot listen on worker.local_socket " + path_));
      ::close(fd);
      ::unlink(path_.c_str());
      return s;
    }
    listen_fd_ = fd;
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return {};
  }

  const std::string& path() const { return path_; }

 private:
  // Waits until `fd` is readable; false once the server is stopping.
  bool WaitReadable(int fd) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_r_, POLLIN, 0}};
    for (;;) {
      int n = ::poll(p, 2, -1);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || p[1].revents) return false;
      return true;
    }
  }

  void AcceptLoop() {
    while (WaitReadable(listen_fd_)) {
      int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ucred cred{};
      socklen_t len = sizeof cred;
      if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
        spdlog::warn("short-circuit connection from uid {} refused: only the worker's own user may connect",
                     cred.uid);
        ::close(c);
        continue;
      }
      // The hello must come within the deadline (a silent connection holds a place).
      timeval tv{static_cast<time_t>(hello_deadline_.count() / 1000),
                 static_cast<suseconds_t>(hello_deadline_.count() % 1000 * 1000)};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::lock_guard lock(mu_);
      ReapLocked();
      if (live_.size() >= kMaxConnections && !CloseOldestIdleLocked()) {
        spdlog::warn("short-circuit connection refused: {} open, all of them busy", live_.size());
        ::close(c);
        continue;
      }
      live_[c] = Conn{Clock::now(), false, false};
      open_gauge_->Set(static_cast<int64_t>(live_.size()));
      threads_.emplace_back([this, c] {
        Serve(c);
        std::lock_guard l(mu_);
        live_.erase(c);  // before the close: the destructor never shuts down a reused number
        open_gauge_->Set(static_cast<int64_t>(live_.size()));
        ::close(c);
        finished_.push_back(std::this_thread::get_id());
      });
    }
  }

  // At the cap: shuts down the connection idle longest (one that never
  // greeted first), whose thread then ends; false when every one is busy
  // with a request. Its client connects again at its next request.
  bool CloseOldestIdleLocked() {
    int victim = -1;
    Conn best{};
    for (const auto& [c, conn] : live_) {
      if (conn.busy || conn.closing) continue;
      // Ungreeted before greeted, then the longest idle.
      if (victim < 0 || (!conn.greeted && best.greeted) ||
          (conn.greeted == best.greeted && conn.last_active < best.last_active)) {
        victim = c;
        best = conn;
      }
    }
    if (victim < 0) return false;
    live_[victim].closing = true;
    ::shutdown(victim, SHUT_RDWR);
    closed_for_cap_->Add();
    return true;
  }

  // Notes a connection's state: greeted, and whether a request is being served.
  void Note(int c, bool greeted, bool busy) {
    std::lock_guard lock(mu_);
    auto it = live_.find(c);
    if (it == live_.end()) return;
    it->second.greeted = greeted;
    it->second.busy = busy;
    it->second.last_active = Clock::now();
  }

  // Joins the threads of connections that ended.
  void ReapLocked() {
    for (auto id : finished_) {
      for (auto it = threads_.begin(); it != threads_.end(); ++it) {
        if (it->get_id() == id) {
          it->join();  // it has left Serve and only returns now
          threads_.erase(it);
          break;
        }
      }
    }
    finished_.clear();
  }

  // One connection's requests, until the client leaves or the server stops
  // (the destructor shuts the socket down). The receive blocks: no poll per
  // request.
  void Serve(int c) {
    bool greeted = false;
    std::string_view door = "native";  // what the hello names (local_wire.h)
    std::string bytes;
    std::vector<int> stray_fds;
    for (;;) {
      Status st = local_wire::RecvRecord(c, &bytes, &stray_fds);
      for (int fd : stray_fds) ::close(fd);  // clients send none
      stray_fds.clear();
      if (!st.ok()) {
        if (!greeted && st.code() == Code::kTimeout) {
          hello_timeouts_->Add();
          spdlog::debug("short-circuit connection closed: no hello within {} ms", hello_deadline_.count());
        }
        return;
      }
      Note(c, greeted, true);
      auto req = local_wire::DecodeRequest(bytes);
      local_wire::Reply reply;
      std::vector<PageRef> pages;
      bool hello = false;  // this request is the accepted greeting
      if (!req) {
        reply.code = static_cast<int32_t>(req.error().code());
        reply.message = req.error().message();
      } else if (!greeted) {
        greeted = req->kind == local_wire::Kind::kHello && req->path == token_;
        hello = greeted;
        // A label, one of the known ones; older clients name none.
        if (greeted && !req->version.empty()) door = kClientDoors[ClientDoorIndex(req->version)];
        if (!greeted) {
          reply.code = static_cast<int32_t>(Code::kPermissionDenied);
          reply.message = "short-circuit hello with a wrong token: this socket belongs to another worker";
        }
      } else if (req->kind == local_wire::Kind::kHello) {
        reply.code = static_cast<int32_t>(Code::kInvalidArgument);
        reply.message = "unexpected short-circuit request kind";
      } else {
        req->door = door;
        reply = handler_(*req, &pages);
      }
      std::vector<int> fds;
      for (const auto& p : pages) fds.push_back(p.fd());
      if (hello && epoch_fd_ >= 0) {
        reply.segments.push_back({0, sizeof(uint64_t), 0, 0, 0, 0});  // the worker's epoch
        fds.push_back(epoch_fd_);
      }
      std::string out = local_wire::EncodeReply(reply);
      if (!local_wire::SendRecord(c, out, fds).ok() || !greeted) return;
      if (hello) {
        timeval none{0, 0};  // greeted: it may idle between requests
        ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
      }
      Note(c, greeted, false);
    }
  }

  using Clock = std::chrono::steady_clock;
  struct Conn {
    Clock::time_point last_active;
    bool greeted = false;
    bool busy = false;     // serving a request
    bool closing = false;  // shut down for the cap
  };

  std::string path_;
  std::string token_;
  Handler handler_;
  int epoch_fd_;
  int listen_fd_ = -1;
  int stop_r_ = -1, stop_w_ = -1;
  std::thread acceptor_;
  std::mutex mu_;
  std::chrono::milliseconds hello_deadline_;
  std::map<int, Conn> live_;  // the connections, by socket, while open
  Gauge* open_gauge_ = &MetricsRegistry::Global().GetGauge("shoal_short_circuit_connections",
                                                           "Short-circuit connections open from clients on this host");
  Counter* hello_timeouts_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_connections_closed_total",
      "Short-circuit connections the worker closed: no hello in time, or the oldest idle one at the connection cap",
      {{"reason", "hello_timeout"}});
  Counter* closed_for_cap_ = &MetricsRegistry::Global().GetCounter(
      "shoal_short_circuit_connections_closed_total",
      "Short-circuit connections the worker closed: no hello in time, or the oldest idle one at the connection cap",
      {{"reason", "cap"}});
  std::list<std::thread> threads_;
  std::vector<std::thread::id> finished_;
};

LocalServer::LocalServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalServer::~LocalServer() = default;
const std::string& LocalServer::path() const { return impl_->path(); }

Result<std::unique_ptr<LocalServer>> LocalServer::Start(const std::string& path, std::string token, Handler handler,
                                                        int epoch_fd, std::chrono::milliseconds hello_deadline) {
  auto impl = std::make_unique<Impl>(path, std::move(token), std::move(handler), epoch_fd, hello_deadline);
  SHOAL_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<LocalServer>(new LocalServer(std::move(impl)));
}

Result<std::string> LocalServer::AutoPath(unsigned port) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/shoal-sockets-" + std::to_string(::geteuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Err(Code::kIo, Errno("cannot create " + dir));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return Err(Code::kIo, Errno("cannot stat " + dir));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return Err(Code::kPermissionDenied, dir + " must be a directory of this user with mode 0700 (set worker.local_socket)");
  }
  // Sockets of workers that died without cleaning up (SIGKILL) would pile up here.
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (!name.starts_with("worker-") || !name.ends_with(".sock")) continue;
      std::string p = dir + "/" + name;
      auto a = UnixAddress(p);
      struct stat sst;
      // Young sockets are skipped: one may be bound but not yet listening.
      if (!a || ::lstat(p.c_str(), &sst) != 0 || !S_ISSOCK(sst.st_mode) || ::time(nullptr) - sst.st_mtime < 60) continue;
      if (ProbeErrno(*a) == ECONNREFUSED) ::unlink(p.c_str());
    }
    ::closedir(d);
  }
  return dir + "/worker-" + std::to_string(port) + ".sock";
}

}  // namespace shoal
