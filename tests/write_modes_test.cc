// Write modes (mount write_mode: through | cache-through) end to end, against
// real workers and a real under-store, file:// and s3:// (s3rver): the bytes
// in the store are the bytes written, another client sees the new version at
// once, a cache-through write leaves its pages cached under the new version
// (the first read costs the store nothing) while a through write does not,
// a worker that is down or refuses the pushed pages never fails the write,
// a worker refuses a pushed page whose claims are wrong, and pages pushed
// after Close (FillCacheAfterClose, the S3 endpoint's writers) are cached.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "client/client_internal.h"
#include "tests/harness/file_io.h"
#include "tests/harness/raw_http.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kPage = 256 * 1024;           // ShoalCluster's page size
constexpr uint64_t kBig = 12 * 1024 * 1024 + 3;  // > 2 multipart parts of 5 MiB, 3 shards of 4 MiB

std::string ReadVia(Client& c, const std::string& path) { return ReadFileVia(c, path); }
Result<FileStatus> WriteVia(Client& c, const std::string& path, const std::string& data, size_t chunk = 700 * 1024) {
  return WriteFileVia(c, path, data, chunk);
}
std::string ReadStore(UnderStore& s, const std::string& key) { return ReadStoreObject(s, key); }

class WriteModesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto mount = [&](std::string path, std::string sub, WriteMode mode) {
      MountConfig m;
      m.path = std::move(path);
      m.write_mode = mode;
      m.ttl = 1h;  // nothing expires during a test
      if (GetParam() == "s3") {
        m.ufs = "s3://modes/" + sub + "/";
        m.options = s3_->MountOptions();
        m.options["multipart_threshold"] = "5MiB";
        m.options["multipart_part_size"] = "5MiB";
      } else {
        fs::create_directories(dir_ + "/" + sub);
        m.ufs = "file://" + dir_ + "/" + sub + "/";
      }
      return m;
    };
    if (GetParam() == "s3") {
      auto s3 = S3rverProcess::Start();
      ASSERT_TRUE(s3) << s3.error().ToString();
      s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
      ASSERT_TRUE(s3_->CreateBucket("modes").ok());
    } else {
      dir_ = MakeTempDir("modes");
      ASSERT_FALSE(dir_.empty());
    }
    ShoalCluster::Options o;
    o.workers = 3;
    o.mounts = {mount("/th", "th", WriteMode::kThrough), mount("/ct", "ct", WriteMode::kCacheThrough)};
    // A path rule overrides its mount's write_mode below it.
    PathRule through_rule = EmptyRule("/ct/scratch");
    through_rule.write_mode = WriteMode::kThrough;
    o.rules = {through_rule};
    for (const auto& m : o.mounts) {
      auto s = OpenUnderStore(m);
      ASSERT_TRUE(s) << s.error().ToString();
      stores_[m.path] = *s;
    }
    Status started = StartWithTwoClients(o, &cluster_, &writer_, &reader_);
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  void TearDown() override {
    writer_.reset();
    reader_.reset();
    cluster_.reset();
    stores_.clear();
    s3_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  double Metric(const std::string& name) {
    auto v = cluster_->MetricSum(name);
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  }

  std::unique_ptr<S3rverProcess> s3_;
  std::string dir_;
  std::map<std::string, std::shared_ptr<UnderStore>> stores_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> writer_;
  std::unique_ptr<Client> reader_;
};

TEST_P(WriteModesTest, EachModeStoresTheBytesAndAnotherClientSeesTheVersionAtOnce) {
  for (const std::string mount : {"/th", "/ct"}) {
    for (uint64_t size : {uint64_t{0}, uint64_t{1}, kPage - 1, kPage, kPage + 1, kBig}) {
      SCOPED_TRACE(mount + " size " + std::to_string(size));
      const std::string key = "sizes/f" + std::to_string(size);
      const std::string data = RandomBytes(size, size + 7);
      // Seen (and cached) by the reader before the write: the write must replace it everywhere.
      ASSERT_TRUE(WriteVia(*writer_, mount + "/" + key, "old").has_value());
      ASSERT_EQ(ReadVia(*reader_, mount + "/" + key), "old");
      auto closed = WriteVia(*writer_, mount + "/" + key, data);
      ASSERT_TRUE(closed) << closed.error().ToString();
      EXPECT_EQ(closed->size, size);
      EXPECT_TRUE(ReadStore(*stores_[mount], key) == data) << "the under-store holds other bytes";
      auto st = reader_->Stat(mount + "/" + key);
      ASSERT_TRUE(st) << st.error().ToString();
      EXPECT_EQ(st->version, closed->version);
      EXPECT_EQ(st->size, size);
      EXPECT_TRUE(ReadVia(*reader_, mount + "/" + key) == data) << "another client read other bytes";
    }
  }
  EXPECT_EQ(writer_->stats().cache_push_failures, 0u);
}

