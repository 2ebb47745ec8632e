// core_bench: the core-issue benchmark. One local worker (`shoal up --workers 1`
// over a temp directory), the native client, warm cache:
//   1. sequential read of a 1 GiB file vs TCP loopback throughput measured in
//      the same run (a plain socket sender/receiver here, same buffer size),
//      interleaved A B A B; medians and the ratio (target >= 0.8x);
//   2. 128 KiB reads at random offsets: p50/p99 (target p99 < 1 ms);
//   3. what checking pages costs: three workers over the same data, one per
//      worker.verify mode (once, the default; off; always), read in the same
//      rounds, the order rotated: warm sequential reads short-circuit and over
//      TCP, from one process and from 8 reader processes (idle, and with two
//      threads spinning), and warm 128 KiB random read p50/p99; ratios
//      once / off (target: >= 0.95x throughput, p99 within 5%) and always / off.
// Prints a markdown table for docs/benchmarks.md on stdout; progress on stderr.
//
//   core_bench --shoal build/shoal [--size 1GiB] [--rounds 5] [--random-reads 2000]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
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
      std::to_string(offset + last) + " (" + std::to_string(zeros) +
      " zero bytes in the read; the first wrong bytes are " + found + ")");
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
    if (!bench::CheckContent(key, done, std::span<const char>(buf.data(), *n)))
      Mismatch(path, key, done, buf.data(), *n);
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

struct Latency {
  double p50 = 0, p99 = 0, max = 0;
};

// One worker.verify mode: its worker, its two clients, what they measured.
struct Variant {
  std::string mode;                     // once | off | always
  WorkerEntry entry;                    // a worker started here (none for `shoal up`'s)
  std::unique_ptr<Subprocess> process;  // that worker
  pid_t pid = -1;
  std::string sc_yaml, tcp_yaml;    // the clients' configs, for the reader processes
  std::unique_ptr<Client> sc, tcp;  // short-circuit, over TCP
  std::vector<double> sc_mbps, tcp_mbps, sc_cpu, tcp_cpu, sc8, tcp8, sc8_loaded, tcp8_loaded;
  Latency sc_rnd, tcp_rnd;
};

void WriteText(const std::string& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out.flush()) Die("cannot write " + file);
}

std::string List(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : ", ") + std::to_string(static_cast<int>(x));
  return s;
}

std::string SelfExe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) Die("cannot read /proc/self/exe: " + ec.message());
  return p.string();
}

constexpr int kReaders = 8;

// A reader process (`core_bench --reader CONFIG PATH SIZE KEY INDEX`): its
// own client; reads its eighth of the file once untimed, says "ready", waits
// for SIGUSR1, reads it again in 4 MiB Preads, says "done", checks every byte.
int ReaderMain(const std::string& config, const std::string& path, uint64_t size, uint64_t key, int index) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);  // before the client starts its threads
  std::ifstream in(config);
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto client = Client::FromYaml(yaml, config);
  if (!client) Die("reader " + std::to_string(index) + ": " + client.error().ToString());
  auto f = (*client)->OpenFile(path);
  if (!f) Die("reader " + std::to_string(index) + ": open " + path + ": " + f.error().ToString());
  const uint64_t share = (size / kReaders + kBuf - 1) / kBuf * kBuf;
  const uint64_t from = std::min(size, share * static_cast<uint64_t>(index)), to = std::min(size, from + share);
  std::vector<char> buf(to - from);
  auto read_share = [&] {
    for (uint64_t off = from; off < to;) {
      auto n = (*f)->Pread(off, std::span<char>(buf.data() + (off - from), std::min<uint64_t>(kBuf, to - off)));
      if (!n || *n == 0) Die("reader " + std::to_string(index) + ": read at " + std::to_string(off) + " failed");
      off += *n;
    }
  };
  // One untimed pass first: the row measures warm readers (a DataLoader
  // worker reads for a whole epoch), not a new client's first page leases.
  read_share();
  if (!bench::CheckContent(key, from, buf)) Mismatch(path, key, from, buf.data(), buf.size());
  std::memset(buf.data(), 0, buf.size());
  std::printf("ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&usr1, &sig);
  read_share();
  std::printf("done\n");
  std::fflush(stdout);
  if (!bench::CheckContent(key, from, buf)) Mismatch(path, key, from, buf.data(), buf.size());
  return 0;
}

