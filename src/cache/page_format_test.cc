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

  // The page's data bytes [begin, begin + n) through a fresh reader.
  static Result<std::string> ReadRange(int fd, uint32_t header_len, uint64_t begin, size_t n, bool verify = true) {
    PageFileReader r(verify);
    SHOAL_RETURN_IF_ERROR(r.Begin(fd, header_len));
    std::string out(n, '\0');
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
        auto all = ReadRange(fd, hl, 0, n);
        ASSERT_TRUE(all) << all.error().ToString();
        EXPECT_TRUE(*all == data);
      }
      // Ranges at every alignment: inside a chunk, across chunks, at the ends.
      std::mt19937_64 rng(n);
      for (int i = 0; i < 50 && n > 0; ++i) {
        uint64_t b = rng() % n;
        size_t len = 1 + rng() % (n - b);
        auto got = ReadRange(fd, static_cast<uint32_t>(header.size()), b, len);
        ASSERT_TRUE(got) << got.error().ToString();
        ASSERT_TRUE(*got == data.substr(b, len)) << "range " << b << " +" << len;
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
    auto whole = ReadRange(fd, hl, 0, data.size());
    ASSERT_FALSE(whole);
    EXPECT_EQ(whole.error().code(), Code::kCorruption);
    EXPECT_NE(whole.error().message().find("chunk " + std::to_string(bad) + " "), std::string::npos)
        << whole.error().message();
    EXPECT_NE(whole.error().message().find("/f"), std::string::npos) << "the error names the page";
    // Even a one-byte read of another byte of that chunk.
    uint64_t other = at == chunk_begin ? chunk_begin + 1 : chunk_begin;
    EXPECT_FALSE(ReadRange(fd, hl, other, 1));
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
      auto got = ReadRange(fd, hl, 0, data.size());
      ASSERT_FALSE(got);
      EXPECT_EQ(got.error().code(), Code::kCorruption) << got.error().ToString();
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
  auto got = ReadRange(fd, static_cast<uint32_t>(header.size()), 0, data.size());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), Code::kCorruption);
  EXPECT_NE(got.error().message().find("shorter"), std::string::npos) << got.error().message();
  ASSERT_EQ(::ftruncate(fd, 20), 0);
  EXPECT_EQ(ReadRange(fd, 0, 0, 1).error().code(), Code::kCorruption);
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

}  // namespace
}  // namespace shoal::page_format
