// WorkerConnection: one blocking HTTP/1.1 keep-alive connection from a client
// to a worker, with a deadline on every step. Response bodies can be received
// straight into the caller's buffer (no intermediate copy).
//
// ConnectionPool keeps idle connections per worker for reuse.
//
// Thread safety: a WorkerConnection is used by one thread at a time;
// ConnectionPool is safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

using Deadline = std::chrono::steady_clock::time_point;

struct ResponseHead {
  int status = 0;
  uint64_t content_length = 0;
  bool keep_alive = true;
  std::string shoal_stat;  // the X-Shoal-Stat header (a /v1/open answer)
};

class WorkerConnection {
 public:
  static Result<std::unique_ptr<WorkerConnection>> Connect(const std::string& address, Deadline deadline);
  ~WorkerConnection();

  const std::string& address() const { return address_; }

  // Sends a request with no body: "GET /v1/read?... HTTP/1.1".
  Status SendRequest(std::string_view method, std::string_view target, Deadline deadline);
  Result<ResponseHead> ReadHead(Deadline deadline);
  // Receives exactly out.size() bytes of body.
  Status ReadBody(std::span<char> out, Deadline deadline);
  Result<std::string> ReadBodyString(uint64_t length, Deadline deadline);

  // True when the last response was fully read and the server keeps the connection.
  bool reusable() const { return reusable_; }

 private:
  WorkerConnection(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
  Status WaitFor(short events, Deadline deadline);
  // Bounds each blocking send/recv by what is left of the deadline.
  Status ArmTimeout(Deadline deadline);
  Status Fail(Code code, const std::string& what);

  int fd_;
  std::string address_;
  std::string buffered_;  // bytes received past the response head
  bool reusable_ = false;
};

class ConnectionPool {
 public:
  explicit ConnectionPool(size_t max_idle_per_worker = 16) : max_idle_(max_idle_per_worker) {}

  // An idle connection to `address`, or a new one.
  Result<std::unique_ptr<WorkerConnection>> Acquire(const std::string& address, Deadline deadline);
  // Returns a connection after use; kept only when reusable().
  void Release(std::unique_ptr<WorkerConnection> conn);
  // Drops idle connections to a worker that failed.
  void Forget(const std::string& address);

 private:
  size_t max_idle_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<WorkerConnection>>> idle_;
};

}  // namespace shoal
