#include "cluster/local_etcd.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "cluster/etcd_client.h"

namespace shoal {
namespace {

// A port nobody listens on right now (the kernel's pick for port 0).
Result<int> FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Err(Code::kIo, std::string("cannot create a socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  if (port <= 0) return Err(Code::kIo, "cannot find a free port on 127.0.0.1");
  return port;
}

std::string Tail(const std::string& file) {
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  if (ec) return "";
  FILE* f = std::fopen(file.c_str(), "r");
  if (!f) return "";
  std::string out(std::min<uintmax_t>(size, 600), '\0');
  std::fseek(f, static_cast<long>(size - out.size()), SEEK_SET);
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fclose(f);
  return out;
}

}  // namespace

bool LocalEtcd::Answers(const std::string& endpoint, std::chrono::milliseconds timeout, const EtcdClient::Tls& tls) {
  EtcdClient c({endpoint}, timeout, tls);
  return c.RangePrefix("/shoal-health-check/").has_value();
}

Result<LocalEtcd> LocalEtcd::Start(const Options& options) {
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return Err(Code::kNotFound, "etcd is not installed at " + options.binary +
                                    " (install Debian's etcd-server: apt-get install etcd-server)");
  }
  if (options.data_dir.empty()) return Err(Code::kInvalidArgument, "LocalEtcd needs a data dir");
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Err(Code::kIo, "cannot create etcd data dir " + options.data_dir + ": " + ec.message());
  std::filesystem::permissions(options.data_dir, std::filesystem::perms::owner_all, ec);
  const std::string log = options.log_file.empty() ? options.data_dir + ".log" : options.log_file;
  std::string last_error;
  // A port found free may be taken before etcd binds it: a few tries with new ports.
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto client = options.client_port > 0 ? Result<int>(options.client_port) : FreePort();
    auto peer = options.peer_port > 0 ? Result<int>(options.peer_port) : FreePort();
    if (!client) return Err(client.error());
    if (!peer) return Err(peer.error());
    const std::string c = Url(options, *client);
    const std::string p = "http://127.0.0.1:" + std::to_string(*peer);
    Subprocess::Options o;
    o.argv = {options.binary,
              "--name",
              "shoal",
              "--data-dir",
              options.data_dir,
              "--listen-client-urls",
              c,
              "--advertise-client-urls",
              c,
              "--listen-peer-urls",
              p,
              "--initial-advertise-peer-urls",
              p,
              "--initial-cluster",
              "shoal=" + p,
              "--initial-cluster-state",
              "new",
              "--logger",
              "zap",
              "--log-outputs",
              "stderr"};
    if (!options.tls.cert_file.empty()) {
      o.argv.insert(o.argv.end(), {"--cert-file", options.tls.cert_file, "--key-file", options.tls.key_file});
      if (!options.tls.client_ca_file.empty()) {
        o.argv.insert(o.argv.end(), {"--trusted-ca-file", options.tls.client_ca_file, "--client-cert-auth"});
      }
    }
    o.stderr_file = log;
    auto proc = Subprocess::Start(o);
    if (!proc) return Err(proc.error().WithContext("starting etcd"));
    auto deadline = std::chrono::steady_clock::now() + options.startup_timeout;
    bool up = false;
    while (std::chrono::steady_clock::now() < deadline && proc->running()) {
      if (Answers(c, std::chrono::milliseconds(500), options.probe)) {
        up = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll interval, not synchronisation
    }
    if (up) {
      LocalEtcd e;
      e.options_ = options;
      e.options_.log_file = log;
      e.process_ = std::move(*proc);
      e.client_port_ = *client;
      e.peer_port_ = *peer;
      return e;
    }
    bool exited = !proc->running();
    proc->Stop(std::chrono::seconds(2));
    last_error = exited ? "etcd exited: " + Tail(log) : "etcd did not answer on " + c + " within the startup timeout";
    if (!exited) break;
  }
  return Err(Code::kUnavailable, "cannot start etcd (" + last_error + "; its log is " + log + ")");
}

}  // namespace shoal
