// hot_shards_bench: one file read by many readers at once (issue 14, item 5).
// Two clusters of three `shoal worker` processes on loopback over the same
// file:// directory, registered in one etcd (so that workers know their
// peers, as under `shoal up`), one with hot shards off (worker.hot_shard_rps:
// 0), one with the default threshold; the same readers (each its own Client, as the
// processes of a job) read the hot file whole in a loop on each, interleaved
// round by round (off, on, off, on, ...).
//
// Per cluster: reads/s and MB/s (median of the rounds), read latency p50/p99,
// the share of the bytes each of the file's two ring owners served, and the
// under-store bytes over the file size (the next owner fills from the owner's
// cache, so it stays 1.00). Every read is compared with the file's bytes.
// Prints a markdown table on stdout; progress on stderr.
//
//   hot_shards_bench --shoal build/shoal [--rounds 3] [--seconds 3] [--readers 8] [--size 1MiB]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "bench/percentile.h"
#include "cluster/hash_ring.h"
#include "cluster/membership.h"
#include "common/subprocess.h"
#include "common/units.h"
#include "tests/harness/etcd.h"
#include "tests/harness/ring_snapshot.h"
#include "tests/harness/shoal_cluster.h"

using namespace shoal;
using namespace shoal::testing;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "hot_shards_bench: %s\n", why.c_str());
  std::exit(1);
}

using bench::Percentile;

// Three workers registered in etcd under their own prefix, and the config their clients use.
struct Cluster {
  Config config;
  std::vector<Subprocess> procs;
  std::vector<WorkerEntry> workers;
  std::vector<std::string> addresses;

  ~Cluster() {
    for (auto& p : procs) p.Stop(std::chrono::seconds(10));
  }

