// shoal up --ufs DIR_OR_URI [--workers N] [--cache-dir DIR] [--cache-size SIZE] ...
//
// Starts N worker processes on loopback (free ports), writes the client config,
// prints `ready: config=PATH`, and runs until SIGINT/SIGTERM, restarting a
// worker that dies (on the same port, warm from its cache dir).
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli/commands.h"
#include "common/config.h"
#include "common/subprocess.h"
#include "common/units.h"
#include "ufs/uri.h"

namespace shoal::cli {
namespace {

struct UpArgs {
  std::string ufs;
  int workers = 3;
  std::string cache_dir;
  std::string cache_size = "2GiB";
  std::string state_dir;
  std::string mount_path = "/data";
  std::string consistency = "ttl";
  std::string page_size = "1MiB";
  std::string shard_size = "64MiB";
  std::vector<std::string> options;
};

Status MakeDirs(const std::string& dir) {
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      cur = dir.substr(0, i);
      if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
        return Status(Code::kIo, "cannot create directory '" + cur + "': " + std::strerror(errno));
      }
    }
  }
  return {};
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) return Status(Code::kIo, "cannot write '" + tmp + "'");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status(Code::kIo, "cannot write '" + path + "'");
  return {};
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "shoal";
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
  // Parsed through the config reader so the rules and messages are the same as in a file.
  std::string yaml = "mounts:\n  - path: '" + m.path + "'\n    ufs: '" + m.ufs + "'\n    consistency: '" + a.consistency + "'\n";
  if (!a.options.empty()) {
    yaml += "    options:\n";
    for (const auto& o : a.options) {
      auto eq = o.find('=');
      if (eq == std::string::npos) return Err(Code::kInvalidArgument, "--option '" + o + "' is not key=value");
      yaml += "      '" + o.substr(0, eq) + "': '" + o.substr(eq + 1) + "'\n";
    }
  }
  auto c = ParseConfig(yaml, "command line");
  if (!c) return Err(c.error());
  return c->mounts.at(0);
}

struct RunningWorker {
  Subprocess proc;
  std::string address;
  std::string cache_dir;
  std::string log;
  int restarts = 0;
};

Result<WorkerEntry> StartWorker(RunningWorker& w, const std::string& exe, const std::string& worker_config,
                                const std::string& cache_size, const std::string& listen) {
  Subprocess::Options o;
  o.argv = {exe, "worker", "--config", worker_config, "--listen", listen, "--cache-dir", w.cache_dir,
            "--cache-size", cache_size};
  o.stderr_file = w.log;
  auto p = Subprocess::Start(o);
  if (!p) return Err(p.error());
  auto line = p->WaitForLine("listening:", std::chrono::seconds(60));
  Result<WorkerEntry> entry = line ? ParseListeningLine(*line) : Err(line.error());
  if (!entry) {
    std::ifstream in(w.log);
    std::string last, l;
    while (std::getline(in, l)) last = l;
    return Err(Code::kUnavailable, "worker did not start: " + (last.empty() ? entry.error().message() : last) +
                                       " (log: " + w.log + ")");
  }
  w.proc = std::move(*p);
  return *entry;
}

