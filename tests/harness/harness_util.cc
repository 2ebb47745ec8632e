#include "tests/harness/harness_util.h"

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

namespace shoal::testing {

std::vector<std::string> SourceRoots() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("SHOAL_SOURCE_DIR"); env && *env) roots.push_back(env);
  roots.push_back(SHOAL_HARNESS_SOURCE_DIR);
  return roots;
}

std::string SourceDir() { return SourceRoots().front(); }

Result<std::string> MakeTempDir(std::string_view name, std::string_view what) {
  std::string tmpl = "/tmp/shoal-" + std::string(name) + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) return Err(Code::kIo, "cannot create a temporary directory for " + std::string(what));
  return tmpl;
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return s;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

Result<std::shared_ptr<ScratchDir>> MakeScratchDir(std::string_view name, std::string_view what) {
  auto path = MakeTempDir(name, what);
  if (!path) return Err(path.error());
  auto dir = std::make_shared<ScratchDir>();
  dir->path = std::move(*path);
  return dir;
}

}  // namespace shoal::testing
