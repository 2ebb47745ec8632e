#include "worker/worker_id.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "common/config.h"

namespace shoal {

Result<std::string> LoadOrCreateWorkerId(const std::string& cache_dir) {
  const std::string path = cache_dir + "/worker.id";
  {
    std::ifstream in(path);
    if (in) {
      std::string id;
      std::getline(in, id);
      if (auto e = ParseWorkerEntry(id + "@127.0.0.1:1"); !e) {
        return Err(Code::kInvalidArgument, "worker id file '" + path + "' is damaged (" + e.error().message() +
                                               "); delete it to give this cache dir a new identity");
      }
      return id;
    }
  }
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "w-%08x%08x", rd(), rd());
  std::string id = buf;
  // Written under a temp name and linked into place: two workers racing on one
  // dir both end up with the id that won.
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Err(Code::kIo, "cannot create '" + tmp + "': " + std::strerror(errno));
  std::string line = id + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return Err(Code::kIo, "cannot write '" + tmp + "': " + std::strerror(errno));
  }
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc != 0 && err != EEXIST) return Err(Code::kIo, "cannot create '" + path + "': " + std::strerror(err));
  if (rc != 0) return LoadOrCreateWorkerId(cache_dir);
  return id;
}

}  // namespace shoal