TEST_P(WriteModesTest, CacheThroughReadAfterCloseCostsTheStoreNothingThroughCostsTheFile) {
  const std::string data = RandomBytes(kBig, 42);
  for (const std::string mount : {"/th", "/ct"}) {
    SCOPED_TRACE(mount);
    auto closed = WriteVia(*writer_, mount + "/ckpt/shard-0.pt", data);
    ASSERT_TRUE(closed) << closed.error().ToString();
    const double ufs_before = Metric("shoal_ufs_read_bytes_total");
    EXPECT_TRUE(ReadVia(*reader_, mount + "/ckpt/shard-0.pt") == data);
    const double ufs_read = Metric("shoal_ufs_read_bytes_total") - ufs_before;
    if (mount == "/ct") {
      EXPECT_EQ(ufs_read, 0) << "the read after a cache-through write went to the under-store";
    } else {
      EXPECT_GE(ufs_read, static_cast<double>(kBig)) << "a through write must not cache its pages";
    }
  }
  EXPECT_EQ(writer_->stats().cache_pushed_bytes, kBig);
  EXPECT_EQ(writer_->stats().cache_push_failures, 0u);
  EXPECT_GE(Metric("shoal_cache_pushed_bytes_total"), static_cast<double>(kBig));
}

// FillCacheAfterClose (the S3 endpoint's writers): Close returns once the
// file is in the store, the pages follow from the background thread (on
// file:// read back from the file written, on s3:// from the spill), and
// then a read costs the store nothing and gives the bytes written.
TEST_P(WriteModesTest, CacheThroughFilledAfterCloseCachesTheBytesWritten) {
  const std::string data = RandomBytes(kBig, 43);
  auto w = writer_->Create("/ct/after/shard.pt");
  ASSERT_TRUE(w) << w.error().ToString();
  FillCacheAfterClose(**w);
  for (size_t off = 0; off < data.size(); off += 700 * 1024) {
    const size_t n = std::min<size_t>(700 * 1024, data.size() - off);
    ASSERT_TRUE((*w)->Write(std::span<const char>(data.data() + off, n)).ok());
  }
  auto closed = (*w)->Close();
  ASSERT_TRUE(closed) << closed.error().ToString();
  EXPECT_EQ(ReadStore(*stores_["/ct"], "after/shard.pt"), data);
  ASSERT_TRUE(WaitFor([&] { return writer_->stats().cache_pushed_bytes >= kBig; }, 30s))
      << "the pages were not pushed after Close: " << writer_->stats().cache_pushed_bytes << " bytes";
  EXPECT_EQ(writer_->stats().cache_push_failures, 0u);
  const double ufs_before = Metric("shoal_ufs_read_bytes_total");
  EXPECT_TRUE(ReadVia(*reader_, "/ct/after/shard.pt") == data);
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total") - ufs_before, 0) << "the read after the fill went to the store";
}

// WriteFromFile (the S3 endpoint's Complete) copies the file into the spill
// in the kernel; where the kernel cannot copy between the two file systems
// (the spill on tmpfs, the file on the disk: EXDEV) the bytes go through the
// process, and every page still reaches the cache.
TEST_P(WriteModesTest, WriteFromFileFillsTheCacheWhenTheSpillIsOnAnotherFileSystem) {
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm (tmpfs) for the spill";
  const std::string data = RandomBytes(kBig, 47);
  const std::string dir = MakeTempDir("wm-from-file");  // on the disk, not tmpfs
  ASSERT_FALSE(dir.empty());
  struct Cleanup {
    std::string dir;
    ~Cleanup() { fs::remove_all(dir); }
  } cleanup{dir};
  const std::string src = dir + "/from-file.bin";
  ASSERT_TRUE(WriteFile(src, data).ok());
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/dev/shm", 1);  // read when the writer opens its spill
  auto w = writer_->Create("/ct/from-file/shard.pt");
  old ? ::setenv("TMPDIR", saved.c_str(), 1) : ::unsetenv("TMPDIR");
  ASSERT_TRUE(w) << w.error().ToString();
  const int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Status st = WriteFromFile(**w, fd, 0, data.size());
  ::close(fd);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto closed = (*w)->Close();
  ASSERT_TRUE(closed) << closed.error().ToString();
  EXPECT_EQ(ReadStore(*stores_["/ct"], "from-file/shard.pt"), data);
  EXPECT_GE(writer_->stats().cache_pushed_bytes, kBig) << "the spill stopped: pages not pushed";
  EXPECT_EQ(writer_->stats().cache_push_failures, 0u);
  const double ufs_before = Metric("shoal_ufs_read_bytes_total");
  EXPECT_TRUE(ReadVia(*reader_, "/ct/from-file/shard.pt") == data);
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total") - ufs_before, 0) << "the read after the write went to the store";
}

