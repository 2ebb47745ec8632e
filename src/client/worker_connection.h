// WorkerConnection: one blocking HTTP/1.1 keep-alive connection from a client
// to a worker, with time limits on every step. Response bodies can be received
// straight into the caller's buffer (no intermediate copy).
//
// Every step is bounded twice: by the call's deadline, and by a silence limit
// (client.response_timeout): the longest the peer may send nothing at all. A
// worker sends `102 Processing` interim responses while it waits on the
// under-store; ReadHead skips them (each one is a sign of life, so the silence
// limit starts again) and counts them. last_failure() tells a hung peer
// (silent) from a call that ran out of time (deadline).
//
// Every request carries `X-Shoal-Protocol: 1`; the head reports the worker's
// X-Shoal-Protocol and X-Shoal-Worker for the caller's handshake check
// (docs/protocol.md). Every send uses MSG_NOSIGNAL.
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

typedef struct ssl_st SSL;

namespace shoal {

namespace security {
class TlsContext;
}

using Deadline = std::chrono::steady_clock::time_point;

// Time limits of one step: the call's deadline, and how long the peer may stay
// silent (no byte) before it is taken as hung. A bare deadline allows silence
// up to the deadline.
struct Limits {
  Limits(Deadline d, std::chrono::milliseconds s = std::chrono::milliseconds::max()) : deadline(d), silence(s) {}
  Deadline deadline;
  std::chrono::milliseconds silence;
};

struct ResponseHead {
  int status = 0;
  uint64_t content_length = 0;
  bool keep_alive = true;
  std::string shoal_stat;      // the X-Shoal-Stat header (a /v1/open answer)
  std::string shoal_protocol;  // X-Shoal-Protocol ("" when absent)
  std::string shoal_worker;    // X-Shoal-Worker: the worker's id ("" when absent)
  uint32_t shoal_hot = 0;      // X-Shoal-Hot: spread reads of this shard over that many workers (0: absent)
  uint32_t interim = 0;        // 1xx interim responses (heartbeats) skipped before this head
};

class WorkerConnection {
 public:
  // `deadline` bounds the TCP connect and, with `tls`, the TLS handshake
  // (the worker's certificate must chain to tls's CAs and name the host).
  static Result<std::unique_ptr<WorkerConnection>> Connect(const std::string& address, Deadline deadline,
                                                           security::TlsContext* tls = nullptr);
  // Sent as `Authorization: Bearer SECRET` on every request (a token, or
  // cluster.secret); "" sends none.
  void set_secret(std::string_view secret) {
    if (secret_ != secret) secret_ = secret;
  }
  // Sent as X-Shoal-On-Behalf-Of on the next requests (common/end_user.h);
  // "" sends none.
  void set_on_behalf(std::string value) { on_behalf_ = std::move(value); }
  ~WorkerConnection();

  const std::string& address() const { return address_; }

  // Sends a request: "GET /v1/read?... HTTP/1.1", with `body` (and its
  // Content-Length) when not empty.
  Status SendRequest(std::string_view method, std::string_view target, Limits limits, std::string_view body = {});
  // The final response's head, after any 1xx interim responses (at most
  // kMaxInterim of them). After a kSilent failure it may be called again: the
  // part of the head already received is kept.
  Result<ResponseHead> ReadHead(Limits limits);
  // Receives exactly out.size() bytes of body. After a kSilent failure,
  // body_received() bytes of `out` are filled; the rest may be asked again.
  Status ReadBody(std::span<char> out, Limits limits);
  size_t body_received() const { return body_received_; }
  Result<std::string> ReadBodyString(uint64_t length, Limits limits);

  // Checks the handshake on the connection's first response head: it must
  // carry X-Shoal-Protocol: 1 and X-Shoal-Worker, equal to `id` unless `id`
  // is empty (the config names the worker by its address alone). A peer that
  // fails it is kNotShoal.
  void ExpectHandshake(std::string id);
  // The X-Shoal-Request-Id the last SendRequest carried: errors the user
  // sees end with it, as the worker's log line and audit entry do.
  const std::string& request_id() const { return request_id_; }

  // True when the last response was fully read and the server keeps the connection.
  bool reusable() const { return reusable_; }
  // How the last failed step failed.
  enum class Failure {
    kNone,
    kDeadline,  // the call's deadline passed
    kSilent,    // the peer sent nothing for the silence limit: hung
    kClosed,    // the peer closed or reset the connection
    kNotShoal,  // the peer failed the handshake: not a Shoal worker, or another one
    kOther,     // malformed answer, local error
  };
  Failure last_failure() const { return failure_; }
  // Interim responses received for the response being read (also after a failed ReadHead).
  uint32_t interim_seen() const { return interim_; }

  static constexpr uint32_t kMaxInterim = 1000;

 private:
  WorkerConnection(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
  Status Handshake(security::TlsContext* tls, Deadline deadline);
  // send(2)/recv(2), through TLS on a TLS connection: the count, or -1 with
  // errno (EAGAIN when SO_SNDTIMEO/SO_RCVTIMEO ran out); recv 0 at the end.
  ssize_t Send(const char* data, size_t len);
  ssize_t Recv(char* data, size_t len, bool wait_all);
  Status WaitFor(short events, Deadline deadline);
  // Bounds the next blocking send/recv by the silence limit and the deadline.
  Status Arm(const Limits& limits);
  // A receive or send timed out (EAGAIN after Arm): which limit it was.
  Status TimedOut(const char* doing);
  Status Fail(Code code, const std::string& what, Failure kind = Failure::kOther);
  Status CheckHandshake(const ResponseHead& h);

  int fd_;
  SSL* ssl_ = nullptr;                   // on a TLS connection
  security::TlsContext* tls_ = nullptr;  // which keeps the session for the next connection
  std::string address_;
  std::string request_id_;  // X-Shoal-Request-Id of the last request sent
  std::string secret_;
  std::string on_behalf_;
  std::string buffered_;  // bytes received past the response head
  bool reusable_ = false;
  uint64_t responses_ = 0;
  uint32_t interim_ = 0;
  size_t body_received_ = 0;
  Failure failure_ = Failure::kNone;
  bool expect_handshake_ = false;
  std::string expected_id_;
  bool armed_for_deadline_ = false;  // the last Arm() was cut by the deadline, not the silence limit
  std::chrono::milliseconds armed_{0};
};

class ConnectionPool {
 public:
  explicit ConnectionPool(size_t max_idle_per_worker = 16) : max_idle_(max_idle_per_worker) {}

  // An idle connection to `address`, or a new one (over TLS with `tls`).
  Result<std::unique_ptr<WorkerConnection>> Acquire(const std::string& address, Deadline deadline,
                                                    security::TlsContext* tls = nullptr);
  // An idle connection to `address`, or null.
  std::unique_ptr<WorkerConnection> TakeIdle(const std::string& address);
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
