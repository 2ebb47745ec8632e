// cluster_bench: what a change of the cluster costs a training epoch (issue 14).
//
// The store is s3rver behind the WAN emulator (bench/wan_proxy: a first-byte
// delay, per-connection and total bandwidth caps), which counts what the store
// sends: the "UFS bytes" below. Workers are real `shoal worker` processes on
// loopback, registered in one etcd (each cluster under a prefix of its own);
// the readers are threads, each with its own Client (short circuit off, as
// readers on other hosts), that read the whole dataset of random small files
// once per epoch, in a new random order, every byte checked (bench/dataset.h).
//
// Join: two workers, a warm epoch, then a third worker joins; once every
// reader's client sees the 3-member ring, one more epoch: its UFS bytes over
// the dataset bytes (target <= 0.05 with worker.peer_fetch on) and its MB/s.
// Peer fetch on and off, each on a fresh cluster, interleaved round by round;
// with --base-shoal PATH a third variant runs the workers from that binary
// (e.g. one built before metadata peer fetch, so the epoch's stats of the new
// worker's paths go to the store). Per variant also the store requests per
// file of that epoch (the emulator counts them) and the stats the new worker
// took from its peers' caches (shoal_peer_meta_hits_total).
//
// Node loss: three workers (etcd lease --lease), a warm epoch, then an epoch
// during which one worker is killed with SIGKILL once a third of the files are
// read: `replicas: 2` (a path rule) against one copy plus the clients'
// rate-limited store fallback (client.fallback_rate/_requests at their
// defaults). Per variant: MB/s, failed reads, reads of files the killed worker
// owned after it died (served by a replica or the store), worker calls that
// failed, the clients' direct store reads, UFS bytes during the epoch, read
// latency, and the time from the kill until the readers' ring dropped it.
//
// Markdown tables on stdout, progress on stderr. Exit status: 0; 1 when a read
// failed or the join target was missed (the tables say which); 2 when the
// benchmark could not run (a worker that never started, a wrong byte).
//
//   cluster_bench --shoal build/shoal [--files 600] [--rounds 3] [--readers 8] [--lease 4s]
//                 [--delay 20ms] [--conn-rate 25MB] [--total-rate 200MB] [--quick]
//                 [--base-shoal PATH] [--only join|loss]
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "bench/dataset.h"
#include "bench/percentile.h"
#include "bench/wan_proxy.h"
#include "cluster/hash_ring.h"
#include "common/units.h"
#include "tests/harness/etcd.h"
#include "tests/harness/file_io.h"
#include "tests/harness/ring_snapshot.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

