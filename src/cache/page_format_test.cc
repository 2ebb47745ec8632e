#include "cache/page_format.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <filesystem>
#include <random>

namespace shoal::page_format {
namespace {

namespace fs = std::filesystem;

std::string Bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

class PageFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-page-format-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    dir_ = tmpl;
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    fs::remove_all(dir_);
  }

  // A page file holding `data` as page `key`; returns its fd and sets *header.
  int Write(const PageKey& key, const std::string& data, uint32_t chunk, std::string* header = nullptr) {
    std::string h = EncodeHeader(key, data, chunk);
    if (header) *header = h;
    std::string path = dir_ + "/p" + std::to_string(fds_.size());
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    std::string all = h + data;
    EXPECT_EQ(::pwrite(fd, all.data(), all.size(), 0), static_cast<ssize_t>(all.size()));
    fds_.push_back(fd);
    return fd;
  }

  static void Flip(int fd, uint64_t at) {
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(at)), 1);
    c = static_cast<char>(c ^ 0x5a);
    ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(at)), 1);
  }

  // The page's data bytes [begin, begin + n) through a fresh reader: Begin
  // then Read, or with `together` the Begin that reads the header and the
  // range's first bytes in one preadv.
  static Result<std::string> ReadRange(int fd, uint32_t header_len, uint64_t begin, size_t n, bool verify = true,
                                       bool together = false) {
    PageFileReader r(verify);
    std::string out(n, '\0');
    if (together) {
      SHOAL_RETURN_IF_ERROR(r.Begin(fd, header_len, 0, 0, begin, std::span<char>(out.data(), out.size())));
    } else {
      SHOAL_RETURN_IF_ERROR(r.Begin(fd, header_len));
    }
    SHOAL_RETURN_IF_ERROR(r.Read(begin, std::span<char>(out.data(), out.size())));
    return out;
  }

  std::string dir_;
  std::vector<int> fds_;
};

TEST_F(PageFormatTest, ChunkTableRoundTrips) {
  const PageKey key{"/data/dir/f.bin", "\"etag-7\"", 3ull << 20};
  for (uint32_t chunk : {1024u, 4096u, kChunkSize}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{chunk} - 1, size_t{chunk}, size_t{chunk} + 1, 3 * size_t{chunk} + 17,
                     size_t{1} << 20}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", " + std::to_string(n) + " bytes");
      const std::string data = Bytes(n, n + chunk);
      std::string header;
      int fd = Write(key, data, chunk, &header);
      auto h = ParseHeader(header);
      ASSERT_TRUE(h) << h.error().ToString();
      EXPECT_EQ(h->header_len(), header.size());
      EXPECT_EQ(HeaderLength(header), header.size());
      EXPECT_EQ(h->data_len(), n);
      EXPECT_EQ(h->offset(), key.offset);
      EXPECT_EQ(h->path(), key.path);
      EXPECT_EQ(h->version(), key.version);
      EXPECT_EQ(h->chunk_size(), chunk);
      ASSERT_EQ(h->chunk_count(), (n + chunk - 1) / chunk);
      for (uint32_t i = 0; i < h->chunk_count(); ++i) {
        size_t len = std::min<size_t>(chunk, n - size_t{i} * chunk);
        EXPECT_EQ(h->chunk_checksum(i), XXH3_64bits(data.data() + size_t{i} * chunk, len)) << "chunk " << i;
      }
      // Whole, with the header length known and unknown.
      for (uint32_t hl : {static_cast<uint32_t>(header.size()), 0u}) {
        for (bool together : {false, true}) {
          auto all = ReadRange(fd, hl, 0, n, true, together);
          ASSERT_TRUE(all) << all.error().ToString();
          EXPECT_TRUE(*all == data);
        }
      }
      // Ranges at every alignment: inside a chunk, across chunks, at the ends.
      std::mt19937_64 rng(n);
      for (int i = 0; i < 50 && n > 0; ++i) {
        uint64_t b = rng() % n;
        size_t len = 1 + rng() % (n - b);
        for (bool together : {false, true}) {
          auto got = ReadRange(fd, static_cast<uint32_t>(header.size()), b, len, true, together);
          ASSERT_TRUE(got) << got.error().ToString();
          ASSERT_TRUE(*got == data.substr(b, len)) << "range " << b << " +" << len << (together ? " together" : "");
        }
      }
    }
  }
}