// Starts kReaders reader processes with the client config `yaml`, waits for
// all to be ready, starts them together; the file's bytes over the wall time
// until the last says done, in MB/s.
double EightProcesses(const std::string& self, const std::string& yaml, const std::string& path, uint64_t size,
                      uint64_t key) {
  std::vector<Subprocess> readers;
  for (int i = 0; i < kReaders; ++i) {
    Subprocess::Options o;
    o.argv = {self, "--reader", yaml, path, std::to_string(size), std::to_string(key), std::to_string(i)};
    auto sp = Subprocess::Start(o);
    if (!sp) Die("cannot start a reader process: " + sp.error().ToString());
    readers.push_back(std::move(*sp));
  }
  for (auto& r : readers) {
    auto ready = r.WaitForLine("ready", std::chrono::seconds(60));
    if (!ready) Die("a reader process did not start: " + ready.error().ToString());
  }
  auto t0 = Clock::now();
  for (auto& r : readers) ::kill(r.pid(), SIGUSR1);
  for (auto& r : readers) {
    auto done = r.WaitForLine("done", std::chrono::seconds(300));
    if (!done) Die("a reader process failed: " + done.error().ToString());
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& r : readers) {
    int st = r.Wait(std::chrono::seconds(120));
    if (st != 0) Die("a reader process found wrong bytes or failed (status " + std::to_string(st) + ")");
  }
  return static_cast<double>(size) / 1e6 / secs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--reader") {
    return ReaderMain(argv[2], argv[3], std::stoull(argv[4]), std::stoull(argv[5]), std::stoi(argv[6]));
  }
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
  if (shoal_bin.empty() || size < kBuf)
    Die("usage: core_bench --shoal PATH [--size 1GiB] [--rounds 5] [--random-reads 2000]");

  char tmpl[] = "/tmp/shoal-core-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) Die("mkdtemp failed");
  std::filesystem::path dir(tmpl);
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
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
  so.argv = {shoal_bin,      "up",
             "--workers",    "1",
             "--ufs",        (dir / "ufs").string(),
             "--cache-dir",  (dir / "cache").string(),
             "--cache-size", std::to_string(2 * size + kGiB),
             "--state-dir",  (dir / "state").string()};
  so.stderr_file = (dir / "shoal.log").string();
  auto up = Subprocess::Start(so);
  if (!up) Die("cannot start " + shoal_bin + ": " + up.error().ToString());
  auto ready = up->WaitForLine("ready: config=", std::chrono::seconds(60));
  if (!ready) Die("`shoal up` did not print ready: " + ready.error().ToString());
  std::string config = ready->substr(ready->find("config=") + 7);
  while (!config.empty() && (config.back() == '\n' || config.back() == '\r' || config.back() == ' ')) config.pop_back();

  // Three workers over the same UFS, one per worker.verify mode: the one of
  // `shoal up` (once, the default), and two started here (off and always).
  // Each has a short-circuit client and a client over TCP; the clients of
  // the "off" worker have client.verify_checksums off too.
  auto base = LoadConfig(config);
  if (!base) Die("cannot read " + config + ": " + base.error().ToString());
  if (base->mounts.empty()) Die("the cluster from `shoal up` has no mounts");
  if (!base->client.short_circuit) Die(config + " does not say client.short_circuit: true");
  if (base->worker.verify != "once") Die(config + " does not use the default worker.verify: once");
  std::string path = base->mounts[0].path;
  if (path.empty() || path.back() != '/') path += "/";
  path += name;

  std::vector<Variant> variants(3);
  variants[0].mode = "once";
  variants[0].pid = OnlyChild(up->pid());
  if (variants[0].pid <= 0) Die("cannot find the worker process of `shoal up` (pid " + std::to_string(up->pid()) + ")");
  variants[1].mode = "off";
  variants[2].mode = "always";
  for (size_t v = 1; v < variants.size(); ++v) {
    Config w = *base;
    w.cluster.workers.clear();
    w.worker.verify = variants[v].mode;
    const std::string yaml = (dir / ("worker-" + variants[v].mode + ".yaml")).string();
    WriteText(yaml, ToYaml(w));
    Subprocess::Options wo;
    wo.argv = {shoal_bin,      "worker",
               "--config",     yaml,
               "--listen",     "127.0.0.1:0",
               "--cache-dir",  (dir / ("cache-" + variants[v].mode)).string(),
               "--cache-size", std::to_string(2 * size + kGiB)};
    wo.stderr_file = (dir / ("worker-" + variants[v].mode + ".log")).string();
    auto sp = Subprocess::Start(wo);
    if (!sp) Die("cannot start the worker with verify " + variants[v].mode + ": " + sp.error().ToString());
    auto listening = sp->WaitForLine("listening:", std::chrono::seconds(60));
    if (!listening)
      Die("the worker with verify " + variants[v].mode + " did not start: " + listening.error().ToString() +
          " (log: " + wo.stderr_file + ")");
    auto entry = ParseListeningLine(*listening);
    if (!entry) Die("the worker with verify " + variants[v].mode + ": " + entry.error().ToString());
    variants[v].entry = *entry;
    variants[v].pid = sp->pid();
    variants[v].process = std::make_unique<Subprocess>(std::move(*sp));
  }
  for (auto& v : variants) {
    for (bool sc : {true, false}) {
      Config c = *base;
      if (v.process) c.cluster.workers = {v.entry};
      c.client.verify_checksums = v.mode != "off";
      c.client.short_circuit = sc;
      const std::string yaml = (dir / ("client-" + v.mode + (sc ? "" : "-tcp") + ".yaml")).string();
      WriteText(yaml, ToYaml(c));
      (sc ? v.sc_yaml : v.tcp_yaml) = yaml;
      auto cl = Client::FromYaml(ToYaml(c), yaml);
      if (!cl) Die("Client::FromYaml: " + cl.error().ToString());
      (sc ? v.sc : v.tcp) = std::move(*cl);
    }
  }
  Client& client = *variants[0].sc;

  std::fprintf(stderr, "core_bench: cold read of %s (%s)\n", path.c_str(), FormatSize(size).c_str());
  double cold = ShoalSequentialMBps(client, path, size, key);
  for (size_t v = 1; v < variants.size(); ++v) {
    std::fprintf(stderr, "core_bench: cold read of %s from the worker with verify %s\n", path.c_str(),
                 variants[v].mode.c_str());
    ShoalSequentialMBps(*variants[v].sc, path, size, key);
  }
  // Every worker reads its pages once whole (verify once checks a page at
  // its first read, and the timed rounds are warm reads): one untimed pass
  // each, short-circuit and over TCP.
  for (auto& v : variants) ShoalSequentialMBps(*v.tcp, path, size, key);
  // The test file and the pages just cached are several GiB of dirty page
  // cache: write them back now, not in the kernel's flusher during the timed rounds.
  ::sync();
  // verify once trusts a page only when its file's ctime is over a second old.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  std::vector<double> shoal_mbps, pread_mbps, tcp_mbps, over_tcp_mbps;
  for (int r = 0; r < rounds; r++) {
    // The three modes back to back, the order rotated every round so that
    // none always runs on a cache another just warmed.
    auto run_all = [&](bool sc) {
      for (size_t i = 0; i < variants.size(); ++i) {
        Variant& v = variants[(i + static_cast<size_t>(r)) % variants.size()];
        auto res = ShoalSequential(sc ? *v.sc : *v.tcp, path, size, key, false, v.pid);
        (sc ? v.sc_mbps : v.tcp_mbps).push_back(res.mbps);
        (sc ? v.sc_cpu : v.tcp_cpu).push_back(res.cpu_s_per_gb);
      }
    };
    run_all(true);
    shoal_mbps.push_back(variants[0].sc_mbps.back());
    tcp_mbps.push_back(TcpLoopbackMBps(size));
    run_all(false);
    over_tcp_mbps.push_back(variants[0].tcp_mbps.back());
    pread_mbps.push_back(ShoalSequentialMBps(client, path, size, key, /*pread=*/true));
    std::string modes;
    for (const auto& v : variants) {
      modes += fmt::format("; verify {}: {:.0f} MB/s {:.3f} CPU s/GB, over TCP {:.0f} MB/s {:.3f} CPU s/GB", v.mode,
                           v.sc_mbps.back(), v.sc_cpu.back(), v.tcp_mbps.back(), v.tcp_cpu.back());
    }
    std::fprintf(stderr, "core_bench: round %d: tcp %.0f MB/s, shoal Pread %.0f MB/s%s\n", r + 1, tcp_mbps.back(),
                 pread_mbps.back(), modes.c_str());
  }

  // Warm 128 KiB random reads; each one checked after its timing. The
  // clients of the three modes take turns in blocks of 100 reads of the same
  // offsets, the order rotated every block.
  auto random_reads_ms = [&](bool sc) {
    std::vector<std::unique_ptr<File>> files;
    for (auto& v : variants) {
      auto f = (sc ? v.sc : v.tcp)->OpenFile(path);
      if (!f) Die("open " + path + ": " + f.error().ToString());
      files.push_back(std::move(*f));
    }
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<uint64_t> pick(0, (size - 128 * kKiB) / 4096);
    std::vector<uint64_t> offsets(static_cast<size_t>(random_reads));
    for (auto& off : offsets) off = pick(rng) * 4096;
    std::vector<char> buf(128 * kKiB);
    std::vector<std::vector<double>> lat(variants.size());
    constexpr size_t kBlock = 100;
    for (size_t start = 0; start < offsets.size(); start += kBlock) {
      for (size_t turn = 0; turn < variants.size(); ++turn) {
        size_t which = (start / kBlock + turn) % variants.size();
        for (size_t i = start; i < std::min(offsets.size(), start + kBlock); ++i) {
          auto t0 = Clock::now();
          auto n = files[which]->Pread(offsets[i], buf);
          lat[which].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          if (!n || *n != buf.size()) Die("random read at " + std::to_string(offsets[i]) + " failed");
          if (!bench::CheckContent(key, offsets[i], buf)) {
            Die("random read at " + std::to_string(offsets[i]) + " does not match the source");
          }
        }
      }
    }
    for (size_t w = 0; w < variants.size(); ++w) {
      auto& l = lat[w];
      std::sort(l.begin(), l.end());
      auto at = [&](double q) { return l[std::min(l.size() - 1, static_cast<size_t>(q * l.size()))]; };
      (sc ? variants[w].sc_rnd : variants[w].tcp_rnd) = Latency{at(0.5), at(0.99), l.back()};
    }
  };
  random_reads_ms(true);
  random_reads_ms(false);
  const Latency rnd = variants[0].sc_rnd, rnd_tcp = variants[0].tcp_rnd;

  // Eight reader processes at once (as DataLoader workers read), each its own
  // client reading an eighth of the file in 4 MiB Preads, on an idle machine
  // and with two threads spinning on the CPUs; per mode, the modes
  // rotated, `rounds` times each.
  const std::string self = SelfExe();
  auto eight = [&](bool loaded) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> hogs;
    if (loaded) {
      for (int i = 0; i < 2; ++i) {
        hogs.emplace_back([&stop] {
          volatile uint64_t x = 0;
          while (!stop.load(std::memory_order_relaxed)) x = x * 6364136223846793005ULL + 1;
        });
      }
    }
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < variants.size(); ++i) {
        Variant& v = variants[(i + static_cast<size_t>(r)) % variants.size()];
        for (bool sc : {true, false}) {
          double mbps = EightProcesses(self, sc ? v.sc_yaml : v.tcp_yaml, path, size, key);
          (loaded ? (sc ? v.sc8_loaded : v.tcp8_loaded) : (sc ? v.sc8 : v.tcp8)).push_back(mbps);
        }
      }
      std::fprintf(stderr, "core_bench: 8 processes%s, round %d done\n", loaded ? " on a loaded machine" : "", r + 1);
    }
    stop = true;
    for (auto& t : hogs) t.join();
  };
  eight(false);
  eight(true);

  uint64_t hit = 0, miss = 0;
  int up_workers = 0;
  for (const auto& w : client.ClusterStatus()) hit += w.hit_bytes, miss += w.miss_bytes, up_workers += w.up;
  auto cs = client.stats();
  for (auto& v : variants) {
    if (v.tcp->stats().local_read_bytes != 0) Die("a client with short_circuit off read page files");
    if (v.sc->stats().local_read_bytes == 0)
      Die("a short-circuit client never read short-circuit: is the worker's local socket off?");
    if (v.sc->stats().local_corrupt_reads != 0)
      Die("a client found corrupt pages: see the worker logs under " + dir.string());
  }

  double ms = Median(shoal_mbps), mt = Median(tcp_mbps), ratio = ms / mt, mo = Median(over_tcp_mbps);
  auto verdict = [](double r) {
    return r >= 0.8 ? std::string("met") : "missed by " + std::to_string(static_cast<int>(100 * (1 - r / 0.8))) + "%";
  };
  std::printf(
      "One worker on loopback (`shoal up --workers 1`, file:// UFS), native client, %s file, %d rounds of (Read, TCP, "
      "Read over TCP, Pread) interleaved; reads are timed per call and every byte is checked outside the timing. "
      "The client is on the worker's host, so by default it reads cached pages short-circuit (page fds passed over a "
      "UNIX socket, then pread); "
      "\"over TCP\" is the same cluster with client.short_circuit off, as a client on another host reads it. "
      "Pages are checked whole at their first read and trusted while their file is unchanged (worker.verify: once, the "
      "default).\n\n",
      FormatSize(size).c_str(), rounds);
  std::printf("| figure | measured | target |\n|---|---|---|\n");
  std::printf("| warm sequential read, native client, default (median MB/s) | %.0f (rounds: %s) | |\n", ms,
              List(shoal_mbps).c_str());
  double mp = Median(pread_mbps);
  std::printf("| warm sequential read, 4 MiB Preads back to back (median MB/s) | %.0f (rounds: %s) | |\n", mp,
              List(pread_mbps).c_str());
  std::printf("| warm sequential read, native client over TCP (median MB/s) | %.0f (rounds: %s) | |\n", mo,
              List(over_tcp_mbps).c_str());
  std::printf("| TCP loopback, same run, same buffer (median MB/s) | %.0f (rounds: %s) | |\n", mt,
              List(tcp_mbps).c_str());
  std::printf("| ratio Shoal (Read, default) / TCP loopback | %.2f | >= 0.80: %s |\n", ratio, verdict(ratio).c_str());
  std::printf("| ratio Shoal (Preads, default) / TCP loopback | %.2f | |\n", mp / mt);
  std::printf("| ratio Shoal over TCP (Read) / TCP loopback | %.2f | (>= 0.80: %s) |\n", mo / mt,
              verdict(mo / mt).c_str());
  std::printf("| cold first read (MB/s, file:// UFS) | %.0f | |\n", cold);
  std::printf(
      "| warm 128 KiB random reads, default, p50 / p99 / max (ms), %d reads | %.3f / %.3f / %.3f | p99 < 1 ms: %s |\n",
      random_reads, rnd.p50, rnd.p99, rnd.max, rnd.p99 < 1.0 ? "met" : "missed");
  std::printf(
      "| warm 128 KiB random reads, over TCP, p50 / p99 / max (ms), %d reads | %.3f / %.3f / %.3f | (p99 < 1 ms: %s) "
      "|\n",
      random_reads, rnd_tcp.p50, rnd_tcp.p99, rnd_tcp.max, rnd_tcp.p99 < 1.0 ? "met" : "missed");
  std::printf(
      "| cluster hit / miss bytes (workers up: %d); default client: worker / of them short-circuit / fallback read "
      "bytes | %llu / %llu; %llu / %llu / %llu | |\n",
      up_workers, static_cast<unsigned long long>(hit), static_cast<unsigned long long>(miss),
      static_cast<unsigned long long>(cs.worker_read_bytes), static_cast<unsigned long long>(cs.local_read_bytes),
      static_cast<unsigned long long>(cs.fallback_read_bytes));
  if (mo / mt < 0.8) {
    std::printf(
        "\nOver TCP the client reaches %.0f%% of TCP loopback: on 2 cores the worker's reads, the kernel's loopback "
        "path and the client's receive copy share the CPUs that a plain socket transfer has to itself. The short "
        "circuit removes TCP from the warm path on the same host.\n",
        100 * mo / mt);
  }

  // What the checksums cost, from the same rounds.
  const Variant& once = variants[0];
  const Variant& off = variants[1];
  const Variant& always = variants[2];
  auto per_round = [](const std::vector<double>& v, const std::vector<double>& u) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < u.size(); ++i)
      s += fmt::format("{}{:.2f}", s.empty() ? "" : ", ", v[i] / u[i]);
    return s;
  };
  auto throughput_verdict = [](double r) {
    return r >= 0.95 ? std::string("met")
                     : "missed: " + std::to_string(static_cast<int>(100 * (1 - r) + 0.5)) + "% slower";
  };
  auto latency_verdict = [](double r) {
    return r <= 1.05 ? std::string("met")
                     : "missed: " + std::to_string(static_cast<int>(100 * (r - 1) + 0.5)) + "% higher";
  };
  std::printf(
      "\nWhat checking pages costs: the same rounds read three workers over the same data, one per worker.verify mode: "
      "`once` (the default: a page is checked whole at its first read, then trusted while its file keeps its device, "
      "inode, ctime and size), "
      "`off` (never checked; its clients also have client.verify_checksums off) and `always` (every read hashed, the "
      "behaviour before). "
      "The three reads of a round run back to back, the order rotated every round; the random reads rotate in blocks "
      "of 100 over the same offsets. "
      "The 8-process rows start 8 reader processes at once per mode (one client each, an eighth of the file each in 4 "
      "MiB Preads, after one untimed pass of it); "
      "\"loaded\" runs them while two threads spin on the machine's 2 CPUs.\n\n");
  std::printf(
      "| figure | once (default) | off | always | once / off | always / off | target (once / off) "
      "|\n|---|---|---|---|---|---|---|\n");
  auto tput_row = [&](const char* what, const std::vector<double> Variant::*m) {
    double o = Median(once.*m), f = Median(off.*m), a = Median(always.*m);
    std::printf(
        "| %s (median MB/s) | %.0f (rounds: %s) | %.0f (rounds: %s) | %.0f (rounds: %s) | %.2f (per round: %s) | %.2f "
        "| >= 0.95: %s |\n",
        what, o, List(once.*m).c_str(), f, List(off.*m).c_str(), a, List(always.*m).c_str(), o / f,
        per_round(once.*m, off.*m).c_str(), a / f, throughput_verdict(o / f).c_str());
  };
  tput_row("warm sequential read, short-circuit", &Variant::sc_mbps);
  tput_row("warm sequential read, over TCP", &Variant::tcp_mbps);
  tput_row("warm sequential read, 8 processes, short-circuit", &Variant::sc8);
  tput_row("warm sequential read, 8 processes, over TCP", &Variant::tcp8);
  tput_row("warm sequential read, 8 processes, short-circuit, loaded", &Variant::sc8_loaded);
  tput_row("warm sequential read, 8 processes, over TCP, loaded", &Variant::tcp8_loaded);
  auto cpu_row = [&](const char* what, const std::vector<double> Variant::*m) {
    double o = Median(once.*m), f = Median(off.*m), a = Median(always.*m);
    std::printf("| %s (median CPU s/GB, client + worker) | %.3f | %.3f | %.3f | %.2f | %.2f | |\n", what, o, f, a,
                o / f, a / f);
  };
  cpu_row("CPU of a warm sequential read, short-circuit", &Variant::sc_cpu);
  cpu_row("CPU of a warm sequential read, over TCP", &Variant::tcp_cpu);
  auto lat_row = [&](const char* what, const Latency Variant::*m) {
    const Latency &o = once.*m, &f = off.*m, &a = always.*m;
    std::printf(
        "| %s, p50 / p99 (ms) | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | p99 %.2f | p99 %.2f | p99 <= 1.05: %s |\n",
        what, o.p50, o.p99, f.p50, f.p99, a.p50, a.p99, o.p99 / f.p99, a.p99 / f.p99,
        latency_verdict(o.p99 / f.p99).c_str());
  };
  lat_row("warm 128 KiB random reads, short-circuit", &Variant::sc_rnd);
  lat_row("warm 128 KiB random reads, over TCP", &Variant::tcp_rnd);
  for (auto& v : variants) {
    v.sc.reset();
    v.tcp.reset();
    if (v.process) v.process->Stop();
  }
  up->Stop();
  return 0;
}
