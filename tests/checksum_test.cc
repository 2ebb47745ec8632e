// End-to-end: bytes of cached pages that change on disk while the worker runs
// are never served. Single bytes are flipped in the pages of a running worker
// (page files <cache dir>/<hh>/<32 hex>.pg, or slots of the block files
// <cache dir>/blocks/<slot size>.blk with worker.page_store: blocks; both
// layouts run every test), then the file is read through the
// client over HTTP and short-circuit: every byte must match the source, the
// worker must count and drop the bad pages, fetch them again, and serve the
// next read from the cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "net/http_server.h"
#include "s3/s3_endpoint.h"
#include "tests/cli_helpers.h"
#include "tests/harness/raw_http.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kTestPage = 256 * 1024;  // ShoalCluster's default page size

// A page on disk: its file, where its header starts, the header's length and the page's bytes in all.
struct PageOnDisk {
  fs::path file;
  uint64_t at = 0;
  uint32_t header_len = 0;
  uint64_t size = 0;
  bool operator<(const PageOnDisk& o) const { return std::tie(file, at) < std::tie(o.file, o.at); }
};

// The header length and data length: 4 bytes each at offsets 8 and 12 (docs/page-format.md).
std::optional<std::pair<uint32_t, uint32_t>> ReadLengths(int fd, uint64_t at) {
  char h[16];
  if (::pread(fd, h, sizeof h, static_cast<off_t>(at)) != sizeof h || std::memcmp(h, "SHOALPG2", 8) != 0) {
    return std::nullopt;
  }
  uint32_t header_len, data_len;
  std::memcpy(&header_len, h + 8, 4);
  std::memcpy(&data_len, h + 12, 4);
  return std::pair{header_len, data_len};
}

