// LocalEtcd: a single-member etcd (Debian's etcd-server, /usr/bin/etcd) on
// loopback, for `shoal up --etcd` and for tests.
//
// It listens on 127.0.0.1 only (or on Options::client_host for clients), on a client port and a peer port that were
// free when it started (taken by binding port 0; if etcd loses the race for
// one it is started again on new ones), keeps its data in `data_dir`, logs to
// `log_file`, and is stopped with the object (SIGTERM, then SIGKILL). etcd
// sends nothing anywhere else: no peers, no telemetry.
//
// Not thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "cluster/etcd_client.h"
#include "common/subprocess.h"
#include "shoal/status.h"

namespace shoal {

class LocalEtcd {
 public:
  static constexpr const char* kDefaultBinary = "/usr/bin/etcd";

  struct Options {
    std::string binary = kDefaultBinary;
    std::string data_dir;  // required
    std::string log_file;  // "" = DATA_DIR.log
    // The address clients reach etcd on: loopback, or (tests in network
    // namespaces) the address of a bridge this host owns.
    std::string client_host = "127.0.0.1";
    int client_port = 0;   // 0 = a free one
    int peer_port = 0;     // 0 = a free one
    std::chrono::milliseconds startup_timeout{30'000};
    // TLS: with cert_file and key_file etcd serves https:// with that pair;
    // with client_ca_file too it asks every client for a certificate signed
    // by that CA (--client-cert-auth). `probe` is what LocalEtcd itself
    // presents and trusts when it checks that etcd answers.
    struct Tls {
      std::string cert_file;
      std::string key_file;
      std::string client_ca_file;
    } tls;
    EtcdClient::Tls probe;
  };

  // Fails with a clear message when the binary is missing (install
  // etcd-server) or etcd does not answer within startup_timeout.
  static Result<LocalEtcd> Start(const Options& options);

  LocalEtcd() = default;
  LocalEtcd(LocalEtcd&&) noexcept = default;
  LocalEtcd& operator=(LocalEtcd&&) noexcept = default;

  // "http://CLIENT_HOST:PORT", https:// with TLS.
  std::string endpoint() const { return Url(options_, client_port_); }
  int client_port() const { return client_port_; }
  int peer_port() const { return peer_port_; }
  pid_t pid() const { return process_.pid(); }
  const Options& options() const { return options_; }
  bool running() { return process_.running(); }
  // SIGTERM, then SIGKILL after `grace`.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(5)) { process_.Stop(grace); }
  // Sends `sig` to etcd (SIGKILL: a crash).
  void Signal(int sig) { process_.Signal(sig); }
  // After it stopped running: its wait status (as from waitpid).
  int WaitStatus() { return process_.Wait(std::chrono::milliseconds(0)); }

  // Whether etcd answers a read on `endpoint` within `timeout`.
  static bool Answers(const std::string& endpoint, std::chrono::milliseconds timeout, const EtcdClient::Tls& tls = {});

 private:
  static std::string Url(const Options& o, int port) {
    return (o.tls.cert_file.empty() ? "http://" : "https://") + o.client_host + ":" + std::to_string(port);
  }
  Options options_;
  Subprocess process_;
  int client_port_ = 0;
  int peer_port_ = 0;
};

}  // namespace shoal
