// core_bench: the core-issue benchmark. One local worker (`shoal up --workers 1`
// over a temp directory), the native client, warm cache:
//   1. sequential read of a 1 GiB file vs TCP loopback throughput measured in
//      the same run (a plain socket sender/receiver here, same buffer size),
//      interleaved A B A B; medians and the ratio (target >= 0.8x);
//   2. 128 KiB reads at random offsets: p50/p99 (target p99 < 1 ms);
//   3. what checking page checksums costs: a second worker over the same data
//      with worker.verify_checksums off, read by clients with
//      client.verify_checksums off, measured interleaved with the default
//      (verified) cluster: warm sequential reads short-circuit and over TCP,
//      warm 128 KiB random read p99; ratios verified / unverified (target:
//      at most 10% worse).
// Prints a markdown table for docs/benchmarks.md on stdout; progress on stderr.
//
//   core_bench --shoal build/shoal [--size 1GiB] [--rounds 5] [--random-reads 2000]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench/dataset.h"
#include "common/config.h"
#include "common/subprocess.h"
#include "common/units.h"
#include "shoal/client.h"

using namespace shoal;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kBuf = 4 << 20;  // both sides read into a 4 MiB user buffer

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "core_bench: %s\n", why.c_str());
  std::exit(1);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

// Sends `bytes` over a loopback TCP connection and receives them into a user
// buffer; returns MB/s. The ceiling for a worker that serves over TCP.
double TcpLoopbackMBps(uint64_t bytes) {
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 1) != 0 ||
      ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    Die("cannot listen on 127.0.0.1 for the TCP loopback measurement");
  std::thread sender([&] {
    int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    std::vector<char> buf(kBuf);
    bench::FillContent(1, 0, buf);
    for (uint64_t sent = 0; sent < bytes;) {
      ssize_t n = ::send(fd, buf.data(), std::min<uint64_t>(buf.size(), bytes - sent), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<uint64_t>(n);
    }
    ::close(fd);
  });
  auto t0 = Clock::now();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) Die("loopback connect failed");
  std::vector<char> buf(kBuf);
  uint64_t got = 0;
  for (ssize_t n; (n = ::recv(fd, buf.data(), buf.size(), 0)) > 0;) got += static_cast<uint64_t>(n);
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  sender.join();
  ::close(lfd);
  if (got != bytes) Die("loopback transfer was short");
  return static_cast<double>(bytes) / 1e6 / secs;
}

// Says where a read differs from the source, so a wrong-data bug can be chased.
[[noreturn]] void Mismatch(const std::string& path, uint64_t key, uint64_t offset, const char* data, size_t n) {
  std::vector<char> expect(n);
  bench::FillContent(key, offset, expect);
  size_t first = 0, last = 0, zeros = 0;
  bool any = false;
  for (size_t i = 0; i < n; i++) {
    if (data[i] == 0) zeros++;
    if (data[i] != expect[i]) {
      if (!any) first = i;
      any = true;
      last = i;
    }
  }
  // Where the wrong bytes came from, if they are another part of the file.
  std::string found = "not found nearby";
  if (n - first >= 64) {
    std::vector<char> probe(64);
    for (int64_t d = -64; d <= 64 && found == "not found nearby"; d++) {
      int64_t src = static_cast<int64_t>(offset + first) + d * (1 << 20);
      if (src < 0) continue;
      bench::FillContent(key, static_cast<uint64_t>(src), probe);
      if (std::memcmp(probe.data(), data + first, 64) == 0) found = "equal to file offset " + std::to_string(src);
    }
  }
  Die("data read through Shoal does not match the source: " + path + " read at offset " + std::to_string(offset) +
      " length " + std::to_string(n) + ": bytes differ from " + std::to_string(offset + first) + " to " +
      std::to_string(offset + last) + " (" + std::to_string(zeros) + " zero bytes in the read; the first wrong bytes are " +
      found + ")");
}

// CPU seconds used so far by process `pid` (all its live threads; precise to
// the nanosecond, unlike /proc/PID/stat's ticks). 0 if it cannot be read.
double ProcessCpuSeconds(pid_t pid) {
  std::error_code ec;
  uint64_t ns = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(t.path() / "schedstat");
    uint64_t run = 0;
    if (in >> run) ns += run;
  }
  return static_cast<double>(ns) / 1e9;
}

