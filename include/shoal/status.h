// Status and Result<T>: how every Shoal API reports failure.
//
// A Status is a code from one table plus a one-line message that names what
// failed and, where it helps, what to do. Result<T> is std::expected<T, Status>.
// Errors are values on the data path; Shoal does not throw across its APIs.
//
// Translation of a Status to the outside world happens in one place per front
// end (the CLI's exit codes, the worker's HTTP statuses), not here.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace shoal {

enum class Code : int {
  kOk = 0,
  kInvalidArgument,   // bad input from the caller: a path, a range, a config value
  kNotFound,          // no such file, directory, key or mount
  kAlreadyExists,
  kPermissionDenied,  // the under-store refused our credentials (401/403)
  kUnavailable,       // a worker or under-store could not be reached; retryable
  kTimeout,           // a deadline passed
  kIo,                // a local I/O error
  kNoSpace,           // a cache disk is full
  kCorruption,        // a checksum did not match
  kOutOfRange,        // offset past the end of a file
  kVersionMismatch,   // the object changed under us (precondition failed)
  kNotSupported,      // the backend cannot do this (e.g. rename on S3)
  kInternal,          // a bug
  kReadOnly,          // a write to a mount configured read_only (EROFS)
  kNotEmpty,          // removing a directory that still has entries (ENOTEMPTY)
  kIsDirectory,       // a file operation on a directory (EISDIR)
  kNotDirectory,      // a directory operation on a file (ENOTDIR)
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NotFound: no such file: /data/x" (or "OK").
  std::string ToString() const;

  // Returns a copy with `context + ": "` prepended to the message.
  Status WithContext(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename T>
using Result = std::expected<T, Status>;

inline std::unexpected<Status> Err(Code code, std::string message) {
  return std::unexpected<Status>(Status(code, std::move(message)));
}
inline std::unexpected<Status> Err(Status s) { return std::unexpected<Status>(std::move(s)); }

// What SHOAL_RETURN_IF_ERROR returns: converts to Status or to any Result<T>.
struct StatusReturn {
  Status status;
  operator Status() && { return std::move(status); }
  template <typename T>
  operator std::expected<T, Status>() && {
    return std::unexpected<Status>(std::move(status));
  }
};

}  // namespace shoal

// Propagates a failed Status or Result from the current function.
#define SHOAL_RETURN_IF_ERROR(expr)                         \
  do {                                                      \
    auto _shoal_st = (expr);                                \
    if (!_shoal_st.ok()) return ::shoal::StatusReturn{std::move(_shoal_st)}; \
  } while (0)
