// Benchmark datasets: files of random bytes that can be checked anywhere.
//
// A file's bytes are a pure function of (seed, name): 64-bit word j is
// splitmix64(key + j), key = xxh3(name, seed). So any range read from any
// store (page cache, nginx, S3, Shoal) can be verified without the source
// files, and whole files are also checked against the xxh3 in the manifest.
// Random bytes, never zeros: no store can compress or dedupe its way to a
// better figure.
//
// Manifest (text): a header "# shoal-bench manifest v1 seed=<n>" then one line
// per file, "<name>\t<size>\t<xxh3 hex>", names relative to the dataset root.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal::bench {

struct DatasetFile {
  std::string name;  // "small/000001.bin", relative to the root
  uint64_t size = 0;
  uint64_t xxh3 = 0;
};

struct Manifest {
  uint64_t seed = 0;
  std::vector<DatasetFile> files;

  uint64_t total_bytes() const;
  static Result<Manifest> Load(const std::string& path);
  Status Save(const std::string& path) const;
};

// The key that, with an offset, determines every byte of `name`.
uint64_t ContentKey(uint64_t seed, std::string_view name);

// Writes the bytes of the file with `key` at [offset, offset + out.size()).
void FillContent(uint64_t key, uint64_t offset, std::span<char> out);

// True when `data` equals the content of `key` at `offset`.
bool CheckContent(uint64_t key, uint64_t offset, std::span<const char> data);

struct GenerateOptions {
  std::string root;    // files go under root/prefix/
  std::string prefix;  // "small"
  uint64_t count = 0;
  uint64_t min_size = 0, max_size = 0;  // sizes uniform in [min, max]
  uint64_t seed = 1;
};

// Creates the files (skipping ones already there with the right size, so a
// re-run is cheap) and returns their manifest entries.
Result<Manifest> Generate(const GenerateOptions& options);

}  // namespace shoal::bench
