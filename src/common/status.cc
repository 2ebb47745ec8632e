#include "shoal/status.h"

namespace shoal {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kUnavailable: return "Unavailable";
    case Code::kTimeout: return "Timeout";
    case Code::kIo: return "IoError";
    case Code::kNoSpace: return "NoSpace";
    case Code::kCorruption: return "Corruption";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kVersionMismatch: return "VersionMismatch";
    case Code::kNotSupported: return "NotSupported";
    case Code::kInternal: return "Internal";
    case Code::kReadOnly: return "ReadOnly";
    case Code::kNotEmpty: return "NotEmpty";
    case Code::kIsDirectory: return "IsDirectory";
    case Code::kNotDirectory: return "NotDirectory";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

}  // namespace shoal