std::vector<PageOnDisk> PagesOnDisk(const std::string& cache_dir) {
  std::vector<PageOnDisk> out;
  for (auto& e : fs::recursive_directory_iterator(cache_dir)) {
    const auto ext = e.path().extension();
    if (ext == ".pg" && e.path().parent_path().filename() != "tmp") {
      int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      if (auto l = ReadLengths(fd, 0)) out.push_back({e.path(), 0, l->first, fs::file_size(e.path())});
      ::close(fd);
    } else if (ext == ".blk") {
      // Slots of the size the name gives; those whose header starts with the magic hold a page.
      const uint64_t slot = std::stoull(e.path().stem().string());
      int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      for (uint64_t at = 0; at + slot <= fs::file_size(e.path()); at += slot) {
        if (auto l = ReadLengths(fd, at)) out.push_back({e.path(), at, l->first, uint64_t{l->first} + l->second});
      }
      ::close(fd);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ClusterChecksumTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ufs_ = MakeTempDir("ufs");
    ASSERT_FALSE(ufs_.empty());
    // 13 pages, the last one short.
    data_ = RandomBytes(12 * kTestPage + 7777, 21);
    ASSERT_TRUE(WriteFile(ufs_ + "/f.bin", data_).ok());
  }
  void TearDown() override {
    client_.reset();
    cluster_.reset();
    std::error_code ec;
    fs::remove_all(ufs_, ec);
  }

  // `verify`: worker.verify ("once", the default, or "always").
  void Start(bool short_circuit, const std::string& verify = "once") {
    ShoalCluster::Options o;
    o.workers = 1;
    o.mounts = {FileMount(ufs_)};
    o.client.short_circuit = short_circuit;
    o.worker = [layout = GetParam(), verify](WorkerConfig& w) {
      w.page_store = layout;
      w.verify = verify;
      w.scrub_rate = 0;  // no background pass: the tests ask for theirs
    };
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    auto cl = cluster_->NewClient();
    ASSERT_TRUE(cl) << cl.error().ToString();
    client_ = std::move(*cl);
  }

  double Metric(const std::string& name) {
    auto v = cluster_->MetricSum(name);
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  }

  // The whole file through the client; the count of bytes that differ from the source.
  size_t ReadAndCountWrongBytes() {
    auto f = client_->OpenFile("/data/f.bin");
    EXPECT_TRUE(f) << f.error().ToString();
    if (!f) return data_.size();
    std::string got(data_.size(), '\0');
    auto n = (*f)->Pread(0, std::span<char>(got.data(), got.size()));
    EXPECT_TRUE(n) << n.error().ToString();
    if (!n || *n != data_.size()) return data_.size();
    size_t wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != data_[i];
    return wrong;
  }

  // Waits (up to 180 s) until the worker holds every page of the file: the
  // page a stat reads is written at idle priority (SCHED_IDLE) after the
  // reader is answered, and a machine busy with other tests (a full ctest
  // -j2) can starve it for tens of seconds: 30 s failed once there.
  bool AllPagesCached() {
    const double pages = static_cast<double>((data_.size() + kTestPage - 1) / kTestPage);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    while (Metric("shoal_cache_pages") < pages) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  // Flips `data_flips` single bytes at random in the data of the worker's
  // pages, and one byte of one more page's header; returns how many pages changed.
  size_t FlipBytes(int data_flips, uint64_t seed) {
    std::vector<PageOnDisk> files = PagesOnDisk(cluster_->cache_dir(0));
    EXPECT_GE(files.size(), 4u);
    if (files.size() < 4) return 0;
    std::mt19937_64 rng(seed);
    std::set<size_t> changed;
    std::set<std::pair<size_t, uint64_t>> done;  // flipping a byte twice would undo it
    auto flip = [&](size_t file, bool in_header) {
      const auto& page = files[file];
      int fd = ::open(page.file.c_str(), O_RDWR | O_CLOEXEC);
      ASSERT_GE(fd, 0) << page.file;
      const uint32_t header_len = page.header_len;
      const uint64_t size = page.size;
      ASSERT_GT(size, header_len);
      uint64_t at;
      do {
        at = page.at + (in_header ? rng() % header_len : header_len + rng() % (size - header_len));
      } while (!done.insert({file, at}).second);
      char c;
      ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(at)), 1);
      c = static_cast<char>(c ^ (1 << (rng() % 8)));  // one bit
      ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(at)), 1);
      ::close(fd);
      changed.insert(file);
    };
    // Data flips in all but the last file; the last gets the header flip.
    for (int i = 0; i < data_flips; ++i) flip(rng() % (files.size() - 1), false);
    flip(files.size() - 1, true);
    return changed.size();
  }

  // The scenario every path shares: warm the cache, flip bytes, read twice;
  // `read` reads the whole file and counts the bytes that differ (default:
  // ReadAndCountWrongBytes).
  void FlipAndReadTwice(std::function<size_t()> read = {}) {
    if (!read) read = [this] { return ReadAndCountWrongBytes(); };
    ASSERT_EQ(read(), 0u);
    ASSERT_TRUE(AllPagesCached());
    const size_t changed = FlipBytes(10, 77);
    ASSERT_GE(changed, 2u);
    const double ufs0 = Metric("shoal_ufs_read_bytes_total");
    const double corrupt0 = Metric("shoal_cache_corrupt_pages_total");

    EXPECT_EQ(read(), 0u) << "bytes of corrupted pages were served";
    EXPECT_EQ(Metric("shoal_cache_corrupt_pages_total") - corrupt0, static_cast<double>(changed))
        << "every changed page is caught and dropped, once";
    EXPECT_GT(Metric("shoal_ufs_read_bytes_total"), ufs0) << "dropped pages are fetched again";
    EXPECT_EQ(client_->stats().fallback_read_bytes, 0u) << "the worker itself must serve the right bytes";

    // Fetched again and cached again: the next read is all cache.
    ASSERT_TRUE(AllPagesCached());
    const double ufs1 = Metric("shoal_ufs_read_bytes_total");
    const double hit1 = Metric("shoal_cache_hit_bytes_total");
    const double corrupt1 = Metric("shoal_cache_corrupt_pages_total");
    EXPECT_EQ(read(), 0u);
    EXPECT_EQ(Metric("shoal_ufs_read_bytes_total"), ufs1) << "the second read went to the under-store";
    EXPECT_EQ(Metric("shoal_cache_corrupt_pages_total"), corrupt1);
    if (!client_->stats().local_read_bytes) {
      EXPECT_GE(Metric("shoal_cache_hit_bytes_total") - hit1, static_cast<double>(data_.size()));
    }
  }

  std::string ufs_, data_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_P(ClusterChecksumTest, FlippedBytesAreNeverServedOverHttp) {
  Start(/*short_circuit=*/false);
  FlipAndReadTwice();
  EXPECT_EQ(client_->stats().local_read_bytes, 0u);
}

