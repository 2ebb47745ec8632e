// restart_bench: how long a worker takes from start to serving with a full
// cache, the figure behind "a cluster that restarts warm" (issue 8 G: goal
// < 5 s with 100k pages cached).
//
// It fills a cache dir with N pages through the page store itself (so the
// files are exactly what a worker writes), then starts `shoal worker` on it
// R times and measures, per start: the time to its `listening:` line, and to
// the first answered read of a cached file (served from the cache, checked).
// Starts alternate between a warm dentry/inode cache and a dropped one
// (/proc/sys/vm/drop_caches, when writable: root), interleaved.
// Prints a markdown table for docs/benchmarks.md on stdout; progress on stderr.
//
//   restart_bench --shoal build/shoal [--pages 100000] [--rounds 3]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache/page_store.h"
#include "common/config.h"
#include "common/subprocess.h"
#include "common/units.h"
#include "shoal/client.h"

using namespace shoal;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "restart_bench: %s\n", why.c_str());
  std::exit(1);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

bool DropCaches() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  return static_cast<bool>(f.flush());
}

constexpr uint64_t kPageSize = 1 << 20;
constexpr uint64_t kPageBytes = 16 * 1024;  // data per page: small files, so the disk holds many pages
constexpr uint64_t kPagesPerFile = 4;

std::string PageData(uint64_t file, uint64_t page) {
  std::string s(kPageBytes, '\0');
  uint64_t x = file * 1'000'003 + page * 7919 + 1;
  for (auto& c : s) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(x >> 56);
  }
  return s;
}

