// PosixStore: the file:// under-store, for local disks and NAS mounts.
#pragma once

#include <memory>

#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakePosixStore(const UfsUri& uri, const MountConfig& mount);

}  // namespace shoal
