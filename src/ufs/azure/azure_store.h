// Azure Blob under-store backend: az://container/prefix/.
//
// Mount options (all optional; credentials may come from the environment, see
// azure_auth.h):
//   account, key          Shared Key authorization (key is the base64 account key)
//   sas_token             SAS authorization (the query string, with or without '?')
//   connection_string     an Azure connection string (BlobEndpoint is honoured)
//   endpoint              default https://<account>.blob.core.windows.net;
//                         Azurite: http://127.0.0.1:PORT/devstoreaccount1
//   ca_file               CA bundle for TLS
//   block_size            Put Block size for large writes (default 8MiB)
//   upload_threshold      larger writes use blocks (default 32MiB)
//   upload_concurrency    blocks uploaded in parallel per writer (default 4)
//   request_timeout       deadline of one call, retries included (default 60s)
//   max_retries           retries of throttled/5xx/failed requests (default 3)
// Rename is not supported (Blob storage has none).
#pragma once

#include <memory>

#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakeAzureStore(const UfsUri& uri, const MountConfig& mount);

}  // namespace shoal
