// Test helpers that speak HTTP to a worker byte by byte.
//
// RawConnection: a plain TCP connection for tests that need control over every
// byte (partial requests, never reading, reading one byte and closing). Every
// wait is bounded by a timeout and wakes on the socket (poll), never sleeps.
//
// HeldS3: a minimal S3 endpoint on loopback whose answers the test releases,
// so a worker can be caught waiting on its under-store without sleeps.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/config.h"

namespace shoal::testing {

using Millis = std::chrono::milliseconds;

class RawConnection {
 public:
  // A connection to "127.0.0.1:PORT", or nullptr.
  static std::unique_ptr<RawConnection> Connect(const std::string& address);
  ~RawConnection();

  int fd() const { return fd_; }
  bool Send(std::string_view bytes);
  // Receives until `needle` occurs `count` times in what was received.
  bool ReadUntil(std::string_view needle, Millis timeout, size_t count = 1);

  struct Response {
    int status = 0;
    std::string head;  // status line and headers, up to the blank line
    std::string body;
    std::string Header(std::string_view name) const;  // "" when absent
  };
  // Takes one response (an interim 1xx, or a final one with its
  // Content-Length body) off the front of what was received.
  std::optional<Response> ReadResponse(Millis timeout);
  // True once the peer has closed the connection (EOF or reset).
  bool WaitClosed(Millis timeout);
  // shutdown(SHUT_WR): the peer sees the end of the request stream (FIN).
  void ShutdownWrite();
  // close(2) now: with unread bytes queued, the peer gets a reset.
  void Close();

  const std::string& received() const { return in_; }

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  // Receives what arrives before `deadline`; false on timeout or when closed.
  bool RecvSome(std::chrono::steady_clock::time_point deadline);

  int fd_;
  std::string in_;
  bool closed_ = false;
};

// "GET target HTTP/1.1" with a Host header and `extra` header lines ("Name: value\r\n...").
std::string HttpGet(const std::string& target, const std::string& extra = "");

// Serves one object at any key: ranged GETs (206, ETag "v1"), each answer
// held until Release(). One request per connection, a thread per connection.
class HeldS3 {
 public:
  explicit HeldS3(std::string object);
  ~HeldS3();  // releases everything and joins

  // A mount `path` -> s3://bucket/prefix/ on this endpoint, without retries.
  MountConfig Mount(const std::string& path) const;

  size_t requests() const { return requests_.load(); }
  // Waits until at least n requests have arrived.
  bool WaitForRequests(size_t n, Millis timeout);
  void Hold();     // later answers wait (the initial state)
  void Release();  // answers go out, now and later, until Hold()
  void Fail(bool fail);  // answers are 500 InternalError

 private:
  void AcceptLoop();
  void Serve(int fd);
  std::string Answer(const std::string& request);

  std::string object_;
  int listen_fd_ = -1, port_ = 0, stop_[2] = {-1, -1};
  std::atomic<size_t> requests_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = true, fail_ = false, stopping_ = false;
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // guarded by mu_
};

}  // namespace shoal::testing
