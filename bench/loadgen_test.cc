// Smoke test of the load generator on a few local files with the POSIX reader:
// the bytes add up and every read is checked (a corrupted file is caught).
#include "bench/loadgen.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace shoal::bench {
namespace {

class LoadgenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/loadgen_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    GenerateOptions g{root_, "small", 12, 1000, 150 * 1024, 7};
    auto m = Generate(g);
    ASSERT_TRUE(m.has_value()) << m.error().ToString();
    manifest_ = *m;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string root_;
  Manifest manifest_;
};

TEST_F(LoadgenTest, ContentIsRandomAndCheckableAtAnyOffset) {
  std::vector<char> a(100), b(37);
  FillContent(42, 0, a);
  FillContent(42, 13, b);
  EXPECT_EQ(std::string(a.data() + 13, 37), std::string(b.data(), 37));
  EXPECT_TRUE(CheckContent(42, 13, b));
  b[5] ^= 1;
  EXPECT_FALSE(CheckContent(42, 13, b));
  EXPECT_NE(std::count(a.begin(), a.end(), 0), 100);  // never zeros
}

TEST_F(LoadgenTest, ManifestRoundTrips) {
  std::string path = root_ + "/m.manifest";
  ASSERT_TRUE(manifest_.Save(path).ok());
  auto m = Manifest::Load(path);
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  ASSERT_EQ(m->files.size(), manifest_.files.size());
  EXPECT_EQ(m->seed, 7u);
  EXPECT_EQ(m->files[3].name, manifest_.files[3].name);
  EXPECT_EQ(m->files[3].xxh3, manifest_.files[3].xxh3);
}

TEST_F(LoadgenTest, WholeFilesOneEpochPosix) {
  LoadOptions o;
  o.readers = 3;
  auto r = RunLoad(manifest_, PosixReaders(root_), o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 1u);
  const auto& e = (*r)[0];
  EXPECT_EQ(e.errors, 0u) << e.first_error;
  EXPECT_EQ(e.ops, 12u);
  EXPECT_EQ(e.bytes, manifest_.total_bytes());
  EXPECT_EQ(e.verified_bytes, manifest_.total_bytes());
  EXPECT_GT(e.p99_ms, 0);
}

TEST_F(LoadgenTest, RandomRangesAreChecked) {
  LoadOptions o;
  o.workload = Workload::kRanges;
  o.ranges_per_epoch = 50;
  o.range_min = 100;
  o.range_max = 64 * 1024;
  o.readers = 2;
  o.epochs = 2;
  auto r = RunLoad(manifest_, PosixReaders(root_), o);
  ASSERT_TRUE(r.has_value());
  for (const auto& e : *r) {
    EXPECT_EQ(e.errors, 0u) << e.first_error;
    EXPECT_EQ(e.ops, 50u);
    EXPECT_EQ(e.verified_bytes, e.bytes);
  }
}

TEST_F(LoadgenTest, CorruptedFileIsAnError) {
  std::string path = root_ + "/" + manifest_.files[4].name;
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "\0\0\0\0", 4, 500), 4);
  ::close(fd);
  LoadOptions o;
  o.readers = 2;
  auto r = RunLoad(manifest_, PosixReaders(root_), o);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)[0].errors, 1u);
  EXPECT_NE((*r)[0].first_error.find(manifest_.files[4].name), std::string::npos) << (*r)[0].first_error;
}

TEST_F(LoadgenTest, MissingFileIsAnError) {
  std::filesystem::remove(root_ + "/" + manifest_.files[0].name);
  auto r = RunLoad(manifest_, PosixReaders(root_), LoadOptions{});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)[0].errors, 1u);
}

TEST_F(LoadgenTest, AcceleratorModelReportsUtilisation) {
  LoadOptions o;
  o.readers = 2;
  o.batch = 4;
  o.compute = std::chrono::milliseconds(2);
  auto r = RunLoad(manifest_, PosixReaders(root_), o);
  ASSERT_TRUE(r.has_value());
  const auto& e = (*r)[0];
  EXPECT_EQ(e.batches, 3u);  // 12 samples / 4
  EXPECT_GT(e.au, 0.0);
  EXPECT_LE(e.au, 1.0001);
}

}  // namespace
}  // namespace shoal::bench
