// Modes, owners and modification times of files on object stores, kept in
// each object's user metadata when the mount asks for it (the backend option
// posix_attributes), under the names s3fs uses, so buckets written by either
// read alike:
//   mode   st_mode in decimal ("33188": a file of mode 0644)
//   uid    the owner's id, decimal
//   gid    the group's id, decimal
//   mtime  seconds since the epoch, with a fraction of up to 9 digits when
//          the time has one ("1700000000.25", as rclone writes it)
// A listing carries no user metadata, so only a stat of the object shows them
// (MountInfo::stat_each_listed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ufs/under_store.h"

namespace shoal {

using UserMetadata = std::vector<std::pair<std::string, std::string>>;

// True for a mount on an object store (not file:// or hdfs://, which keep
// them natively) whose option posix_attributes is true.
bool KeepsPosixMetadata(const MountConfig& mount);

// The values `user` holds, applied to `info`; a value that is not what the
// names above describe (another tool's "mode: rw"), or out of range, is
// ignored and the store's own stays.
void ApplyPosixMetadata(const UserMetadata& user, FileInfo& info);

// `user` with the change's fields set (replaced where present, else added).
// A change that sets no time keeps the one the object shows now
// (`current_mtime_ns`, its Last-Modified): rewriting an object to keep a new
// mode would otherwise move its time.
void SetPosixMetadata(const UnderStore::AttributeChange& change, int64_t current_mtime_ns, UserMetadata& user);

// What a new object keeps of its writer's options: its mode and owner.
UnderStore::AttributeChange PosixChangeOf(const WriteOptions& options);

// The mtime value for `ns` ("1700000000", "1700000000.5"), and back: nullopt
// when `text` is not one.
std::string FormatMetadataTime(int64_t ns);
std::optional<int64_t> ParseMetadataTime(std::string_view text);

}  // namespace shoal
