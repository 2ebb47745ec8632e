#include "ufs/webhdfs/webhdfs_store.h"

#include "common/config.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakeWebHdfsStore(const UfsUri& uri, const MountConfig& mount) {
  return Err(Code::kNotSupported, "the " + uri.scheme + ":// under-store is not built yet (mount '" + mount.path + "')");
}

}  // namespace shoal
