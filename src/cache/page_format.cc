#include "cache/page_format.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#if defined(SHOAL_HAVE_XXH_DISPATCH)
// The library's runtime dispatch picks AVX2 where the CPU has it: 2.5x the
// SSE2 build's speed on 32 KiB chunks (about 25 vs 10 GB/s here), the same hashes.
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace shoal::page_format {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'O', 'A', 'L', 'P', 'G', '2'};
constexpr char kOldMagic[8] = {'S', 'H', 'O', 'A', 'L', 'P', 'G', '1'};
// A read is done in batches of this many bytes: one preadv, then the batch's
// chunks are hashed while they are still in the caches. Measured with
// bench/page_format_bench on 1 MiB pages: batches of 128 KiB to 1 MiB cost
// the same, 32 KiB batches 20-40% more (syscalls); 256 KiB stays within the
// L2 cache (512 KiB per core here).
constexpr uint64_t kBatch = 256 * 1024;

void PutU16(char* p, uint16_t v) { std::memcpy(p, &v, 2); }
void PutU32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void PutU64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint16_t GetU16(const char* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
uint32_t GetU32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t GetU64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

bool ValidChunkSize(uint32_t c) { return c >= kMinChunkSize && (c & (c - 1)) == 0; }

uint64_t ChunkCount(uint64_t data_len, uint32_t chunk) { return (data_len + chunk - 1) / chunk; }

// The header's own checksum: bytes [0, 40) and [48, H), i.e. all of it but the checksum field.
uint64_t HeaderChecksum(const char* h, size_t header_len) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, h, 40);
  XXH3_64bits_update(&st, h + kFixedHeader, header_len - kFixedHeader);
  return XXH3_64bits_digest(&st);
}

// Reads exactly the iovecs' bytes at `offset`, unless the file ends first;
// returns the bytes read, or -errno. Counts its preadv calls in *calls.
int64_t PreadvFull(int fd, iovec* iov, int n, uint64_t offset, uint64_t* calls) {
  int64_t total = 0;
  while (n > 0) {
    ++*calls;
    ssize_t r = ::preadv(fd, iov, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) break;
    total += r;
    offset += static_cast<uint64_t>(r);
    size_t adv = static_cast<size_t>(r);
    while (n > 0 && adv >= iov->iov_len) {
      adv -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + adv;
      iov->iov_len -= adv;
    }
  }
  return total;
}

Status ReadError(std::string_view what, int64_t neg_errno) {
  return Status(Code::kIo, "cannot read " + std::string(what) + ": " + std::strerror(static_cast<int>(-neg_errno)));
}

}  // namespace

FileIdentity IdentityOf(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec,
          static_cast<uint64_t>(st.st_size)};
}

bool Settled(const FileIdentity& id) {
  if (!id.known()) return false;
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  return now_ns - id.ctime_ns > kSettleNs;
}

size_t HeaderSize(const PageKey& key, uint64_t data_len, uint32_t chunk_size) {
  return kFixedHeader + 8 * ChunkCount(data_len, chunk_size) + key.path.size() + key.version.size();
}

std::string EncodeHeader(const PageKey& key, std::span<const char> data, uint32_t chunk_size, uint64_t generation) {
  const uint64_t n = ChunkCount(data.size(), chunk_size);
  std::string h(HeaderSize(key, data.size(), chunk_size), '\0');
  char* p = h.data();
  std::memcpy(p, kMagic, 8);
  PutU32(p + 8, static_cast<uint32_t>(h.size()));
  PutU32(p + 12, static_cast<uint32_t>(data.size()));
  PutU64(p + 16, key.offset);
  PutU32(p + 24, chunk_size);
  PutU16(p + 28, static_cast<uint16_t>(key.path.size()));
  PutU16(p + 30, static_cast<uint16_t>(key.version.size()));
  PutU64(p + 32, generation);
  for (uint64_t i = 0; i < n; ++i) {
    size_t begin = i * chunk_size;
    size_t len = std::min<size_t>(chunk_size, data.size() - begin);
    PutU64(p + kFixedHeader + 8 * i, XXH3_64bits(data.data() + begin, len));
  }
  char* names = p + kFixedHeader + 8 * n;
  std::memcpy(names, key.path.data(), key.path.size());
  std::memcpy(names + key.path.size(), key.version.data(), key.version.size());
  PutU64(p + 40, HeaderChecksum(p, h.size()));
  return h;
}