TEST_F(PageFormatTest, FlipInAnyChunkIsDetected) {
  constexpr uint32_t kC = 4096;
  const std::string data = Bytes(5 * kC + 1000, 3);  // six chunks, the last short
  const PageKey key{"/f", "v", 0};
  std::mt19937_64 rng(11);
  for (uint32_t bad = 0; bad < 6; ++bad) {
    SCOPED_TRACE("chunk " + std::to_string(bad));
    std::string header;
    int fd = Write(key, data, kC, &header);
    const uint64_t chunk_begin = uint64_t{bad} * kC, chunk_len = std::min<uint64_t>(kC, data.size() - chunk_begin);
    const uint64_t at = chunk_begin + rng() % chunk_len;
    Flip(fd, header.size() + at);
    const auto hl = static_cast<uint32_t>(header.size());
    for (bool together : {false, true}) {
      auto whole = ReadRange(fd, hl, 0, data.size(), true, together);
      ASSERT_FALSE(whole);
      EXPECT_EQ(whole.error().code(), Code::kCorruption);
      EXPECT_NE(whole.error().message().find("chunk " + std::to_string(bad) + " "), std::string::npos)
          << whole.error().message();
      EXPECT_NE(whole.error().message().find("/f"), std::string::npos) << "the error names the page";
    }
    // Even a one-byte read of another byte of that chunk.
    uint64_t other = at == chunk_begin ? chunk_begin + 1 : chunk_begin;
    EXPECT_FALSE(ReadRange(fd, hl, other, 1));
    EXPECT_FALSE(ReadRange(fd, hl, other, 1, true, /*together=*/true));
    // Ranges that avoid the chunk still read correctly.
    if (chunk_begin > 0) {
      auto before = ReadRange(fd, hl, 0, chunk_begin);
      ASSERT_TRUE(before) << before.error().ToString();
      EXPECT_TRUE(*before == data.substr(0, chunk_begin));
    }
    if (chunk_begin + chunk_len < data.size()) {
      auto after = ReadRange(fd, hl, chunk_begin + chunk_len, 10);
      ASSERT_TRUE(after) << after.error().ToString();
      EXPECT_EQ(*after, data.substr(chunk_begin + chunk_len, 10));
    }
  }
}

TEST_F(PageFormatTest, FlipInTheHeaderIsDetected) {
  const std::string data = Bytes(3 * 4096 + 5, 4);
  std::string header;
  int fd = Write(PageKey{"/data/h", "v9", 0}, data, 4096, &header);
  for (size_t i = 0; i < header.size(); ++i) {
    SCOPED_TRACE("header byte " + std::to_string(i));
    Flip(fd, i);
    for (uint32_t hl : {static_cast<uint32_t>(header.size()), 0u}) {
      for (bool together : {false, true}) {
        auto got = ReadRange(fd, hl, 0, data.size(), true, together);
        ASSERT_FALSE(got);
        EXPECT_EQ(got.error().code(), Code::kCorruption) << got.error().ToString();
      }
    }
    std::string copy = header;
    copy[i] = static_cast<char>(copy[i] ^ 0x5a);
    EXPECT_FALSE(ParseHeader(copy));
    Flip(fd, i);  // back
  }
  EXPECT_TRUE(ReadRange(fd, static_cast<uint32_t>(header.size()), 0, data.size()));
}

TEST_F(PageFormatTest, PartialReadsTouchOnlyTheChunksTheyNeed) {
  constexpr uint32_t kC = 32 * 1024;
  const std::string data = Bytes(1 << 20, 5);  // 32 chunks
  std::string header;
  int fd = Write(PageKey{"/p", "v", 0}, data, kC, &header);
  const auto hl = static_cast<uint32_t>(header.size());
  // Corrupt chunks 0 and 31: reads in between never see them.
  Flip(fd, hl + 100);
  Flip(fd, hl + data.size() - 1);
  struct Case {
    uint64_t begin, len, chunks;
  } cases[] = {
      {3 * kC + 100, 4096, 1},     // 4 KiB inside chunk 3
      {4 * kC, kC, 1},             // exactly chunk 4
      {5 * kC - 10, 20, 2},        // across a boundary
      {6 * kC + 1, 3 * kC, 4},     // 128 KiB-ish, unaligned: chunks 6 to 9
      {kC, 30 * kC, 30},           // everything but the two bad chunks
  };
  for (const auto& c : cases) {
    PageFileReader r;
    ASSERT_TRUE(r.Begin(fd, hl).ok());
    EXPECT_EQ(r.bytes_read(), hl);
    std::string out(c.len, '\0');
    Status st = r.Read(c.begin, std::span<char>(out.data(), out.size()));
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(out == data.substr(c.begin, c.len));
    EXPECT_EQ(r.bytes_read() - hl, c.chunks * kC) << "range " << c.begin << " +" << c.len;
  }
}

