// failover_bench: what a hung worker costs a reader (issue 8). Three `shoal
// worker` processes on loopback over a file:// directory of small files; one
// is frozen with SIGSTOP (it accepts connections and never answers), and
// small files whose owner it is are read whole:
//
//   cold    a new Client per trial, as `shoal cat` has: the first call finds
//           the worker hung (one client.response_timeout), later calls of the
//           same client skip it;
//   warm    a Client that used every worker (short circuits set up) before the
//           freeze;
//   cli     `shoal cat FILE` as a process, end to end.
//
// For each, the first call's and the later calls' latency, p50 and p99 over
// the trials. Prints a markdown table on stdout; progress on stderr.
//
//   failover_bench --shoal build/shoal [--trials 10] [--later 20]
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "bench/percentile.h"
#include "cluster/hash_ring.h"
#include "common/subprocess.h"
#include "tests/harness/shoal_cluster.h"

using namespace shoal;
using namespace shoal::testing;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "failover_bench: %s\n", why.c_str());
  std::exit(1);
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

using bench::Percentile;

// Reads a whole file, checking its size; the time it took.
Clock::duration TimedRead(Client& c, const std::string& path, size_t expect) {
  auto start = Clock::now();
  auto f = c.OpenFile(path);
  if (!f) Die("open " + path + ": " + f.error().ToString());
  std::string buf((*f)->status().size, '\0');
  auto n = (*f)->Pread(0, std::span<char>(buf.data(), buf.size()));
  if (!n || *n != expect) Die("read " + path + ": " + (n ? "short" : n.error().ToString()));
  return Clock::now() - start;
}

struct Series {
  std::vector<double> first, later;
};

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_logger_mt("failover_bench"));  // stdout carries the table
  std::string shoal_bin;
  int trials = 10, later = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shoal" && i + 1 < argc) shoal_bin = argv[++i];
    else if (a == "--trials" && i + 1 < argc) trials = std::max(1, std::atoi(argv[++i]));
    else if (a == "--later" && i + 1 < argc) later = std::max(1, std::atoi(argv[++i]));
    else Die("usage: failover_bench --shoal PATH [--trials N] [--later N]");
  }
  if (shoal_bin.empty()) Die("give --shoal PATH (the shoal binary)");
  ::setenv("SHOAL_BIN", std::filesystem::absolute(shoal_bin).c_str(), 1);

  std::string ufs = MakeTempDir("failover-bench");
  if (ufs.empty()) Die("cannot make a temp dir");
  // Small files (ImageNet-sized): each one is a single request to its owner.
  // With the owner frozen every read goes to the under-store, so the same
  // files serve every trial.
  const size_t kSize = 110 * 1024;
  std::vector<std::string> names;
  for (size_t i = 0; i < 120; ++i) {
    names.push_back("s" + std::to_string(i));
    if (!WriteFile(ufs + "/" + names.back(), RandomBytes(kSize, i)).ok()) Die("cannot write the dataset");
  }
  ShoalCluster::Options o;
  o.workers = 3;
  o.mounts = {FileMount(ufs)};
  auto cluster = ShoalCluster::Start(o);
  if (!cluster) Die(cluster.error().ToString());
  auto& c = **cluster;

  std::vector<std::string> ids;
  for (const auto& w : c.workers()) ids.push_back(w.id);
  HashRing ring(ids);
  std::vector<std::string> owned;  // files whose owner is worker 0 (the one frozen)
  for (const auto& n : names) {
    if (ring.Owner(HashRing::MetaKey("/data/" + n)) == 0) owned.push_back(n);
  }
  if (owned.size() < 10) Die("too few files owned by worker 0");
  size_t next = 0;
  auto take = [&] { return "/data/" + owned[next++ % owned.size()]; };

  std::string config = MakeTempDir("failover-bench-cfg") + "/client.yaml";
  if (!WriteFile(config, c.ClientYaml()).ok()) Die("cannot write the client config");

  Series cold, warm, cli;
  for (int t = 0; t < trials; ++t) {
    std::fprintf(stderr, "trial %d/%d\n", t + 1, trials);
    // warm: a client that has used every worker.
    auto wc = c.NewClient();
    if (!wc) Die(wc.error().ToString());
    for (size_t w = 0; w < 3; ++w) {  // a file of each worker
      for (const auto& n : names) {
        if (ring.Owner(HashRing::MetaKey("/data/" + n)) != w) continue;
        TimedRead(**wc, "/data/" + n, kSize);
        break;
      }
    }
    if (!c.Freeze(0)) Die("worker 0 did not stop");
    warm.first.push_back(Ms(TimedRead(**wc, take(), kSize)));
    for (int i = 0; i < later; ++i) warm.later.push_back(Ms(TimedRead(**wc, take(), kSize)));
    // cold: a new client, as a `shoal cat` process has.
    auto cc = c.NewClient();
    if (!cc) Die(cc.error().ToString());
    cold.first.push_back(Ms(TimedRead(**cc, take(), kSize)));
    for (int i = 0; i < later; ++i) cold.later.push_back(Ms(TimedRead(**cc, take(), kSize)));
    // cli: `shoal cat` end to end (its first call is all it makes).
    for (int i = 0; i < 3; ++i) {
      Subprocess::Options so;
      so.argv = {shoal_bin, "cat", "--config", config, take()};
      so.stderr_file = "/dev/null";
      auto start = Clock::now();
      auto p = Subprocess::Start(so);
      if (!p) Die(p.error().ToString());
      int st = p->Wait(std::chrono::seconds(120));
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || p->output().size() != kSize) Die("shoal cat failed");
      cli.first.push_back(Ms(Clock::now() - start));  // every process starts with a new client
    }
    cc->reset();
    wc->reset();
    c.Thaw(0);
  }

  std::printf("| reader, one of 3 workers frozen (SIGSTOP) | first call p50 | first call p99 | later calls p50 | later calls p99 |\n");
  std::printf("|---|---|---|---|---|\n");
  auto row = [](const char* name, const Series& s) {
    std::printf("| %s | %.0f ms | %.0f ms | %.2f ms | %.2f ms |\n", name, Percentile(s.first, 0.5),
                Percentile(s.first, 0.99), Percentile(s.later, 0.5), Percentile(s.later, 0.99));
  };
  row("new client (as `shoal cat`), 110 KiB file", cold);
  row("client that used every worker before, 110 KiB file", warm);
  std::printf("| `shoal cat` process end to end, 110 KiB file | %.0f ms | %.0f ms | (each process is a first call) | |\n",
              Percentile(cli.first, 0.5), Percentile(cli.first, 0.99));
  std::printf("\n%d trials, %d later calls each (3 `shoal cat` runs per trial); default client settings "
              "(timeout 30s, response_timeout 1.5s).\n",
              trials, later);
  std::filesystem::remove_all(ufs);
  std::filesystem::remove_all(std::filesystem::path(config).parent_path());
  return 0;
}