// This process's CPU seconds (threads that ended included).
double SelfCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

// The only child of `pid` (the worker of `shoal up --workers 1`), or -1.
pid_t OnlyChild(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = -1;
  return in >> child ? child : -1;
}

// One sequential read: throughput, and the CPU it took (the client's during
// the timed calls, the worker's over the whole read), in seconds per GB.
struct SeqResult {
  double mbps = 0;
  double cpu_s_per_gb = 0;
};

// Reads the whole file sequentially through the client, with File::Read (the
// client's read-ahead) or with back-to-back 4 MiB Preads; returns MB/s. Every
// byte is checked against the source, outside the timed calls. With `worker`
// (the pid of the worker it reads from) the CPU cost is measured too.
SeqResult ShoalSequential(Client& client, const std::string& path, uint64_t size, uint64_t key, bool pread = false,
                          pid_t worker = -1) {
  double worker_cpu0 = worker > 0 ? ProcessCpuSeconds(worker) : 0, client_cpu = 0;
  auto t0 = Clock::now();
  double c0 = SelfCpuSeconds();
  auto f = client.OpenFile(path);
  if (!f) Die("open " + path + ": " + f.error().ToString());
  Clock::duration timed = Clock::now() - t0;
  client_cpu += SelfCpuSeconds() - c0;
  std::vector<char> buf(kBuf);
  uint64_t done = 0;
  while (done < size) {
    auto t1 = Clock::now();
    double c1 = SelfCpuSeconds();
    auto n = pread ? (*f)->Pread(done, buf) : (*f)->Read(buf);
    timed += Clock::now() - t1;
    client_cpu += SelfCpuSeconds() - c1;
    if (!n) Die("read " + path + " at " + std::to_string(done) + ": " + n.error().ToString());
    if (*n == 0) break;
    if (!bench::CheckContent(key, done, std::span<const char>(buf.data(), *n))) Mismatch(path, key, done, buf.data(), *n);
    done += *n;
  }
  double secs = std::chrono::duration<double>(timed).count();
  if (done != size) Die("short read of " + path + ": " + std::to_string(done) + " of " + std::to_string(size));
  double worker_cpu = worker > 0 ? ProcessCpuSeconds(worker) - worker_cpu0 : 0;
  return {static_cast<double>(size) / 1e6 / secs, (client_cpu + worker_cpu) / (static_cast<double>(size) / 1e9)};
}

