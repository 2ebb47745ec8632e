// wan_proxy: the WAN emulator as a program, for bench/run.
//
//   wan_proxy --upstream 127.0.0.1:PORT [--delay 20ms] [--conn-rate 25MB] [--total-rate 200MB]
//
// Prints "listening: 127.0.0.1:PORT" and "stats: 127.0.0.1:PORT" and runs until
// SIGINT/SIGTERM. `curl http://<stats>/` returns the counters as one line
// (see WanProxyStats::ToLine), so a script can read the egress before and after
// a workload. A rate of 0 means no cap, a delay of 0 no delay.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "bench/wan_proxy.h"
#include "common/units.h"

using namespace shoal;

namespace {

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "wan_proxy: %s\nusage: wan_proxy --upstream HOST:PORT [--listen-port N] [--delay 20ms] "
               "[--conn-rate 25MB] [--total-rate 200MB]\n",
               why.c_str());
  std::exit(2);
}

// Answers every connection on `fd` with the current counters, until `stop`.
void ServeStats(int fd, bench::WanProxy* proxy, std::atomic<bool>* stop) {
  while (!stop->load()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    char req[4096];
    std::string got;
    // Read the request head so the client does not see a reset.
    while (got.find("\r\n\r\n") == std::string::npos && got.size() < 16384) {
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 2000) <= 0) break;
      ssize_t n = ::recv(c, req, sizeof req, 0);
      if (n <= 0) break;
      got.append(req, static_cast<size_t>(n));
    }
    std::string body = proxy->stats().ToLine() + "\n";
    std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body;
    [[maybe_unused]] auto w = ::send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
    ::close(c);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bench::WanProxyOptions o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--upstream") {
      std::string v = value();
      auto colon = v.rfind(':');
      if (colon == std::string::npos) Usage("--upstream must be HOST:PORT, got " + v);
      o.upstream_host = v.substr(0, colon);
      o.upstream_port = static_cast<uint16_t>(std::stoi(v.substr(colon + 1)));
    } else if (a == "--listen-port") {
      o.listen_port = static_cast<uint16_t>(std::stoi(value()));
    } else if (a == "--delay") {
      std::string v = value();
      // ParseDuration takes "20ms"; "0" means no delay.
      auto d = ParseDuration(v);
      if (!d) Usage("bad --delay " + v + ": " + d.error().message());
      o.first_byte_delay = std::chrono::duration_cast<std::chrono::microseconds>(*d);
    } else if (a == "--conn-rate" || a == "--total-rate") {
      std::string v = value();
      auto r = ParseSize(v);
      if (!r) Usage("bad " + a + " " + v + " (bytes per second, e.g. 25MB): " + r.error().message());
      (a == "--conn-rate" ? o.conn_bytes_per_sec : o.total_bytes_per_sec) = *r;
    } else {
      Usage("unknown argument " + a);
    }
  }
  if (o.upstream_port == 0) Usage("--upstream is required");

  // Block the stop signals before any thread starts, then wait for them below.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto proxy = bench::WanProxy::Start(o);
  if (!proxy) {
    std::fprintf(stderr, "%s\n", proxy.error().ToString().c_str());
    return 1;
  }
  int sfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(sfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(sfd, 16) != 0 ||
      ::getsockname(sfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::fprintf(stderr, "wan_proxy: cannot open the stats port: %s\n", std::strerror(errno));
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread stats([&] { ServeStats(sfd, proxy->get(), &stop); });
  std::printf("listening: 127.0.0.1:%u\nstats: 127.0.0.1:%u\n", (*proxy)->port(), ntohs(a.sin_port));
  std::printf("config: delay=%lldus conn_rate=%llu B/s total_rate=%llu B/s upstream=%s:%u\n",
              static_cast<long long>(o.first_byte_delay.count()),
              static_cast<unsigned long long>(o.conn_bytes_per_sec),
              static_cast<unsigned long long>(o.total_bytes_per_sec), o.upstream_host.c_str(), o.upstream_port);
  std::fflush(stdout);

  int sig = 0;
  sigwait(&sigs, &sig);
  stop = true;
  stats.join();
  (*proxy)->Stop();
  std::printf("final: %s\n", (*proxy)->stats().ToLine().c_str());
  return 0;
}
