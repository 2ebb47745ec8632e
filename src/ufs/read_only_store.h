// ReadOnlyStore: an UnderStore that refuses every write.
//
// A mount with `read_only: true` is opened through it (OpenUnderStore does
// this), so every path that could write to the under-store — the worker, the
// client's direct fallback, and the writers the FUSE, S3 and checkpoint front
// ends add — is refused in one place, with kReadOnly naming the mount.
//
// Thread safety: as the wrapped store.
#pragma once

#include <memory>
#include <string>

#include "ufs/under_store.h"

namespace shoal {

std::shared_ptr<UnderStore> WithReadOnly(std::shared_ptr<UnderStore> inner, std::string mount_path);

}  // namespace shoal
