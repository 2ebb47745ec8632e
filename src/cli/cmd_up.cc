// shoal up --ufs DIR_OR_URI [--workers N] [--cache-dir DIR] [--cache-size SIZE] [--s3 PORT] ...
//
// Checks the mount (its options without a request, then, unless --no-check,
// one listing of its root), starts N worker processes on loopback, writes the
// client config, prints `ready: config=PATH`, and runs until SIGINT/SIGTERM,
// restarting any worker that dies (WorkerSupervisor). With --fuse it also
// mounts the namespace (a `shoal fuse --foreground` child); with --s3 PORT it
// also serves the S3 API (src/s3) over the cluster and prints an `s3:` line first.
// With --etcd it first starts a local etcd (LocalEtcd: loopback, free ports,
// data in STATE/etcd) and the workers register in it; with --etcd-endpoints
// they register in that etcd. Either way the client config then names only
// the etcd endpoints, no worker list.
//
// The state dir holds the configs (mode 0600: mount options may hold
// secrets), the worker logs and the ports to reuse; it is made private
// (0700) to its owner.
#include <openssl/rand.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "authz/policies.h"
#include "cache/policy/registry.h"
#include "cli/commands.h"
#include "cli/s3_service.h"
#include "cli/worker_supervisor.h"
#include "cluster/local_etcd.h"
#include "common/config.h"
#include "common/subprocess.h"
#include "common/units.h"
#include "fuse/fuse_mount.h"
#include "meta/etcd_mounts.h"
#include "security/local_ca.h"
#include "security/token.h"
#include "ufs/cloud/credential_cache.h"
#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal::cli {
namespace {

// How long the reachability check of the mount may take, retries included.
constexpr std::chrono::seconds kCheckDeadline{5};

struct UpArgs {
  std::string ufs;
  int workers = 3;
  std::string cache_dir;
  std::string cache_size;  // "" = kDefaultCacheCapacity
  std::string state_dir;
  std::string mount_path = "/data";
  std::string consistency = "ttl";
  std::string write_mode = "cache-through";
  std::string page_size = "1MiB";
  std::string shard_size = "64MiB";
  std::string max_restart_delay = "30s";
  bool no_check = false;
  std::vector<std::string> options;
  std::string fuse;  // --fuse MOUNTPOINT: also mount the namespace there
  std::string s3_port;         // "" = no S3 endpoint; "0" picks a free port
  std::string s3_credentials;  // "" = STATE/s3-credentials, made on first use
  bool etcd = false;              // --etcd: membership from a local etcd started here
  std::string etcd_endpoints;     // --etcd-endpoints URL,...: membership from this etcd
  std::string eviction;           // --eviction NAME: worker.eviction ("" = the default policy)
  std::string page_store = "files";  // worker.page_store
  bool tls = false;                  // --tls: a local CA, TLS on every worker, a client config trusting it
  std::string policies;              // --policies FILE: Ranger policies every worker enforces
};

// Creates the state dir and makes it private: owned by us, mode 0700 (an
// existing dir with a wider mode is narrowed).
Status PrepareStateDir(const std::string& dir) {
  auto slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) SHOAL_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash)));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(Code::kIo, "cannot create state dir '" + dir + "': " + std::strerror(errno));
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(Code::kInvalidArgument, "state dir '" + dir + "' is not a directory; pass --state-dir DIR");
  }
  if (st.st_uid != ::getuid()) {
    return Status(Code::kPermissionDenied, "state dir '" + dir + "' belongs to uid " + std::to_string(st.st_uid) +
                                               ", not to you; pass --state-dir DIR");
  }
  if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) != 0) {
    return Status(Code::kIo, "cannot make state dir '" + dir + "' private (chmod 0700): " + std::strerror(errno));
  }
  return {};
}