using namespace shoal;
using namespace shoal::testing;
using bench::Percentile;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "cluster_bench: %s\n", why.c_str());
  std::exit(2);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Flags {
  std::string shoal;
  std::string base_shoal;  // a third join variant's worker binary ("": none)
  std::string only;        // "join", "loss" or "" (both)
  int files = 600, rounds = 3, readers = 8;
  std::chrono::milliseconds lease{4'000};
  bench::WanProxyOptions wan;  // 20 ms, 25 MB/s per connection, 200 MB/s in total
};

// The files /data/fNNNN, 110-150 KiB of bench/dataset.h content each.
struct Dataset {
  uint64_t seed = 41;
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  uint64_t bytes = 0;

  std::string Path(size_t i) const { return "/data/" + names[i]; }
};

// The services every cluster shares: the store behind the emulator, and etcd.
struct Services {
  S3rverProcess s3;
  std::unique_ptr<bench::WanProxy> wan;
  std::unique_ptr<EtcdProcess> etcd;
  MountConfig mount;  // /data -> s3://cluster/set/ through the emulator
  std::string root;   // the clusters' cache dirs
  int clusters = 0;   // each registers under a prefix of its own

  uint64_t StoreBytes() const { return wan->stats().bytes_from_upstream; }
  uint64_t StoreRequests() const { return wan->stats().requests; }
};

void WriteDataset(Services& sv, Dataset& ds, int files) {
  MountConfig direct = sv.mount;  // written past the emulator
  direct.options["endpoint"] = sv.s3.endpoint();
  auto store = OpenUnderStore(direct);
  if (!store) Die("cannot open the store: " + store.error().ToString());
  std::mt19937_64 rng(ds.seed);
  for (int i = 0; i < files; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "f%04d", i);
    ds.names.push_back(name);
    ds.sizes.push_back(110 * kKiB + rng() % (40 * kKiB + 1));
    ds.bytes += ds.sizes.back();
  }
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string failed;
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&] {
      std::string data;
      for (size_t i = next++; i < ds.names.size(); i = next++) {
        data.resize(ds.sizes[i]);
        bench::FillContent(bench::ContentKey(ds.seed, ds.names[i]), 0, std::span<char>(data.data(), data.size()));
        if (Status s = (*store)->Write(ds.names[i], std::span<const char>(data.data(), data.size())); !s.ok()) {
          std::lock_guard lock(mu);
          failed = "writing " + ds.names[i] + " into s3rver: " + s.ToString();
          return;
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  if (!failed.empty()) Die(failed);
}

// Workers of one cluster in etcd, and the config they and their readers use.
class Cluster {
 public:
  Cluster(Services& sv, const Flags& flags, const std::string& name) {
    dir_ = sv.root + "/" + name + "-" + std::to_string(++sv.clusters);
    std::filesystem::create_directories(dir_);
    config_.mounts = {sv.mount};
    config_.cluster.etcd.endpoints = {sv.etcd->endpoint()};
    config_.cluster.etcd.prefix = "/shoal/cluster-bench-" + std::to_string(sv.clusters);
    config_.cluster.etcd.lease_ttl = flags.lease;
    config_.cluster.etcd.timeout = std::chrono::seconds(2);
    config_.cluster.secret = "cluster-bench-secret-0123456789";
    config_.worker.local_socket = "off";  // readers on other hosts: every read is a request
    config_.client.short_circuit = false;
  }
  ~Cluster() {
    for (auto& w : workers_) w.process.Stop(std::chrono::seconds(10));
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Config& config() { return config_; }
  const WorkerEntry& worker(size_t i) const { return workers_[i].entry; }
  std::vector<std::string> addresses() const {
    std::vector<std::string> out;
    for (const auto& w : workers_) out.push_back(w.entry.address);
    return out;
  }

  // Starts one more worker (the config as it is now).
  void AddWorker() {
    const std::string yaml = dir_ + "/worker.yaml";
    if (!WriteFile(yaml, ToYaml(config_)).ok()) Die("cannot write " + yaml);
    const std::string cache = dir_ + "/cache" + std::to_string(workers_.size());
    auto w = StartWorkerProcess(yaml, "127.0.0.1:0", cache, "1GiB", cache + ".log");
    if (!w) Die("a worker did not start: " + w.error().ToString());
    workers_.push_back(std::move(*w));
  }

  // SIGKILL, no cleanup: a crash. Returns at once (the process is reaped at the end).
  void Kill(size_t i) { workers_[i].process.Signal(SIGKILL); }

  // `n` clients, each as a process of a job would have, once each sees `members` workers.
  std::vector<std::unique_ptr<Client>> Readers(int n, size_t members) {
    std::vector<std::unique_ptr<Client>> out;
    for (int i = 0; i < n; ++i) {
      auto c = Client::FromYaml(ToYaml(config_), "cluster_bench");
      if (!c) Die("a reader's client: " + c.error().ToString());
      out.push_back(std::move(*c));
    }
    WaitForMembers(out, members);
    return out;
  }

  // Until every client's ring has `members` workers (etcd's watch brings them).
  void WaitForMembers(const std::vector<std::unique_ptr<Client>>& clients, size_t members) {
    for (const auto& c : clients) {
      if (!WaitFor([&] { return c->Ring().members.size() == members; }, std::chrono::seconds(60))) {
        Die("a client did not see " + std::to_string(members) + " workers in etcd within 60 s (it sees " +
            std::to_string(c->Ring().members.size()) + "; worker logs in " + dir_ + ")");
      }
    }
  }

  double Metric(const std::vector<std::string>& addresses, const std::string& name) const {
    auto v = WorkerMetricSum(addresses, name);
    if (!v) Die("worker metrics: " + v.error().ToString());
    return *v;
  }

 private:
  Config config_;
  std::string dir_;
  std::vector<WorkerProcess> workers_;
};

struct ReadRecord {
  size_t file = 0;
  Clock::time_point end;
  double ms = 0;
  bool ok = false;
};

struct Epoch {
  double seconds = 0;
  uint64_t failed = 0;
  std::string first_error;
  std::vector<ReadRecord> reads;

  double MBps(const Dataset& ds) const { return seconds > 0 ? static_cast<double>(ds.bytes) / seconds / 1e6 : 0; }
  std::vector<double> LatencyMs() const {
    std::vector<double> v;
    for (const auto& r : reads) v.push_back(r.ms);
    return v;
  }
};

// One epoch: every file once, whole, shared among the readers in a random
// order from `seed`; `after_read(n)` is called by the reader that finished the
// n-th read, before it goes on. A wrong byte ends the benchmark.
Epoch ReadEpoch(const std::vector<std::unique_ptr<Client>>& readers, const Dataset& ds, uint64_t seed,
                const std::function<void(size_t)>& after_read = {}) {
  std::vector<size_t> order(ds.names.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  Epoch e;
  std::string wrong;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (const auto& reader : readers) {
    threads.emplace_back([&, client = reader.get()] {
      std::vector<ReadRecord> mine;
      for (size_t k = next++; k < order.size(); k = next++) {
        const size_t i = order[k];
        const auto t0 = Clock::now();
        auto got = ReadWholeFile(*client, ds.Path(i));
        ReadRecord r{i, Clock::now(), 0, got.has_value()};
        r.ms = std::chrono::duration<double, std::milli>(r.end - t0).count();
        if (got && (got->size() != ds.sizes[i] ||
                    !bench::CheckContent(bench::ContentKey(ds.seed, ds.names[i]), 0,
                                         std::span<const char>(got->data(), got->size())))) {
          std::lock_guard lock(mu);
          wrong = ds.Path(i) + ": " + std::to_string(got->size()) + " bytes read that differ from the " +
                  std::to_string(ds.sizes[i]) + " written";
          return;
        }
        if (!got) {
          std::lock_guard lock(mu);
          if (e.failed++ == 0) e.first_error = ds.Path(i) + ": " + got.error().ToString();
        }
        mine.push_back(r);
        if (after_read) after_read(++done);
      }
      std::lock_guard lock(mu);
      e.reads.insert(e.reads.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  e.seconds = Seconds(Clock::now() - start);
  if (!wrong.empty()) Die("wrong bytes: " + wrong);
  return e;
}

struct StatsSum {
  uint64_t worker_failures = 0, fallback_bytes = 0, throttled = 0, rate_limited = 0;
};
StatsSum SumStats(const std::vector<std::unique_ptr<Client>>& clients) {
  StatsSum s;
  for (const auto& c : clients) {
    ClientStats st = c->stats();
    s.worker_failures += st.worker_failures;
    s.fallback_bytes += st.fallback_read_bytes;
    s.throttled += st.fallback_throttled_waits;
    s.rate_limited += st.fallback_rate_limited;
  }
  return s;
}

// ---- join ----------------------------------------------------------------------

struct JoinSide {
  const char* name = "";
  bool peer_fetch = true;
  std::string shoal;  // the workers' binary ("": --shoal)
  std::vector<double> store_ratio, store_requests, peer_ratio, peer_stats, mbps, warm_mbps;
  std::vector<double> latency_ms;
  uint64_t failed = 0;
  std::string first_error;
};

void RunJoin(Services& sv, const Flags& flags, const Dataset& ds, JoinSide& side, int round) {
  // Workers start from SHOAL_BIN (tests/harness/shoal_cluster.h).
  const std::string bin = std::filesystem::absolute(side.shoal.empty() ? flags.shoal : side.shoal).string();
  ::setenv("SHOAL_BIN", bin.c_str(), 1);
  Cluster c(sv, flags, side.peer_fetch ? "join-peer" : "join-nopeer");
  c.config().worker.peer_fetch = side.peer_fetch;
  c.AddWorker();
  c.AddWorker();
  auto readers = c.Readers(flags.readers, 2);
  Epoch cold = ReadEpoch(readers, ds, 1000 + static_cast<uint64_t>(round));
  Epoch warm = ReadEpoch(readers, ds, 2000 + static_cast<uint64_t>(round));

  c.AddWorker();
  c.WaitForMembers(readers, 3);
  std::fprintf(stderr, "  %s: the third worker joined (ring version %llu)\n", side.name,
               static_cast<unsigned long long>(readers[0]->Ring().version));
  const uint64_t bytes0 = sv.StoreBytes(), requests0 = sv.StoreRequests();
  Epoch after = ReadEpoch(readers, ds, 3000 + static_cast<uint64_t>(round));
  const double store = static_cast<double>(sv.StoreBytes() - bytes0);
  const double peer = c.Metric({c.worker(2).address}, "shoal_peer_fetch_bytes_total");
  const double peer_stats = c.Metric({c.worker(2).address}, "shoal_peer_meta_hits_total");  // 0 where unknown

  side.store_ratio.push_back(store / static_cast<double>(ds.bytes));
  side.store_requests.push_back(static_cast<double>(sv.StoreRequests() - requests0));
  side.peer_ratio.push_back(peer / static_cast<double>(ds.bytes));
  side.peer_stats.push_back(peer_stats);
  side.mbps.push_back(after.MBps(ds));
  side.warm_mbps.push_back(warm.MBps(ds));
  auto lat = after.LatencyMs();
  side.latency_ms.insert(side.latency_ms.end(), lat.begin(), lat.end());
  for (const Epoch* e : {&cold, &warm, &after}) {
    if (e->failed && side.first_error.empty()) side.first_error = e->first_error;
    side.failed += e->failed;
  }
  std::fprintf(stderr,
               "  %s: epoch after the join: %.4f of the dataset from the store (%.0f requests), %.2f from peers, "
               "%.0f stats from peers, %.0f MB/s\n",
               side.name, side.store_ratio.back(), side.store_requests.back(), side.peer_ratio.back(), peer_stats,
               side.mbps.back());
  ::setenv("SHOAL_BIN", std::filesystem::absolute(flags.shoal).c_str(), 1);
}

// ---- node loss -------------------------------------------------------------------

struct LossSide {
  const char* name = "";
  bool replicas = false;
  std::vector<double> mbps, store_mb, fallback_mb, drop_s, replicated;
  std::vector<double> latency_ms;
  uint64_t failed = 0, needed_killed = 0, worker_failures = 0, throttled = 0, rate_limited = 0;
  int not_dropped = 0;
  std::string first_error;
};

void RunLoss(Services& sv, const Flags& flags, const Dataset& ds, LossSide& side, int round) {
  Cluster c(sv, flags, side.replicas ? "loss-replicas" : "loss-fallback");
  if (side.replicas) {
    PathRule rule = EmptyRule("/data");
    rule.replicas = 2;
    c.config().rules = {rule};
  }
  for (int i = 0; i < 3; ++i) c.AddWorker();
  auto readers = c.Readers(flags.readers, 3);
  Epoch warm = ReadEpoch(readers, ds, 4000 + static_cast<uint64_t>(round));
  if (warm.failed) Die("the warm epoch failed " + std::to_string(warm.failed) + " reads: " + warm.first_error);
  double replicated = 0;
  if (side.replicas) {  // the holder that fetched each file pushes it to the other holder
    WaitFor([&] { return c.Metric(c.addresses(), "shoal_replica_push_bytes_total") >= static_cast<double>(ds.bytes); },
            std::chrono::seconds(120));
    replicated = c.Metric(c.addresses(), "shoal_replica_push_bytes_total") / static_cast<double>(ds.bytes);
  }

  // Which files the worker to be killed owns (the first holder of their metadata or their one shard).
  const size_t victim = 2;
  const std::string victim_id = c.worker(victim).id;
  const RingSnapshot ring = SnapshotOf(readers[0]->Ring());
  std::vector<bool> owned(ds.names.size());
  for (size_t i = 0; i < ds.names.size(); ++i) {
    auto st = readers[0]->Stat(ds.Path(i));
    if (!st) Die("stat " + ds.Path(i) + " before the kill: " + st.error().ToString());
    const auto meta = ring.ring.Owner(HashRing::MetaKey(ds.Path(i)));
    const auto data = ring.ring.Owner(HashRing::DataKey(ds.Path(i), st->version, 0));
    owned[i] = ring.workers[meta].id == victim_id || ring.workers[data].id == victim_id;
  }

  const StatsSum stats0 = SumStats(readers);
  const uint64_t bytes0 = sv.StoreBytes();
  std::atomic<bool> killed{false};
  Clock::time_point kill_time;
  std::thread watcher;  // how long until the readers' ring drops the killed worker
  std::atomic<double> drop_s{-1};
  const size_t kill_at = std::max<size_t>(1, ds.names.size() / 3);
  Epoch e = ReadEpoch(readers, ds, 5000 + static_cast<uint64_t>(round), [&](size_t n) {
    if (n != kill_at) return;
    kill_time = Clock::now();
    c.Kill(victim);
    killed = true;
    watcher = std::thread([&, client = readers[0].get()] {
      auto gone = [&] {
        for (const auto& m : client->Ring().members) {
          if (m.id == victim_id) return false;
        }
        return true;
      };
      if (WaitFor(gone, flags.lease + std::chrono::seconds(60))) drop_s = Seconds(Clock::now() - kill_time);
    });
  });
  const uint64_t store = sv.StoreBytes() - bytes0;
  const StatsSum stats1 = SumStats(readers);
  if (!killed) Die("the node-loss epoch ended before the kill");
  watcher.join();

  side.mbps.push_back(e.MBps(ds));
  side.store_mb.push_back(static_cast<double>(store) / 1e6);
  side.fallback_mb.push_back(static_cast<double>(stats1.fallback_bytes - stats0.fallback_bytes) / 1e6);
  side.replicated.push_back(replicated);
  if (drop_s >= 0) side.drop_s.push_back(drop_s);
  else ++side.not_dropped;
  auto lat = e.LatencyMs();
  side.latency_ms.insert(side.latency_ms.end(), lat.begin(), lat.end());
  for (const auto& r : e.reads) side.needed_killed += owned[r.file] && r.end > kill_time;
  if (!e.reads.empty()) {  // where the tail comes from
    const auto& slow = *std::max_element(e.reads.begin(), e.reads.end(),
                                         [](const ReadRecord& a, const ReadRecord& b) { return a.ms < b.ms; });
    std::fprintf(stderr, "  %s: slowest read %s: %.0f ms, started %.3f s after the kill, %s the killed worker\n",
                 side.name, ds.Path(slow.file).c_str(), slow.ms,
                 Seconds(slow.end - kill_time) - slow.ms / 1000, owned[slow.file] ? "needed" : "did not need");
  }
  side.failed += e.failed;
  if (e.failed && side.first_error.empty()) side.first_error = e.first_error;
  side.worker_failures += stats1.worker_failures - stats0.worker_failures;
  side.throttled += stats1.throttled - stats0.throttled;
  side.rate_limited += stats1.rate_limited - stats0.rate_limited;
  std::fprintf(stderr, "  %s: %.0f MB/s, %llu failed reads, %.1f MB from the store, ring dropped the worker after %.1f s\n",
               side.name, side.mbps.back(), static_cast<unsigned long long>(e.failed), side.store_mb.back(),
               drop_s.load());
}

std::string MachineLine() {
  struct utsname u {};
  ::uname(&u);
  const double mem = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  double load[1] = {0};
  ::getloadavg(load, 1);
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  char buf[256];
  std::snprintf(buf, sizeof buf, "Machine: nproc %ld, memory %.1f GiB, kernel %s, load average %.2f at the start; %s.",
                ::sysconf(_SC_NPROCESSORS_ONLN), mem / static_cast<double>(kGiB), u.release, load[0], date);
  return buf;
}

double Median(const std::vector<double>& v) { return Percentile(v, 0.5); }
double Max(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

[[noreturn]] void Usage(const std::string& why) {
  Die(why + "\nusage: cluster_bench --shoal PATH [--files N] [--rounds R] [--readers N] [--lease 4s] "
            "[--delay 20ms] [--conn-rate 25MB] [--total-rate 200MB] [--quick] [--base-shoal PATH] "
            "[--only join|loss]");
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  bool files_set = false, rounds_set = false, quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    auto count = [&](int lo) {
      const std::string v = value();
      int n = std::atoi(v.c_str());
      if (n < lo) Usage(a + " " + v + ": give a number of at least " + std::to_string(lo));
      return n;
    };
    if (a == "--shoal") {
      f.shoal = value();
    } else if (a == "--base-shoal") {
      f.base_shoal = value();
    } else if (a == "--only") {
      f.only = value();
      if (f.only != "join" && f.only != "loss") Usage("--only " + f.only + ": give join or loss");
    } else if (a == "--files") {
      f.files = count(12);
      files_set = true;
    } else if (a == "--rounds") {
      f.rounds = count(1);
      rounds_set = true;
    } else if (a == "--readers") {
      f.readers = count(1);
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--lease" || a == "--delay") {
      const std::string v = value();
      auto d = ParseDuration(v);
      if (!d) Usage("bad " + a + " " + v + ": " + d.error().message());
      if (a == "--lease") f.lease = *d;
      else f.wan.first_byte_delay = std::chrono::duration_cast<std::chrono::microseconds>(*d);
    } else if (a == "--conn-rate" || a == "--total-rate") {
      const std::string v = value();
      auto r = ParseSize(v);
      if (!r) Usage("bad " + a + " " + v + " (bytes per second, e.g. 25MB): " + r.error().message());
      (a == "--conn-rate" ? f.wan.conn_bytes_per_sec : f.wan.total_bytes_per_sec) = *r;
    } else {
      Usage("unknown argument " + a);
    }
  }
  if (f.shoal.empty()) Usage("give --shoal PATH (the shoal binary)");
  if (quick && !files_set) f.files = 300;
  if (quick && !rounds_set) f.rounds = 2;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_logger_mt("cluster_bench"));  // stdout carries the tables
  const Flags flags = ParseFlags(argc, argv);
  ::setenv("SHOAL_BIN", std::filesystem::absolute(flags.shoal).c_str(), 1);
  const std::string machine = MachineLine();

  Services sv;
  auto s3 = S3rverProcess::Start();
  if (!s3) Die("s3rver: " + s3.error().ToString());
  sv.s3 = std::move(*s3);
  if (Status s = sv.s3.CreateBucket("cluster"); !s.ok()) Die("s3rver bucket: " + s.ToString());
  bench::WanProxyOptions wan = flags.wan;
  wan.upstream_port = static_cast<uint16_t>(sv.s3.port());
  auto proxy = bench::WanProxy::Start(wan);
  if (!proxy) Die("the WAN emulator: " + proxy.error().ToString());
  sv.wan = std::move(*proxy);
  auto etcd = EtcdProcess::Start();
  if (!etcd) Die("etcd: " + etcd.error().ToString());
  sv.etcd = std::move(*etcd);
  sv.root = MakeTempDir("cluster-bench");
  if (sv.root.empty()) Die("cannot make a temp dir");
  sv.mount.path = "/data";
  sv.mount.ufs = "s3://cluster/set/";
  sv.mount.consistency = Consistency::kImmutable;
  sv.mount.options = sv.s3.MountOptions();
  sv.mount.options["endpoint"] = "http://127.0.0.1:" + std::to_string(sv.wan->port());

  Dataset ds;
  WriteDataset(sv, ds, flags.files);
  std::fprintf(stderr, "dataset: %zu files, %.1f MB in s3rver; emulator on 127.0.0.1:%u\n", ds.names.size(),
               static_cast<double>(ds.bytes) / 1e6, static_cast<unsigned>(sv.wan->port()));

  std::vector<JoinSide> join(flags.base_shoal.empty() ? 2 : 3);
  join[0].name = "peer fetch on (worker.peer_fetch: true, the default)";
  join[1].name = "peer fetch off";
  join[1].peer_fetch = false;
  const std::string base_name = "peer fetch on, workers of --base-shoal " + flags.base_shoal;
  if (join.size() > 2) {
    join[2].name = base_name.c_str();
    join[2].shoal = flags.base_shoal;
  }
  LossSide loss[2];
  loss[0].name = "replicas: 2";
  loss[0].replicas = true;
  loss[1].name = "one copy + store fallback (client.fallback_rate 200 MiB/s, 100 requests/s)";
  for (int r = 0; r < flags.rounds; ++r) {
    for (size_t k = 0; k < join.size() && flags.only != "loss"; ++k) {  // A B C, then B C A, ...
      JoinSide& s = join[(static_cast<size_t>(r) + k) % join.size()];
      std::fprintf(stderr, "round %d/%d: join, %s\n", r + 1, flags.rounds, s.name);
      RunJoin(sv, flags, ds, s, r);
    }
    for (int k = 0; k < 2 && flags.only != "join"; ++k) {
      LossSide& s = loss[(r + k) % 2];
      std::fprintf(stderr, "round %d/%d: node loss, %s\n", r + 1, flags.rounds, s.name);
      RunLoss(sv, flags, ds, s, r);
    }
  }

  int status = 0;
  const double mb = static_cast<double>(ds.bytes) / 1e6;
  std::printf("%s\n\n", machine.c_str());
  std::printf("Dataset: %zu files of 110-150 KiB (%.1f MB) in s3rver behind the WAN emulator (first byte %.0f ms, "
              "%.0f MB/s per connection, %.0f MB/s in total); %d readers, each its own client (short circuit off); "
              "every byte checked; %d rounds, variants interleaved, fresh clusters in one etcd.\n\n",
              ds.names.size(), mb, std::chrono::duration<double, std::milli>(flags.wan.first_byte_delay).count(),
              static_cast<double>(flags.wan.conn_bytes_per_sec) / 1e6,
              static_cast<double>(flags.wan.total_bytes_per_sec) / 1e6, flags.readers, flags.rounds);

  bool join_met = true;
  if (flags.only != "loss") {
    std::printf("### A worker joins a warm cluster of two\n\n");
    std::printf("| epoch after the join | UFS bytes / dataset bytes, median (max) | UFS requests | UFS requests / "
                "file | bytes from peers / dataset | stats from peers (new worker) | MB/s | read p99 | MB/s before the "
                "join (2 workers, warm) | failed reads |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& s : join) {
      if (s.mbps.empty()) continue;
      std::printf("| %s | %.4f (%.4f) | %.0f | %.3f | %.2f | %.0f | %.0f | %.1f ms | %.0f | %llu |\n", s.name,
                  Median(s.store_ratio), Max(s.store_ratio), Median(s.store_requests),
                  Median(s.store_requests) / static_cast<double>(ds.names.size()), Median(s.peer_ratio),
                  Median(s.peer_stats), Median(s.mbps), Percentile(s.latency_ms, 0.99), Median(s.warm_mbps),
                  static_cast<unsigned long long>(s.failed));
    }
    join_met = Max(join[0].store_ratio) <= 0.05;
    std::printf("\nTarget (issue 14): UFS bytes / dataset bytes <= 0.05 with peer fetch: %s (worst round %.4f); "
                "without peer fetch the new worker's share (about a third) comes from the store.\n\n",
                join_met ? "met" : "MISSED", Max(join[0].store_ratio));
    if (!join_met) status = 1;
  }

  if (flags.only == "join") {
    std::error_code ec;
    std::filesystem::remove_all(sv.root, ec);
    return status;
  }
  std::printf("### One of three workers killed (SIGKILL) a third into an epoch (etcd lease %.0f s)\n\n",
              std::chrono::duration<double>(flags.lease).count());
  std::printf("| variant | epoch MB/s | failed reads | reads that needed the killed worker | worker calls failed | "
              "clients' direct store reads | UFS bytes in the epoch | read p50 / p99 / max | kill -> ring dropped "
              "the worker | replicated before the kill |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& s : loss) {
    char dropped[128] = "never";
    if (!s.drop_s.empty()) std::snprintf(dropped, sizeof dropped, "%.1f s", Median(s.drop_s));
    if (s.not_dropped) {
      std::snprintf(dropped + std::strlen(dropped), sizeof dropped - std::strlen(dropped),
                    " (not within the lease + 60 s in %d rounds)", s.not_dropped);
    }
    std::printf("| %s | %.0f | %llu | %llu | %llu | %.1f MB (%llu waits, %llu refused) | %.1f MB | %.1f / %.1f / %.0f ms | "
                "%s | %s |\n",
                s.name, Median(s.mbps), static_cast<unsigned long long>(s.failed),
                static_cast<unsigned long long>(s.needed_killed), static_cast<unsigned long long>(s.worker_failures),
                Median(s.fallback_mb), static_cast<unsigned long long>(s.throttled),
                static_cast<unsigned long long>(s.rate_limited), Median(s.store_mb), Percentile(s.latency_ms, 0.5),
                Percentile(s.latency_ms, 0.99), Max(s.latency_ms), dropped,
                s.replicas ? (std::to_string(static_cast<int>(100 * Median(s.replicated))) + "%").c_str() : "-");
  }
  std::printf("\nMB/s, MB and the drop time are medians over the rounds; reads and calls are totals over all "
              "rounds; latencies over every read of the epochs. A read \"needed the killed worker\" when that "
              "worker owned the file's metadata or data and the read ended after the kill.\n");
  for (const auto& s : join) {
    if (s.failed) std::fprintf(stderr, "cluster_bench: %s: %llu reads failed, the first: %s\n", s.name,
                               static_cast<unsigned long long>(s.failed), s.first_error.c_str());
  }
  for (const auto& s : loss) {
    if (s.failed) {
      std::printf("\n%s: %llu reads failed; the first: %s\n", s.name, static_cast<unsigned long long>(s.failed),
                  s.first_error.c_str());
      std::fprintf(stderr, "cluster_bench: %s: %llu reads failed, the first: %s\n", s.name,
                   static_cast<unsigned long long>(s.failed), s.first_error.c_str());
      status = 1;
    }
  }
  for (const auto& s : join) {
    if (s.failed) status = 1;
  }
  if (!join_met) std::fprintf(stderr, "cluster_bench: the join target (<= 0.05 with peer fetch) was missed\n");
  std::error_code ec;
  std::filesystem::remove_all(sv.root, ec);
  return status;
}
