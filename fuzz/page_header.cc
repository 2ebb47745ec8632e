// Page files read back from disk (cache/page_format.h): ParseHeader on any
// bytes, and PageFileReader (Begin, Read) over a page file in memory, as the
// worker and the short-circuit client read one. The first byte picks a mode:
//   0: the rest is the file, as is (the header checksum stops most inputs);
//   1: the rest is the file with its header checksum recomputed, so the
//      fields behind it are reached;
//   2: a page the harness writes with EncodeHeader from the rest (key, data,
//      chunk size, generation), then one byte of the file changed: every read
//      returns the page's bytes or fails (never other bytes);
//   3: as 2, unchanged: every read must succeed and return the page's bytes.
#define XXH_INLINE_ALL
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "cache/page_format.h"
#include "fuzz_check.h"

namespace {

using namespace shoal;
namespace pf = shoal::page_format;

// The header checksum as docs/page-format.md defines it: bytes [0, 40) and [48, H).
void Reseal(std::string& file) {
  if (file.size() < pf::kFixedHeader) return;
  uint32_t h = pf::HeaderLength(file);
  if (h < pf::kFixedHeader || h > file.size()) return;
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, file.data(), 40);
  XXH3_64bits_update(&st, file.data() + pf::kFixedHeader, h - pf::kFixedHeader);
  uint64_t sum = XXH3_64bits_digest(&st);
  std::memcpy(file.data() + 40, &sum, 8);
}

// A page file in memory, readable through an fd like one on disk.
class MemFile {
 public:
  explicit MemFile(std::string_view bytes) : fd_(::memfd_create("page", MFD_CLOEXEC)) {
    FUZZ_CHECK(fd_ >= 0, "memfd_create failed");
    FUZZ_CHECK(::pwrite(fd_, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()), "pwrite failed");
  }
  ~MemFile() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Reads [begin, begin + len) of the page; the bytes, or nothing when the reader refuses.
std::optional<std::string> ReadRange(int fd, uint32_t header_len, const PageKey* key, uint64_t begin, uint64_t len,
                                     bool two_range, uint64_t data_len) {
  pf::PageFileReader r;
  r.ExpectKey(key);
  std::string out(len, '\0');
  Status st = two_range ? r.Begin(fd, header_len, 0, 0, begin, std::span<char>(out.data(), out.size()), data_len)
                        : r.Begin(fd, header_len, 0, 0);
  if (!st.ok()) return std::nullopt;
  if (begin + len > r.header().data_len()) return std::nullopt;
  if (!r.Read(begin, std::span<char>(out.data(), out.size())).ok()) return std::nullopt;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > (1 << 20)) return 0;
  fuzz::FuzzInput in(data, size);
  const int mode = in.Byte() % 4;
  if (mode <= 1) {
    std::string file(in.rest());
    if (mode == 1) Reseal(file);
    auto h = pf::ParseHeader(file);
    if (h) {
      FUZZ_CHECK(h->header_len() <= file.size() && h->header_len() >= pf::kFixedHeader, "header_len %u of %zu",
                 h->header_len(), file.size());
      FUZZ_CHECK(h->chunk_size() >= pf::kMinChunkSize, "chunk size %u", h->chunk_size());
      for (uint32_t i = 0; i < h->chunk_count(); ++i) (void)h->chunk_checksum(i);
      FUZZ_CHECK(h->path().data() + h->path().size() <= file.data() + h->header_len() &&
                     h->version().data() + h->version().size() <= file.data() + h->header_len(),
                 "names past the header");
    }
    // The reader over the same bytes, header length unknown (a scan) and as claimed.
    MemFile f(file);
    for (uint32_t hl : {0u, pf::HeaderLength(file)}) {
      pf::PageFileReader r;
      if (!r.Begin(f.fd(), hl).ok()) continue;
      // A range the input's last bytes pick, as a reader of part of the page asks.
      uint64_t len = r.header().data_len();
      uint64_t begin = size >= 3 ? data[size - 3] * uint64_t{1000} % (len + 1) : 0;
      uint64_t n = size >= 2 ? std::min<uint64_t>(len - begin, data[size - 2] * uint64_t{700}) : len;
      std::string out(std::min<uint64_t>(n, 1 << 20), '\0');
      (void)r.Read(begin, std::span<char>(out.data(), out.size()));
    }
    return 0;
  }
  // Modes 2 and 3: a real page.
  PageKey key;
  key.path = std::string(in.Bytes(64));
  key.version = std::string(in.Bytes(32));
  key.offset = in.Int<uint64_t>();
  const uint32_t chunk = pf::kMinChunkSize << (in.Byte() % 5);  // 1 to 16 KiB
  const uint64_t generation = in.Byte();
  const size_t data_len = std::min<size_t>(in.Int<uint16_t>() % (96 * 1024), 96 * 1024);
  const uint64_t flip_at = in.Int<uint32_t>();
  const uint8_t flip = in.Byte() | 1;
  std::string_view fill = in.Bytes(255);
  std::string page(data_len, '\0');
  for (size_t i = 0; i < data_len && !fill.empty(); ++i) page[i] = static_cast<char>(fill[i % fill.size()] + i / 251);
  std::string header = pf::EncodeHeader(key, page, chunk, generation);
  FUZZ_CHECK(header.size() == pf::HeaderSize(key, data_len, chunk), "HeaderSize disagrees with EncodeHeader");
  std::string file = header + page;
  auto h = pf::ParseHeader(file);
  FUZZ_CHECK(h.has_value(), "a header EncodeHeader wrote does not parse: %s", h ? "" : h.error().message().c_str());
  FUZZ_CHECK(h->path() == key.path && h->version() == key.version && h->offset() == key.offset &&
                 h->data_len() == data_len && h->chunk_size() == chunk && h->generation() == generation,
             "a header does not read back as written");
  if (mode == 2) file[flip_at % file.size()] ^= static_cast<char>(flip);
  MemFile f(file);
  // A few ranges: the whole page, and ranges the input picks.
  for (int i = 0; i < 4; ++i) {
    uint64_t begin = i == 0 ? 0 : in.Below(data_len);
    uint64_t len = i == 0 ? data_len : in.Below(data_len - begin);
    bool two_range = in.Byte() & 1;
    // Generation 0 is what ReadRange expects: other generations must read as a miss.
    auto got = ReadRange(f.fd(), static_cast<uint32_t>(header.size()), &key, begin, len, two_range,
                         in.Byte() & 1 ? data_len : 0);
    if (generation != 0) {
      FUZZ_CHECK(!got, "a page of generation %lu was read as generation 0", static_cast<unsigned long>(generation));
      continue;
    }
    if (mode == 3)
      FUZZ_CHECK(got.has_value(), "an intact page failed its checks (range %lu+%lu)", static_cast<unsigned long>(begin),
                 static_cast<unsigned long>(len));
    if (got) FUZZ_CHECK(*got == page.substr(begin, len), "a read returned bytes that are not the page's");
  }
  return 0;
}