// A YAML single-quoted scalar.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The mount config from --ufs and friends.
Result<MountConfig> BuildMount(const UpArgs& a) {
  MountConfig m;
  m.path = a.mount_path;
  if (a.ufs.find("://") == std::string::npos) {
    char real[PATH_MAX];
    struct stat st;
    if (!::realpath(a.ufs.c_str(), real) || ::stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Err(Code::kNotFound, "--ufs '" + a.ufs + "' is not a directory (give a directory or a URI such as s3://bucket/prefix/)");
    }
    m.ufs = std::string("file://") + real + "/";
  } else {
    auto u = ParseUfsUri(a.ufs);
    if (!u) return Err(u.error().WithContext("--ufs"));
    m.ufs = a.ufs;
  }
  // Parsed through the config reader so the rules and messages (and the
  // ${NAME} references) are the same as in a file.
  std::string yaml = "mounts:\n  - path: " + Quote(m.path) + "\n    ufs: " + Quote(m.ufs) +
                     "\n    consistency: " + Quote(a.consistency) + "\n    write_mode: " + Quote(a.write_mode) + "\n";
  if (!a.options.empty()) {
    yaml += "    options:\n";
    std::set<std::string> seen;
    for (const auto& o : a.options) {
      auto eq = o.find('=');
      if (eq == std::string::npos) {
        return Err(Code::kInvalidArgument, "-o '" + o + "' is not key=value (e.g. -o endpoint=http://127.0.0.1:9000)");
      }
      std::string key = o.substr(0, eq);
      if (key.empty()) return Err(Code::kInvalidArgument, "-o '" + o + "' has no option name: write -o key=value");
      if (!seen.insert(key).second) return Err(Code::kInvalidArgument, "-o " + key + " is given twice: give it once");
      if (auto v = ExpandEnvReferences(o.substr(eq + 1)); !v) return Err(v.error().WithContext("-o " + key));
      yaml += "      " + Quote(key) + ": " + Quote(o.substr(eq + 1)) + "\n";
    }
  }
  auto c = ParseConfig(yaml, "command line");
  if (!c) return Err(c.error());
  return c->mounts.at(0);
}

// Whether the store answers, before any worker starts: a wrong endpoint or a
// missing bucket is one clear line now, not a failure of every read later.
Status CheckMount(const MountConfig& m) {
  auto st = ProbeMount(m, kCheckDeadline);
  if (st.ok()) return st;
  return Status(st.code(), "checking " + m.ufs + ": " + st.message() +
                               " (start with --no-check to skip this check, e.g. while the store is offline)");
}

