#include "common/service_notify.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace shoal {
namespace {

// A datagram socket bound where systemd would listen; `name` starting with
// '@' is abstract.
class NotifySocket {
 public:
  explicit NotifySocket(std::string name) : name_(std::move(name)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, name_.data(), name_.size());
    if (name_[0] == '@') a.sun_path[0] = '\0';
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a),
                    static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size())) == 0;
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~NotifySocket() {
    ::close(fd_);
    if (name_[0] == '/') ::unlink(name_.c_str());
  }
  bool bound() const { return bound_; }
  std::string Receive() {
    char buf[512];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(ServiceNotifyTest, WithoutNotifySocketNothingIsSentAndNothingFails) {
  ScopedEnv env("NOTIFY_SOCKET", nullptr);
  EXPECT_TRUE(NotifyServiceManager("READY=1").ok());
}

TEST(ServiceNotifyTest, ReadyReachesAPathSocket) {
  std::string path = ::testing::TempDir() + "/notify-" + std::to_string(::getpid()) + ".sock";
  NotifySocket sock(path);
  ASSERT_TRUE(sock.bound()) << path;
  ScopedEnv env("NOTIFY_SOCKET", path.c_str());
  ASSERT_TRUE(NotifyServiceManager("READY=1\nSTATUS=serving").ok());
  EXPECT_EQ(sock.Receive(), "READY=1\nSTATUS=serving");
}

TEST(ServiceNotifyTest, ReadyReachesAnAbstractSocket) {
  std::string name = "@shoal-notify-test-" + std::to_string(::getpid());
  NotifySocket sock(name);
  ASSERT_TRUE(sock.bound()) << name;
  ScopedEnv env("NOTIFY_SOCKET", name.c_str());
  ASSERT_TRUE(NotifyServiceManager("READY=1").ok());
  EXPECT_EQ(sock.Receive(), "READY=1");
}

TEST(ServiceNotifyTest, AGoneOrMalformedSocketIsAnErrorNamingIt) {
  {
    ScopedEnv env("NOTIFY_SOCKET", "/nonexistent/notify.sock");
    auto st = NotifyServiceManager("READY=1");
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("/nonexistent/notify.sock"), std::string::npos) << st.message();
  }
  {
    ScopedEnv env("NOTIFY_SOCKET", "relative.sock");
    auto st = NotifyServiceManager("READY=1");
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("relative.sock"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace shoal
