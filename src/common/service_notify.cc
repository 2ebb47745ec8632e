#include "common/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

namespace shoal {

Status NotifyServiceManager(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || *path == '\0') return {};
  const std::string where = path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (where.size() >= sizeof(addr.sun_path) || (where[0] != '/' && where[0] != '@')) {
    return Status(Code::kInvalidArgument,
                  "NOTIFY_SOCKET=" + where + " is neither an absolute path nor an abstract name (@NAME) that fits");
  }
  std::memcpy(addr.sun_path, where.data(), where.size());
  if (where[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + where.size());
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Status(Code::kIo, std::string("cannot create a socket to notify systemd: ") + std::strerror(errno));
  ssize_t n;
  do {
    n = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (n < 0) {
    return Status(Code::kIo, "cannot notify the service manager at NOTIFY_SOCKET=" + where + ": " + std::strerror(err));
  }
  return {};
}

}  // namespace shoal
