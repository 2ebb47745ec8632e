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
                         ::testing::Values(StoreFactory{"posix", MakeFreshPosix, /*has_rename=*/true}),
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

}  // namespace
}  // namespace shoal
