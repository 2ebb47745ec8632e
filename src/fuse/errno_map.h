// The one place where a Shoal Status becomes an errno for the kernel (FUSE).
#pragma once

#include "shoal/status.h"

namespace shoal::fuse {

// 0 for OK. Worker and under-store failures (kUnavailable, kTimeout: the
// client's deadline has passed) are EIO; a file that changed in the
// under-store since it was opened is ESTALE (open it again).
int ErrnoFor(Code code);
inline int ErrnoFor(const Status& s) { return ErrnoFor(s.code()); }

}  // namespace shoal::fuse
