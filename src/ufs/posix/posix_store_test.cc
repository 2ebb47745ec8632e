#include "ufs/posix/posix_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <ctime>

#include <filesystem>
#include <set>
#include <thread>

#include "common/config.h"
#include "ufs/conformance_test.h"

namespace shoal {
namespace {

std::shared_ptr<UnderStore> MakeFreshPosix() { return FreshLocalStore("posix"); }

// A mount at `path` of the directory `dir`.
MountConfig FileMount(const std::string& dir, const std::string& path = "/t") {
  MountConfig m;
  m.path = path;
  m.ufs = "file://" + dir;
  return m;
}

INSTANTIATE_TEST_SUITE_P(Posix, UnderStoreConformance,
                         ::testing::Values(StoreFactory{"posix", MakeFreshPosix, /*has_rename=*/true,
                                                        /*renames_dirs=*/true, /*keeps_metadata=*/true,
                                                        /*keeps_modes=*/true, 1, true, false,
                                                        /*keeps_owners=*/true}),
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
  auto store = OpenUnderStore(FileMount(dir));
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

// ETags on file:// (issue 32): a file written through the store has the MD5
// of its bytes (or the ETag its writer gave); files put there otherwise never
// share one, even with the same size and mtime to the nanosecond; and a file
// rewritten in place with its size and mtime put back gets a new one.
TEST(PosixStore, EtagsAreTheMd5OrUniqueAndChangeWithTheBytes) {
  const std::string dir = FreshTempDir("posix-etag");
  ASSERT_FALSE(dir.empty());
  auto store = OpenUnderStore(FileMount(dir));
  ASSERT_TRUE(store) << store.error().ToString();
  ASSERT_TRUE((*store)->Write("written", std::string("hello")).ok());
  auto st = (*store)->Stat("written");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->etag, "5d41402abc4b2a76b9719d911017c592");  // md5("hello")
  WriteOptions given;
  given.etag = "0123456789abcdef0123456789abcdef-2";
  auto w = (*store)->OpenWriter("multipart", given);
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->Append(std::string("parts")).ok());
  ASSERT_TRUE((*w)->Close().ok());
  st = (*store)->Stat("multipart");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->etag, given.etag);

  struct timespec times[2] = {{1'600'000'000, 123'456'789}, {1'600'000'000, 123'456'789}};
  std::set<std::string> etags;
  for (int i = 0; i < 8; ++i) {
    const std::string path = dir + "/twin" + std::to_string(i);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, std::string(100, static_cast<char>('a' + i)).data(), 100), 100);
    ASSERT_EQ(::futimens(fd, times), 0);
    ::close(fd);
    auto t = (*store)->Stat("twin" + std::to_string(i));
    ASSERT_TRUE(t);
    EXPECT_EQ(t->etag.size() == 32 && t->etag.find_first_not_of("0123456789abcdef") == std::string::npos, false)
        << "an ETag that is not the MD5 looks like one: " << t->etag;
    EXPECT_EQ(t->etag.find('-'), std::string::npos) << t->etag;
    etags.insert(t->etag);
  }
  EXPECT_EQ(etags.size(), 8u) << "files of the same size and mtime share an ETag";
  auto listed = ListDirectory(**store, "");
  ASSERT_TRUE(listed);
  for (const auto& f : *listed) {
    auto one = (*store)->Stat(f.key);
    ASSERT_TRUE(one);
    EXPECT_EQ(f.etag, one->etag) << f.key << ": the listing and Stat disagree";
  }

  // "written" rewritten in place, same size, its mtime put back: no longer
  // its MD5. (Once the clock is past the slack the store allows the ctime
  // for setting the attribute itself: 20 ms.)
  const std::string path = dir + "/written";
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  const int64_t written_ns = before.st_ctim.tv_sec * 1'000'000'000LL + before.st_ctim.tv_nsec;
  for (int i = 0; i < 10'000; ++i) {
    struct timespec now;
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (now.tv_sec * 1'000'000'000LL + now.tv_nsec > written_ns + 50'000'000) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "HELLO", 5), 5);
  struct timespec back[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::futimens(fd, back), 0);
  ::close(fd);
  st = (*store)->Stat("written");
  ASSERT_TRUE(st);
  EXPECT_NE(st->etag, "5d41402abc4b2a76b9719d911017c592");
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
  MountConfig m = FileMount(dir, "/data");
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
