// Loadgen: a model of a training job's data loader, the workload behind every
// figure in docs/benchmarks.md.
//
// C reader threads share a file list. Each epoch visits it in a fresh random
// order (seeded, so every contender sees the same order). A read is one of:
//   whole   — a whole file (small-file datasets, ImageNet style);
//   seq     — a whole large file, streamed sequentially (tar shards);
//   ranges  — R reads of 4 KiB..1 MiB at random offsets of random files.
// Optionally the samples feed A simulated accelerators that take B samples per
// batch and "compute" for T; accelerator utilisation AU = compute time / wall
// time, the first batch's I/O excluded (MLPerf Storage's definition).
//
// Every byte read is checked (ranges against the content function, whole files
// against the manifest's xxh3); a mismatch is an error, never a figure.
//
// Readers are pluggable: one Reader per thread, from a factory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/dataset.h"
#include "shoal/status.h"

namespace shoal::bench {

// Receives the bytes of one read, in order, in chunks.
using Sink = std::function<void(std::span<const char>)>;

// One reader thread's access to a store. Not shared between threads.
class Reader {
 public:
  virtual ~Reader() = default;
  // Reads [offset, offset + length) of `file` (relative name) into `sink`.
  // `offset == 0 && length == file.size` is a whole-file read. Returns the
  // bytes delivered; fewer than `length` is reported as an error by the caller.
  virtual Result<uint64_t> Read(const DatasetFile& file, uint64_t offset, uint64_t length, const Sink& sink) = 0;
};

using ReaderFactory = std::function<Result<std::unique_ptr<Reader>>()>;

// "posix:DIR" reads DIR/<name> with open+pread (page cache, FUSE mounts);
// "posix-dropcache:DIR" then drops the kernel's pages of what it read
// (POSIX_FADV_DONTNEED), so every epoch reads through the file system.
ReaderFactory PosixReaders(const std::string& root, bool drop_cache = false);
// "http:URL" GETs URL/<name> (Range for partial reads), keep-alive per thread.
ReaderFactory HttpReaders(const std::string& base_url);
// "shoal:CONFIG:PREFIX" reads PREFIX/<name> through the native client (an empty
// PREFIX means the first mount's path).
Result<ReaderFactory> ShoalReaders(const std::string& config, const std::string& prefix);
// Parses one of the specs above.
Result<ReaderFactory> ReadersFromSpec(const std::string& spec);
// After a Shoal run: "hit_bytes=.. miss_bytes=.. ufs_read_bytes=.." summed over
// workers, or "" for other readers.
std::string ShoalClusterCounters();

enum class Workload { kWhole, kSeq, kRanges };
Result<Workload> ParseWorkload(std::string_view name);
std::string_view WorkloadName(Workload w);

enum class Verify { kAll, kFirst, kNone };  // kFirst: each file's first read per process

struct LoadOptions {
  Workload workload = Workload::kWhole;
  int readers = 8;
  int epochs = 1;
  uint64_t seed = 1;
  uint64_t ranges_per_epoch = 1000;
  uint64_t range_min = 4096, range_max = 1 << 20;
  uint64_t chunk = 1 << 20;  // a reader's buffer for streamed reads
  Verify verify = Verify::kAll;
  // Accelerator model; off when compute is zero.
  int accelerators = 1;
  int batch = 32;
  std::chrono::microseconds compute{0};
  int prefetch_batches = 2;  // per accelerator: how far readers may run ahead
};

struct EpochResult {
  int epoch = 0;
  uint64_t ops = 0;    // files (whole/seq) or ranges read
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;  // of the loadgen process (readers, checks, client library) during the epoch
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // per read
  double au = -1;          // accelerator utilisation, -1 when the model is off
  uint64_t batches = 0;
  uint64_t errors = 0;
  uint64_t verified_bytes = 0;
  std::string first_error;

  double mb_per_s() const { return seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0; }
  double ops_per_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
  // "epoch=1 ops=.. bytes=.. secs=.. mbps=.. ops_per_s=.. p50_ms=.. p99_ms=.. au=.. errors=.."
  std::string ToLine() const;
};

// Runs the epochs; one result per epoch. Fails only on setup errors (no
// readers, empty manifest); read errors are counted in the results.
Result<std::vector<EpochResult>> RunLoad(const Manifest& manifest, const ReaderFactory& readers,
                                         const LoadOptions& options);

}  // namespace shoal::bench