TEST_F(PageFormatTest, ConsecutiveReadsOnNextStopNeverReadAChunkTwice) {
  constexpr uint32_t kC = 4096;
  const std::string data = Bytes(40 * kC + 123, 6);
  std::string header;
  int fd = Write(PageKey{"/n", "v", 0}, data, kC, &header);
  PageFileReader r;
  ASSERT_TRUE(r.Begin(fd, 0).ok());
  const uint64_t start = 1000, end = data.size() - 7;
  std::string got;
  for (uint64_t pos = start; pos < end;) {
    uint64_t stop = r.NextStop(pos, 5 * kC + 17, end);
    ASSERT_GT(stop, pos);
    ASSERT_TRUE(stop == end || stop % kC == 0) << stop;
    std::string part(stop - pos, '\0');
    ASSERT_TRUE(r.Read(pos, std::span<char>(part.data(), part.size())).ok());
    got += part;
    pos = stop;
  }
  EXPECT_TRUE(got == data.substr(start, end - start));
  EXPECT_EQ(r.bytes_read(), kHeaderProbe + data.size()) << "a chunk was read twice";
}

TEST_F(PageFormatTest, TruncatedFileIsCorruption) {
  const std::string data = Bytes(10000, 7);
  std::string header;
  int fd = Write(PageKey{"/t", "v", 0}, data, 4096, &header);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(header.size() + 9000)), 0);
  for (bool together : {false, true}) {
    auto got = ReadRange(fd, static_cast<uint32_t>(header.size()), 0, data.size(), true, together);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), Code::kCorruption);
    EXPECT_NE(got.error().message().find("shorter"), std::string::npos) << got.error().message();
  }
  // Cut inside the header: refused as a header cut short, whatever was read after it.
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(header.size() - 1)), 0);
  EXPECT_EQ(ReadRange(fd, static_cast<uint32_t>(header.size()), 0, 100, true, true).error().code(), Code::kCorruption);
  ASSERT_EQ(::ftruncate(fd, 20), 0);
  EXPECT_EQ(ReadRange(fd, 0, 0, 1).error().code(), Code::kCorruption);
  EXPECT_EQ(ReadRange(fd, static_cast<uint32_t>(header.size()), 0, 1, true, true).error().code(), Code::kCorruption);
}

TEST_F(PageFormatTest, OlderFormatAndForeignFilesAreRecognised) {
  std::string old = "SHOALPG1" + std::string(100, '\0');
  auto h = ParseHeader(old);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code(), Code::kNotSupported);
  EXPECT_EQ(ParseHeader("hello").error().code(), Code::kCorruption);
  EXPECT_EQ(ParseHeader(std::string(4096, '\0')).error().code(), Code::kCorruption);
  // A header claiming to be huge is refused before anything that size is read.
  std::string header = EncodeHeader(PageKey{"/x", "v", 0}, std::string(10, 'x'));
  header[8] = header[9] = header[10] = header[11] = '\x7f';
  std::string path = dir_ + "/huge";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  fds_.push_back(fd);
  std::string probe = header + std::string(kHeaderProbe, 'x');
  ASSERT_EQ(::pwrite(fd, probe.data(), probe.size(), 0), static_cast<ssize_t>(probe.size()));
  PageFileReader r;
  EXPECT_EQ(r.Begin(fd, 0).code(), Code::kCorruption);
  EXPECT_LT(r.bytes_read(), 2 * kHeaderProbe);
}

TEST_F(PageFormatTest, WithoutVerificationBytesArePassedThrough) {
  // The benchmark knob: no checks, so a flipped byte is returned as it is.
  const std::string data = Bytes(8192, 8);
  std::string header;
  int fd = Write(PageKey{"/u", "v", 0}, data, 4096, &header);
  Flip(fd, header.size() + 5);
  auto got = ReadRange(fd, static_cast<uint32_t>(header.size()), 0, data.size(), /*verify=*/false);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_NE(*got, data);
  EXPECT_EQ(got->substr(6), data.substr(6));
  EXPECT_FALSE(ReadRange(fd, static_cast<uint32_t>(header.size()), 0, data.size(), /*verify=*/true));
}