TEST_P(WriteModesTest, APathRuleWriteModeOverridesTheMounts) {
  const std::string data = RandomBytes(kPage * 3, 9);
  auto closed = WriteVia(*writer_, "/ct/scratch/tmp.bin", data);
  ASSERT_TRUE(closed) << closed.error().ToString();
  EXPECT_TRUE(ReadStore(*stores_["/ct"], "scratch/tmp.bin") == data);
  EXPECT_EQ(writer_->stats().cache_pushed_bytes, 0u) << "the rule says through: no page may be pushed";
  const double ufs_before = Metric("shoal_ufs_read_bytes_total");
  EXPECT_TRUE(ReadVia(*reader_, "/ct/scratch/tmp.bin") == data);
  EXPECT_GE(Metric("shoal_ufs_read_bytes_total") - ufs_before, static_cast<double>(data.size()));
  // Beside the rule's prefix the mount's cache-through still holds.
  ASSERT_TRUE(WriteVia(*writer_, "/ct/scratchpad.bin", data));
  EXPECT_EQ(writer_->stats().cache_pushed_bytes, data.size());
}

TEST_P(WriteModesTest, AWorkerDownDuringThePushDoesNotFailTheWrite) {
  cluster_->Kill(1);
  // Enough files that some pages are owned by the dead worker.
  for (int i = 0; i < 6; ++i) {
    const std::string path = "/ct/down/f" + std::to_string(i);
    const std::string data = RandomBytes(kBig, 100 + i);
    auto closed = WriteVia(*writer_, path, data);
    ASSERT_TRUE(closed) << closed.error().ToString();
    EXPECT_TRUE(ReadStore(*stores_["/ct"], "down/f" + std::to_string(i)) == data);
    EXPECT_TRUE(ReadVia(*reader_, path) == data);
  }
  EXPECT_GT(writer_->stats().cache_push_failures, 0u)
      << "no page was owned by the dead worker: the test proves nothing";
  EXPECT_GT(writer_->stats().cache_pushed_bytes, 0u) << "the live workers should have taken theirs";
}

TEST_P(WriteModesTest, WorkersThatRefuseEveryPushDoNotFailTheWrite) {
  // A client whose page size differs from the workers': every push is refused.
  auto cfg = ParseConfig(cluster_->ClientYaml(), "test");
  ASSERT_TRUE(cfg);
  cfg->worker.page_size = kPage / 2;
  auto odd = Client::FromYaml(ToYaml(*cfg), "odd");
  ASSERT_TRUE(odd) << odd.error().ToString();
  // Its pages are half the workers': each is unaligned or of the wrong length for them.
  const std::string data = RandomBytes(3 * kPage + kPage / 2 + 5, 9);
  auto closed = WriteVia(**odd, "/ct/refused", data);
  ASSERT_TRUE(closed) << closed.error().ToString();
  EXPECT_TRUE(ReadStore(*stores_["/ct"], "refused") == data);
  EXPECT_EQ((*odd)->stats().cache_pushed_bytes, 0u);
  EXPECT_GT((*odd)->stats().cache_push_failures, 0u);
  EXPECT_GT(Metric("shoal_cache_push_refused_total"), 0);
  EXPECT_TRUE(ReadVia(*reader_, "/ct/refused") == data);
}

TEST_P(WriteModesTest, APushedPageWithWrongClaimsIsRefusedAndNothingIsPoisoned) {
  const std::string data = RandomBytes(kPage + 10, 5);
  auto closed = WriteVia(*writer_, "/th/pushed", data);  // through: nothing cached yet
  ASSERT_TRUE(closed) << closed.error().ToString();
  const std::string version = closed->version;
  const std::string size = std::to_string(data.size());
  struct Case {
    std::string what, version, size, offset;
    size_t body;
    int status;
  };
  const std::vector<Case> cases = {
      {"a made-up version", "bogus-1", size, "0", kPage, 412},
      {"a wrong size", version, std::to_string(data.size() + 1), "0", kPage, 400},
      {"a body longer than the page", version, size, "0", kPage + 1, 400},
      {"a short last page", version, size, std::to_string(kPage), 9, 400},
      {"an unaligned offset", version, size, "4096", kPage, 400},
      {"an offset past the end", version, size, std::to_string(2 * kPage), 10, 400},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    for (const auto& address : cluster_->addresses()) {
      auto conn = RawConnection::Connect(address);
      ASSERT_TRUE(conn);
      const std::string body(c.body, 'X');  // bytes that must never be served
      std::string req = "POST /v1/page?path=/th/pushed&version=" + PercentEncode(c.version, false) + "&size=" + c.size +
                        "&offset=" + c.offset +
                        " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      ASSERT_TRUE(conn->Send(req));
      auto r = conn->ReadResponse(10s);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, c.status) << r->body;
      EXPECT_NE(r->body.find("\"message\""), std::string::npos) << r->body;
    }
  }
  EXPECT_EQ(Metric("shoal_cache_pushed_bytes_total"), 0);
  EXPECT_TRUE(ReadVia(*reader_, "/th/pushed") == data);
}

INSTANTIATE_TEST_SUITE_P(Stores, WriteModesTest, ::testing::Values("file", "s3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace shoal::testing