uint64_t HeaderView::chunk_checksum(uint32_t i) const { return GetU64(table_ + 8 * static_cast<size_t>(i)); }

uint32_t HeaderLength(std::string_view b) { return b.size() < kFixedHeader ? 0 : GetU32(b.data() + 8); }

Result<HeaderView> ParseHeader(std::string_view b) {
  if (b.size() >= 8 && std::memcmp(b.data(), kOldMagic, 8) == 0) {
    return Err(Code::kNotSupported, "page file of an older format (SHOALPG1)");
  }
  if (b.size() < kFixedHeader || std::memcmp(b.data(), kMagic, 8) != 0) {
    return Err(Code::kCorruption, "not a page file header (bad magic or too short)");
  }
  HeaderView h;
  h.header_len_ = GetU32(b.data() + 8);
  h.data_len_ = GetU32(b.data() + 12);
  h.offset_ = GetU64(b.data() + 16);
  h.chunk_size_ = GetU32(b.data() + 24);
  h.generation_ = GetU64(b.data() + 32);
  uint16_t plen = GetU16(b.data() + 28), vlen = GetU16(b.data() + 30);
  if (!ValidChunkSize(h.chunk_size_)) return Err(Code::kCorruption, "page header with an invalid chunk size");
  uint64_t n = ChunkCount(h.data_len_, h.chunk_size_);
  if (h.header_len_ != kFixedHeader + 8 * n + plen + vlen) {
    return Err(Code::kCorruption, "page header whose length does not match its fields");
  }
  if (b.size() < h.header_len_ || h.header_len_ > kMaxHeaderLen) return Err(Code::kCorruption, "page header cut short");
  if (HeaderChecksum(b.data(), h.header_len_) != GetU64(b.data() + 40)) {
    return Err(Code::kCorruption, "page header does not match its checksum");
  }
  h.chunk_count_ = static_cast<uint32_t>(n);
  h.table_ = b.data() + kFixedHeader;
  h.path_ = b.substr(kFixedHeader + 8 * n, plen);
  h.version_ = b.substr(kFixedHeader + 8 * n + plen, vlen);
  return h;
}

PageFileReader::PageFileReader(bool verify) : verify_(verify) {}
PageFileReader::~PageFileReader() = default;

Status PageFileReader::Corrupt(std::string_view what) const {
  std::string page = verify_ && header_.header_len() ? "page at offset " + std::to_string(header_.offset()) + " of " +
                                                           std::string(header_.path()) + " (version " +
                                                           std::string(header_.version()) + ")"
                                                     : std::string("page file");
  return Status(Code::kCorruption, page + ": " + std::string(what));
}

Status PageFileReader::Begin(int fd, uint32_t header_len, uint64_t at, uint64_t generation) {
  fd_ = fd;
  header_ = HeaderView();
  header_len_ = header_len;
  at_ = at;
  ahead_out_ = nullptr;
  if (!verify_ && header_len != 0) return {};
  // The length comes from the page store's index, or from the worker over the
  // short-circuit socket: bounded before anything is allocated for it.
  if (header_len > kMaxHeaderLen) return Corrupt("page header length " + std::to_string(header_len) + " recorded");
  // One pread for the header in the usual case: its length is known, or fits the probe.
  header_bytes_.resize(header_len ? header_len : kHeaderProbe);
  iovec iov{header_bytes_.data(), header_bytes_.size()};
  int64_t n = PreadvFull(fd, &iov, 1, at, &read_calls_);
  if (n < 0) return ReadError("a page file header", n);
  bytes_read_ += static_cast<uint64_t>(n);
  header_bytes_.resize(static_cast<size_t>(n));
  uint32_t claimed = HeaderLength(header_bytes_);
  if (claimed > kMaxHeaderLen) return Corrupt("page header claims " + std::to_string(claimed) + " bytes");
  if (header_len == 0 && claimed > header_bytes_.size() && n == static_cast<int64_t>(kHeaderProbe)) {
    header_bytes_.resize(claimed);
    iovec more{header_bytes_.data() + kHeaderProbe, claimed - kHeaderProbe};
    int64_t m = PreadvFull(fd, &more, 1, at + kHeaderProbe, &read_calls_);
    if (m < 0) return ReadError("a page file header", m);
    bytes_read_ += static_cast<uint64_t>(m);
    header_bytes_.resize(kHeaderProbe + static_cast<size_t>(m));
  }
  if (!verify_) {
    header_len_ = claimed;
    return claimed ? Status() : Corrupt("shorter than a page header");
  }
  return CheckHeader(header_len, generation);
}

