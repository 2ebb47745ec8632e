#include "common/shared_epoch.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace shoal {

namespace {

constexpr size_t kMapBytes = 4096;
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the epoch is shared between processes");

constexpr int kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;

}  // namespace

SharedEpoch::SharedEpoch() {
  int fd = ::memfd_create("shoal-epoch", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return;
  void* map = MAP_FAILED;
  if (::ftruncate(fd, kMapBytes) == 0) map = ::mmap(nullptr, kMapBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  // Sealed after this process mapped it writable: the mapping keeps working,
  // and no reader can map it writable or write(2) to it.
  if (map == MAP_FAILED || ::fcntl(fd, F_ADD_SEALS, kRequiredSeals) != 0) {
    if (map != MAP_FAILED) ::munmap(map, kMapBytes);
    ::close(fd);
    return;
  }
  map_ = map;
  fd_ = fd;
  counter_ = new (map) std::atomic<uint64_t>(1);
}

SharedEpoch::~SharedEpoch() {
  if (map_) ::munmap(map_, kMapBytes);
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<SharedEpochView>> SharedEpochView::Map(int fd) {
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return Err(Code::kInvalidArgument,
               std::string("the worker's epoch fd is not a sealable memfd: ") + std::strerror(errno));
  }
  if ((seals & kRequiredSeals) != kRequiredSeals) {
    return Err(Code::kInvalidArgument, "the worker's epoch memfd is not sealed against writes");
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(uint64_t))) {
    return Err(Code::kInvalidArgument, "the worker's epoch memfd is too small");
  }
  void* map = ::mmap(nullptr, sizeof(uint64_t), PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    return Err(Code::kIo, std::string("cannot map the worker's epoch memfd: ") + std::strerror(errno));
  }
  return std::unique_ptr<SharedEpochView>(new SharedEpochView(map));
}

SharedEpochView::~SharedEpochView() { ::munmap(map_, sizeof(uint64_t)); }

}  // namespace shoal