int RunUp(const UpArgs& a) {
  if (a.workers < 1 || a.workers > 64) return Fail(Status(Code::kInvalidArgument, "--workers must be between 1 and 64"));
  auto mount = BuildMount(a);
  if (!mount) return Fail(mount.error());
  auto cache_size = ParseSize(a.cache_size);
  if (!cache_size) return Fail(cache_size.error().WithContext("--cache-size"));

  std::string state = a.state_dir.empty() ? "/tmp/shoal-" + std::to_string(::getuid()) : a.state_dir;
  std::string cache = a.cache_dir.empty() ? state + "/cache" : a.cache_dir;
  if (auto st = MakeDirs(state); !st.ok()) return Fail(st);
  if (auto st = MakeDirs(cache); !st.ok()) return Fail(st);

  // One `shoal up` per state dir.
  std::string lock_path = state + "/up.lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return Fail(Status(Code::kUnavailable, "another `shoal up` is running with state dir " + state +
                                               "; stop it, or pass --state-dir DIR for a second cluster"));
  }

  Config cfg;
  cfg.mounts = {*mount};
  auto page = ParseSize(a.page_size);
  auto shard = ParseSize(a.shard_size);
  if (!page) return Fail(page.error().WithContext("--page-size"));
  if (!shard) return Fail(shard.error().WithContext("--shard-size"));
  cfg.worker.page_size = *page;
  cfg.cluster.shard_size = *shard;
  cfg.source = "command line";
  if (auto st = Validate(cfg); !st.ok()) return Fail(st);

  std::string worker_config = state + "/worker.yaml";
  if (auto st = WriteFile(worker_config, ToYaml(cfg)); !st.ok()) return Fail(st);

  // Signals are taken synchronously below; block them before any child exists.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &sigs, nullptr);

  std::string exe = SelfExe();
  std::vector<RunningWorker> workers(static_cast<size_t>(a.workers));
  for (size_t i = 0; i < workers.size(); ++i) {
    auto& w = workers[i];
    w.cache_dir = cache + "/worker-" + std::to_string(i);
    w.log = state + "/worker-" + std::to_string(i) + ".log";
    auto addr = StartWorker(w, exe, worker_config, a.cache_size, "127.0.0.1:0");
    if (!addr) return Fail(addr.error().WithContext("worker " + std::to_string(i)));
    w.address = addr->address;
    cfg.cluster.workers.push_back(*addr);
  }
  std::string client_config = state + "/shoal.yaml";
  if (auto st = WriteFile(client_config, ToYaml(cfg)); !st.ok()) return Fail(st);

  std::printf("mount: %s -> %s\n", mount->path.c_str(), mount->ufs.c_str());
  for (size_t i = 0; i < workers.size(); ++i) {
    std::printf("worker %zu: %s (cache %s, %s)\n", i, workers[i].address.c_str(), workers[i].cache_dir.c_str(),
                FormatSize(*cache_size).c_str());
  }
  std::printf("ready: config=%s\n", client_config.c_str());
  std::fflush(stdout);

  for (;;) {
    timespec tick{0, 200'000'000};
    int sig = ::sigtimedwait(&sigs, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) break;
    for (size_t i = 0; i < workers.size(); ++i) {
      auto& w = workers[i];
      if (w.proc.running()) continue;
      if (w.restarts >= 5) continue;
      ++w.restarts;
      std::fprintf(stderr, "shoal up: worker %zu (%s) exited; restarting it (log: %s)\n", i, w.address.c_str(),
                   w.log.c_str());
      auto addr = StartWorker(w, exe, worker_config, a.cache_size, w.address);
      if (!addr) std::fprintf(stderr, "shoal up: restart failed: %s\n", addr.error().message().c_str());
    }
  }
  for (auto& w : workers) w.proc.Signal(SIGTERM);
  for (auto& w : workers) w.proc.Stop(std::chrono::seconds(10));
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
  cmd->add_option("--cache-size", a->cache_size, "Cache capacity per worker")->capture_default_str();
  cmd->add_option("--state-dir", a->state_dir, "Where configs and logs go (default: /tmp/shoal-UID)");
  cmd->add_option("--mount-path", a->mount_path, "Namespace path of the mount")->capture_default_str();
  cmd->add_option("--consistency", a->consistency, "immutable, ttl, ttl=DURATION or always")->capture_default_str();
  cmd->add_option("--page-size", a->page_size, "Cache page size")->capture_default_str();
  cmd->add_option("--shard-size", a->shard_size, "Shard size (unit of placement)")->capture_default_str();
  cmd->add_option("--option,-o", a->options, "Mount option key=value (repeatable), e.g. -o endpoint=http://...");
  cmd->callback([a, exit_code] { *exit_code = RunUp(*a); });
}

}  // namespace shoal::cli
