// core_bench: the core-issue benchmark. One local worker (`shoal up --workers 1`
// over a temp directory), the native client, warm cache:
//   1. sequential read of a 1 GiB file vs TCP loopback throughput measured in
//      the same run (a plain socket sender/receiver here, same buffer size),
//      interleaved A B A B; medians and the ratio (target >= 0.8x);
//   2. 128 KiB reads at random offsets: p50/p99 (target p99 < 1 ms).
// Prints a markdown table for docs/benchmarks.md on stdout; progress on stderr.
//
//   core_bench --shoal build/shoal [--size 1GiB] [--rounds 5] [--random-reads 2000]
#include <arpa/inet.h>
#include <netinet/in.h>
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

#include "bench/dataset.h"
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

// Reads the whole file sequentially through the client, with File::Read (the
// client's read-ahead) or with back-to-back 4 MiB Preads; returns MB/s. Every
// byte is checked against the source, outside the timed calls.
double ShoalSequentialMBps(Client& client, const std::string& path, uint64_t size, uint64_t key, bool pread = false) {
  auto t0 = Clock::now();
  auto f = client.OpenFile(path);
  if (!f) Die("open " + path + ": " + f.error().ToString());
  Clock::duration timed = Clock::now() - t0;
  std::vector<char> buf(kBuf);
  uint64_t done = 0;
  while (done < size) {
    auto t1 = Clock::now();
    auto n = pread ? (*f)->Pread(done, buf) : (*f)->Read(buf);
    timed += Clock::now() - t1;
    if (!n) Die("read " + path + " at " + std::to_string(done) + ": " + n.error().ToString());
    if (*n == 0) break;
    if (!bench::CheckContent(key, done, std::span<const char>(buf.data(), *n))) Mismatch(path, key, done, buf.data(), *n);
    done += *n;
  }
  double secs = std::chrono::duration<double>(timed).count();
  if (done != size) Die("short read of " + path + ": " + std::to_string(done) + " of " + std::to_string(size));
  return static_cast<double>(size) / 1e6 / secs;
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

  auto client = Client::Open(config);
  if (!client) Die("Client::Open(" + config + "): " + client.error().ToString());
  // The same cluster read over TCP only: a client on another host, or with client.short_circuit off.
  std::string yaml;
  {
    std::ifstream in(config);
    yaml.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto sc_at = yaml.find("short_circuit: true");
  if (sc_at == std::string::npos) Die(config + " does not say client.short_circuit: true");
  yaml.replace(sc_at, std::strlen("short_circuit: true"), "short_circuit: false");
  auto tcp_client = Client::FromYaml(yaml, config + " (short_circuit off)");
  if (!tcp_client) Die("Client::FromYaml: " + tcp_client.error().ToString());
  auto mounts = (*client)->Mounts();
  if (mounts.empty()) Die("the cluster from `shoal up` has no mounts");
  std::string path = mounts[0].path;
  if (path.empty() || path.back() != '/') path += "/";
  path += name;

  std::fprintf(stderr, "core_bench: cold read of %s (%s)\n", path.c_str(), FormatSize(size).c_str());
  double cold = ShoalSequentialMBps(**client, path, size, key);
  // The test file and the pages just cached are 2 GiB of dirty page cache:
  // write them back now, not in the kernel's flusher during the timed rounds.
  ::sync();

  std::vector<double> shoal_mbps, pread_mbps, tcp_mbps, over_tcp_mbps;
  for (int r = 0; r < rounds; r++) {
    shoal_mbps.push_back(ShoalSequentialMBps(**client, path, size, key));
    tcp_mbps.push_back(TcpLoopbackMBps(size));
    over_tcp_mbps.push_back(ShoalSequentialMBps(**tcp_client, path, size, key));
    pread_mbps.push_back(ShoalSequentialMBps(**client, path, size, key, /*pread=*/true));
    std::fprintf(stderr, "core_bench: round %d: shoal Read %.0f MB/s, tcp %.0f MB/s, shoal over TCP %.0f MB/s, shoal Pread %.0f MB/s\n",
                 r + 1, shoal_mbps.back(), tcp_mbps.back(), over_tcp_mbps.back(), pread_mbps.back());
  }

  // Warm 128 KiB random reads; each one checked after its timing.
  struct Latency {
    double p50, p99, max;
  };
  auto random_reads_ms = [&](Client& c) {
    auto f = c.OpenFile(path);
    if (!f) Die("open " + path + ": " + f.error().ToString());
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<uint64_t> pick(0, (size - 128 * kKiB) / 4096);
    std::vector<char> buf(128 * kKiB);
    std::vector<double> lat;
    for (int i = 0; i < random_reads; i++) {
      uint64_t off = pick(rng) * 4096;
      auto t0 = Clock::now();
      auto n = (*f)->Pread(off, buf);
      lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (!n || *n != buf.size()) Die("random read at " + std::to_string(off) + " failed");
      if (!bench::CheckContent(key, off, buf)) Die("random read at " + std::to_string(off) + " does not match the source");
    }
    std::sort(lat.begin(), lat.end());
    auto at = [&](double q) { return lat[std::min(lat.size() - 1, static_cast<size_t>(q * lat.size()))]; };
    return Latency{at(0.5), at(0.99), lat.back()};
  };
  Latency rnd = random_reads_ms(**client), rnd_tcp = random_reads_ms(**tcp_client);

  uint64_t hit = 0, miss = 0;
  int up_workers = 0;
  for (const auto& w : (*client)->ClusterStatus()) hit += w.hit_bytes, miss += w.miss_bytes, up_workers += w.up;
  auto cs = (*client)->stats();
  auto ts = (*tcp_client)->stats();
  if (ts.local_read_bytes != 0) Die("the client with short_circuit off read page files");
  if (cs.local_read_bytes == 0) Die("the default client never read short-circuit: is the worker's local socket off?");

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
              "\"over TCP\" is the same cluster with client.short_circuit off, as a client on another host reads it.\n\n",
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
    std::printf("\nOver TCP the client reaches %.0f%% of TCP loopback: on 2 cores the worker's sendfile, the kernel's loopback "
                "path and the client's receive copy share the CPUs that a plain socket transfer has to itself. The short circuit removes TCP from the warm path on the same host.\n",
                100 * mo / mt);
  }
  up->Stop();
  return 0;
}