TEST_F(PageFormatTest, HeaderAndASmallPageComeInOneRead) {
  const std::string data = Bytes(130 * 1024, 9);  // a small object's one page
  std::string header;
  int fd = Write(PageKey{"/s", "v", 0}, data, kChunkSize, &header);
  const auto hl = static_cast<uint32_t>(header.size());
  struct Case {
    uint64_t begin, len, calls;
  } cases[] = {
      {0, data.size(), 1},                  // the whole page
      {100, 5000, 1},                       // inside the first chunk (head padding in the same read)
      {kChunkSize - 1, 2 * kChunkSize, 1},  // from the first chunk on
      {kChunkSize, 1000, 2},                // past the first chunk: header, then the data
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("range " + std::to_string(c.begin) + " +" + std::to_string(c.len));
    PageFileReader r;
    std::string out(c.len, '\0');
    const std::span<char> dest(out.data(), out.size());
    ASSERT_TRUE(r.Begin(fd, hl, 0, 0, c.begin, dest).ok());
    ASSERT_TRUE(r.Read(c.begin, dest).ok());
    EXPECT_TRUE(out == data.substr(c.begin, c.len));
    EXPECT_EQ(r.read_calls(), c.calls);
  }
  // A page larger than a batch: its first 256 KiB come with the header, the rest batch by batch.
  const std::string big = Bytes(1 << 20, 10);
  fd = Write(PageKey{"/b", "v", 0}, big, kChunkSize, &header);
  PageFileReader r;
  std::string out(big.size(), '\0');
  ASSERT_TRUE(r.Begin(fd, static_cast<uint32_t>(header.size()), 0, 0, 0, std::span<char>(out)).ok());
  ASSERT_TRUE(r.Read(0, std::span<char>(out)).ok());
  EXPECT_TRUE(out == big);
  EXPECT_EQ(r.read_calls(), 4u);
  EXPECT_EQ(r.bytes_read(), header.size() + big.size()) << "a byte was read twice";
  // Past the first batch and ending inside a chunk: the rest and the tail padding in two more reads.
  PageFileReader part;
  const size_t len = 600 * 1024 + 100;
  ASSERT_TRUE(part.Begin(fd, static_cast<uint32_t>(header.size()), 0, 0, 0, std::span<char>(out.data(), len)).ok());
  ASSERT_TRUE(part.Read(0, std::span<char>(out.data(), len)).ok());
  EXPECT_TRUE(out.compare(0, len, big, 0, len) == 0);
  EXPECT_EQ(part.read_calls(), 3u);
  EXPECT_EQ(part.bytes_read(), header.size() + (len + kChunkSize - 1) / kChunkSize * kChunkSize)
      << "a byte was read twice";
}

TEST_F(PageFormatTest, BytesReadWithTheHeaderAreCheckedWhereTheyLie) {
  // What the two-range Begin read ahead is checked by the Read in place: a
  // byte changed there after the Begin is refused like one changed on disk,
  // and a Read into other memory reads its bytes itself.
  const std::string data = Bytes(40000, 12);
  std::string header;
  int fd = Write(PageKey{"/c", "v", 0}, data, kChunkSize, &header);
  const auto hl = static_cast<uint32_t>(header.size());
  PageFileReader r;
  std::string out(data.size(), '\0');
  ASSERT_TRUE(r.Begin(fd, hl, 0, 0, 0, std::span<char>(out)).ok());
  out[kChunkSize + 3] ^= 1;
  Status st = r.Read(0, std::span<char>(out));
  EXPECT_EQ(st.code(), Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("chunk 1 "), std::string::npos) << st.message();

  std::string other(data.size(), '\0');
  ASSERT_TRUE(r.Begin(fd, hl, 0, 0, 0, std::span<char>(out)).ok());
  ASSERT_TRUE(r.Read(0, std::span<char>(other)).ok());
  EXPECT_TRUE(other == data);
  EXPECT_EQ(r.read_calls(), 3u);  // two Begins, and the Read of `other` on its own
}

