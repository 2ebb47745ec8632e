// The one place where a Status code becomes an HTTP status (worker API) and back (client).
#pragma once

#include <string_view>

#include "shoal/status.h"

namespace shoal {

inline int HttpStatusFor(Code c) {
  switch (c) {
    case Code::kOk: return 200;
    case Code::kInvalidArgument: return 400;
    case Code::kPermissionDenied:
    case Code::kReadOnly: return 403;
    case Code::kNotFound: return 404;
    case Code::kAlreadyExists:
    case Code::kNotEmpty:
    case Code::kIsDirectory:
    case Code::kNotDirectory: return 409;
    case Code::kVersionMismatch: return 412;
    case Code::kOutOfRange: return 416;
    case Code::kNotSupported: return 501;
    case Code::kUnavailable: return 503;
    case Code::kTimeout: return 504;
    case Code::kNoSpace: return 507;
    default: return 500;
  }
}

// The Code a worker's error body names ("NotFound"), or a guess from the HTTP status.
inline Code CodeFromWire(std::string_view name, int http_status) {
  for (int i = 0; i <= static_cast<int>(Code::kNotDirectory); ++i) {
    if (CodeName(static_cast<Code>(i)) == name) return static_cast<Code>(i);
  }
  switch (http_status) {
    case 400: return Code::kInvalidArgument;
    case 403: return Code::kPermissionDenied;
    case 404: return Code::kNotFound;
    case 412: return Code::kVersionMismatch;
    case 416: return Code::kOutOfRange;
    case 503: return Code::kUnavailable;
    case 504: return Code::kTimeout;
    default: return Code::kInternal;
  }
}

}  // namespace shoal
