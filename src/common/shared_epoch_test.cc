#include "common/shared_epoch.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

namespace shoal {
namespace {

TEST(SharedEpoch, AReaderSeesEveryBumpThroughItsOwnMapping) {
  SharedEpoch epoch;
  ASSERT_GE(epoch.fd(), 0) << "memfd_create with sealing is available on every supported kernel";
  auto view = SharedEpochView::Map(epoch.fd());
  ASSERT_TRUE(view) << view.error().ToString();
  const uint64_t start = (*view)->value();
  EXPECT_EQ(start, epoch.value());
  epoch.Bump();
  epoch.Bump();
  EXPECT_EQ((*view)->value(), start + 2);
}

TEST(SharedEpoch, ReadersCannotWriteTheCounter) {
  SharedEpoch epoch;
  ASSERT_GE(epoch.fd(), 0);
  void* w = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, epoch.fd(), 0);
  EXPECT_EQ(w, MAP_FAILED) << "a writable shared mapping of the sealed epoch must be refused";
  if (w != MAP_FAILED) ::munmap(w, 4096);
  uint64_t v = 0;
  EXPECT_LT(::pwrite(epoch.fd(), &v, sizeof v, 0), 0);
  EXPECT_NE(epoch.value(), 0u);
}

TEST(SharedEpoch, AnUnsealedMemfdIsRefused) {
  int fd = ::memfd_create("not-an-epoch", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  auto view = SharedEpochView::Map(fd);
  EXPECT_FALSE(view);
  ::close(fd);
}

}  // namespace
}  // namespace shoal
