#include "ufs/posix/posix_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "common/config.h"
#include "ufs/conformance_test.h"

namespace shoal {
namespace {

std::shared_ptr<UnderStore> MakeFreshPosix() {
  char tmpl[] = "/tmp/shoal-posix-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  if (!dir) return nullptr;
  MountConfig m;
  m.path = "/t";
  m.ufs = std::string("file://") + dir;
  auto s = OpenUnderStore(m);
  return s ? *s : nullptr;
}

INSTANTIATE_TEST_SUITE_P(Posix, UnderStoreConformance,
                         ::testing::Values(StoreFactory{"posix", MakeFreshPosix, /*has_rename=*/true, /*renames_dirs=*/true}),
                         [](const auto& info) { return info.param.name; });

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
  char tmpl[] = "/tmp/shoal-ro-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  ASSERT_NE(dir, nullptr);
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
