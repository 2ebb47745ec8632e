// WebHDFS under-store backend: hdfs://namenode:port/path/ (or webhdfs://).
//
// The port is the namenode's HTTP port (9870 on Hadoop 3, the default when
// the URI has none), not the RPC port. Mount options (all optional):
//   user             user.name for simple authentication (default $USER, else "shoal")
//   scheme           http or https (default http)
//   request_timeout  deadline of one call, retries included (default 60s)
//   max_retries      retries of 5xx/failed requests (default 3)
//   write_buffer     a writer sends CREATE/APPEND chunks of this size (default 8MiB)
//   ca_file          CA bundle for https
// Files are versioned by modification time and length (no ETag). Rename is supported.
#pragma once

#include <memory>

#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakeWebHdfsStore(const UfsUri& uri, const MountConfig& mount);

}  // namespace shoal