  Result<std::unique_ptr<Client>> NewClient() const {
    auto c = Client::FromYaml(ToYaml(config), "hot_shards_bench");
    if (!c) return c;
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while ((*c)->Ring().members.size() < workers.size()) {  // etcd's watch brings the members
      if (Clock::now() > deadline) return Err(Code::kTimeout, "the client did not see every worker in etcd");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return c;
  }
};

std::unique_ptr<Cluster> StartCluster(Config config, const std::string& root) {
  auto c = std::make_unique<Cluster>();
  c->config = std::move(config);
  const std::string yaml = root + "/worker.yaml";
  if (!WriteFile(yaml, ToYaml(c->config)).ok()) Die("cannot write " + yaml);
  for (int i = 0; i < 3; ++i) {
    const std::string cache = root + "/cache" + std::to_string(i);
    auto w = StartWorkerProcess(yaml, "127.0.0.1:0", cache, "1GiB", cache + ".log");
    if (!w) Die("a worker did not start: " + w.error().ToString());
    c->procs.push_back(std::move(w->process));
    c->workers.push_back(w->entry);
    c->addresses.push_back(w->entry.address);
  }
  return c;
}

double Metric(const Cluster& c, size_t worker, const std::string& name) {
  auto v = WorkerMetricSum({c.addresses[worker]}, name);
  if (!v) Die("metrics of worker " + std::to_string(worker) + ": " + v.error().ToString());
  return *v;
}

double Served(const Cluster& c, size_t worker) {
  return Metric(c, worker, "shoal_cache_hit_bytes_total") + Metric(c, worker, "shoal_cache_miss_bytes_total");
}

struct Side {
  const char* name = "";
  std::unique_ptr<Cluster> cluster;
  size_t owner = 0, next_owner = 0;
  std::vector<double> reads_per_s, mb_per_s, latency_ms;
  double owner_bytes = 0, next_bytes = 0, all_bytes = 0;
};

// `readers` clients read `path` whole for `seconds`; returns reads done, adds latencies.
uint64_t Run(Side& s, const std::string& path, const std::string& want, int readers, double seconds,
             std::vector<double>* latency_ms) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<int> wrong{0};
  std::vector<std::vector<double>> lat(static_cast<size_t>(readers));
  std::vector<std::unique_ptr<Client>> clients;
  for (int r = 0; r < readers; ++r) {
    auto c = s.cluster->NewClient();
    if (!c) Die(c.error().ToString());
    clients.push_back(std::move(*c));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < readers; ++r) {
    threads.emplace_back([&, r] {
      std::string buf(want.size(), '\0');
      while (!stop) {
        auto start = Clock::now();
        auto f = clients[static_cast<size_t>(r)]->OpenFile(path);
        auto n = f ? (*f)->Pread(0, std::span<char>(buf.data(), buf.size())) : Result<size_t>(Err(f.error()));
        if (!n || *n != want.size() || std::memcmp(buf.data(), want.data(), want.size()) != 0) {
          ++wrong;
          std::fprintf(stderr, "read %s: %s\n", path.c_str(), n ? "wrong bytes" : n.error().ToString().c_str());
          return;
        }
        lat[static_cast<size_t>(r)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        ++reads;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));  // the measured interval
  stop = true;
  for (auto& t : threads) t.join();
  if (wrong) Die("a read of " + path + " failed or returned wrong bytes");
  if (latency_ms) {
    for (auto& l : lat) latency_ms->insert(latency_ms->end(), l.begin(), l.end());
  }
  return reads.load();
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_logger_mt("hot_shards_bench"));
  std::string shoal_bin;
  int rounds = 3, readers = 8;
  double seconds = 3;
  uint64_t size = 1 << 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shoal" && i + 1 < argc) shoal_bin = argv[++i];
    else if (a == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--seconds" && i + 1 < argc) seconds = std::max(0.5, std::atof(argv[++i]));
    else if (a == "--readers" && i + 1 < argc) readers = std::max(1, std::atoi(argv[++i]));
    else if (a == "--size" && i + 1 < argc) {
      auto s = ParseSize(argv[++i]);
      if (!s || *s == 0) Die("--size: give a size such as 1MiB");
      size = *s;
    } else {
      Die("usage: hot_shards_bench --shoal PATH [--rounds N] [--seconds S] [--readers N] [--size BYTES]");
    }
  }
  if (shoal_bin.empty()) Die("give --shoal PATH (the shoal binary)");
  ::setenv("SHOAL_BIN", std::filesystem::absolute(shoal_bin).c_str(), 1);

  std::vector<std::string> roots;
  std::string ufs = MakeTempDir("hot-shards-bench");
  if (ufs.empty()) Die("cannot make a temp dir");
  const std::string want = RandomBytes(size, 77);
  if (!WriteFile(ufs + "/hot", want).ok()) Die("cannot write the hot file");
  const std::string path = "/data/hot";

  auto etcd = EtcdProcess::Start();
  if (!etcd) Die(etcd.error().ToString());
  Side sides[2];
  sides[0].name = "hot shards off (worker.hot_shard_rps: 0)";
  sides[1].name = "hot shards on (worker.hot_shard_rps: 500, the default)";
  for (int i = 0; i < 2; ++i) {
    Config c;
    c.mounts = {FileMount(ufs)};
    c.mounts[0].consistency = Consistency::kImmutable;
    c.cluster.etcd.endpoints = {(*etcd)->endpoint()};
    c.cluster.etcd.prefix = i == 0 ? "/shoal/bench-off" : "/shoal/bench-on";
    c.cluster.secret = "hot-shards-bench-secret-0123456789";
    c.client.short_circuit = false;  // readers on other hosts: every read is a request to a worker
    c.worker.hot_shard_rps = i == 0 ? 0 : 500;
    const std::string root = MakeTempDir(i == 0 ? "hot-bench-off" : "hot-bench-on");
    if (root.empty()) Die("cannot make a temp dir");
    roots.push_back(root);
    sides[i].cluster = StartCluster(c, root);
    auto client = sides[i].cluster->NewClient();
    if (!client) Die(client.error().ToString());
    const RingSnapshot ring = SnapshotOf((*client)->Ring());
    const std::vector<WorkerEntry>& members = ring.workers;
    auto owners = ring.ring.Owners(HashRing::MetaKey(path), 2);
    auto index = [&](size_t m) {
      for (size_t w = 0; w < 3; ++w) {
        if (sides[i].cluster->workers[w].id == members[m].id) return w;
      }
      Die("the ring names a worker the benchmark did not start");
    };
    sides[i].owner = index(owners[0]);
    sides[i].next_owner = index(owners[1]);
    // Warm: the owner caches the file; with hot shards on, the shard heats
    // and the next owner fills its copy from the owner.
    Run(sides[i], path, want, readers, 2.0, nullptr);
  }

  for (int r = 0; r < rounds; ++r) {
    for (auto& s : sides) {
      std::fprintf(stderr, "round %d/%d: %s\n", r + 1, rounds, s.name);
      double before[3];
      for (size_t w = 0; w < 3; ++w) before[w] = Served(*s.cluster, w);
      auto start = Clock::now();
      uint64_t n = Run(s, path, want, readers, seconds, &s.latency_ms);
      double secs = std::chrono::duration<double>(Clock::now() - start).count();
      s.reads_per_s.push_back(static_cast<double>(n) / secs);
      s.mb_per_s.push_back(static_cast<double>(n) * static_cast<double>(size) / secs / 1e6);
      double d[3];
      for (size_t w = 0; w < 3; ++w) d[w] = Served(*s.cluster, w) - before[w];
      s.owner_bytes += d[s.owner];
      s.next_bytes += d[s.next_owner];
      s.all_bytes += d[0] + d[1] + d[2];
    }
  }

  std::printf("| %s KiB file, %d readers, 3 workers | reads/s | MB/s | read p50 | read p99 | served by owner / next owner | under-store bytes / file size |\n",
              std::to_string(size / 1024).c_str(), readers);
  std::printf("|---|---|---|---|---|---|---|\n");
  double base = 0;
  for (auto& s : sides) {
    double store = 0;
    for (size_t w = 0; w < 3; ++w) store += Metric(*s.cluster, w, "shoal_ufs_read_bytes_total");
    double rps = Percentile(s.reads_per_s, 0.5);
    if (base == 0) base = rps;
    std::printf("| %s | %.0f | %.0f | %.2f ms | %.2f ms | %.0f%% / %.0f%% | %.2f |\n", s.name, rps,
                Percentile(s.mb_per_s, 0.5), Percentile(s.latency_ms, 0.5), Percentile(s.latency_ms, 0.99),
                s.all_bytes > 0 ? 100 * s.owner_bytes / s.all_bytes : 0, s.all_bytes > 0 ? 100 * s.next_bytes / s.all_bytes : 0,
                store / static_cast<double>(size));
  }
  std::printf("\non / off: %.2fx reads/s. Medians of %d rounds of %.0f s, interleaved off/on; each reader its own "
              "client, short circuit off; every read checked.\n",
              base > 0 ? Percentile(sides[1].reads_per_s, 0.5) / base : 0, rounds, seconds);
  for (auto& s : sides) s.cluster.reset();
  etcd->reset();
  std::filesystem::remove_all(ufs);
  for (const auto& r : roots) std::filesystem::remove_all(r);
  return 0;
}
