#include "cache/block_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "cache/page_store.h"

namespace shoal {
namespace {

constexpr uint32_t kAlign = 4096;
constexpr uint64_t kRegion = 8 << 20;        // a file grows by about this much at a time
constexpr uint32_t kScanBatch = 256;         // slots per scan work item
constexpr size_t kScanThreads = 32;          // reads in flight while the index is rebuilt
constexpr uint32_t kKeyRoom = 4096;          // path and version bytes the largest class leaves room for

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

Code SpaceCode(int e) { return e == ENOSPC || e == EDQUOT ? Code::kNoSpace : Code::kIo; }

std::string FileOf(const std::string& dir, uint32_t size) { return dir + "/" + std::to_string(size) + ".blk"; }

}  // namespace

std::vector<uint32_t> BlockFiles::SlotSizes(uint64_t page_size) {
  const uint64_t largest = RoundUp(page_size + page_format::kFixedHeader +
                                       8 * ((page_size + page_format::kChunkSize - 1) / page_format::kChunkSize) +
                                       kKeyRoom,
                                   kAlign);
  std::vector<uint32_t> out;
  for (uint64_t s = kAlign; s < largest; s = std::max(s + kAlign, RoundUp(s * 5 / 4, kAlign))) {
    out.push_back(static_cast<uint32_t>(s));
  }
  out.push_back(static_cast<uint32_t>(largest));
  return out;
}

std::optional<uint16_t> BlockFiles::ClassFor(uint64_t bytes) const {
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), bytes);
  if (it == sizes_.end()) return std::nullopt;
  return static_cast<uint16_t>(it - sizes_.begin());
}

Result<std::shared_ptr<BlockFiles>> BlockFiles::Open(const std::string& dir, uint64_t page_size, uint64_t slack,
                                                     std::shared_ptr<PageFileWriter> writer) {
  std::shared_ptr<BlockFiles> b(new BlockFiles());
  b->dir_ = dir + "/blocks";
  b->sizes_ = SlotSizes(page_size);
  b->slack_ = slack;
  b->writer_ = std::move(writer);
  b->classes_.resize(b->sizes_.size());
  if (::mkdir(b->dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Err(Code::kIo, "cannot create the block file directory '" + b->dir_ + "': " + std::strerror(errno));
  }
  DIR* d = ::opendir(b->dir_.c_str());
  if (!d) return Err(Code::kIo, "cannot list '" + b->dir_ + "': " + std::strerror(errno));
  std::vector<std::string> foreign;
  while (auto* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    uint32_t size = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), size);
    auto it = std::find(b->sizes_.begin(), b->sizes_.end(), size);
    if (ec != std::errc() || std::string_view(end) != ".blk" || it == b->sizes_.end()) {
      foreign.emplace_back(name);
      continue;
    }
    std::lock_guard lock(b->mu_);
    SHOAL_RETURN_IF_ERROR(b->OpenClassLocked(static_cast<uint16_t>(it - b->sizes_.begin())));
  }
  ::closedir(d);
  for (const auto& name : foreign) {
    // Slots of another page size (or a stray file): a cache, fetched again when read.
    spdlog::info("cache dir {}: removing {} (not a block file of page size {})", dir, name, page_size);
    ::unlink((b->dir_ + "/" + name).c_str());
  }
  return b;
}

BlockFiles::~BlockFiles() {
  for (auto& c : classes_) {
    if (c.fd >= 0) ::close(c.fd);
  }
}

Status BlockFiles::OpenClassLocked(uint16_t cls) {
  auto& c = classes_[cls];
  if (c.fd >= 0) return {};
  const std::string path = FileOf(dir_, sizes_[cls]);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status(SpaceCode(errno), "cannot open block file '" + path + "': " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Status(Code::kIo, "cannot stat block file '" + path + "': " + std::strerror(e));
  }
  uint64_t slots = static_cast<uint64_t>(st.st_size) / sizes_[cls];
  if (slots * sizes_[cls] != static_cast<uint64_t>(st.st_size)) {
    // A crash while the file grew: the partial slot was never used.
    (void)::ftruncate(fd, static_cast<off_t>(slots * sizes_[cls]));
  }
  c.fd = fd;
  c.slots = static_cast<uint32_t>(std::min<uint64_t>(slots, UINT32_MAX));
  return {};
}

void BlockFiles::Scan(const std::function<bool(Slot, const page_format::HeaderView&)>& found) {
  struct Item {
    uint16_t cls;
    uint32_t first, count;
  };
  std::vector<Item> items;
  for (uint16_t cls = 0; cls < classes_.size(); ++cls) {
    for (uint32_t i = 0; i < classes_[cls].slots; i += kScanBatch) {
      items.push_back({cls, i, std::min(kScanBatch, classes_[cls].slots - i)});
    }
  }
  std::vector<std::vector<uint8_t>> kept(classes_.size());
  for (size_t cls = 0; cls < classes_.size(); ++cls) kept[cls].assign(classes_[cls].slots, 0);
  std::vector<std::vector<uint8_t>> valid = kept;  // a header that checks: zeroed when not kept
  {
    std::atomic<size_t> next{0};
    std::vector<std::jthread> threads;
    for (size_t t = 0; t < std::min(kScanThreads, items.size()); ++t) {
      threads.emplace_back([&] {
        std::string header;
        for (size_t i; (i = next.fetch_add(1)) < items.size();) {
          const auto& it = items[i];
          const uint32_t size = sizes_[it.cls];
          for (uint32_t s = it.first; s < it.first + it.count; ++s) {
            const Slot slot{it.cls, s};
            header.resize(std::min<size_t>(page_format::kHeaderProbe, size));
            ssize_t n = ::pread(classes_[it.cls].fd, header.data(), header.size(), static_cast<off_t>(offset(slot)));
            if (n < static_cast<ssize_t>(page_format::kFixedHeader)) continue;
            header.resize(static_cast<size_t>(n));
            uint32_t claimed = page_format::HeaderLength(header);
            if (claimed > size) continue;
            if (claimed > header.size()) {
              header.resize(claimed);
              ssize_t m = ::pread(classes_[it.cls].fd, header.data() + n, claimed - static_cast<size_t>(n),
                                  static_cast<off_t>(offset(slot) + static_cast<uint64_t>(n)));
              if (m != static_cast<ssize_t>(claimed) - n) continue;
            }
            auto h = page_format::ParseHeader(header);
            if (!h || uint64_t{h->header_len()} + h->data_len() > size) continue;
            valid[it.cls][s] = 1;
            kept[it.cls][s] = found(slot, *h) ? 1 : 0;
          }
        }
      });
    }
  }
  std::lock_guard lock(mu_);
  for (uint16_t cls = 0; cls < classes_.size(); ++cls) {
    // Highest first, so that Allocate (from the back) reuses the lowest slots.
    for (uint32_t s = classes_[cls].slots; s-- > 0;) {
      if (!kept[cls][s]) ReleaseLocked(Slot{cls, s}, valid[cls][s] != 0);
    }
  }
}

