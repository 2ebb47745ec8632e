// The mount table in etcd, so that clients need only the etcd endpoints.
//
// Layout (PREFIX is cluster.etcd.prefix):
//   PREFIX/mounts/PATH         the mount at namespace path PATH, as a config
//                              with that one mount, without its secret options
//   PREFIX/mount-secrets/PATH  the secret options of that mount (credentials:
//                              the options its backend declares kSecret)
// Workers read both; clients read only the first, so a store secret never
// reaches a client (give clients no read access to PREFIX/mount-secrets/ when
// etcd has authentication on). A client without a mount's credentials cannot
// read that store directly: its reads go through the workers.
//
// `shoal up --etcd` and `shoal mount publish` write the keys; workers and
// clients with cluster.etcd add them to the mounts of their own config
// (meta/live_mount_table.h), at start and when a path is outside every mount.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "meta/live_mount_table.h"
#include "shoal/status.h"

namespace shoal {

std::string EtcdMountsPrefix(const EtcdConfig& config);        // PREFIX/mounts/
std::string EtcdMountSecretsPrefix(const EtcdConfig& config);  // PREFIX/mount-secrets/

// Whether `option` of mount `m` is a secret (a kSecret option of its backend;
// every option of a scheme Shoal does not know).
bool IsSecretMountOption(const MountConfig& m, const std::string& option);

// Writes each mount's two keys (deleting a secrets key it no longer needs).
// Option values are written expanded: a worker elsewhere lacks this
// process's environment. Fails naming the etcd endpoints or the mount.
Status PublishEtcdMounts(const EtcdConfig& config, const std::vector<MountConfig>& mounts);

// The mounts published in etcd, with their secret options when
// `with_secrets`. A key that does not parse is skipped with a warning naming
// it; at most `max_mounts` mounts are read.
Result<std::vector<MountConfig>> ReadEtcdMounts(const EtcdConfig& config, bool with_secrets,
                                                size_t max_mounts = LiveMountTable::kMaxMounts);

// The loader of a LiveMountTable: ReadEtcdMounts, or none (an empty function)
// when `config` names no endpoints.
LiveMountTable::Loader EtcdMountLoader(const EtcdConfig& config, bool with_secrets);

}  // namespace shoal
