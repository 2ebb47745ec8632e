// The page store as a state machine (cache/page_store.h): a sequence of puts,
// reads, drops, evictions (a small capacity), damage done to its files behind
// its back (a byte changed, a file cut short, removed, another page's file
// copied over it) and restarts (the store closed and opened again, which
// scans what is on disk). The property: every read returns the page's own
// bytes, or a miss (Get finds nothing, or the reader's checks refuse it and
// the page is dropped). Never other bytes.
//
// Input: byte 0 picks the layout (page files or block files); then one op per
// byte, with its operands from the bytes after it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include <spdlog/spdlog.h>

#include "cache/page_store.h"
#include "common/metrics.h"
#include "fuzz_check.h"

namespace {

using namespace shoal;
namespace fs = std::filesystem;

constexpr uint64_t kPageSize = 32 * 1024;

// A fresh directory per input under one temp directory of this process (in
// /dev/shm when there is one: the store fsyncs), removed when it exits.
const std::string& Root() {
  static const std::string* root = [] {
    spdlog::set_level(spdlog::level::off);  // restarts and damage log on every input
    fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    auto* t = new std::string((base / "shoal-fuzz-page-store-XXXXXX").string());
    FUZZ_CHECK(::mkdtemp(t->data()) != nullptr, "mkdtemp failed");
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(Root(), ec);
    });
    return t;
  }();
  return *root;
}

// The keys the ops pick from: 3 paths x 2 versions x 3 offsets.
PageKey Key(uint8_t k) {
  PageKey key;
  key.path = "/data/f" + std::to_string(k % 3);
  key.version = "v" + std::to_string((k / 3) % 2);
  key.offset = ((k / 6) % 3) * kPageSize;
  return key;
}

// A page's bytes are a function of its key (a version's bytes never change).
std::string Bytes(const PageKey& key) {
  size_t seed = std::hash<std::string>()(key.path + "@" + key.version) ^ key.offset;
  size_t len = key.offset == 2 * kPageSize ? 1 + seed % kPageSize : kPageSize;  // the last page is short
  std::string out(len, '\0');
  for (size_t i = 0; i < len; ++i) out[i] = static_cast<char>((seed >> (i % 48)) + i * 31);
  return out;
}

std::unique_ptr<PageStore> OpenStore(PageStore::Layout layout, MetricsRegistry* metrics) {
  PageStore::Options o;
  o.dirs.push_back({Root() + "/cache", 6 * (kPageSize + 4096)});  // about 6 pages: puts evict
  o.layout = layout;
  o.page_size = kPageSize;
  o.state_save_interval = std::chrono::milliseconds(0);
  o.ttl_sweep_interval = std::chrono::milliseconds(0);
  o.reuse_window = std::chrono::milliseconds(0);
  o.high_watermark = 0;
  o.metrics = metrics;
  o.free_bytes = [](const std::string&) -> Result<uint64_t> { return uint64_t{1} << 40; };
  auto s = PageStore::Open(std::move(o));
  FUZZ_CHECK(s.has_value(), "the page store does not open: %s", s ? "" : s.error().message().c_str());
  return std::move(*s);
}

std::vector<fs::path> Files() {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(Root() + "/cache", ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (it->is_regular_file(ec)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Reads the whole page through `ref` as the worker does; the bytes, or nothing when a check refuses it.
std::optional<std::string> ReadPage(const PageRef& ref) {
  page_format::PageFileReader reader;
  if (!ref.BeginRead(reader).ok()) return std::nullopt;
  std::string out(reader.header().data_len(), '\0');
  if (!reader.Read(0, std::span<char>(out.data(), out.size())).ok()) return std::nullopt;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  std::error_code ec;
  fs::remove_all(Root() + "/cache", ec);
  fuzz::FuzzInput in(data, size);
  const auto layout = in.Byte() & 1 ? PageStore::Layout::kBlocks : PageStore::Layout::kFiles;
  MetricsRegistry metrics;
  auto store = OpenStore(layout, &metrics);
  while (!in.empty()) {
    const uint8_t op = in.Byte();
    const PageKey key = Key(in.Byte());
    switch (op % 8) {
      case 0:
      case 1: {  // put
        std::string bytes = Bytes(key);
        (void)store->Put(key, bytes);
        break;
      }
      case 2:
      case 3: {  // read
        auto ref = store->Get(key);
        if (!ref) break;
        auto got = ReadPage(*ref);
        if (!got) {
          store->DropCorrupt(key, *ref);
          break;
        }
        FUZZ_CHECK(*got == Bytes(key), "a read of %s@%s+%lu returned %zu bytes that are not the page's",
                   key.path.c_str(), key.version.c_str(), static_cast<unsigned long>(key.offset), got->size());
        break;
      }
      case 4: {  // drop, one page or a path, or the other versions
        uint8_t how = in.Byte() % 3;
        if (how == 0) store->Drop(key);
        if (how == 1) store->DropPath(key.path, false);
        if (how == 2) store->DropOtherVersions(key.path, key.version);
        break;
      }
      case 5: {  // damage a file behind the store's back
        auto files = Files();
        if (files.empty()) break;
        const fs::path& f = files[in.Byte() % files.size()];
        const uint8_t how = in.Byte() % 4;
        const uint64_t at = in.Int<uint16_t>() * 3;
        auto len = fs::file_size(f, ec);
        if (ec) break;
        if (how == 0 && len > 0) {  // change a byte
          std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
          io.seekg(static_cast<std::streamoff>(at % len));
          char c = 0;
          io.get(c);
          io.seekp(static_cast<std::streamoff>(at % len));
          io.put(static_cast<char>(c ^ (1 + in.Byte() % 255)));
        } else if (how == 1) {  // cut short
          fs::resize_file(f, len == 0 ? 0 : at % len, ec);
        } else if (how == 2) {  // removed
          fs::remove(f, ec);
        } else {  // another file copied over it
          const fs::path& g = files[in.Byte() % files.size()];
          if (g != f) fs::copy_file(g, f, fs::copy_options::overwrite_existing, ec);
        }
        break;
      }
      case 6: {  // restart
        store.reset();
        store = OpenStore(layout, &metrics);
        break;
      }
      case 7: {  // verify the page whole, as the scrubber does
        auto ref = store->Get(key, 0);
        if (!ref) break;
        std::string scratch;
        if (!store->Verify(*ref, scratch)) {
          store->DropCorrupt(key, *ref, "scrub");
          break;
        }
        auto got = ReadPage(*ref);
        FUZZ_CHECK(!got || *got == Bytes(key), "a verified page reads back as other bytes");
        break;
      }
    }
  }
  return 0;
}
