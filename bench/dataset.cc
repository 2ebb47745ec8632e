#include "bench/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace shoal::bench {

namespace {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t Word(uint64_t key, uint64_t index) { return SplitMix64(key + index * 0xD1B54A32D192ED03ull); }

}  // namespace

uint64_t Manifest::total_bytes() const {
  uint64_t t = 0;
  for (const auto& f : files) t += f.size;
  return t;
}

Result<Manifest> Manifest::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Err(Code::kNotFound, "cannot read manifest " + path + " (make it with `loadgen gen`)");
  Manifest m;
  std::string line;
  if (!std::getline(in, line) || std::sscanf(line.c_str(), "# shoal-bench manifest v1 seed=%" SCNu64, &m.seed) != 1)
    return Err(Code::kInvalidArgument, "not a shoal-bench manifest: " + path);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    DatasetFile f;
    std::string hex;
    if (!std::getline(fields, f.name, '\t') || !(fields >> f.size >> hex))
      return Err(Code::kInvalidArgument, "bad manifest line in " + path + ": " + line);
    f.xxh3 = std::stoull(hex, nullptr, 16);
    m.files.push_back(std::move(f));
  }
  return m;
}

Status Manifest::Save(const std::string& path) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Status(Code::kIo, "cannot write manifest " + tmp);
    out << "# shoal-bench manifest v1 seed=" << seed << "\n";
    char hex[17];
    for (const auto& f : files) {
      std::snprintf(hex, sizeof hex, "%016" PRIx64, f.xxh3);
      out << f.name << '\t' << f.size << '\t' << hex << '\n';
    }
    if (!out.flush()) return Status(Code::kIo, "cannot write manifest " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status(Code::kIo, "cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

uint64_t ContentKey(uint64_t seed, std::string_view name) { return XXH3_64bits_withSeed(name.data(), name.size(), seed); }

void FillContent(uint64_t key, uint64_t offset, std::span<char> out) {
  size_t pos = 0;
  uint64_t index = offset / 8;
  size_t skip = offset % 8;
  while (pos < out.size()) {
    uint64_t w = Word(key, index++);
    size_t n = std::min<size_t>(8 - skip, out.size() - pos);
    std::memcpy(out.data() + pos, reinterpret_cast<const char*>(&w) + skip, n);
    pos += n;
    skip = 0;
  }
}

bool CheckContent(uint64_t key, uint64_t offset, std::span<const char> data) {
  char expect[4096];
  for (size_t pos = 0; pos < data.size(); pos += sizeof expect) {
    size_t n = std::min(sizeof expect, data.size() - pos);
    FillContent(key, offset + pos, std::span<char>(expect, n));
    if (std::memcmp(expect, data.data() + pos, n) != 0) return false;
  }
  return true;
}

Result<Manifest> Generate(const GenerateOptions& o) {
  if (o.count == 0 || o.min_size == 0 || o.max_size < o.min_size)
    return Err(Code::kInvalidArgument, "gen: need --count > 0 and 0 < --min-size <= --max-size");
  std::filesystem::path dir = std::filesystem::path(o.root) / o.prefix;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Err(Code::kIo, "cannot create " + dir.string() + ": " + ec.message());
  Manifest m;
  m.seed = o.seed;
  std::mt19937_64 rng(o.seed ^ XXH3_64bits(o.prefix.data(), o.prefix.size()));
  std::uniform_int_distribution<uint64_t> size_dist(o.min_size, o.max_size);
  std::vector<char> buf(4 << 20);
  for (uint64_t i = 0; i < o.count; i++) {
    char base[32];
    std::snprintf(base, sizeof base, "%06" PRIu64 ".bin", i);
    DatasetFile f;
    f.name = o.prefix + "/" + base;
    f.size = size_dist(rng);
    uint64_t key = ContentKey(o.seed, f.name);
    std::string path = (std::filesystem::path(o.root) / f.name).string();
    struct stat st{};
    bool exists = ::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == f.size;
    int fd = exists ? -1 : ::open((path + ".tmp").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!exists && fd < 0) return Err(Code::kIo, "cannot create " + path + ".tmp: " + std::strerror(errno));
    XXH3_state_t* h = XXH3_createState();
    XXH3_64bits_reset(h);
    for (uint64_t off = 0; off < f.size; off += buf.size()) {
      size_t n = std::min<uint64_t>(buf.size(), f.size - off);
      FillContent(key, off, std::span<char>(buf.data(), n));
      XXH3_64bits_update(h, buf.data(), n);
      if (fd >= 0 && ::write(fd, buf.data(), n) != static_cast<ssize_t>(n)) {
        ::close(fd);
        XXH3_freeState(h);
        return Err(Code::kIo, "cannot write " + path + ".tmp (disk full?): " + std::strerror(errno));
      }
    }
    f.xxh3 = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    if (fd >= 0) {
      ::close(fd);
      if (::rename((path + ".tmp").c_str(), path.c_str()) != 0)
        return Err(Code::kIo, "cannot rename to " + path + ": " + std::strerror(errno));
    }
    m.files.push_back(std::move(f));
  }
  return m;
}

}  // namespace shoal::bench
