// page_format_bench: what checking page checksums costs per read, by chunk
// size; the measurement behind page_format::kChunkSize.
//
// 64 page files of 1 MiB (64 MiB, more than the L3 cache, so reads come from
// memory as a warm cache's do) per chunk size, in the page cache. Each
// benchmark reads with page_format::PageFileReader as the worker and the
// client do (header, then the chunks the range touches), at random
// 4 KiB-aligned offsets:
//   BM_Read/<chunk>/<read size>/<verify>
// `verify` 0 is the plain pread of the same bytes (the reader's unverified
// mode). Read sizes: 4 KiB and 128 KiB random reads, and whole 1 MiB pages
// (the sequential case). Compare time per read (or bytes_per_second).
//
//   build/bench/page_format_bench [--benchmark_repetitions=3 --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cache/page_format.h"

namespace {

using namespace shoal;
namespace fs = std::filesystem;

constexpr uint64_t kPage = 1 << 20;
constexpr int kPages = 64;

// The page files of one chunk size, made on first use and deleted at exit.
struct PageSet {
  std::string dir;
  std::vector<int> fds;
  std::vector<uint32_t> header_lens;
  ~PageSet() {
    for (int fd : fds) ::close(fd);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

PageSet& Pages(uint32_t chunk) {
  static std::map<uint32_t, std::unique_ptr<PageSet>> sets;
  auto& set = sets[chunk];
  if (set) return *set;
  set = std::make_unique<PageSet>();
  char tmpl[] = "/tmp/shoal-page-format-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) std::abort();
  set->dir = tmpl;
  std::mt19937_64 rng(chunk);
  std::string data(kPage, '\0');
  for (int p = 0; p < kPages; ++p) {
    for (auto& c : data) c = static_cast<char>(rng());
    std::string file = set->dir + "/" + std::to_string(p) + ".pg";
    std::string h = page_format::EncodeHeader(PageKey{"/bench/file.bin", "etag-123456", p * kPage}, data, chunk);
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::string all = h + data;
    if (fd < 0 || ::pwrite(fd, all.data(), all.size(), 0) != static_cast<ssize_t>(all.size())) std::abort();
    set->fds.push_back(fd);
    set->header_lens.push_back(static_cast<uint32_t>(h.size()));
  }
  return *set;
}

void BM_Read(benchmark::State& state) {
  const auto chunk = static_cast<uint32_t>(state.range(0));
  const auto size = static_cast<uint64_t>(state.range(1));
  const bool verify = state.range(2) != 0;
  PageSet& set = Pages(chunk);
  std::vector<char> out(size);
  std::mt19937_64 rng(7);
  page_format::PageFileReader reader(verify);
  uint64_t before = reader.bytes_read();
  for (auto _ : state) {
    size_t p = rng() % kPages;
    uint64_t begin = size >= kPage ? 0 : (rng() % ((kPage - size) / 4096 + 1)) * 4096;
    Status st = reader.Begin(set.fds[p], set.header_lens[p]);
    if (st.ok()) st = reader.Read(begin, std::span<char>(out.data(), out.size()));
    if (!st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
  state.counters["read_amplification"] =
      static_cast<double>(reader.bytes_read() - before) / static_cast<double>(state.iterations() * size);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t size : {4096, 128 * 1024, 1 << 20}) {
    b->Args({32 * 1024, size, 0});  // unverified: the chunk size does not matter
    for (int64_t chunk : {4096, 16 * 1024, 32 * 1024, 64 * 1024, 128 * 1024}) b->Args({chunk, size, 1});
  }
}

BENCHMARK(BM_Read)->Apply(Args)->ArgNames({"chunk", "size", "verify"});

}  // namespace

BENCHMARK_MAIN();
