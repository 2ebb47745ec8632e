// S3 under-store backend.
#pragma once

#include <memory>

#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakeS3Store(const UfsUri& uri, const MountConfig& mount);

}  // namespace shoal
