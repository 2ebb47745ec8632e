// Mount points: finding them in the mount table, checking one before a
// mount, unmounting, and the mount's kernel read-ahead.
#include "fuse/mount_point.h"

#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "fuse/fuse_mount.h"

namespace shoal::fuse {
namespace {

// Mount points in /proc/self/mountinfo escape ' ', '\t', '\n' and '\\' as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string AbsolutePath(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
  std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  char buf[PATH_MAX];
  if (!::realpath(dir.c_str(), buf)) return p;
  std::string out = buf;
  if (name.empty() || name == ".") return out;
  return (out == "/" ? "" : out) + "/" + name;
}

namespace {

struct MountEntry {
  std::string fstype;
  std::string device;  // "major:minor"
};

// The mount on `mountpoint` in /proc/self/mountinfo.
std::optional<MountEntry> FindMount(const std::string& mountpoint) {
  const std::string want = AbsolutePath(mountpoint);
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  std::optional<MountEntry> found;
  while (std::getline(in, line)) {  // the last match is the one on top
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    if (Unescape(point) != want) continue;
    MountEntry e;
    e.device = dev;
    auto dash = line.find(" - ");
    std::istringstream rest(dash == std::string::npos ? "" : line.substr(dash + 3));
    rest >> e.fstype;
    found = e;
  }
  return found;
}

}  // namespace

void RaiseReadAhead(const std::string& mountpoint, unsigned kib) {
  auto m = FindMount(mountpoint);
  if (!m) return;
  std::string path = "/sys/class/bdi/" + m->device + "/read_ahead_kb";
  std::ofstream out(path);
  out << kib << "\n";
  out.flush();
  if (!out) {
    spdlog::info("kernel read-ahead left at its default: cannot write {} (needs root)", path);
  }
}

bool IsMounted(const std::string& mountpoint, std::string* fstype) {
  auto m = FindMount(mountpoint);
  if (m && fstype) *fstype = m->fstype;
  return m.has_value();
}

Status CheckMountpoint(const std::string& mp) {
  struct stat st;
  if (::stat(mp.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOTCONN) {
      return Status(Code::kInvalidArgument, "mount point " + mp +
                                                " is a FUSE mount whose daemon has gone: unmount it first "
                                                "(shoal fuse --unmount " +
                                                mp + ", or fusermount3 -u " + mp + ")");
    }
    if (e == ENOENT) {
      return Status(Code::kNotFound,
                    "mount point " + mp + " does not exist: create the directory first (mkdir -p " + mp + ")");
    }
    return Status(Code::kInvalidArgument, "cannot use mount point " + mp + ": " + std::strerror(e));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status(Code::kInvalidArgument, "mount point " + mp + " is not a directory: give a directory to mount on");
  }
  std::string type;
  if (IsMounted(mp, &type)) {
    return Status(Code::kInvalidArgument, "mount point " + mp + " is already mounted (" + type +
                                              "): unmount it first (shoal fuse --unmount " + mp + ", or umount " + mp +
                                              ")");
  }
  return {};
}

Status Unmount(const std::string& mountpoint, bool lazy) {
  const std::string mp = AbsolutePath(mountpoint);
  if (::geteuid() == 0) {
    if (::umount2(mp.c_str(), lazy ? MNT_DETACH : 0) == 0) return {};
    int e = errno;
    if (e == EBUSY) {
      return Status(Code::kUnavailable, "cannot unmount " + mp +
                                            ": it is busy (a process has a file open or its working directory "
                                            "there); close those, then unmount again");
    }
    if (e == EINVAL) return Status(Code::kNotFound, mp + " is not mounted");
    return Status(Code::kIo, "cannot unmount " + mp + ": " + std::strerror(e));
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    if (lazy) {
      ::execlp("fusermount3", "fusermount3", "-u", "-z", mp.c_str(), static_cast<char*>(nullptr));
    } else {
      ::execlp("fusermount3", "fusermount3", "-u", mp.c_str(), static_cast<char*>(nullptr));
    }
    ::_exit(127);
  }
  if (pid < 0) return Status(Code::kIo, std::string("cannot run fusermount3: ") + std::strerror(errno));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return Status(Code::kNotFound, "cannot unmount " + mp + ": fusermount3 is not installed (Debian package fuse3)");
  }
  return Status(Code::kIo, "fusermount3 -u " + mp + " failed (its message is above)");
}

}  // namespace shoal::fuse
