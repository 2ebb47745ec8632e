#include "fuse/staged_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace shoal::fuse {
namespace {

constexpr size_t kChunk = 1 << 20;  // the unit of Fill and Upload

}  // namespace

Result<std::unique_ptr<StagedFile>> StagedFile::Make(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {
    // A file system without O_TMPFILE: a named file, unlinked at once.
    std::string name = dir + "/.shoal-fuse-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) {
    int e = errno;
    Code code = e == ENOSPC || e == EDQUOT ? Code::kNoSpace : Code::kIo;
    return Err(code, "cannot make a local buffer for a file being written in " + dir + ": " + std::strerror(e) +
                         " (set TMPDIR of `shoal fuse` to a writable local directory with room)");
  }
  return std::unique_ptr<StagedFile>(new StagedFile(fd, dir));
}

StagedFile::~StagedFile() { ::close(fd_); }

Status StagedFile::Failed(const std::string& what, int err) const {
  Code code = err == ENOSPC || err == EDQUOT ? Code::kNoSpace : err == EFBIG ? Code::kOutOfRange : Code::kIo;
  return Status(code,
                what + " the local buffer in " + dir_ + " failed: " + std::strerror(err) +
                    (code == Code::kNoSpace ? " (free space there, or set TMPDIR of `shoal fuse` elsewhere)" : ""));
}

Status StagedFile::WriteAt(uint64_t offset, std::span<const char> data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Failed("writing to", errno);
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

Result<size_t> StagedFile::ReadAt(uint64_t offset, std::span<char> out) const {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Err(Failed("reading", errno));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Status StagedFile::Truncate(uint64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return Failed("resizing", errno);
  return {};
}

uint64_t StagedFile::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

Status StagedFile::Fill(File& file) {
  std::vector<char> buf(kChunk);
  uint64_t off = 0;
  for (;;) {
    auto n = file.Pread(off, std::span<char>(buf.data(), buf.size()));
    if (!n) return n.error();
    if (*n == 0) break;
    SHOAL_RETURN_IF_ERROR(WriteAt(off, std::span<const char>(buf.data(), *n)));
    off += *n;
  }
  return {};
}

Status StagedFile::Upload(Writer& writer) const {
  std::vector<char> buf(kChunk);
  const uint64_t end = size();
  for (uint64_t off = 0; off < end;) {
    auto n = ReadAt(off, std::span<char>(buf.data(), std::min<uint64_t>(buf.size(), end - off)));
    if (!n) return n.error();
    if (*n == 0) break;  // cut meanwhile
    SHOAL_RETURN_IF_ERROR(writer.Write(std::span<const char>(buf.data(), *n)));
    off += *n;
  }
  return {};
}

}  // namespace shoal::fuse
