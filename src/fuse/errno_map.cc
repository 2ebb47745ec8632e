#include "fuse/errno_map.h"

#include <cerrno>

namespace shoal::fuse {

int ErrnoFor(Code code) {
  switch (code) {
    case Code::kOk: return 0;
    case Code::kNotFound: return ENOENT;
    case Code::kPermissionDenied: return EACCES;
    case Code::kReadOnly: return EROFS;
    case Code::kNotEmpty: return ENOTEMPTY;
    case Code::kIsDirectory: return EISDIR;
    case Code::kNotDirectory: return ENOTDIR;
    case Code::kAlreadyExists: return EEXIST;
    case Code::kNotSupported: return EOPNOTSUPP;
    case Code::kInvalidArgument: return EINVAL;
    case Code::kOutOfRange: return EINVAL;
    case Code::kNoSpace: return ENOSPC;
    case Code::kVersionMismatch: return ESTALE;
    case Code::kUnavailable:
    case Code::kTimeout:
    case Code::kIo:
    case Code::kCorruption:
    case Code::kInternal: return EIO;
  }
  return EIO;
}

}  // namespace shoal::fuse
