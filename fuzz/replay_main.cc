// A main for a fuzz harness outside libFuzzer: runs LLVMFuzzerTestOneInput
// once over each file named, or each file in each directory named (sorted),
// so that `make test` replays every corpus and every crash input kept in the
// repository with whatever compiler builds the rest. A harness that finds a
// problem aborts (fuzz_check.h), which fails the test, and so does one that
// allocates past the limit libFuzzer sets (bad_alloc). A corpus directory
// that is missing or empty fails too: every harness keeps seeds.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  // libFuzzer fails an input that allocates past -malloc_limit_mb (2 GiB by
  // default): so does the replay, through the address-space limit.
  rlimit as{3ull << 30, 3ull << 30};
  ::setrlimit(RLIMIT_AS, &as);
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [CRASH_DIR|FILE]...\n", argv[0]);
    return 2;
  }
  size_t total = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto& e : fs::directory_iterator(argv[i])) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.push_back(argv[i]);
    }
    if (i == 1 && files.empty()) {
      std::fprintf(stderr, "%s: no seed in %s: a harness keeps its corpus in fuzz/corpus/<name>\n", argv[0], argv[i]);
      return 1;
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], f.c_str());
        return 1;
      }
      // Like libFuzzer, hand the harness a buffer of exactly the input's size.
      std::vector<uint8_t> buf(bytes.begin(), bytes.end());
      LLVMFuzzerTestOneInput(buf.data(), buf.size());
      ++total;
    }
  }
  std::printf("%s: %zu inputs replayed, no failure\n", argv[0], total);
  return 0;
}