void BlockFiles::ReleaseLocked(Slot slot, bool zero) {
  auto& c = classes_[slot.cls];
  const uint32_t size = sizes_[slot.cls];
  if (free_bytes_ + size > slack_ &&
      ::fallocate(c.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset(slot)), size) == 0) {
    c.holes.push_back(slot.index);  // reads as zeros: no header
    return;
  }
  if (zero) {
    static constexpr char kZero[8] = {};
    if (::pwrite(c.fd, kZero, sizeof kZero, static_cast<off_t>(offset(slot))) != sizeof kZero) {
      // The header stays: after a restart the page may come back, with its checksums intact.
      spdlog::warn("block file {}: cannot clear a freed slot's header: {}", FileOf(dir_, size), std::strerror(errno));
    }
  }
  c.free.push_back(slot.index);
  free_bytes_ += size;
}

Result<BlockFiles::Slot> BlockFiles::Allocate(uint16_t cls) {
  std::lock_guard lock(mu_);
  auto& c = classes_[cls];
  const uint32_t size = sizes_[cls];
  if (!c.free.empty()) {
    Slot s{cls, c.free.back()};
    c.free.pop_back();
    free_bytes_ -= size;
    return s;
  }
  if (!c.holes.empty()) {
    Slot s{cls, c.holes.back()};
    if (::fallocate(c.fd, 0, static_cast<off_t>(offset(s)), size) != 0 && errno != EOPNOTSUPP) {
      return Err(SpaceCode(errno), "cannot allocate a slot in block file '" + FileOf(dir_, size) +
                                       "': " + std::strerror(errno));
    }
    c.holes.pop_back();
    return s;
  }
  SHOAL_RETURN_IF_ERROR(OpenClassLocked(cls));
  // A region at a time, at most the slack (a small cache does not grow past its capacity).
  const uint32_t grow = static_cast<uint32_t>(std::max<uint64_t>(1, std::min(kRegion, slack_) / size));
  if (uint64_t{c.slots} + grow > UINT32_MAX) {
    return Err(Code::kNoSpace, "block file '" + FileOf(dir_, size) + "' has the most slots it can hold");
  }
  const off_t at = static_cast<off_t>(uint64_t{c.slots} * size), len = static_cast<off_t>(uint64_t{grow} * size);
  int rc = ::fallocate(c.fd, 0, at, len);
  if (rc != 0 && errno == EOPNOTSUPP) rc = ::ftruncate(c.fd, at + len);  // a file system without fallocate
  if (rc != 0) {
    return Err(SpaceCode(errno), "cannot grow block file '" + FileOf(dir_, size) + "' by " + std::to_string(len) +
                                     " bytes: " + std::strerror(errno));
  }
  const uint32_t first = c.slots;
  c.slots += grow;
  for (uint32_t i = c.slots; i-- > first + 1;) c.free.push_back(i);
  free_bytes_ += uint64_t{grow - 1} * size;
  return Slot{cls, first};
}

Status BlockFiles::Write(Slot slot, std::span<const char> header, std::span<const char> data) {
  return writer_->WriteAt(classes_[slot.cls].fd, offset(slot), header, data);
}

void BlockFiles::Free(Slot slot) {
  std::lock_guard lock(mu_);
  if (leases_.contains(Key(slot))) {
    free_when_unleased_.insert(Key(slot));
    return;
  }
  ReleaseLocked(slot, true);
}

void BlockFiles::Unlease(Slot slot) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(Key(slot));
  if (it == leases_.end() || --it->second > 0) return;
  leases_.erase(it);
  if (free_when_unleased_.erase(Key(slot))) ReleaseLocked(slot, true);
}

Result<BlockFiles::Handle> BlockFiles::Hold(Slot slot) {
  struct Lease {
    Lease(std::shared_ptr<BlockFiles> f, Slot s) : files(std::move(f)), slot(s) {}
    ~Lease() { files->Unlease(slot); }
    std::shared_ptr<BlockFiles> files;
    Slot slot;
  };
  std::unique_lock lock(mu_);
  const int fd = classes_[slot.cls].fd;
  ++leases_[Key(slot)];
  lock.unlock();
  return Handle{fd, std::make_shared<Lease>(shared_from_this(), slot)};
}

uint64_t BlockFiles::free_bytes() const {
  std::lock_guard lock(mu_);
  return free_bytes_;
}

}  // namespace shoal
