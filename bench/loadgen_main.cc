// loadgen: make benchmark datasets and read them like a training job.
//
//   loadgen gen --root DIR --prefix small --count 1000 --min-size 110KiB --max-size 150KiB
//               --seed 1 --manifest small.manifest
//   loadgen run --manifest small.manifest --reader posix:DIR|http:URL|shoal:CONFIG:PREFIX
//               [--workload whole|seq|ranges] [--readers 8] [--epochs 1] [--seed 1]
//               [--ranges 1000] [--range-min 4KiB] [--range-max 1MiB] [--limit N]
//               [--batch 32 --compute-ms 20 --accelerators 1 --prefetch 2]
//               [--verify all|first|none] [--label NAME] [--timeout SECS]
//
// `run` prints one line per epoch: "result label=.. workload=.. epoch=.. mbps=.. ...",
// and exits 1 if any read failed or did not match the source.
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "bench/loadgen.h"
#include "common/units.h"

using namespace shoal;
using namespace shoal::bench;

namespace {

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr, "loadgen: %s\n", why.c_str());
  std::exit(2);
}

// --key value pairs.
std::map<std::string, std::string> ParseFlags(int argc, char** argv, int first) {
  std::map<std::string, std::string> flags;
  for (int i = first; i < argc; i++) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) Fail("expected --flag VALUE, got " + a + " (see the header of loadgen_main.cc)");
    flags[a.substr(2)] = argv[++i];
  }
  return flags;
}

std::string Take(std::map<std::string, std::string>& f, const std::string& key, const std::string& def = "") {
  auto it = f.find(key);
  if (it == f.end()) {
    if (def.empty()) Fail("--" + key + " is required");
    return def;
  }
  std::string v = it->second;
  f.erase(it);
  return v;
}

uint64_t Size(const std::string& key, const std::string& v) {
  auto r = ParseSize(v);
  if (!r) Fail("bad --" + key + " " + v + ": " + r.error().message());
  return *r;
}

int Gen(std::map<std::string, std::string> f) {
  GenerateOptions o;
  o.root = Take(f, "root");
  o.prefix = Take(f, "prefix");
  o.count = Size("count", Take(f, "count"));
  o.min_size = Size("min-size", Take(f, "min-size"));
  o.max_size = Size("max-size", Take(f, "max-size"));
  o.seed = Size("seed", Take(f, "seed", "1"));
  std::string manifest = Take(f, "manifest");
  if (!f.empty()) Fail("unknown flag --" + f.begin()->first);
  auto m = Generate(o);
  if (!m) Fail(m.error().ToString());
  if (auto s = m->Save(manifest); !s.ok()) Fail(s.ToString());
  std::printf("generated: %zu files, %llu bytes under %s/%s, manifest %s\n", m->files.size(),
              static_cast<unsigned long long>(m->total_bytes()), o.root.c_str(), o.prefix.c_str(), manifest.c_str());
  return 0;
}

int Run(std::map<std::string, std::string> f) {
  auto manifest = Manifest::Load(Take(f, "manifest"));
  if (!manifest) Fail(manifest.error().ToString());
  std::string spec = Take(f, "reader");
  auto readers = ReadersFromSpec(spec);
  if (!readers) Fail(readers.error().ToString());
  LoadOptions o;
  auto w = ParseWorkload(Take(f, "workload", "whole"));
  if (!w) Fail(w.error().ToString());
  o.workload = *w;
  o.readers = std::stoi(Take(f, "readers", "8"));
  o.epochs = std::stoi(Take(f, "epochs", "1"));
  o.seed = Size("seed", Take(f, "seed", "1"));
  o.ranges_per_epoch = Size("ranges", Take(f, "ranges", "1000"));
  o.range_min = Size("range-min", Take(f, "range-min", "4KiB"));
  o.range_max = Size("range-max", Take(f, "range-max", "1MiB"));
  o.batch = std::stoi(Take(f, "batch", "32"));
  o.accelerators = std::stoi(Take(f, "accelerators", "1"));
  o.prefetch_batches = std::stoi(Take(f, "prefetch", "2"));
  double compute_ms = std::stod(Take(f, "compute-ms", "0"));
  o.compute = std::chrono::microseconds(static_cast<int64_t>(compute_ms * 1000));
  std::string verify = Take(f, "verify", "all");
  o.verify = verify == "all" ? Verify::kAll : verify == "first" ? Verify::kFirst : verify == "none" ? Verify::kNone
                                                                                                   : (Fail("bad --verify " + verify), Verify::kAll);
  std::string label = Take(f, "label", "run");
  // A watchdog: a read that never returns (a hung client or mount) ends the run
  // with a clear error instead of hanging the benchmark.
  int timeout_s = std::stoi(Take(f, "timeout", "0"));
  if (timeout_s > 0) {
    std::thread([label, timeout_s] {
      std::this_thread::sleep_for(std::chrono::seconds(timeout_s));
      std::fprintf(stderr, "loadgen: %s did not finish within --timeout %d s (a read hung or the store is far too slow)\n",
                   label.c_str(), timeout_s);
      std::fflush(stderr);
      std::_Exit(3);
    }).detach();
  }
  uint64_t limit = Size("limit", Take(f, "limit", "0"));
  if (!f.empty()) Fail("unknown flag --" + f.begin()->first);
  if (limit > 0 && limit < manifest->files.size()) manifest->files.resize(limit);

  auto results = RunLoad(*manifest, *readers, o);
  if (!results) Fail(results.error().ToString());
  uint64_t errors = 0;
  for (const auto& r : *results) {
    std::printf("result label=%s workload=%s readers=%d %s\n", label.c_str(), std::string(WorkloadName(o.workload)).c_str(),
                o.readers, r.ToLine().c_str());
    if (r.errors) std::fprintf(stderr, "loadgen: %s epoch %d: %llu failed reads, first: %s\n", label.c_str(), r.epoch,
                               static_cast<unsigned long long>(r.errors), r.first_error.c_str());
    errors += r.errors;
  }
  if (std::string counters = ShoalClusterCounters(); !counters.empty())
    std::printf("shoal_cluster label=%s %s\n", label.c_str(), counters.c_str());
  std::fflush(stdout);
  return errors ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "gen") return Gen(ParseFlags(argc, argv, 2));
  if (cmd == "run") return Run(ParseFlags(argc, argv, 2));
  if (cmd == "has-shoal") return 0;  // bench/run asks whether the Shoal reader is built in
  Fail("usage: loadgen gen|run --flag value ... (see the header of bench/loadgen_main.cc)");
}