Status PageFileReader::Begin(int fd, uint32_t header_len, uint64_t at, uint64_t generation, uint64_t begin,
                             std::span<char> out, uint64_t data_len) {
  // The data bytes read ahead must follow the header in the file: only a
  // range in the page's first chunk (for the page store's chunk size; the
  // header that tells the real one is not read yet) starts close enough.
  if (!verify_ || header_len == 0 || header_len > kMaxHeaderLen || out.empty() || begin >= kChunkSize) {
    return Begin(fd, header_len, at, generation);
  }
  fd_ = fd;
  header_ = HeaderView();
  header_len_ = header_len;
  at_ = at;
  ahead_out_ = nullptr;
  // Header, head padding [0, begin), the range's first batch and, when the
  // range ends in it, the tail padding to the end of its chunk (a page that
  // ends sooner makes the read short): in one preadv, where Read wants them
  // (padding in scratch), none of it trusted before the checks.
  const uint64_t c = kChunkSize, end = begin + out.size(), to = std::min<uint64_t>(end, kBatch);
  // Not past the page's end when the caller knows it: in a block file the
  // bytes after a page are another slot's, or not written at all, and reading
  // them would bring them into the page cache (with read-ahead after them).
  const uint64_t chunk_end = (end + c - 1) / c * c;
  const uint64_t tail = end <= kBatch ? (data_len >= end ? std::min(chunk_end, data_len) : chunk_end) - end : 0;
  if ((begin > 0 || tail > 0) && scratch_size_ < 2 * c) {
    scratch_ = std::make_unique_for_overwrite<char[]>(2 * c);
    scratch_size_ = 2 * c;
  }
  header_bytes_.resize(header_len);
  iovec iov[4];
  int n = 0;
  iov[n++] = {header_bytes_.data(), header_len};
  if (begin > 0) iov[n++] = {scratch_.get(), begin};
  iov[n++] = {out.data(), to - begin};
  if (tail > 0) iov[n++] = {scratch_.get() + c, tail};
  // One call: a read cut short by the end of the file is not retried (Read
  // reads what is missing, and finds a page file shorter than its header).
  ssize_t got;
  do {
    ++read_calls_;
    got = ::preadv(fd, iov, n, static_cast<off_t>(at));
  } while (got < 0 && errno == EINTR);
  if (got < 0) return ReadError("a page file", -errno);
  bytes_read_ += static_cast<uint64_t>(got);
  header_bytes_.resize(std::min<size_t>(static_cast<size_t>(got), header_len));
  SHOAL_RETURN_IF_ERROR(CheckHeader(header_len, generation));
  ahead_begin_ = begin;
  ahead_len_ = out.size();
  ahead_out_ = out.data();
  ahead_to_ = static_cast<uint64_t>(got) - header_len;
  return {};
}

Status PageFileReader::CheckHeader(uint32_t header_len, uint64_t generation) {
  auto h = ParseHeader(header_bytes_);
  if (!h) return h.error().code() == Code::kCorruption ? Corrupt(h.error().message()) : h.error();
  if (header_len != 0 && h->header_len() != header_len) {
    return Corrupt("header length " + std::to_string(h->header_len()) + " differs from the " +
                   std::to_string(header_len) + " recorded when the page was written");
  }
  if (h->generation() != generation) {
    // Not a changed byte (the header checks): the slot now holds another page, or another copy of this one.
    return Status(Code::kNotFound, "page at offset " + std::to_string(h->offset()) + " of " + std::string(h->path()) +
                                       ": its block-file slot was reused (generation " +
                                       std::to_string(h->generation()) + ", not " + std::to_string(generation) + ")");
  }
  if (expect_ != nullptr &&
      (h->path() != expect_->path || h->version() != expect_->version || h->offset() != expect_->offset)) {
    // Checks, but is another page: a page file copied or written over this one.
    header_ = *h;
    return Corrupt("holds another page, not the page at offset " + std::to_string(expect_->offset) + " of " +
                   expect_->path + " (version " + expect_->version + ")");
  }
  header_ = *h;
  header_len_ = h->header_len();
  return {};
}

uint64_t PageFileReader::NextStop(uint64_t begin, uint64_t want, uint64_t limit) const {
  uint64_t c = verify_ && header_.chunk_size() ? header_.chunk_size() : 1;
  uint64_t stop = (begin + std::max(want, c)) / c * c;
  return std::min(std::max(stop, begin + 1), limit);
}

