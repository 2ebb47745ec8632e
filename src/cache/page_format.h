// The page file format (docs/page-format.md), in one place for the worker's
// page store, which writes and serves page files, and for the client, which
// reads them short-circuit through descriptors the worker passes it.
//
// A page file is a header, then the page's data. The data is checksummed in
// chunks (kChunkSize, XXH3-64 each); the checksums sit in a table in the
// header, and the header carries its own checksum over all of it. A reader
// checks the header, then every chunk its range touches, on every read: a byte
// that changed on disk while the worker runs is never returned. Nothing about
// a page but its length is kept in memory: a read takes the chunk table from
// the header, which the page cache holds next to the data.
//
// Thread safety: the free functions are pure. A PageFileReader is used by one
// thread at a time (it owns scratch memory); make one per reader.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// One page: the file version it belongs to and its offset in the file.
struct PageKey {
  std::string path;     // namespace path
  std::string version;  // file version (ETag or mtime-size)
  uint64_t offset = 0;  // multiple of the page size
};

namespace page_format {

// What a file is on disk now. Two equal identities of one descriptor's file
// mean nothing wrote to it in between (every write moves ctime), as long as
// the first was taken after its last write's clock tick (Settled).
struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;  // 0: unknown (never equal to a real one)
  int64_t ctime_ns = 0;
  uint64_t size = 0;
  bool known() const { return ino != 0; }
  bool operator==(const FileIdentity&) const = default;
};
// fstat(2) of `fd`; an unknown identity when it fails.
FileIdentity IdentityOf(int fd);
// Whether a check made now of a file with identity `id` may be trusted later.
// The kernel stamps ctime from a coarse clock (a tick is milliseconds): a
// write in the same tick as the last one would keep the ctime, so a file
// changed within kSettleNs of the check is not trusted (checked again next
// time), as git treats an index entry written in the same second as "racy".
constexpr int64_t kSettleNs = 1'000'000'000;
bool Settled(const FileIdentity& id);

// Bytes of data per checksum. A read checks whole chunks, so this bounds the
// extra bytes a small read costs (at most two chunks) while keeping the table
// small (8 bytes per chunk, 512 bytes for a 1 MiB page). Chosen by
// bench/page_format_bench: docs/page-format.md, "Why 16 KiB chunks".
constexpr uint32_t kChunkSize = 16 * 1024;
constexpr uint32_t kMinChunkSize = 1024;
constexpr size_t kFixedHeader = 48;
// What a reader's first pread of an unknown header takes; most headers fit.
constexpr size_t kHeaderProbe = 4096;
// No header is longer (64 MiB pages of 1 KiB chunks, and the longest path and
// version): a longer claim is corruption, refused before anything is read.
constexpr size_t kMaxHeaderLen = 1 << 20;

// The header of `data` as the page `key`, chunked by `chunk_size` (a power of
// two, at least kMinChunkSize). `generation` tells apart the pages a reused
// block-file slot held (0 in page files). REQUIRES: data.size() < 4 GiB; path
// and version shorter than 64 KiB each.
std::string EncodeHeader(const PageKey& key, std::span<const char> data, uint32_t chunk_size = kChunkSize,
                         uint64_t generation = 0);
// The length of the header EncodeHeader makes for `key` and `data_len` bytes.
size_t HeaderSize(const PageKey& key, uint64_t data_len, uint32_t chunk_size = kChunkSize);

// A checked header, viewing the bytes it was parsed from (which must outlive it).
class HeaderView {
 public:
  uint32_t header_len() const { return header_len_; }
  uint32_t data_len() const { return data_len_; }
  uint64_t offset() const { return offset_; }  // of the page in its file
  uint64_t generation() const { return generation_; }
  uint32_t chunk_size() const { return chunk_size_; }
  uint32_t chunk_count() const { return chunk_count_; }
  std::string_view path() const { return path_; }
  std::string_view version() const { return version_; }
  uint64_t chunk_checksum(uint32_t i) const;

 private:
  friend Result<HeaderView> ParseHeader(std::string_view bytes);
  const char* table_ = nullptr;
  uint32_t header_len_ = 0, data_len_ = 0, chunk_size_ = 0, chunk_count_ = 0;
  uint64_t offset_ = 0, generation_ = 0;
  std::string_view path_, version_;
};