// With worker.verify: always the client checks every short-circuit read itself.
TEST_P(ClusterChecksumTest, FlippedBytesAreNeverServedShortCircuit) {
  Start(/*short_circuit=*/true, "always");
  FlipAndReadTwice();
  const auto st = client_->stats();
  EXPECT_GT(st.local_read_bytes, 0u) << "the reads did not go short-circuit";
  EXPECT_GE(st.local_corrupt_reads, 2u) << "the client did not see the bad chunks itself";
  // The second read came from page files again, none of them bad.
  const uint64_t local = st.local_read_bytes, corrupt = st.local_corrupt_reads;
  EXPECT_EQ(ReadAndCountWrongBytes(), 0u);
  EXPECT_GE(client_->stats().local_read_bytes - local, data_.size() - kTestPage);
  EXPECT_EQ(client_->stats().local_corrupt_reads, corrupt);
}

// The S3 endpoint of `shoal s3` sends the page files a worker on this host
// passes over the short circuit with sendfile (client/local_pages.h), each
// batch checked just before it is sent: a flipped byte is never sent, the
// page is replaced, and every GET gets the whole object, right.
TEST_P(ClusterChecksumTest, FlippedBytesAreNeverServedThroughTheS3Endpoint) {
  Start(/*short_circuit=*/true, "always");
  S3Config s3;
  s3.public_buckets = {"data"};
  auto endpoint = s3::S3Endpoint::Create(*client_, s3);
  ASSERT_TRUE(endpoint) << endpoint.error().ToString();
  auto server = net::HttpServer::Bind(s3::S3Endpoint::ServerOptionsFor("127.0.0.1:0"));
  ASSERT_TRUE(server) << server.error().ToString();
  (*server)->Serve({(*endpoint)->Routes()});
  const std::string address = (*server)->address();
  auto get = [&]() -> size_t {
    auto conn = RawConnection::Connect(address);
    EXPECT_TRUE(conn) << "cannot connect to the S3 endpoint at " << address;
    if (!conn || !conn->Send(HttpGet("/data/f.bin"))) return data_.size();
    auto r = conn->ReadResponse(Millis(120'000));
    EXPECT_TRUE(r && r->status == 200) << (r ? r->head : "no answer");
    EXPECT_EQ(r ? r->body.size() : 0, data_.size());
    if (!r || r->status != 200 || r->body.size() != data_.size()) return data_.size();
    size_t wrong = 0;
    for (size_t i = 0; i < data_.size(); ++i) wrong += r->body[i] != data_[i];
    return wrong;
  };
  FlipAndReadTwice(get);
  const auto st = client_->stats();
  EXPECT_GT(st.local_read_bytes, 0u) << "the endpoint did not read through the short circuit";
  EXPECT_GE(st.local_corrupt_reads, 2u) << "the client did not see the bad chunks itself";
  const uint64_t local = st.local_read_bytes;
  EXPECT_EQ(get(), 0u);
  EXPECT_GE(client_->stats().local_read_bytes - local, data_.size() - kTestPage)
      << "the pages did not go from the worker's page files";
}

// A short-circuit read of a page whose last chunk is short reads the page and
// nothing after it: in a block file the bytes after a page are another slot's
// (or not written yet), and reading them would pull them, and the kernel's
// read-ahead after them, into the page cache for nothing.
TEST_P(ClusterChecksumTest, AShortCircuitReadReadsNothingPastThePage) {
  const std::string small = RandomBytes(100 * 1024 + 7777, 22);
  ASSERT_TRUE(WriteFile(ufs_ + "/s.bin", small).ok());
  Start(/*short_circuit=*/true);
  auto f = client_->OpenFile("/data/s.bin");
  ASSERT_TRUE(f) << f.error().ToString();
  std::string got(small.size(), '\0');
  auto n = (*f)->Pread(0, std::span<char>(got));
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_TRUE(*n == small.size() && got == small);
  const auto pages = PagesOnDisk(cluster_->cache_dir(0));
  ASSERT_EQ(pages.size(), 1u);
  ASSERT_EQ(pages[0].size - pages[0].header_len, small.size());
  const auto st = client_->stats();
  EXPECT_EQ(st.local_corrupt_reads, 0u);
  EXPECT_EQ(st.local_file_bytes, pages[0].size) << "the read did not go short-circuit, or read past the page";
}

// Under worker.verify: once (the default) the worker checks a page whole
// before it hands it to a client on this host, so a flipped page is caught
// and replaced there, before the client reads it.
TEST_P(ClusterChecksumTest, FlippedBytesAreCaughtBeforeAShortCircuitHandOff) {
  Start(/*short_circuit=*/true);
  FlipAndReadTwice();
  const auto st = client_->stats();
  EXPECT_GT(st.local_read_bytes, 0u) << "the reads did not go short-circuit";
  EXPECT_EQ(st.local_corrupt_reads, 0u) << "a bad page reached the client";
}

// Issue 33 item 5: a page overwritten in place with its neighbour page's
// file (header and checksums intact, the wrong offset) was served as the
// wrong bytes. Every path and mode reads the right ones, and the worker
// drops the page.
TEST_P(ClusterChecksumTest, APageOverwrittenWithItsNeighbourIsNeverServed) {
  for (const std::string verify : {"once", "always"}) {
    for (const bool short_circuit : {false, true}) {
      SCOPED_TRACE(verify + (short_circuit ? ", short-circuit" : ", HTTP"));
      Start(short_circuit, verify);
      ASSERT_EQ(ReadAndCountWrongBytes(), 0u);
      ASSERT_TRUE(AllPagesCached());
      // The pages by their offset in the file (the header's bytes 16..24).
      std::map<uint64_t, PageOnDisk> by_offset;
      for (const auto& p : PagesOnDisk(cluster_->cache_dir(0))) {
        int fd = ::open(p.file.c_str(), O_RDONLY | O_CLOEXEC);
        uint64_t off = 0;
        ASSERT_EQ(::pread(fd, &off, 8, static_cast<off_t>(p.at + 16)), 8);
        ::close(fd);
        by_offset[off] = p;
      }
      ASSERT_TRUE(by_offset.contains(kTestPage) && by_offset.contains(2 * kTestPage));
      const auto& victim = by_offset[kTestPage];
      const auto& neighbour = by_offset[2 * kTestPage];
      ASSERT_EQ(victim.size, neighbour.size) << "two full pages";
      std::string bytes(neighbour.size, '\0');
      int from = ::open(neighbour.file.c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_EQ(::pread(from, bytes.data(), bytes.size(), static_cast<off_t>(neighbour.at)),
                static_cast<ssize_t>(bytes.size()));
      ::close(from);
      int to = ::open(victim.file.c_str(), O_WRONLY | O_CLOEXEC);
      ASSERT_EQ(::pwrite(to, bytes.data(), bytes.size(), static_cast<off_t>(victim.at)),
                static_cast<ssize_t>(bytes.size()));
      ::close(to);
      const double corrupt0 = Metric("shoal_cache_corrupt_pages_total");
      EXPECT_EQ(ReadAndCountWrongBytes(), 0u) << "the neighbour's bytes were served";
      EXPECT_EQ(client_->stats().fallback_read_bytes, 0u) << "the worker itself must serve the right bytes";
      if (GetParam() == "files") {
        EXPECT_EQ(Metric("shoal_cache_corrupt_pages_total") - corrupt0, 1) << "the swapped page is counted";
      }
      EXPECT_TRUE(cluster_->running(0));
      EXPECT_EQ(ReadAndCountWrongBytes(), 0u);
      client_.reset();
      cluster_.reset();
    }
  }
}

// Reads the whole file (right bytes) until the worker sends every page of a
// read without checking it (trusted: checked whole before, its file
// unchanged and settled since); false after 30 s.
bool ReadUntilTrusted(const std::function<size_t()>& read, const std::function<double()>& trusted, double pages) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const double before = trusted();
    if (read() != 0) return false;
    if (trusted() - before >= pages) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling: a page settles 1 s after its write
  }
  return false;
}

// Issue 33 item 4: once a page is trusted, a byte flipped in it (which moves
// its file's ctime) is caught at the next read, on both paths.
TEST_P(ClusterChecksumTest, AFlipAfterAVerifiedReadIsCaughtOnTheNextRead) {
  for (const bool short_circuit : {false, true}) {
    SCOPED_TRACE(short_circuit ? "short-circuit" : "HTTP");
    Start(short_circuit);
    ASSERT_EQ(ReadAndCountWrongBytes(), 0u);
    ASSERT_TRUE(AllPagesCached());
    const double pages = static_cast<double>((data_.size() + kTestPage - 1) / kTestPage);
    ASSERT_TRUE(ReadUntilTrusted([this] { return ReadAndCountWrongBytes(); },
                                 [this] { return Metric("shoal_cache_trusted_reads_total"); }, pages))
        << "the pages never became trusted";
    const size_t changed = FlipBytes(10, 78);
    ASSERT_GE(changed, 2u);
    const double corrupt0 = Metric("shoal_cache_corrupt_pages_total");
    EXPECT_EQ(ReadAndCountWrongBytes(), 0u) << "a trusted page's flipped bytes were served";
    EXPECT_EQ(Metric("shoal_cache_corrupt_pages_total") - corrupt0, static_cast<double>(changed));
    EXPECT_EQ(client_->stats().local_corrupt_reads, 0u);
    client_.reset();
    cluster_.reset();
  }
}

// What ctime cannot see: a byte flipped through a shared mapping whose page
// is already writable moves no timestamp, so a trusting read would serve it;
// `shoal scrub` finds it, drops the page, and the next read is right.
TEST_P(ClusterChecksumTest, AFlipThatKeepsTheCtimeIsFoundByShoalScrub) {
  Start(/*short_circuit=*/false);
  ASSERT_EQ(ReadAndCountWrongBytes(), 0u);
  ASSERT_TRUE(AllPagesCached());
  const auto files = PagesOnDisk(cluster_->cache_dir(0));
  ASSERT_FALSE(files.empty());
  const auto& page = files[0];
  int fd = ::open(page.file.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const uint64_t at = page.at + page.header_len + 1000;  // a data byte
  const uint64_t map_at = at / 4096 * 4096;
  void* m = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(map_at));
  ASSERT_NE(m, MAP_FAILED);
  char* byte = static_cast<char*>(m) + (at - map_at);
  *byte = *byte;  // the first write makes the page writable (and moves ctime, now)
  const double pages = static_cast<double>((data_.size() + kTestPage - 1) / kTestPage);
  ASSERT_TRUE(ReadUntilTrusted([this] { return ReadAndCountWrongBytes(); },
                               [this] { return Metric("shoal_cache_trusted_reads_total"); }, pages));
  struct stat before, after;
  ASSERT_EQ(::fstat(fd, &before), 0);
  *byte = static_cast<char>(*byte ^ 0x10);  // no fault now: no timestamp moves
  ASSERT_EQ(::fstat(fd, &after), 0);
  ::munmap(m, 4096);
  ::close(fd);
  // Where the file system moves the ctime anyway (overlayfs here), the flip
  // is still there, unread: the scrub must find it all the same.
  const bool ctime_kept =
      before.st_ctim.tv_sec == after.st_ctim.tv_sec && before.st_ctim.tv_nsec == after.st_ctim.tv_nsec;
  RecordProperty("ctime_kept", ctime_kept ? "yes" : "no");
  const std::string config = cluster_->client_config_path() + ".scrub.yaml";
  ASSERT_TRUE(WriteFile(config, cluster_->ClientYaml()).ok());
  const double corrupt0 = Metric("shoal_cache_corrupt_pages_total{found_by=\"scrub\"}");
  auto r = Shoal({"scrub", "--now", "--config", config});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::to_string(static_cast<int>(pages)) + " pages"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 corrupt"), std::string::npos) << r.out;
  EXPECT_EQ(Metric("shoal_cache_corrupt_pages_total{found_by=\"scrub\"}") - corrupt0, 1);
  EXPECT_GE(Metric("shoal_cache_scrubbed_bytes_total"), static_cast<double>(data_.size()));
  EXPECT_EQ(ReadAndCountWrongBytes(), 0u) << "the page the scrub dropped was not fetched again";
  auto help = Shoal({"scrub", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--now"), std::string::npos) << help.out;
}

INSTANTIATE_TEST_SUITE_P(PageStore, ClusterChecksumTest, ::testing::Values("files", "blocks"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace shoal::testing