Status PageFileReader::Read(uint64_t begin, std::span<char> out) {
  const uint64_t end = begin + out.size();
  if (out.empty()) return {};
  if (!verify_) {
    iovec iov{out.data(), out.size()};
    int64_t n = PreadvFull(fd_, &iov, 1, at_ + header_len_ + begin, &read_calls_);
    if (n < 0) return ReadError("a page file", n);
    bytes_read_ += static_cast<uint64_t>(n);
    if (static_cast<uint64_t>(n) < out.size()) return Corrupt("shorter than its header says");
    return {};
  }
  const uint64_t data_len = header_.data_len();
  const uint64_t c = header_.chunk_size();
  if (end > data_len) {
    return Status(Code::kInternal, "read of page bytes [" + std::to_string(begin) + ", " + std::to_string(end) +
                                       ") past the page's " + std::to_string(data_len) + " bytes (a bug)");
  }
  // The chunks the range touches: [ab, ae). Their bytes before `begin` (the
  // head) and after `end` (the tail) go to scratch, the rest straight into `out`.
  const uint64_t ab = begin / c * c;
  const uint64_t ae = std::min((end + c - 1) / c * c, data_len);
  // Data bytes [ab, have) are in place already: what the two-range Begin read
  // ahead for this very call (unchecked, like every byte read below).
  uint64_t have = ab;
  if (ahead_out_ != nullptr && ahead_out_ == out.data() && ahead_len_ == out.size() && ahead_begin_ == begin &&
      c == kChunkSize) {
    have = std::min(ahead_to_, ae);  // ab is 0: the range starts in the first chunk
  }
  ahead_out_ = nullptr;
  if ((ab < begin || ae > end) && scratch_size_ < 2 * c) {
    scratch_ = std::make_unique_for_overwrite<char[]>(2 * c);
    scratch_size_ = 2 * c;
    if (ab < begin || have > end) have = ab;  // padding read ahead was in the old scratch
  }
  char* head = scratch_.get();                        // holds [ab, begin)
  char* tail = scratch_ ? scratch_.get() + c : nullptr;  // holds [end, ae)
  // Where file bytes [lo, hi) (all within one of the three parts) are in memory.
  auto at = [&](uint64_t lo) -> char* {
    if (lo < begin) return head + (lo - ab);
    if (lo < end) return out.data() + (lo - begin);
    return tail + (lo - end);
  };
  const uint64_t batch = std::max(c, kBatch / c * c);
  for (uint64_t pos = ab; pos < ae;) {
    const uint64_t stop = std::min(ae, pos + batch);
    // One preadv per batch, of the part not read ahead: up to three pieces (head, out, tail).
    const uint64_t from = std::clamp(have, pos, stop);
    if (from < stop) {
      iovec iov[3];
      int n = 0;
      for (uint64_t lo = from; lo < stop;) {
        uint64_t hi = std::min(stop, lo < begin ? begin : lo < end ? end : ae);
        iov[n++] = {at(lo), hi - lo};
        lo = hi;
      }
      int64_t got = PreadvFull(fd_, iov, n, at_ + header_len_ + from, &read_calls_);
      if (got < 0) return ReadError("a page file", got);
      bytes_read_ += static_cast<uint64_t>(got);
      if (static_cast<uint64_t>(got) < stop - from) return Corrupt("page file shorter than its header says");
    }
    for (uint64_t cs = pos; cs < stop; cs += c) {
      const uint64_t ce = std::min(cs + c, stop);
      uint64_t sum;
      if (cs >= begin && ce <= end) {
        sum = XXH3_64bits(at(cs), ce - cs);  // the usual case: a chunk wholly inside the range
      } else {
        XXH3_state_t st;
        XXH3_64bits_reset(&st);
        for (uint64_t lo = cs; lo < ce;) {
          uint64_t hi = std::min(ce, lo < begin ? begin : lo < end ? end : ae);
          XXH3_64bits_update(&st, at(lo), hi - lo);
          lo = hi;
        }
        sum = XXH3_64bits_digest(&st);
      }
      const auto index = static_cast<uint32_t>(cs / c);
      if (sum != header_.chunk_checksum(index)) {
        return Corrupt("chunk " + std::to_string(index) + " (data bytes " + std::to_string(cs) + " to " +
                       std::to_string(ce) + ") does not match its checksum");
      }
    }
    pos = stop;
  }
  return {};
}

}  // namespace shoal::page_format