struct Start {
  double listening_s = 0;
  double first_read_s = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string shoal_bin;
  uint64_t pages = 100'000;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--shoal") shoal_bin = next();
    else if (a == "--pages") pages = std::stoull(next());
    else if (a == "--rounds") rounds = std::stoi(next());
    else Die("usage: restart_bench --shoal PATH [--pages N] [--rounds R]");
  }
  if (shoal_bin.empty()) Die("--shoal PATH is required");
  const uint64_t files = (pages + kPagesPerFile - 1) / kPagesPerFile;

  auto dir = std::filesystem::temp_directory_path() / ("shoal-restart-bench-" + std::to_string(::getpid()));
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() { std::error_code ec; std::filesystem::remove_all(d, ec); }
  } cleanup{dir};
  std::filesystem::create_directories(dir / "ufs");
  const std::string cache = (dir / "cache").string();

  // The under-store holds one small file, read after each start; the cache
  // holds `pages` pages of files the worker serves without asking the store.
  std::fprintf(stderr, "restart_bench: writing %llu pages (%llu files) into %s\n",
               static_cast<unsigned long long>(pages), static_cast<unsigned long long>(files), cache.c_str());
  auto t0 = Clock::now();
  {
    PageStore::Options o;
    o.dirs = {{cache, pages * (kPageBytes + 4096) + (1ull << 30)}};
    o.page_size = kPageSize;
    auto store = PageStore::Open(o);
    if (!store) Die("cannot open a page store in " + cache + ": " + store.error().ToString());
    uint64_t n = 0;
    for (uint64_t f = 0; f < files && n < pages; ++f) {
      for (uint64_t p = 0; p < kPagesPerFile && n < pages; ++p, ++n) {
        std::string data = PageData(f, p);
        auto st = (*store)->Put(PageKey{"/data/f" + std::to_string(f), "v1", p * kPageSize},
                                std::span<const char>(data));
        if (!st.ok()) Die("writing page " + std::to_string(n) + ": " + st.ToString());
      }
    }
    if ((*store)->stats().pages != pages) Die("the page store holds " + std::to_string((*store)->stats().pages) + " pages");
  }
  double fill_s = std::chrono::duration<double>(Clock::now() - t0).count();
  {
    std::ofstream out(dir / "ufs" / "probe", std::ios::binary);
    out << "probe";
  }

  Config cfg;
  MountConfig m;
  m.path = "/data";
  m.ufs = "file://" + (dir / "ufs").string() + "/";
  m.consistency = Consistency::kImmutable;
  cfg.mounts = {m};
  const std::string worker_yaml = (dir / "worker.yaml").string();
  {
    std::ofstream out(worker_yaml);
    out << ToYaml(cfg);
  }

  bool can_drop = ::access("/proc/sys/vm/drop_caches", W_OK) == 0;
  std::vector<Start> warm, cold;
  for (int r = 0; r < rounds; ++r) {
    for (bool drop : {false, true}) {
      if (drop && !can_drop) continue;
      if (drop) DropCaches();
      Subprocess::Options so;
      so.argv = {shoal_bin, "worker", "--config", worker_yaml, "--listen", "127.0.0.1:0", "--cache-dir", cache,
                 "--cache-size", std::to_string(pages * (kPageBytes + 4096) + (1ull << 30))};
      so.stderr_file = (dir / "worker.log").string();
      auto started = Clock::now();
      auto proc = Subprocess::Start(so);
      if (!proc) Die("cannot start " + shoal_bin + ": " + proc.error().ToString());
      auto line = proc->WaitForLine("listening:", std::chrono::seconds(300));
      if (!line) Die("the worker did not start: " + line.error().ToString() + " (log: " + so.stderr_file + ")");
      Start s;
      s.listening_s = std::chrono::duration<double>(Clock::now() - started).count();
      auto entry = ParseListeningLine(*line);
      if (!entry) Die(entry.error().ToString());
      Config client_cfg = cfg;
      client_cfg.cluster.workers = {*entry};
      client_cfg.client.short_circuit = false;  // the worker's own answer, over TCP
      auto client = Client::FromYaml(ToYaml(client_cfg), "restart_bench");
      if (!client) Die(client.error().ToString());
      // The worker answers a read (the page index was rebuilt before it
      // printed `listening:`), and reports the pages it found.
      auto f = (*client)->OpenFile("/data/probe");
      if (!f) Die("first read after start: " + f.error().ToString());
      char buf[8];
      auto n = (*f)->Pread(0, std::span<char>(buf, sizeof buf));
      if (!n || std::string(buf, *n) != "probe") Die("first read after start returned the wrong bytes");
      s.first_read_s = std::chrono::duration<double>(Clock::now() - started).count();
      auto status = (*client)->ClusterStatus();
      if (status.empty() || !status[0].up) Die("the worker does not answer its status");
      if (status[0].cache_used_bytes < pages * kPageBytes) Die("the restarted worker did not find its pages");
      proc->Signal(SIGTERM);
      proc->Wait(std::chrono::seconds(60));
      (drop ? cold : warm).push_back(s);
      std::fprintf(stderr, "restart_bench: round %d (%s): listening after %.3f s, first read after %.3f s\n", r + 1,
                   drop ? "caches dropped" : "warm", s.listening_s, s.first_read_s);
    }
  }

  auto col = [](const std::vector<Start>& v, double Start::*f) {
    std::vector<double> x;
    for (const auto& s : v) x.push_back(s.*f);
    return x;
  };
  std::printf("A worker started on a cache dir holding %llu pages (%llu files of %llu pages of %s each; the page "
              "store wrote them in %.1f s), %d rounds interleaved; medians. `listening` is the time from exec to the "
              "worker's `listening:` line (the index is rebuilt by then); `first read` adds one client read answered "
              "by it. Goal: serving within 5 s.\n\n",
              static_cast<unsigned long long>(pages), static_cast<unsigned long long>(files),
              static_cast<unsigned long long>(kPagesPerFile), FormatSize(kPageBytes).c_str(), fill_s, rounds);
  std::printf("| start | listening (s) | first read (s) | vs goal 5 s |\n|---|---|---|---|\n");
  auto row = [&](const char* name, const std::vector<Start>& v) {
    if (v.empty()) {
      std::printf("| %s | not run (/proc/sys/vm/drop_caches is not writable) | | |\n", name);
      return;
    }
    double l = Median(col(v, &Start::listening_s)), fr = Median(col(v, &Start::first_read_s));
    std::printf("| %s | %.3f | %.3f | %.2fx of the budget (%s) |\n", name, l, fr, fr / 5.0, fr < 5.0 ? "met" : "MISSED");
  };
  row("warm (dentries and inodes cached)", warm);
  row("cold (page, dentry and inode caches dropped)", cold);
  return 0;
}