TEST_F(PageFormatTest, AReadThatKnowsThePagesLengthStopsAtItsEnd) {
  // A page whose last chunk is short, in a block-file slot with the next
  // slot's bytes right after it: told the page's length, the read with the
  // header reads not one byte past the page; not told, it pads the last
  // chunk (a page file ends there, a slot does not).
  const std::string data = Bytes(100 * 1024 + 7777, 16);
  const std::string header = EncodeHeader(PageKey{"/t", "v", 0}, data, kChunkSize, 3);
  const auto hl = static_cast<uint32_t>(header.size());
  const std::string path = dir_ + "/slots";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  const std::string all = header + data + Bytes(64 * 1024, 17);
  ASSERT_EQ(::pwrite(fd, all.data(), all.size(), 0), static_cast<ssize_t>(all.size()));
  const uint64_t padded = (data.size() + kChunkSize - 1) / kChunkSize * kChunkSize;
  for (uint64_t begin : {uint64_t{0}, uint64_t{5000}}) {
    for (uint64_t told : {uint64_t{data.size()}, uint64_t{0}}) {
      SCOPED_TRACE("from " + std::to_string(begin) + ", told " + std::to_string(told));
      PageFileReader r;
      std::string out(data.size() - begin, '\0');
      ASSERT_TRUE(r.Begin(fd, hl, 0, 3, begin, std::span<char>(out), told).ok());
      ASSERT_TRUE(r.Read(begin, std::span<char>(out)).ok());
      EXPECT_TRUE(out == data.substr(begin));
      EXPECT_EQ(r.read_calls(), 1u);
      EXPECT_EQ(r.bytes_read(), hl + (told ? data.size() : padded));
    }
  }
  // A length that cannot be right (shorter than the range) changes nothing: the checks decide.
  PageFileReader r;
  std::string out(data.size(), '\0');
  ASSERT_TRUE(r.Begin(fd, hl, 0, 3, 0, std::span<char>(out), 10).ok());
  ASSERT_TRUE(r.Read(0, std::span<char>(out)).ok());
  EXPECT_TRUE(out == data);
}

TEST_F(PageFormatTest, ForeignOrReusedPagesAreRefusedWhenReadWithTheHeader) {
  const std::string data = Bytes(20000, 13);
  std::string header;
  const uint64_t gen = 7;
  // A block file: a slot at 64 KiB holding a page of generation 7.
  header = EncodeHeader(PageKey{"/g", "v", 0}, data, kChunkSize, gen);
  const auto hl = static_cast<uint32_t>(header.size());
  std::string path = dir_ + "/blocks";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  const uint64_t slot = 64 * 1024;
  std::string all = Bytes(slot, 14) + header + data;
  ASSERT_EQ(::pwrite(fd, all.data(), all.size(), 0), static_cast<ssize_t>(all.size()));
  auto read = [&](uint32_t header_len, uint64_t at, uint64_t generation) {
    PageFileReader r;
    std::string out(data.size(), '\0');
    Status st = r.Begin(fd, header_len, at, generation, 0, std::span<char>(out));
    if (st.ok()) st = r.Read(0, std::span<char>(out));
    if (st.ok() && out != data) st = Status(Code::kInternal, "wrong bytes");
    return st;
  };
  EXPECT_TRUE(read(hl, slot, gen).ok());
  // The slot reused since (another generation): a miss, as with Begin.
  EXPECT_EQ(read(hl, slot, gen + 1).code(), Code::kNotFound);
  // Not a page at all (the bytes before the slot), and a header length other than the one recorded.
  EXPECT_EQ(read(hl, 0, gen).code(), Code::kCorruption);
  EXPECT_EQ(read(hl - 1, slot, gen).code(), Code::kCorruption);
  EXPECT_EQ(read(hl + 8, slot, gen).code(), Code::kCorruption);
  // A page of another chunk size than the page store's: read again after the header, still right.
  const std::string small = Bytes(10000, 15);
  std::string h4;
  int fd4 = Write(PageKey{"/k", "v", 0}, small, 4096, &h4);
  for (uint64_t b : {uint64_t{0}, uint64_t{100}, uint64_t{5000}}) {
    auto got = ReadRange(fd4, static_cast<uint32_t>(h4.size()), b, small.size() - b, true, true);
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_TRUE(*got == small.substr(b));
  }
}

}  // namespace
}  // namespace shoal::page_format
