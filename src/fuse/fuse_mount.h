// RunFuseMount: serves a Shoal namespace on a mount point with libfuse's
// low-level API until it is unmounted (umount, fusermount3 -u, `shoal fuse
// --unmount`) or the process gets SIGINT, SIGTERM or SIGHUP, which unmount it.
//
// This header keeps libfuse out of its includers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shoal/client.h"
#include "shoal/status.h"

namespace shoal::fuse {

struct FuseMountOptions {
  std::string mountpoint;            // an existing directory, not mounted on
  std::string base = "/";            // the namespace path shown at the root
  std::vector<std::string> options;  // -o options for the kernel mount (allow_other, ...)
  // Called once the kernel has initialised the mount: from then on it is usable.
  std::function<void()> on_ready;
  unsigned max_threads = 64;  // request threads of the session
  // Each request names the calling process's user (uid to name, and its
  // groups) to the workers, X-Shoal-On-Behalf-Of: for a mount whose own
  // identity may act for others (security.proxy_users, the cluster secret).
  bool act_for_callers = false;
};

// Checks that `mountpoint` is an existing directory that nothing is mounted
// on; the error says what to do.
Status CheckMountpoint(const std::string& mountpoint);

// Checks -o options the way the mount will (libfuse writes the one it
// refuses to stderr).
Status CheckMountOptions(const std::vector<std::string>& options);

// Blocks until the mount ends. REQUIRES: SIGINT, SIGTERM and SIGHUP are
// blocked in every thread of the process (block them before the Client is
// made); RunFuseMount waits for them itself.
Status RunFuseMount(Client& client, const FuseMountOptions& options);

// The signals RunFuseMount takes as "unmount and exit".
void BlockStopSignals();

// Unmounts a mount point (umount2 as root, else fusermount3 -u).
Status Unmount(const std::string& mountpoint, bool lazy);

// The absolute path of `path`, found without touching `path` itself (a stat
// of a mount point whose daemon hangs would hang too).
std::string AbsolutePath(const std::string& path);

// Whether a mount point is in this process's mount table (and its fs type).
bool IsMounted(const std::string& mountpoint, std::string* fstype = nullptr);

}  // namespace shoal::fuse
