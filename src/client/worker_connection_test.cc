#include "client/worker_connection.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace shoal {
namespace {

using namespace std::chrono_literals;

// A loopback listener on port 0 that accepts and then does what the test says.
class TestServer {
 public:
  TestServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd_, 8);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    address_ = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  }
  ~TestServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
    for (int c : conns_) ::close(c);
  }
  // Accepts one connection, reads the request, then sends `reply` (and closes when `close_after`).
  void Serve(std::string reply, bool close_after) {
    thread_ = std::thread([this, reply, close_after] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      auto n = ::recv(c, buf, sizeof buf, 0);
      if (n > 0) request_.assign(buf, static_cast<size_t>(n));
      if (!reply.empty()) [[maybe_unused]] auto w = ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      if (close_after) ::close(c);
      else conns_.push_back(c);
    });
  }
  const std::string& address() const { return address_; }
  // The request received. REQUIRES: the client has read the reply.
  const std::string& request() const { return request_; }

 private:
  int fd_;
  std::string request_;
  std::string address_;
  std::thread thread_;
  std::vector<int> conns_;
};

Deadline In(std::chrono::milliseconds d) { return std::chrono::steady_clock::now() + d; }

TEST(WorkerConnection, ReadsAResponseIntoTheCallersBuffer) {
  TestServer s;
  s.Serve("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false);
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/read", In(5s)).ok());
  auto head = (*c)->ReadHead(In(5s));
  ASSERT_TRUE(head) << head.error().ToString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->content_length, 5u);
  char buf[5];
  ASSERT_TRUE((*c)->ReadBody(buf, In(5s)).ok());
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_TRUE((*c)->reusable());
}

TEST(WorkerConnection, SilentWorkerTimesOutNotHangs) {
  TestServer s;
  s.Serve("", false);  // accepts, reads, never answers
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/stat", In(5s)).ok());
  auto start = std::chrono::steady_clock::now();
  auto head = (*c)->ReadHead(In(300ms));
  ASSERT_FALSE(head);
  EXPECT_EQ(head.error().code(), Code::kTimeout);
  EXPECT_NE(head.error().message().find(s.address()), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(WorkerConnection, ShortBodyIsAnErrorAndNotReusable) {
  TestServer s;
  s.Serve("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", true);
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/read", In(5s)).ok());
  ASSERT_TRUE((*c)->ReadHead(In(5s)));
  char buf[100];
  auto st = (*c)->ReadBody(buf, In(5s));
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("9 of 100"), std::string::npos) << st.message();
  EXPECT_FALSE((*c)->reusable());
}

TEST(WorkerConnection, RefusedConnectionIsUnavailable) {
  std::string addr;
  {
    TestServer s;  // bound then closed: nothing listens on the port now
    addr = s.address();
  }
  auto c = WorkerConnection::Connect(addr, In(2s));
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), Code::kUnavailable);
  EXPECT_NE(c.error().message().find(addr), std::string::npos);
}

TEST(WorkerConnection, SendsTheProtocolHeader) {
  TestServer s;
  s.Serve("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false);
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/health", In(5s)).ok());
  ASSERT_TRUE((*c)->ReadHead(In(5s)));
  EXPECT_NE(s.request().find("\r\nX-Shoal-Protocol: 1\r\n"), std::string::npos) << s.request();
}

TEST(WorkerConnection, InterimResponsesAreSkippedAndCounted) {
  TestServer s;
  const std::string beat = "HTTP/1.1 102 Processing\r\nX-Shoal-Protocol: 1\r\nX-Shoal-Worker: w1\r\n\r\n";
  s.Serve(beat + beat + beat +
              "HTTP/1.1 200 OK\r\nX-Shoal-Protocol: 1\r\nX-Shoal-Worker: w1\r\nContent-Length: 2\r\n\r\nok",
          false);
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c);
  (*c)->ExpectHandshake("w1");
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/read", In(5s)).ok());
  auto head = (*c)->ReadHead(In(5s));
  ASSERT_TRUE(head) << head.error().ToString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->interim, 3u);
  EXPECT_EQ(head->shoal_worker, "w1");
  char buf[2];
  ASSERT_TRUE((*c)->ReadBody(buf, In(5s)).ok());
}

TEST(WorkerConnection, ForeignServerFailsTheHandshake) {
  TestServer s;
  s.Serve("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nNot Found", false);
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c);
  (*c)->ExpectHandshake("");
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/stat", In(5s)).ok());
  auto head = (*c)->ReadHead(In(5s));
  ASSERT_FALSE(head);
  EXPECT_EQ(head.error().code(), Code::kUnavailable);
  EXPECT_EQ((*c)->last_failure(), WorkerConnection::Failure::kNotShoal);
  EXPECT_NE(head.error().message().find(s.address() + " is not a Shoal worker (it answered HTTP 404 without the Shoal handshake)"),
            std::string::npos)
      << head.error().message();
}

TEST(WorkerConnection, AnotherWorkerFailsTheHandshake) {
  TestServer s;
  s.Serve("HTTP/1.1 200 OK\r\nX-Shoal-Protocol: 1\r\nX-Shoal-Worker: w2\r\nContent-Length: 0\r\n\r\n", false);
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c);
  (*c)->ExpectHandshake("w1");
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/stat", In(5s)).ok());
  auto head = (*c)->ReadHead(In(5s));
  ASSERT_FALSE(head);
  EXPECT_NE(head.error().message().find(s.address() + " is worker w2, not w1"), std::string::npos)
      << head.error().message();
}

TEST(WorkerConnection, SilenceIsAHungPeerAndTheDeadlineIsNot) {
  TestServer s;
  s.Serve("", false);  // accepts, reads, never answers
  auto c = WorkerConnection::Connect(s.address(), In(5s));
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->SendRequest("GET", "/v1/stat", In(5s)).ok());
  // Silence limit shorter than the deadline: hung.
  auto head = (*c)->ReadHead(Limits(In(30s), 200ms));
  ASSERT_FALSE(head);
  EXPECT_EQ((*c)->last_failure(), WorkerConnection::Failure::kSilent);
  EXPECT_EQ(head.error().code(), Code::kUnavailable);
  EXPECT_NE(head.error().message().find("client.response_timeout"), std::string::npos) << head.error().message();
  // Deadline shorter than the silence limit: out of time, not hung.
  auto again = (*c)->ReadHead(Limits(In(200ms), 30s));
  ASSERT_FALSE(again);
  EXPECT_EQ((*c)->last_failure(), WorkerConnection::Failure::kDeadline);
  EXPECT_EQ(again.error().code(), Code::kTimeout);
}

TEST(ConnectionPool, ReusesOnlyReusableConnections) {
  TestServer s;
  s.Serve("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false);
  ConnectionPool pool;
  auto c = pool.Acquire(s.address(), In(5s));
  ASSERT_TRUE(c);
  auto* raw = c->get();
  ASSERT_TRUE((*c)->SendRequest("GET", "/", In(5s)).ok());
  ASSERT_TRUE((*c)->ReadHead(In(5s)));
  char buf[2];
  ASSERT_TRUE((*c)->ReadBody(buf, In(5s)).ok());
  pool.Release(std::move(*c));
  auto again = pool.Acquire(s.address(), In(5s));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get(), raw);
}

}  // namespace
}  // namespace shoal
