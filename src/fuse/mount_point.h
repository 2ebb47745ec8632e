// Internal to src/fuse/: the mount's kernel read-ahead (the rest of the
// mount-point helpers are in fuse_mount.h).
#pragma once

#include <string>

namespace shoal::fuse {

// Sets the kernel read-ahead of the mount on `mountpoint` to `kib` KiB
// (/sys/class/bdi/<its device>/read_ahead_kb; root only, else logged).
void RaiseReadAhead(const std::string& mountpoint, unsigned kib);

}  // namespace shoal::fuse
