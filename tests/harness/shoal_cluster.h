// ShoalCluster: real `shoal worker` processes on loopback for integration
// tests, plus a Client over them. Workers bind port 0 and report their address;
// each has its own cache dir under a temp root that is removed at the end.
//
//   ShoalCluster::Options o;
//   o.workers = 3;
//   o.mounts = {{"/data", "file:///tmp/x/"}};
//   auto c = ShoalCluster::Start(o);
//   auto client = c->NewClient();
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/subprocess.h"
#include "shoal/client.h"
#include "tests/harness/harness_util.h"

namespace shoal::testing {

// GET http://address/target from a worker: the body, or an error naming the status.
// `secret`: the cluster secret to send (cluster.secret), "" for none.
Result<std::string> WorkerGet(const std::string& address, const std::string& target, const std::string& secret = "");
// A counter or gauge summed over the workers' /metrics: "name" matches "name"
// and "name{...}"; "name{a=..}" matches exactly.
Result<double> WorkerMetricSum(const std::vector<std::string>& addresses, const std::string& name);

class ShoalCluster {
 public:
  struct Options {
    int workers = 3;
    std::vector<MountConfig> mounts;
    std::vector<PathRule> rules;  // the `rules:` table of workers and clients
    std::string secret;           // cluster.secret of workers and clients ("" = none)
    SecurityConfig security;      // the workers' security: (token key, proxy users, required)
    AuthzConfig authz;            // the workers' authorization (policies, audit)
    uint64_t page_size = 256 * 1024;
    uint64_t shard_size = 4ull << 20;
    uint64_t cache_capacity = 256ull << 20;
    std::string cache_root;  // "" = a fresh temp dir (removed at the end)
    ClientConfig client;
    // Adjusts the workers' settings (limits, timeouts) before they start.
    std::function<void(WorkerConfig&)> worker;
    // When set, every worker also serves the S3 API (worker.s3_listen on a
    // free port, found in its /v1/status) with these settings; the workers
    // read the cluster from client_config_path(), written once all run.
    std::optional<S3Config> s3;
  };

  static Result<std::unique_ptr<ShoalCluster>> Start(const Options& options);
  ~ShoalCluster();

  // The client config YAML (cluster + mounts + client settings).
  std::string ClientYaml() const;
  std::string ClientYaml(const ClientConfig& client) const;
  Result<std::unique_ptr<Client>> NewClient() const;
  // The client config file the workers' S3 listeners read (Options::s3).
  std::string client_config_path() const { return root_ + "/client.yaml"; }

  std::vector<std::string> addresses() const {
    std::vector<std::string> out;
    for (const auto& w : config_.cluster.workers) out.push_back(w.address);
    return out;
  }
  const std::vector<WorkerEntry>& workers() const { return config_.cluster.workers; }
  const std::string& cache_dir(size_t i) const { return cache_dirs_[i]; }

  void Kill(size_t i);                  // SIGKILL, no cleanup: a crash
  // SIGSTOP: a hung worker (its sockets accept and buffer, nothing answers).
  // Thaw() (SIGCONT) resumes it; the destructor thaws any still frozen.
  bool Freeze(size_t i);  // false if it did not stop within 10 s
  void Thaw(size_t i);
  int Stop(size_t i);                   // SIGTERM and wait; returns the wait status
  Status Restart(size_t i);             // same port, same cache dir
  bool running(size_t i) { return procs_[i].running(); }
  pid_t pid(size_t i) const { return procs_[i].pid(); }

  // GET http://worker/path, the body (for /metrics, /v1/status).
  Result<std::string> Get(size_t i, const std::string& target) const;
  // A counter or gauge value summed over every worker's /metrics (label-free name or name{labels}).
  Result<double> MetricSum(const std::string& name) const;

 private:
  ShoalCluster() = default;
  Status StartWorker(size_t i, const std::string& listen);

  Options options_;
  Config config_;
  std::string root_;
  bool own_root_ = false;
  std::string worker_config_;
  std::vector<std::string> cache_dirs_;
  std::vector<Subprocess> procs_;
  std::vector<bool> frozen_;
};

// A `shoal worker` started on its own (one that joins an etcd ring later, or
// one of a cluster a test or benchmark builds by hand).
struct WorkerProcess {
  Subprocess process;
  WorkerEntry entry;  // its id and address, from its listening line
};
// `shoal worker --config CONFIG --listen LISTEN --cache-dir CACHE_DIR
// --cache-size CACHE_SIZE` with its stderr in `log`; returns once it serves
// (its listening line, within 60 s), else an error that carries the log.
Result<WorkerProcess> StartWorkerProcess(const std::string& config, const std::string& listen,
                                         const std::string& cache_dir, const std::string& cache_size,
                                         const std::string& log);

// The `shoal` binary under test ($SHOAL_BIN, set by CTest).
std::string ShoalBinary();
// A fresh temp directory, or "" if none could be made.
std::string MakeTempDir(const std::string& tag);
// The mount /data -> file://DIR/.
MountConfig FileMount(const std::string& dir);
Status WriteFile(const std::string& path, const std::string& data);
// The whole file as `client` reads it (one open with `options`, one pread),
// or "<error: ...>" naming what failed; `code` (when given) is the open's.
std::string ReadWhole(Client& client, const std::string& path, const OpenOptions& options = {},
                      Code* code = nullptr);
// The same for a file opened some other way (OpenCachedOnly).
std::string ReadWhole(Result<std::unique_ptr<File>> opened, Code* code = nullptr);

// Starts a cluster with `options` and two clients of it, one to write and one
// to read (as two processes of a job would). The caller resets the clients
// before the cluster.
Status StartWithTwoClients(const ShoalCluster::Options& options, std::unique_ptr<ShoalCluster>* cluster,
                           std::unique_ptr<Client>* writer, std::unique_ptr<Client>* reader);

}  // namespace shoal::testing