// The header at the start of `bytes` (which may hold more than the header).
// kNotSupported: a page file of an older format (magic SHOALPG1);
// kCorruption: not a page header, or its checksum does not match.
// Needs HeaderLength(bytes) bytes; fewer gives kCorruption.
Result<HeaderView> ParseHeader(std::string_view bytes);
// The header length its first kFixedHeader bytes claim (0 when too short to say).
uint32_t HeaderLength(std::string_view first_bytes);

// Reads the data of one page file, checking what it reads.
class PageFileReader {
 public:
  // With `verify` false the reader only preads: a benchmark and diagnostic
  // mode (worker.verify_checksums, client.verify_checksums), never the default.
  explicit PageFileReader(bool verify = true);
  ~PageFileReader();
  // With verification, the header must also name `key` (its path, version
  // and offset): a page file holding another page (another page of the same
  // file copied over it, headers and checksums intact) is corruption too.
  // `key` must outlive the reads; null: any page.
  void ExpectKey(const PageKey* key) { expect_ = key; }
  PageFileReader(const PageFileReader&) = delete;
  PageFileReader& operator=(const PageFileReader&) = delete;

  // Starts on the page whose header is at byte `at` of `fd` (which stays the
  // caller's): 0 in a page file, the slot's offset in a block file.
  // `header_len` is the header length the page store recorded (the data
  // follows the header), or 0 when unknown. Reads and checks the header,
  // and that its generation is `generation`: kCorruption when it fails its
  // checks, kNotFound when it checks but has another generation (a block-file
  // slot reused since the store handed it out: a miss, not a bad disk).
  // Without verification nothing is read; header() is then unset.
  Status Begin(int fd, uint32_t header_len, uint64_t at = 0, uint64_t generation = 0);
  // Begin for a Read(begin, out) that follows at once: when `header_len` is
  // known and the range starts in the page's first chunk, the header and the
  // range's first batch of data (256 KiB) come in one preadv, so a small page
  // costs one system call instead of two. The header is checked here exactly
  // as Begin checks it, and nothing in `out` may be used until the Read has
  // checked it: the Read of this same (begin, out) checks the bytes already
  // in place and reads the rest (any other Read reads all of its bytes). On
  // failure `out` holds bytes that must not be used. `data_len`: the page's
  // data bytes when the caller knows them (0: not known), so that the read
  // stops at the page's end instead of the end of its last chunk.
  Status Begin(int fd, uint32_t header_len, uint64_t at, uint64_t generation, uint64_t begin, std::span<char> out,
               uint64_t data_len = 0);
  // REQUIRES: a successful Begin with verification.
  const HeaderView& header() const { return header_; }

  // Reads bytes [begin, begin + out.size()) of the page's data into `out`,
  // checking every chunk they touch; bytes of those chunks outside the range
  // go to scratch memory, the rest straight into `out`. kCorruption names the
  // chunk that failed (or a file shorter than its header says); `out` then
  // holds bytes that must not be used.
  // REQUIRES: a successful Begin; with verification, begin + out.size() <= header().data_len().
  Status Read(uint64_t begin, std::span<char> out);

  // [begin, end) where `end` is the last chunk boundary at or before
  // begin + want (at least one chunk past begin), capped at `limit`: the
  // range to read next so that consecutive reads never read a chunk twice.
  uint64_t NextStop(uint64_t begin, uint64_t want, uint64_t limit) const;

  // Bytes read from the file since construction (header and chunk padding included).
  uint64_t bytes_read() const { return bytes_read_; }
  // The preadv calls made since construction.
  uint64_t read_calls() const { return read_calls_; }

 private:
  Status Corrupt(std::string_view what) const;
  // Checks the header in header_bytes_ as Begin does.
  Status CheckHeader(uint32_t header_len, uint64_t generation);

  bool verify_;
  const PageKey* expect_ = nullptr;
  int fd_ = -1;
  uint32_t header_len_ = 0;
  uint64_t at_ = 0;  // where the header starts in the file
  std::string header_bytes_;
  HeaderView header_;
  std::unique_ptr<char[]> scratch_;  // 2 chunks: the head and tail padding of a read
  size_t scratch_size_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t read_calls_ = 0;
  // What the two-range Begin read ahead for the Read of (ahead_begin_,
  // ahead_out_, ahead_len_): data bytes [0, ahead_to_) of the page, in place
  // for kChunkSize chunks (padding in scratch_, the rest in out), not yet checked.
  uint64_t ahead_begin_ = 0, ahead_len_ = 0, ahead_to_ = 0;
  const char* ahead_out_ = nullptr;
};

}  // namespace page_format
}  // namespace shoal
