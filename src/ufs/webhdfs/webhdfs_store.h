// WebHDFS under-store backend: hdfs://namenode:port/path/ (or webhdfs://).
//
// The port is the namenode's HTTP port (9870 on Hadoop 3, the default when
// the URI has none), not the RPC port. Mount options (all optional): the table
// WebHdfsOptions() in webhdfs_client.cc, listed in README.md.
// Files are versioned by modification time and length (no ETag). Rename is supported.
#pragma once

#include <memory>

#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakeWebHdfsStore(const UfsUri& uri, const MountConfig& mount);

}  // namespace shoal
