#include "authz/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace shoal::authz {

Result<std::unique_ptr<AuditLog>> AuditLog::Open(std::string path, uint64_t max_bytes, int keep) {
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return Err(Code::kIo, "cannot make the audit directory " + dir.string() + ": " + ec.message() +
                                " (set authz.audit_file to a writable place)");
    }
    ::chmod(dir.c_str(), 0700);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Err(Code::kIo, "cannot open the audit log " + path + ": " + std::strerror(errno) +
                              " (set authz.audit_file to a writable place)");
  }
  struct stat st {};
  ::fstat(fd, &st);
  return std::unique_ptr<AuditLog>(
      new AuditLog(std::move(path), max_bytes, keep, fd, static_cast<uint64_t>(st.st_size)));
}

AuditLog::AuditLog(std::string path, uint64_t max_bytes, int keep, int fd, uint64_t size)
    : path_(std::move(path)), max_bytes_(max_bytes), keep_(keep), fd_(fd), size_(size) {}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::string AuditLog::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void AuditLog::RotateLocked() {
  // FILE.(keep-1) -> FILE.keep, ..., FILE -> FILE.1; the oldest is replaced.
  for (int i = keep_ - 1; i >= 1; --i) {
    std::string from = path_ + "." + std::to_string(i);
    std::string to = path_ + "." + std::to_string(i + 1);
    ::rename(from.c_str(), to.c_str());
  }
  ::rename(path_.c_str(), (path_ + ".1").c_str());
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    last_error_ = "cannot reopen " + path_ + " after rotating it: " + std::strerror(errno);
    return;  // keep writing to the renamed file rather than losing lines
  }
  ::close(fd_);
  fd_ = fd;
  size_ = 0;
}

bool AuditLog::Append(std::string_view line) {
  std::string buf;
  buf.reserve(line.size() + 1);
  buf.append(line).push_back('\n');
  std::lock_guard lock(mu_);
  if (max_bytes_ > 0 && size_ > 0 && size_ + buf.size() > max_bytes_) RotateLocked();
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::write(fd_, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      last_error_ = "cannot write the audit log " + path_ + ": " + std::strerror(n < 0 ? errno : EIO);
      // A partial line is ended so the next one stays parseable.
      if (done > 0 && ::write(fd_, "\n", 1) == 1) size_ += done + 1;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  size_ += buf.size();
  return true;
}

}  // namespace shoal::authz
