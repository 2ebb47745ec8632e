#include "ufs/posix/posix_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <ctime>

#include <filesystem>

#include "common/config.h"
#include "ufs/conformance_test.h"

namespace shoal {
namespace {

std::shared_ptr<UnderStore> MakeFreshPosix() { return FreshLocalStore("posix"); }

INSTANTIATE_TEST_SUITE_P(Posix, UnderStoreConformance,
                         ::testing::Values(StoreFactory{"posix", MakeFreshPosix, /*has_rename=*/true,
                                                        /*renames_dirs=*/true}),
                         [](const auto& info) { return info.param.name; });

// The version is mtime+size and the kernel stamps files from a coarse clock
// (one tick is milliseconds): a file replaced by one of the same size within
// a tick would keep its version, and cached pages of the replaced bytes would
// be served for the new ones. Each round below stamps the old file with the
// coarse clock's current tick, which is what the kernel would give the new
// file too, and replaces it at once.
TEST(PosixStore, EveryWriteOfTheSameSizeGetsANewVersion) {
  const std::string dir = FreshTempDir("posix");
  ASSERT_FALSE(dir.empty());
  MountConfig m;
  m.path = "/t";
  m.ufs = std::string("file://") + dir;
  auto store = OpenUnderStore(m);
  ASSERT_TRUE(store) << store.error().ToString();
  const std::string path = std::string(dir) + "/same";
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE((*store)->Write("same", std::string(4096, static_cast<char>('a' + i))).ok());
    struct timespec times[2];
    ::clock_gettime(CLOCK_REALTIME_COARSE, &times[1]);
    times[0] = times[1];
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    auto before = (*store)->Stat("same");
    ASSERT_TRUE((*store)->Write("same", std::string(4096, static_cast<char>('A' + i))).ok());
    auto after = (*store)->Stat("same");
    ASSERT_TRUE(before && after);
    EXPECT_NE(before->Version(), after->Version()) << "round " << i;
  }
  std::filesystem::remove_all(dir);
}

TEST(PosixStore, MissingRootIsClearError) {
  MountConfig m;
  m.path = "/t";
  m.ufs = "file:///no/such/dir/anywhere";
  auto s = OpenUnderStore(m);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), Code::kNotFound);
  EXPECT_NE(s.error().message().find("/no/such/dir/anywhere"), std::string::npos);
}

TEST(ReadOnlyMount, EveryWritePathIsRefusedAndReadsWork) {
  const std::string dir = FreshTempDir("ro");
  ASSERT_FALSE(dir.empty());
  MountConfig m;
  m.path = "/data";
  m.ufs = std::string("file://") + dir;
  auto rw = OpenUnderStore(m);
  ASSERT_TRUE(rw) << rw.error().ToString();
  ASSERT_TRUE((*rw)->Write("a", std::string_view("bytes")).ok());
  m.read_only = true;
  auto ro = OpenUnderStore(m);
  ASSERT_TRUE(ro) << ro.error().ToString();

  char buf[5];
  auto n = (*ro)->Read("a", 0, std::span<char>(buf, 5));
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(std::string(buf, 5), "bytes");
  EXPECT_TRUE((*ro)->Stat("a"));

  auto w = (*ro)->OpenWriter("b");
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code(), Code::kReadOnly);
  EXPECT_NE(w.error().message().find("/data/b"), std::string::npos) << w.error().message();
  EXPECT_NE(w.error().message().find("read-only"), std::string::npos) << w.error().message();
  EXPECT_EQ((*ro)->Write("b", std::string_view("x")).code(), Code::kReadOnly);
  EXPECT_EQ((*ro)->Delete("a").code(), Code::kReadOnly);
  EXPECT_EQ((*ro)->Rename("a", "c").code(), Code::kReadOnly);
  EXPECT_EQ((*ro)->Mkdir("d").code(), Code::kReadOnly);
  EXPECT_EQ((*ro)->Rmdir("d").code(), Code::kReadOnly);
  // Nothing was changed underneath.
  EXPECT_TRUE((*rw)->Stat("a"));
  EXPECT_FALSE((*rw)->Stat("b"));
  EXPECT_FALSE((*rw)->Stat("c"));
  EXPECT_FALSE((*rw)->Stat("d"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