double ShoalSequentialMBps(Client& client, const std::string& path, uint64_t size, uint64_t key, bool pread = false) {
  return ShoalSequential(client, path, size, key, pread).mbps;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shoal_bin;
  uint64_t size = kGiB;
  int rounds = 5, random_reads = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--shoal") shoal_bin = v;
    else if (k == "--size") size = ParseSize(v).value_or(0);
    else if (k == "--rounds") rounds = std::stoi(v);
    else if (k == "--random-reads") random_reads = std::stoi(v);
    else Die("unknown flag " + k + " (see the header of bench/core_bench.cc)");
  }
  if (shoal_bin.empty() || size < kBuf) Die("usage: core_bench --shoal PATH [--size 1GiB] [--rounds 5] [--random-reads 2000]");

  char tmpl[] = "/tmp/shoal-core-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) Die("mkdtemp failed");
  std::filesystem::path dir(tmpl);
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() { std::error_code ec; std::filesystem::remove_all(d, ec); }
  } cleanup{dir};
  std::filesystem::create_directories(dir / "ufs");

  // The 1 GiB file of random bytes.
  const std::string name = "core.bin";
  const uint64_t key = bench::ContentKey(42, name);
  {
    std::ofstream out(dir / "ufs" / name, std::ios::binary);
    std::vector<char> buf(kBuf);
    for (uint64_t off = 0; off < size; off += buf.size()) {
      size_t n = std::min<uint64_t>(buf.size(), size - off);
      bench::FillContent(key, off, std::span<char>(buf.data(), n));
      out.write(buf.data(), static_cast<std::streamsize>(n));
    }
    if (!out.flush()) Die("cannot write the test file under " + dir.string());
  }

  Subprocess::Options so;
  so.argv = {shoal_bin, "up", "--workers", "1", "--ufs", (dir / "ufs").string(), "--cache-dir", (dir / "cache").string(),
             "--cache-size", std::to_string(2 * size + kGiB), "--state-dir", (dir / "state").string()};
  so.stderr_file = (dir / "shoal.log").string();
  auto up = Subprocess::Start(so);
  if (!up) Die("cannot start " + shoal_bin + ": " + up.error().ToString());
  auto ready = up->WaitForLine("ready: config=", std::chrono::seconds(60));
  if (!ready) Die("`shoal up` did not print ready: " + ready.error().ToString());
  std::string config = ready->substr(ready->find("config=") + 7);
  while (!config.empty() && (config.back() == '\n' || config.back() == '\r' || config.back() == ' ')) config.pop_back();

  // Four clients: {verified, unverified} x {short-circuit, over TCP}. The
  // unverified ones read a second worker, started here over the same UFS with
  // worker.verify_checksums off, with client.verify_checksums off.
  auto base = LoadConfig(config);
  if (!base) Die("cannot read " + config + ": " + base.error().ToString());
  if (base->mounts.empty()) Die("the cluster from `shoal up` has no mounts");
  if (!base->client.short_circuit) Die(config + " does not say client.short_circuit: true");
  Config unverified_worker = *base;
  unverified_worker.cluster.workers.clear();
  unverified_worker.worker.verify = "off";
  const std::string worker_yaml = (dir / "unverified-worker.yaml").string();
  {
    std::ofstream out(worker_yaml);
    out << ToYaml(unverified_worker);
    if (!out.flush()) Die("cannot write " + worker_yaml);
  }
  Subprocess::Options wo;
  wo.argv = {shoal_bin, "worker", "--config", worker_yaml, "--listen", "127.0.0.1:0", "--cache-dir",
             (dir / "cache-unverified").string(), "--cache-size", std::to_string(2 * size + kGiB)};
  wo.stderr_file = (dir / "unverified-worker.log").string();
  auto uw = Subprocess::Start(wo);
  if (!uw) Die("cannot start the unverified worker: " + uw.error().ToString());
  auto listening = uw->WaitForLine("listening:", std::chrono::seconds(60));
  if (!listening) Die("the unverified worker did not start: " + listening.error().ToString() + " (log: " + wo.stderr_file + ")");
  auto uentry = ParseListeningLine(*listening);
  if (!uentry) Die("the unverified worker: " + uentry.error().ToString());

  auto make_client = [&](bool verified, bool short_circuit) {
    Config c = *base;
    if (!verified) c.cluster.workers = {*uentry};
    c.client.verify_checksums = verified;
    c.client.short_circuit = short_circuit;
    auto cl = Client::FromYaml(ToYaml(c), config + (verified ? "" : " (unverified)") + (short_circuit ? "" : " (over TCP)"));
    if (!cl) Die("Client::FromYaml: " + cl.error().ToString());
    return std::move(*cl);
  };
  auto client = make_client(true, true);
  // The same cluster read over TCP only: a client on another host, or with client.short_circuit off.
  auto tcp_client = make_client(true, false);
  auto u_client = make_client(false, true);
  auto u_tcp_client = make_client(false, false);
  std::string path = base->mounts[0].path;
  if (path.empty() || path.back() != '/') path += "/";
  path += name;

  std::fprintf(stderr, "core_bench: cold read of %s (%s)\n", path.c_str(), FormatSize(size).c_str());
  double cold = ShoalSequentialMBps(*client, path, size, key);
  std::fprintf(stderr, "core_bench: cold read of %s from the unverified worker\n", path.c_str());
  ShoalSequentialMBps(*u_client, path, size, key);
  // The test file and the pages just cached are 3 GiB of dirty page cache:
  // write them back now, not in the kernel's flusher during the timed rounds.
  ::sync();

  const pid_t worker_pid = OnlyChild(up->pid()), u_worker_pid = uw->pid();
  if (worker_pid <= 0) Die("cannot find the worker process of `shoal up` (pid " + std::to_string(up->pid()) + ")");
  std::vector<double> shoal_mbps, pread_mbps, tcp_mbps, over_tcp_mbps, u_shoal_mbps, u_over_tcp_mbps;
  std::vector<double> shoal_cpu, over_tcp_cpu, u_shoal_cpu, u_over_tcp_cpu;  // CPU s/GB, client + worker
  for (int r = 0; r < rounds; r++) {
    // Verified and unverified back to back, the order swapped every round so
    // that neither always runs on a cache the other just warmed.
    bool u_first = r % 2 == 1;
    auto pair = [&](Client& verified, Client& unverified, std::vector<double>& v, std::vector<double>& u,
                    std::vector<double>& v_cpu, std::vector<double>& u_cpu) {
      auto run = [&](bool verified_one) {
        auto res = ShoalSequential(verified_one ? verified : unverified, path, size, key, false,
                                   verified_one ? worker_pid : u_worker_pid);
        (verified_one ? v : u).push_back(res.mbps);
        (verified_one ? v_cpu : u_cpu).push_back(res.cpu_s_per_gb);
      };
      run(!u_first);
      run(u_first);
    };
    pair(*client, *u_client, shoal_mbps, u_shoal_mbps, shoal_cpu, u_shoal_cpu);
    tcp_mbps.push_back(TcpLoopbackMBps(size));
    pair(*tcp_client, *u_tcp_client, over_tcp_mbps, u_over_tcp_mbps, over_tcp_cpu, u_over_tcp_cpu);
    pread_mbps.push_back(ShoalSequentialMBps(*client, path, size, key, /*pread=*/true));
    std::fprintf(stderr,
                 "core_bench: round %d: shoal Read %.0f MB/s %.3f CPU s/GB (unverified %.0f, %.3f), tcp %.0f MB/s, "
                 "shoal over TCP %.0f MB/s %.3f CPU s/GB (unverified %.0f, %.3f), shoal Pread %.0f MB/s\n",
                 r + 1, shoal_mbps.back(), shoal_cpu.back(), u_shoal_mbps.back(), u_shoal_cpu.back(), tcp_mbps.back(),
                 over_tcp_mbps.back(), over_tcp_cpu.back(), u_over_tcp_mbps.back(), u_over_tcp_cpu.back(),
                 pread_mbps.back());
  }

  // Warm 128 KiB random reads; each one checked after its timing. The two
  // clients of a pair take turns in blocks of 100 reads of the same offsets.
  struct Latency {
    double p50, p99, max;
  };
  auto random_reads_ms = [&](Client& a, Client& b) {
    auto fa = a.OpenFile(path);
    auto fb = b.OpenFile(path);
    if (!fa || !fb) Die("open " + path + ": " + (fa ? fb : fa).error().ToString());
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<uint64_t> pick(0, (size - 128 * kKiB) / 4096);
    std::vector<uint64_t> offsets(static_cast<size_t>(random_reads));
    for (auto& off : offsets) off = pick(rng) * 4096;
    std::vector<char> buf(128 * kKiB);
    std::vector<double> lat[2];
    constexpr size_t kBlock = 100;
    for (size_t start = 0; start < offsets.size(); start += kBlock) {
      for (int turn = 0; turn < 2; ++turn) {
        int which = (start / kBlock) % 2 == 0 ? turn : 1 - turn;
        File& f = which == 0 ? **fa : **fb;
        for (size_t i = start; i < std::min(offsets.size(), start + kBlock); ++i) {
          auto t0 = Clock::now();
          auto n = f.Pread(offsets[i], buf);
          lat[which].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          if (!n || *n != buf.size()) Die("random read at " + std::to_string(offsets[i]) + " failed");
          if (!bench::CheckContent(key, offsets[i], buf)) {
            Die("random read at " + std::to_string(offsets[i]) + " does not match the source");
          }
        }
      }
    }
    std::pair<Latency, Latency> out;
    for (int w = 0; w < 2; ++w) {
      auto& l = lat[w];
      std::sort(l.begin(), l.end());
      auto at = [&](double q) { return l[std::min(l.size() - 1, static_cast<size_t>(q * l.size()))]; };
      (w == 0 ? out.first : out.second) = Latency{at(0.5), at(0.99), l.back()};
    }
    return out;
  };
  auto [rnd, u_rnd] = random_reads_ms(*client, *u_client);
  auto [rnd_tcp, u_rnd_tcp] = random_reads_ms(*tcp_client, *u_tcp_client);

  uint64_t hit = 0, miss = 0;
  int up_workers = 0;
  for (const auto& w : client->ClusterStatus()) hit += w.hit_bytes, miss += w.miss_bytes, up_workers += w.up;
  auto cs = client->stats();
  auto ts = tcp_client->stats();
  if (ts.local_read_bytes != 0 || u_tcp_client->stats().local_read_bytes != 0) Die("a client with short_circuit off read page files");
  if (cs.local_read_bytes == 0 || u_client->stats().local_read_bytes == 0) {
    Die("a short-circuit client never read short-circuit: is the worker's local socket off?");
  }
  if (cs.local_corrupt_reads != 0) Die("the verified client found corrupt pages: see the worker logs under " + dir.string());

  double ms = Median(shoal_mbps), mt = Median(tcp_mbps), ratio = ms / mt, mo = Median(over_tcp_mbps);
  auto list = [](const std::vector<double>& v) {
    std::string s;
    for (double x : v) s += (s.empty() ? "" : ", ") + std::to_string(static_cast<int>(x));
    return s;
  };
  auto verdict = [](double r) {
    return r >= 0.8 ? std::string("met") : "missed by " + std::to_string(static_cast<int>(100 * (1 - r / 0.8))) + "%";
  };
  std::printf("One worker on loopback (`shoal up --workers 1`, file:// UFS), native client, %s file, %d rounds of (Read, TCP, Read over TCP, Pread) interleaved; reads are timed per call and every byte is checked outside the timing. "
              "The client is on the worker's host, so by default it reads cached pages short-circuit (page fds passed over a UNIX socket, then pread); "
              "\"over TCP\" is the same cluster with client.short_circuit off, as a client on another host reads it. "
              "Page checksums are verified on every read (the default).\n\n",
              FormatSize(size).c_str(), rounds);
  std::printf("| figure | measured | target |\n|---|---|---|\n");
  std::printf("| warm sequential read, native client, default (median MB/s) | %.0f (rounds: %s) | |\n", ms, list(shoal_mbps).c_str());
  double mp = Median(pread_mbps);
  std::printf("| warm sequential read, 4 MiB Preads back to back (median MB/s) | %.0f (rounds: %s) | |\n", mp,
              list(pread_mbps).c_str());
  std::printf("| warm sequential read, native client over TCP (median MB/s) | %.0f (rounds: %s) | |\n", mo,
              list(over_tcp_mbps).c_str());
  std::printf("| TCP loopback, same run, same buffer (median MB/s) | %.0f (rounds: %s) | |\n", mt, list(tcp_mbps).c_str());
  std::printf("| ratio Shoal (Read, default) / TCP loopback | %.2f | >= 0.80: %s |\n", ratio, verdict(ratio).c_str());
  std::printf("| ratio Shoal (Preads, default) / TCP loopback | %.2f | |\n", mp / mt);
  std::printf("| ratio Shoal over TCP (Read) / TCP loopback | %.2f | (>= 0.80: %s) |\n", mo / mt, verdict(mo / mt).c_str());
  std::printf("| cold first read (MB/s, file:// UFS) | %.0f | |\n", cold);
  std::printf("| warm 128 KiB random reads, default, p50 / p99 / max (ms), %d reads | %.3f / %.3f / %.3f | p99 < 1 ms: %s |\n",
              random_reads, rnd.p50, rnd.p99, rnd.max, rnd.p99 < 1.0 ? "met" : "missed");
  std::printf("| warm 128 KiB random reads, over TCP, p50 / p99 / max (ms), %d reads | %.3f / %.3f / %.3f | (p99 < 1 ms: %s) |\n",
              random_reads, rnd_tcp.p50, rnd_tcp.p99, rnd_tcp.max, rnd_tcp.p99 < 1.0 ? "met" : "missed");
  std::printf("| cluster hit / miss bytes (workers up: %d); default client: worker / of them short-circuit / fallback read bytes | %llu / %llu; %llu / %llu / %llu | |\n",
              up_workers, static_cast<unsigned long long>(hit), static_cast<unsigned long long>(miss),
              static_cast<unsigned long long>(cs.worker_read_bytes), static_cast<unsigned long long>(cs.local_read_bytes),
              static_cast<unsigned long long>(cs.fallback_read_bytes));
  if (mo / mt < 0.8) {
    std::printf("\nOver TCP the client reaches %.0f%% of TCP loopback: on 2 cores the worker's reads, the kernel's loopback "
                "path and the client's receive copy share the CPUs that a plain socket transfer has to itself. The short circuit removes TCP from the warm path on the same host.\n",
                100 * mo / mt);
  }

  // What the checksums cost, from the same rounds.
  auto per_round = [](const std::vector<double>& v, const std::vector<double>& u) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < u.size(); ++i) s += fmt::format("{}{:.2f}", s.empty() ? "" : ", ", v[i] / u[i]);
    return s;
  };
  auto throughput_verdict = [](double r) {
    return r >= 0.9 ? std::string("met") : "missed: " + std::to_string(static_cast<int>(100 * (1 - r) + 0.5)) + "% slower";
  };
  auto latency_verdict = [](double r) {
    return r <= 1.1 ? std::string("met") : "missed: " + std::to_string(static_cast<int>(100 * (r - 1) + 0.5)) + "% higher";
  };
  double us = Median(u_shoal_mbps), uo = Median(u_over_tcp_mbps);
  std::printf("\nWhat checking page checksums on every read costs: the same rounds also read a second worker over the same data "
              "with worker.verify_checksums off, through clients with client.verify_checksums off (both knobs exist only for "
              "this measurement), each verified read back to back with its unverified twin, the order swapped every round; "
              "the random reads alternate in blocks of 100 over the same offsets.\n\n");
  std::printf("| figure | verified (default) | unverified | verified / unverified | target |\n|---|---|---|---|---|\n");
  std::printf("| warm sequential read, short-circuit (median MB/s) | %.0f | %.0f (rounds: %s) | %.2f (per round: %s) | >= 0.90: %s |\n",
              ms, us, list(u_shoal_mbps).c_str(), ms / us, per_round(shoal_mbps, u_shoal_mbps).c_str(),
              throughput_verdict(ms / us).c_str());
  std::printf("| warm sequential read, over TCP (median MB/s) | %.0f | %.0f (rounds: %s) | %.2f (per round: %s) | >= 0.90: %s |\n",
              mo, uo, list(u_over_tcp_mbps).c_str(), mo / uo, per_round(over_tcp_mbps, u_over_tcp_mbps).c_str(),
              throughput_verdict(mo / uo).c_str());
  double cs_v = Median(shoal_cpu), cs_u = Median(u_shoal_cpu), ct_v = Median(over_tcp_cpu), ct_u = Median(u_over_tcp_cpu);
  std::printf("| CPU of a warm sequential read, short-circuit (median CPU s/GB, client + worker) | %.3f | %.3f | %.2f (per round: %s) | |\n",
              cs_v, cs_u, cs_v / cs_u, per_round(shoal_cpu, u_shoal_cpu).c_str());
  std::printf("| CPU of a warm sequential read, over TCP (median CPU s/GB, client + worker) | %.3f | %.3f | %.2f (per round: %s) | |\n",
              ct_v, ct_u, ct_v / ct_u, per_round(over_tcp_cpu, u_over_tcp_cpu).c_str());
  std::printf("| warm 128 KiB random reads, short-circuit, p50 / p99 (ms) | %.3f / %.3f | %.3f / %.3f | p99 %.2f | p99 <= 1.10: %s |\n",
              rnd.p50, rnd.p99, u_rnd.p50, u_rnd.p99, rnd.p99 / u_rnd.p99, latency_verdict(rnd.p99 / u_rnd.p99).c_str());
  std::printf("| warm 128 KiB random reads, over TCP, p50 / p99 (ms) | %.3f / %.3f | %.3f / %.3f | p99 %.2f | p99 <= 1.10: %s |\n",
              rnd_tcp.p50, rnd_tcp.p99, u_rnd_tcp.p50, u_rnd_tcp.p99, rnd_tcp.p99 / u_rnd_tcp.p99,
              latency_verdict(rnd_tcp.p99 / u_rnd_tcp.p99).c_str());
  uw->Stop();
  up->Stop();
  return 0;
}