// The S3 endpoint of `--s3 PORT`, in this process, over the cluster's client
// config; prints its `s3:` line and an example.
Result<std::unique_ptr<S3Service>> StartS3(const UpArgs& a, const std::string& state,
                                           const std::string& client_config) {
  int port = -1;
  if (a.s3_port.size() <= 5 && !a.s3_port.empty() &&
      std::all_of(a.s3_port.begin(), a.s3_port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    port = std::stoi(a.s3_port);
  }
  if (port < 0 || port > 65535) return Err(Code::kInvalidArgument, "--s3 takes a port number (0 picks a free one)");
  std::string keys_path = a.s3_credentials.empty() ? state + "/s3-credentials" : a.s3_credentials;
  if (!a.s3_credentials.empty() && ::access(keys_path.c_str(), R_OK) != 0) {
    return Err(Code::kInvalidArgument, "--s3-credentials '" + keys_path + "' cannot be read: " + std::strerror(errno));
  }
  auto keys = LoadOrMakeS3Keys(keys_path);
  if (!keys) return Err(keys.error().WithContext("--s3"));
  S3Config s3;
  s3.credentials_file = keys_path;
  s3.staging_dir = state + "/s3-uploads";
  auto service = S3Service::Start(client_config, s3, "127.0.0.1:" + std::to_string(port), false);
  if (!service) return Err(service.error().WithContext("--s3"));
  const std::string& address = (*service)->address();
  const char* scheme = (*service)->tls() ? "https" : "http";
  const std::string ca = (*service)->tls() ? " --ca-bundle " + state + "/tls/ca.pem" : "";
  std::printf("s3: endpoint=%s://%s access_key=%s secret_key=%s\n", scheme, address.c_str(), keys->first.c_str(),
              keys->second.c_str());
  std::printf("s3: try: AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s aws --endpoint-url %s://%s%s s3 ls s3://%s/\n",
              keys->first.c_str(), keys->second.c_str(), scheme, address.c_str(), ca.c_str(),
              a.mount_path.substr(1).c_str());
  return service;
}

int RunUp(const UpArgs& a) {
  if (a.workers < 1 || a.workers > 64) return Fail(Status(Code::kInvalidArgument, "--workers must be between 1 and 64"));
  auto cache_size = a.cache_size.empty() ? Result<uint64_t>(kDefaultCacheCapacity) : ParseSize(a.cache_size);
  if (!cache_size) return Fail(cache_size.error().WithContext("--cache-size"));
  if (*cache_size == 0) return Fail(Status(Code::kInvalidArgument, "--cache-size must be more than 0"));
  auto max_delay = ParseDuration(a.max_restart_delay);
  if (!max_delay) return Fail(max_delay.error().WithContext("--max-restart-delay"));
  if (max_delay->count() <= 0) return Fail(Status(Code::kInvalidArgument, "--max-restart-delay must be more than 0"));
  auto page = ParseSize(a.page_size);
  auto shard = ParseSize(a.shard_size);
  if (!page) return Fail(page.error().WithContext("--page-size"));
  if (!shard) return Fail(shard.error().WithContext("--shard-size"));

  auto mount = BuildMount(a);
  if (!mount) return Fail(mount.error());
  Config cfg;
  cfg.mounts = {*mount};
  cfg.worker.page_size = *page;
  cfg.worker.eviction = a.eviction;
  if (auto policy = MakeEvictionPolicy(a.eviction); !policy) return Fail(policy.error().WithContext("--eviction"));
  cfg.worker.page_store = a.page_store;
  cfg.cluster.shard_size = *shard;
  cfg.source = "command line";
  // A new cluster secret each start (both configs below carry it, mode 0600):
  // a process on this host or network that has not read them gets 403.
  unsigned char secret[16];
  if (RAND_bytes(secret, sizeof secret) != 1) {
    return Fail(Status(Code::kInternal, "cannot generate the cluster secret: no randomness from OpenSSL"));
  }
  for (unsigned char b : secret) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    cfg.cluster.secret += hex;
  }
  if (auto st = Validate(cfg); !st.ok()) return Fail(st);
  if (auto st = ValidateMounts(cfg); !st.ok()) return Fail(st);
  if (!a.no_check) {
    if (auto st = CheckMount(*mount); !st.ok()) return Fail(st);
  }
  if (!a.fuse.empty()) {
    if (auto st = fuse::CheckMountpoint(a.fuse); !st.ok()) return Fail(st.WithContext("--fuse"));
  }

  std::string state = a.state_dir.empty() ? "/tmp/shoal-" + std::to_string(::getuid()) : a.state_dir;
  while (state.size() > 1 && state.back() == '/') state.pop_back();
  if (auto st = PrepareStateDir(state); !st.ok()) return Fail(st);
  std::string cache = a.cache_dir.empty() ? state + "/cache" : a.cache_dir;
  for (int i = 0; i < a.workers; ++i) {
    if (auto st = CheckCacheDir(WorkerSupervisor::CacheDirOf(cache, i)); !st.ok()) return Fail(st);
  }

  // One `shoal up` per state dir.
  std::string lock_path = state + "/up.lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return Fail(Status(Code::kUnavailable, "another `shoal up` is running with state dir " + state +
                                               "; stop it, or pass --state-dir DIR for a second cluster"));
  }

  if (a.tls) {
    // The CA is kept across starts (clients keep trusting it); the workers'
    // certificate is made anew each start.
    auto files = security::MakeLocalCa(state + "/tls", {});
    if (!files) return Fail(files.error().WithContext("--tls"));
    cfg.tls.cert_file = files->server_cert;
    cfg.tls.key_file = files->server_key;
    cfg.tls.ca_file = files->ca_cert;
    cfg.client.tls.ca_file = files->ca_cert;
    cfg.client.tls.enabled = true;
  }

  // Membership from etcd: a local one (stopped with the cluster, after the
  // workers have left it) or the given endpoints. The client config then
  // names only etcd; workers register themselves.
  LocalEtcd local_etcd;
  if (a.etcd && !a.etcd_endpoints.empty()) {
    return Fail(Status(Code::kInvalidArgument, "give --etcd (start a local etcd) or --etcd-endpoints URL,..., not both"));
  }
  if (!a.etcd_endpoints.empty()) {
    std::string yaml = "cluster:\n  etcd:\n    endpoints:\n";
    for (size_t b = 0, e; b <= a.etcd_endpoints.size(); b = e + 1) {
      e = std::min(a.etcd_endpoints.find(',', b), a.etcd_endpoints.size());
      if (e > b) yaml += "      - " + Quote(a.etcd_endpoints.substr(b, e - b)) + "\n";
    }
    auto parsed = ParseConfig(yaml, "--etcd-endpoints");
    if (!parsed) return Fail(parsed.error());
    cfg.cluster.etcd.endpoints = parsed->cluster.etcd.endpoints;
  } else if (a.etcd) {
    LocalEtcd::Options eo;
    eo.data_dir = state + "/etcd";
    eo.log_file = state + "/etcd.log";
    // Membership is all it holds, and the workers register again: start empty.
    std::error_code ec;
    std::filesystem::remove_all(eo.data_dir, ec);
    if (a.tls) {
      // etcd serves the workers' certificate and admits only clients with a
      // certificate from the same CA: the workers and the client config get one.
      const std::string prefix = state + "/tls/etcd-client";
      if (auto st = security::IssueCertificate(state + "/tls", "shoal-etcd-client", {}, 365, prefix); !st.ok()) {
        return Fail(st.WithContext("--tls --etcd"));
      }
      eo.tls = {cfg.tls.cert_file, cfg.tls.key_file, cfg.tls.ca_file};
      eo.probe = {cfg.tls.ca_file, prefix + ".pem", prefix + ".key"};
      cfg.cluster.etcd.ca_file = eo.probe.ca_file;
      cfg.cluster.etcd.cert_file = eo.probe.cert_file;
      cfg.cluster.etcd.key_file = eo.probe.key_file;
    }
    auto started = LocalEtcd::Start(eo);
    if (!started) return Fail(started.error().WithContext("--etcd"));
    local_etcd = std::move(*started);
    cfg.cluster.etcd.endpoints = {local_etcd.endpoint()};
    std::printf("etcd: %s (data %s, log %s)\n", local_etcd.endpoint().c_str(), eo.data_dir.c_str(), eo.log_file.c_str());
  }
  const bool with_etcd = !cfg.cluster.etcd.endpoints.empty();
  // With etcd the mount table lives there too: the client config then needs only the endpoints.
  if (with_etcd) {
    if (auto st = PublishEtcdMounts(cfg.cluster.etcd, cfg.mounts); !st.ok()) return Fail(st);
  }

  // The cluster key that signs tokens (`shoal token issue --config STATE/shoal.yaml`), kept across starts.
  cfg.security.token_key_file = state + "/token.key";
  if (auto st = security::TokenKeys::CreateKeyFile(cfg.security.token_key_file); !st.ok()) return Fail(st);

  if (!a.policies.empty()) {
    std::error_code ec;
    cfg.authz.policy_file = std::filesystem::absolute(a.policies, ec).string();
    cfg.authz.audit_file = state + "/audit/";  // one file per worker
    if (auto set = authz::LoadServicePolicies(cfg.authz.policy_file); !set) {
      return Fail(set.error().WithContext("--policies"));
    }
  }

  // The workers' status pages (and S3 listeners) see the whole cluster
  // through the client config written below, once the workers run.
  if (cfg.s3.client_config.empty()) cfg.s3.client_config = state + "/shoal.yaml";
  // Both configs may hold secrets from -o: readable by their owner only.
  std::string worker_config = state + "/worker.yaml";
  if (auto st = WriteFileAtomic(worker_config, ToYaml(cfg), 0600); !st.ok()) return Fail(st);

  // Signals are taken synchronously below; block them before any child exists.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &sigs, nullptr);

  WorkerSupervisor::Options so;
  so.exe = SelfExe();
  so.worker_config = worker_config;
  so.cache_root = cache;
  so.state_dir = state;
  so.cache_size = *cache_size;
  so.workers = a.workers;
  so.max_delay = *max_delay;
  WorkerSupervisor workers(so);
  if (auto st = workers.StartAll(); !st.ok()) return Fail(st);

  std::string client_config = state + "/shoal.yaml";
  if (!with_etcd) cfg.cluster.workers = workers.members();
  Config client_cfg = cfg;
  if (with_etcd) client_cfg.mounts.clear();  // no store credentials in the client config
  if (auto st = WriteFileAtomic(client_config, ToYaml(client_cfg), 0600); !st.ok()) return Fail(st);

  std::printf("mount: %s -> %s\n", mount->path.c_str(), mount->ufs.c_str());
  // Which provider the check found the store's credentials with (the workers
  // find their own the same way, from the same environment).
  if (auto creds = cloud::LastCredentialsOf(mount->path)) {
    std::printf("credentials: %s: %s\n", mount->path.c_str(), cloud::DescribeInfo(*creds).c_str());
  }
  auto info = workers.workers();
  for (size_t i = 0; i < info.size(); ++i) {
    std::printf("worker %zu: %s id=%s pid=%d (cache %s, %s)\n", i, info[i].entry.address.c_str(),
                info[i].entry.id.c_str(), static_cast<int>(info[i].pid), info[i].cache_dir.c_str(),
                FormatSize(*cache_size).c_str());
  }
  if (a.tls) std::printf("tls: ca=%s\n", cfg.tls.ca_file.c_str());
  if (!a.policies.empty()) {
    std::printf("authz: policies=%s audit=%s/audit/ (fallback %s)\n", cfg.authz.policy_file.c_str(), state.c_str(),
                cfg.authz.fallback.c_str());
  }
  std::unique_ptr<S3Service> s3;
  if (!a.s3_port.empty()) {
    auto started = StartS3(a, state, client_config);
    if (!started) {
      workers.StopAll();
      return Fail(started.error());
    }
    s3 = std::move(*started);
  }
  // The FUSE mount: `shoal fuse --foreground` as a child, started once the
  // workers are up and stopped (it unmounts) before they are.
  Subprocess fuse_daemon;
  const std::string fuse_log = state + "/fuse.log";
  if (!a.fuse.empty()) {
    Subprocess::Options fo;
    fo.argv = {so.exe, "fuse", fuse::AbsolutePath(a.fuse), "--config", client_config, "--foreground"};
    fo.stderr_file = fuse_log;
    auto started = Subprocess::Start(fo);
    Result<std::string> line = started ? started->WaitForLine("mounted:", std::chrono::seconds(60))
                                       : Result<std::string>(Err(started.error()));
    if (!line) {
      if (started) started->Stop();
      workers.StopAll();
      return Fail(Status(Code::kUnavailable, "cannot mount the namespace on " + a.fuse + ": " + line.error().message() +
                                                 " (log: " + fuse_log + ")"));
    }
    fuse_daemon = std::move(*started);
    std::printf("fuse: %s (log %s)\n", a.fuse.c_str(), fuse_log.c_str());
  }
  std::printf("ready: config=%s\n", client_config.c_str());
  std::fflush(stdout);
  bool fuse_exit_reported = false;
  // The local etcd is supervised as the workers are: each exit is logged and
  // it is started again on the same ports and data dir (the workers' and
  // clients' configs name its endpoint), after a pause that doubles while it
  // keeps failing (1 s to 30 s).
  auto etcd_retry_at = std::chrono::steady_clock::now();
  std::chrono::seconds etcd_pause{1};
  bool etcd_down = false;
  pid_t etcd_pid = local_etcd.pid();  // running() forgets the pid of a child it reaped
  auto keep_etcd = [&] {
    if (!a.etcd || etcd_pid <= 0) return;
    if (!etcd_down && local_etcd.running()) return;
    if (!etcd_down) {
      etcd_down = true;
      std::fprintf(stderr, "shoal up: etcd (pid %d) %s; starting it again on %s (log %s)\n", etcd_pid,
                   cli::DescribeExit(local_etcd.WaitStatus()).c_str(), local_etcd.endpoint().c_str(),
                   local_etcd.options().log_file.c_str());
      etcd_retry_at = std::chrono::steady_clock::now();
    }
    if (std::chrono::steady_clock::now() < etcd_retry_at) return;
    LocalEtcd::Options again = local_etcd.options();
    again.client_port = local_etcd.client_port();
    again.peer_port = local_etcd.peer_port();
    again.startup_timeout = std::chrono::seconds(10);
    auto started = LocalEtcd::Start(again);
    if (!started) {
      std::fprintf(stderr, "shoal up: etcd did not start again: %s; next try in %llds\n",
                   started.error().message().c_str(), static_cast<long long>(etcd_pause.count()));
      etcd_retry_at = std::chrono::steady_clock::now() + etcd_pause;
      etcd_pause = std::min(etcd_pause * 2, std::chrono::seconds(30));
      return;
    }
    local_etcd = std::move(*started);
    etcd_pid = local_etcd.pid();
    etcd_down = false;
    etcd_pause = std::chrono::seconds(1);
    std::fprintf(stderr, "shoal up: etcd is back on %s (pid %d)\n", local_etcd.endpoint().c_str(), local_etcd.pid());
  };

  for (;;) {
    timespec tick{0, 200'000'000};
    int sig = ::sigtimedwait(&sigs, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) break;
    keep_etcd();
    if (!a.fuse.empty() && !fuse_exit_reported && !fuse_daemon.running()) {
      fuse_exit_reported = true;
      std::fprintf(stderr, "shoal up: the FUSE mount on %s has ended (unmounted?); its log is %s\n", a.fuse.c_str(),
                   fuse_log.c_str());
    }
    if (workers.Tick() && !with_etcd) {
      // A worker came back on another port: the ring is keyed by id, so it
      // still owns its data; clients started from now on find it there.
      cfg.cluster.workers = workers.members();
      if (auto st = WriteFileAtomic(client_config, ToYaml(cfg), 0600); !st.ok()) {
        std::fprintf(stderr, "shoal up: cannot update %s: %s\n", client_config.c_str(), st.message().c_str());
      } else {
        std::fprintf(stderr, "shoal up: a worker moved to a new address; %s is updated\n", client_config.c_str());
      }
    }
  }
  s3.reset();
  if (!a.fuse.empty() && fuse_daemon.running()) {
    // SIGTERM unmounts; a mount kept busy by open files gets 15 s to be let go.
    fuse_daemon.Stop(std::chrono::seconds(15));
  }
  workers.StopAll();
  if (local_etcd.pid() > 0) local_etcd.Stop();
  std::printf("stopped\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace

void AddUp(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<UpArgs>();
  auto* cmd = app.add_subcommand("up", "Start a local Shoal cluster over a directory or bucket, until Ctrl-C");
  cmd->add_option("--ufs", a->ufs, "Under-store: a local directory, or a URI (file://, s3://, gs://, az://, hdfs://)")
      ->required();
  cmd->add_option("--workers,-n", a->workers, "Number of worker processes")->capture_default_str();
  cmd->add_option("--cache-dir", a->cache_dir, "Cache root; worker i caches in DIR/worker-i (default: STATE/cache)");
  cmd->add_option("--cache-size", a->cache_size,
                  "Cache capacity per worker (default: " + FormatSize(kDefaultCacheCapacity) + ")");
  cmd->add_option("--state-dir", a->state_dir, "Where configs, logs and ports go (default: /tmp/shoal-UID)");
  cmd->add_option("--mount-path", a->mount_path, "Namespace path of the mount")->capture_default_str();
  cmd->add_option("--consistency", a->consistency, "immutable, ttl, ttl=DURATION or always")->capture_default_str();
  cmd->add_option("--write-mode", a->write_mode,
                  "through, cache-through or write-back (acknowledged once journaled on 2 workers, uploaded after)")
      ->capture_default_str();
  cmd->add_option("--page-size", a->page_size, "Cache page size")->capture_default_str();
  cmd->add_option("--eviction", a->eviction,
                  "Eviction policy of the workers (worker.eviction: " + EvictionPolicyNames() + "; default " +
                      std::string(kDefaultEvictionPolicy) + ")");
  cmd->add_option("--shard-size", a->shard_size, "Shard size (unit of placement)")->capture_default_str();
  cmd->add_option("--option,-o", a->options,
                  "Mount option key=value (repeatable), e.g. -o endpoint=http://...; a value may refer to an "
                  "environment variable as ${NAME}");
  cmd->add_option("--s3", a->s3_port, "Also serve the S3 API on 127.0.0.1:PORT (0 picks a free port)");
  cmd->add_option("--s3-credentials", a->s3_credentials,
                  "File of 'ACCESS_KEY SECRET_KEY' for --s3, mode 0600 (default: one made in the state dir)");
  cmd->add_flag("--no-check", a->no_check, "Start without checking that the store answers (offline starts)");
  cmd->add_option("--max-restart-delay", a->max_restart_delay,
                  "Longest wait before restarting a crashed worker (the wait doubles from 0.5s)")
      ->capture_default_str();
  cmd->add_flag("--etcd", a->etcd,
                "Membership from etcd: start a local etcd (/usr/bin/etcd, loopback only, data in the state dir); the "
                "client config then names only etcd");
  cmd->add_option("--etcd-endpoints", a->etcd_endpoints,
                  "Membership from this etcd (URL,...), e.g. http://10.0.0.5:2379, instead of a static list");
  cmd->add_option("--fuse", a->fuse,
                  "Also mount the namespace on this directory (FUSE); unmounted before the workers stop");
  cmd->add_flag("--tls", a->tls,
                "TLS on every worker: a local CA and certificates in STATE/tls (keys 0600), and a client config "
                "that trusts it; prints `tls: ca=PATH`");
  cmd->add_option("--policies", a->policies,
                  "Enforce these Apache Ranger policies (a ServicePolicies JSON file, HDFS service definition) on "
                  "every request; decisions are audited in STATE/audit/ (authz.* in the config for more)");
  cmd->add_option("--page-store", a->page_store,
                  "How workers keep pages on disk: files (a file per page) or blocks (slots of block files reused "
                  "in place)")
      ->check(CLI::IsMember({"files", "blocks"}))
      ->capture_default_str();
  cmd->callback([a, exit_code] { *exit_code = RunUp(*a); });
}

}  // namespace shoal::cli
