// Azure Blob under-store backend: az://container/prefix/.
//
// Mount options (all optional; credentials may come from the environment, see
// azure_auth.h): the table AzureOptions() in azure_client.cc, listed in README.md.
// Rename is not supported (Blob storage has none).
#pragma once

#include <memory>

#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakeAzureStore(const UfsUri& uri, const MountConfig& mount);

}  // namespace shoal
