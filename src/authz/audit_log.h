// AuditLog: authorization decisions, one JSON object per line (the fields of
// Ranger's audit events), appended to a file that rotates by size:
// FILE, FILE.1 (the one before), ... FILE.<keep>.
//
// Append returns only after the line is in the file (write(2) of the whole
// line on an O_APPEND descriptor), so a decision is on record before its
// answer is sent; it returns false when the line could not be written (a full
// disk, a removed directory), and the caller decides what that means
// (authz.audit_failure).
//
// Thread safety: Append is safe from any thread (one mutex; lines never interleave).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal::authz {

class AuditLog {
 public:
  // Opens (creating it and its directory, mode 0700/0600) the file.
  static Result<std::unique_ptr<AuditLog>> Open(std::string path, uint64_t max_bytes, int keep);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // `line` without its newline. False (with errno's text in last_error) when not written.
  bool Append(std::string_view line);

  std::string last_error() const;

 private:
  AuditLog(std::string path, uint64_t max_bytes, int keep, int fd, uint64_t size);
  void RotateLocked();

  const std::string path_;
  const uint64_t max_bytes_;
  const int keep_;
  mutable std::mutex mu_;
  int fd_;
  uint64_t size_;
  std::string last_error_;
};

}  // namespace shoal::authz
