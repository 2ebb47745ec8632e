#include "tests/s3_endpoint_raw.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

namespace shoal::testing {
namespace {

using Clock = std::chrono::steady_clock;

class Socket {
 public:
  explicit Socket(const std::string& address) {
    auto colon = address.rfind(':');
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
    if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return;
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  bool Send(const std::string& bytes) {
    for (size_t done = 0; done < bytes.size();) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Receives more bytes into `in` before the deadline; false on timeout, EOF or error.
  bool Recv(std::string* in, Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in->append(buf, static_cast<size_t>(n));
    return true;
  }

 private:
  int fd_ = -1;
};

}  // namespace

std::optional<RawAnswer> Exchange(const std::string& address, const std::string& request) {
  Socket s(address);
  if (!s.ok() || !s.Send(request)) return std::nullopt;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  std::string in;
  size_t head_end;
  while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
    if (!s.Recv(&in, deadline)) return std::nullopt;
  }
  RawAnswer a;
  a.status = std::stoi(in.substr(9, 3));
  size_t length = 0;
  auto cl = in.find("Content-Length: ");
  if (cl != std::string::npos && cl < head_end) length = std::stoul(in.substr(cl + 16));
  while (in.size() < head_end + 4 + length) {
    if (!s.Recv(&in, deadline)) return std::nullopt;
  }
  a.body = in.substr(head_end + 4, length);
  return a;
}

bool SendAndHangUp(const std::string& address, const std::string& request) {
  Socket s(address);
  if (!s.ok() || !s.Send(request)) return false;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  std::string in;
  while (in.find("\r\n\r\n") == std::string::npos) {
    if (!s.Recv(&in, deadline)) return false;
  }
  return true;  // the socket closes with the body unread
}

}  // namespace shoal::testing
