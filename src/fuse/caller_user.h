// The user behind a FUSE request: the calling process's uid and gid, named
// as the host names them (getpwuid_r, getgrouplist), for the workers to
// authorize (common/end_user.h). A uid without a passwd entry is named by
// its number, and so is a group without a group entry.
//
// Thread safety: UserOfCaller may be called from any thread; answers are
// cached process-wide for kCallerTtl (a user's new groups show within it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>

#include "common/end_user.h"

namespace shoal::fuse {

inline constexpr std::chrono::seconds kCallerTtl{60};

std::shared_ptr<const EndUser> UserOfCaller(uid_t uid, gid_t gid);

}  // namespace shoal::fuse
