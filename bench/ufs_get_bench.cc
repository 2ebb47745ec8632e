// ufs_get_bench: the CPU one under-store GET costs this process (issue 13's
// cold path: a worker stats a cold small file with one ranged GET of its first
// page, S3Store::ReadWithInfo). It starts s3rver (tests/harness), uploads
// --objects objects of --size bytes through the S3 store, then reads each with
// ReadWithInfo into a --page buffer, first from one thread, then from
// --threads threads, and prints this process's CPU (getrusage: user + system)
// per GET. s3rver's own CPU is another process's and is not counted.
//
//   ufs_get_bench [--objects 2000] [--size 130KiB] [--page 1MiB] [--threads 8] [--rounds 3] [--anonymous]
//
// --anonymous sends unsigned requests (s3rver accepts both), which isolates
// what SigV4 costs. Prints one `result` line per pass on stdout, then the CPU of
// signing such a GET alone (no network), per round.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/sigv4.h"
#include "common/units.h"
#include "tests/harness/s3rver.h"
#include "ufs/under_store.h"

using namespace shoal;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "ufs_get_bench: %s\n", why.c_str());
  std::exit(1);
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// Voluntary context switches (waits that slept): steadier than CPU on a loaded machine.
long Waits() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_nvcsw;
}

std::string Key(int i) { return "obj/" + std::to_string(i); }

// Reads objects [0, n) with `threads` threads, each GET checked; returns false on any failure.
// `buffers` holds one page per thread, allocated (and touched) before the clock starts.
bool ReadAll(UnderStore& store, int n, uint64_t page, uint64_t size, std::vector<std::vector<char>>& buffers,
             int threads) {
  std::atomic<int> next{0};
  std::atomic<bool> ok{true};
  auto run = [&](std::vector<char>& buf) {
    for (int i = next++; i < n && ok; i = next++) {
      auto r = store.ReadWithInfo(Key(i), 0, std::span<char>(buf.data(), buf.size()));
      if (!r || r->bytes != std::min(page, size) || r->info.size != size) {
        std::fprintf(stderr, "GET %s: %s\n", Key(i).c_str(),
                     r ? ("got " + std::to_string(r->bytes) + " bytes").c_str() : r.error().ToString().c_str());
        ok = false;
      }
    }
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(run, std::ref(buffers[t]));
  for (auto& t : ts) t.join();
  return ok;
}

// CPU per SignV4 of a ranged GET like the store's, without the network: the
// signing share of a GET, steadier than the GET figures on a loaded machine.
double SignCpuMicros(int n) {
  s3::Credentials creds{"S3RVER", "S3RVER", "", "bench"};
  const std::string payload = s3::Sha256Hex(std::string_view());
  double c0 = CpuSeconds();
  size_t sink = 0;
  for (int i = 0; i < n; ++i) {
    s3::Headers headers{{"Range", "bytes=0-1048575"}};
    s3::SigningInput in{"GET", "127.0.0.1:9000", "/bench/obj/" + std::to_string(i), {}, payload, "us-east-1", "s3"};
    s3::SignV4(in, creds, std::chrono::system_clock::now(), headers);
    sink += headers.back().second.size();
  }
  double us = (CpuSeconds() - c0) * 1e6 / n;
  if (sink == 0) Die("signing produced nothing");
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 2000, threads = 8, rounds = 3;
  uint64_t size = 130 * 1024, page = 1 << 20;
  bool anonymous = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    auto size_of = [&](const std::string& v) {
      auto s = ParseSize(v);
      if (!s) Die(a + ": " + s.error().ToString());
      return *s;
    };
    if (a == "--objects") objects = std::stoi(value());
    else if (a == "--threads") threads = std::stoi(value());
    else if (a == "--rounds") rounds = std::stoi(value());
    else if (a == "--size") size = size_of(value());
    else if (a == "--page") page = size_of(value());
    else if (a == "--anonymous") anonymous = true;
    else Die("unknown flag " + a + " (see the comment at the top of bench/ufs_get_bench.cc)");
  }
  if (objects < 1 || threads < 1 || rounds < 1 || size < 1 || page < 1) Die("counts and sizes must be positive");

  auto s3 = testing::S3rverProcess::Start();
  if (!s3) Die(s3.error().ToString());
  if (auto st = s3->CreateBucket("bench"); !st.ok()) Die(st.ToString());
  MountConfig m;
  m.path = "/data";
  m.ufs = "s3://bench/";
  m.options = s3->MountOptions();
  if (anonymous) {
    m.options.erase("access_key_id");
    m.options.erase("secret_access_key");
    m.options["credentials"] = "anonymous";
  }
  auto store = OpenUnderStore(m);
  if (!store) Die(store.error().ToString());

  std::string data(size, '\0');
  for (uint64_t j = 0; j < size; ++j) data[j] = static_cast<char>('a' + j % 26);
  std::fprintf(stderr, "uploading %d objects of %llu bytes to %s\n", objects, static_cast<unsigned long long>(size),
               s3->endpoint().c_str());
  for (int i = 0; i < objects; ++i) {
    if (auto st = (*store)->Write(Key(i), data); !st.ok()) Die("upload: " + st.ToString());
  }
  std::vector<std::vector<char>> buffers(threads, std::vector<char>(page, '\0'));
  // A warm-up opens the connections.
  if (!ReadAll(**store, std::min(objects, 50), page, size, buffers, 1)) Die("warm-up reads failed");
  std::fprintf(stderr, "reading (pid %d)\n", static_cast<int>(::getpid()));  // a profiler may attach now

  for (int round = 0; round < rounds; ++round) {
    for (int t : {1, threads}) {
      double c0 = CpuSeconds();
      long v0 = Waits();
      auto w0 = Clock::now();
      if (!ReadAll(**store, objects, page, size, buffers, t)) Die("reads failed");
      double cpu = CpuSeconds() - c0;
      double waits = static_cast<double>(Waits() - v0) / objects;
      double wall = std::chrono::duration<double>(Clock::now() - w0).count();
      std::printf(
          "result round=%d threads=%d gets=%d signed=%d cpu_us_per_get=%.1f waits_per_get=%.2f gets_per_s=%.0f\n",
          round, t, objects, anonymous ? 0 : 1, cpu * 1e6 / objects, waits, objects / wall);
      std::fflush(stdout);
    }
  }
  for (int round = 0; round < rounds; ++round) {
    std::printf("result round=%d sign cpu_us_per_sign=%.2f\n", round, SignCpuMicros(20000));
  }
  return 0;
}
