// A program built against an installed Shoal (tests/install_test.sh builds it
// with find_package(Shoal) and with pkg-config). It opens a client with no
// workers over a file:// mount, so every call goes through the under-store
// fallback, and checks that the bytes of a temp file come back intact.
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "shoal/client.h"
#include "shoal/log.h"
#include "shoal/version.h"

static_assert(SHOAL_VERSION_NUMBER >= SHOAL_MAKE_VERSION(0, 1, 0), "the version macros of shoal/version.h");

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "install_consumer: %s\n", what.c_str());
  return 1;
}

int Run(const std::filesystem::path& dir) {
  std::vector<char> data(5 << 19);  // 2.5 MiB: several 1 MiB pieces
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131 + 7) % 251);
  std::ofstream(dir / "sample.bin", std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));

  // The library's messages go to the program's handler (none are expected).
  shoal::SetLogHandler([](shoal::LogLevel, std::string_view text) {
    std::fprintf(stderr, "install_consumer: shoal says: %.*s\n", static_cast<int>(text.size()), text.data());
  });

  // No workers: every call goes to the mount's under-store directly.
  std::string yaml = "cluster: {workers: []}\nmounts: [{path: /data, ufs: \"file://" + dir.string() + "/\"}]\n";
  auto client = shoal::Client::FromYaml(yaml);
  if (!client) return Fail("FromYaml: " + client.error().ToString());
  shoal::Client& c = **client;

  auto st = c.Stat("/data/sample.bin");
  if (!st) return Fail("Stat: " + st.error().ToString());
  if (st->size != data.size()) return Fail("Stat: size " + std::to_string(st->size));
  auto missing = c.Stat("/data/missing.bin");
  if (missing || missing.error().code() != shoal::Code::kNotFound)
    return Fail("Stat of a missing file did not fail with NotFound");

  auto file = c.OpenFile("/data/sample.bin");
  if (!file) return Fail("OpenFile: " + file.error().ToString());
  std::vector<char> got(data.size() + 1);
  size_t total = 0;
  while (true) {
    auto n = (*file)->Read(std::span<char>(got).subspan(total, std::min<size_t>(300000, got.size() - total)));
    if (!n) return Fail("Read: " + n.error().ToString());
    if (*n == 0) break;
    total += *n;
  }
  got.resize(total);
  if (got != data) return Fail("Read returned " + std::to_string(total) + " bytes that differ from the file");
  if (c.stats().fallback_read_bytes == 0) return Fail("the bytes did not come through the under-store fallback");

  std::printf("ok: %zu bytes read through the file:// fallback (Shoal %s)\n", total, SHOAL_VERSION);
  return 0;
}

}  // namespace

int main() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "shoal-install-consumer-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Fail("mkdtemp failed");
  int rc = Run(tmpl);
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return rc;
}
