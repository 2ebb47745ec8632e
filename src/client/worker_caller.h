// WorkerCaller: one HTTP request to one worker, with the client's time limits
// and its judgement of what went wrong. The Router decides what to do next;
// this decides whether the worker itself failed.
//
// A request is bounded by the call's deadline, by client.connect_timeout for
// a new connection, and by client.response_timeout of silence (the worker
// heartbeats with `102 Processing` while it waits on the under-store, so a
// live worker is never silent that long). The first response on every new
// connection must carry the Shoal handshake naming the expected worker.
//
// The worker failed (WorkerReply::worker_failed: mark it down, go elsewhere)
// when it cannot be reached, is silent past the response timeout and not
// alive (below), breaks off or garbles a response, or fails the handshake.
// Any answer it gives, an error status included, is final. So is running out
// of time while the worker still heartbeats: it is alive and waiting on a slow
// store, and reading the store directly as well would only double the egress.
//
// Slow is not dead. A loaded machine can keep a live worker from answering
// (even its heartbeats) for longer than the response timeout. So silence alone
// fails nobody: a silent worker is alive when any answer of it arrived within
// the last response timeout (on any connection of this caller), or when it
// answers a health probe within half the response timeout. A live worker is
// waited for, up to the call's deadline (checking again after each silent
// period); a frozen one costs one response timeout plus half of one.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "client/worker_connection.h"
#include "common/config.h"
#include "security/tls_context.h"
#include "shoal/status.h"

namespace shoal {

// A worker's answer or the reason there was none.
struct WorkerReply {
  Status status;                // OK for a 2xx answer; the worker's error, or why there was no answer
  bool worker_failed = false;   // the worker failed (see above); status says why and names it
  std::string body;             // the body, unless it went to body_out
  std::string shoal_stat;       // X-Shoal-Stat of a /v1/open answer
  uint32_t hot = 0;             // X-Shoal-Hot of a read answer: the shard is hot (cluster/hot_shards.h)
};

class WorkerCaller {
 public:
  struct Options {
    std::chrono::milliseconds connect_timeout{1'000};
    std::chrono::milliseconds response_timeout{1'500};
    std::string secret;  // cluster.secret, sent with every request
    std::string token;   // a bearer token, sent instead of the secret when set
    // TLS to workers (client.tls, or for a worker's peer calls its tls files); null: plain TCP.
    std::shared_ptr<security::TlsContext> tls;
    // A client certificate is shown (tls's cert_file): an identity of its own.
    bool client_certificate = false;
    // Why the TLS settings (or the token) could not be loaded: every call fails with it
    // (never falls back to plain TCP).
    Status setup_error;
  };
  // The options `config` asks for: timeouts, the cluster secret, and TLS
  // (client.tls; for a worker's own config without client.tls, its tls
  // files, so that it trusts and shows its peers the same CA and
  // certificate). Contexts are shared per process, and so are their sessions.
  static Options OptionsFor(const Config& config);
  explicit WorkerCaller(Options options) : options_(std::move(options)) {}

  // Sends `method target` (with `request_body` when not empty) to `worker`
  // and reads the answer. A 2xx body goes into `body_out` when it is
  // non-empty (it must be exactly that long). `path` names what the request
  // is about, for messages.
  WorkerReply Call(const WorkerEntry& worker, std::string_view method, const std::string& target, Deadline deadline,
                   std::string_view path, std::span<char> body_out = {}, std::string_view request_body = {});

  // GET /v1/health on a new connection with short timeouts: OK when the
  // worker answers 200 as itself. For WorkerHealth's probe. `limit` bounds the
  // connect and the answer (default: connect_timeout and response_timeout).
  Status Probe(const WorkerEntry& worker, std::optional<std::chrono::milliseconds> limit = std::nullopt);

  // Whether a worker that has been silent since `since` (a request sent, a
  // wait begun) is alive (above): an answer of it arrived after `since`, or a
  // health probe with half the response timeout succeeds. An answer from
  // before the request proves nothing: the worker may have frozen since.
  bool Alive(const WorkerEntry& worker, std::chrono::steady_clock::time_point since);

  // Whether requests carry a credential of this client's own (token, cluster
  // secret, client certificate): only then may they name an end user.
  const std::string& token() const { return options_.token; }
  bool presents_credential() const {
    return !options_.token.empty() || !options_.secret.empty() || options_.client_certificate;
  }
  // Requests to workers that failed (Call only, not probes).
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  // Silent periods after which the worker was found alive and waited for.
  uint64_t slow_waits() const { return slow_waits_.load(std::memory_order_relaxed); }

 private:
  using Clock = std::chrono::steady_clock;
  Result<std::unique_ptr<WorkerConnection>> Connect(const WorkerEntry& worker, Deadline deadline) const;
  WorkerReply Failed(const WorkerEntry& worker, Status why);
  // A step on `conn` failed: true when it failed only by silence, time is left
  // and the worker is alive, so the step may be taken again.
  // `*since`: when the silence began; moved to now when the worker is found
  // alive, so that each further wait needs new evidence.
  bool WaitLonger(const WorkerConnection& conn, const WorkerEntry& worker, Deadline deadline, Clock::time_point* since);
  void Heard(const std::string& address);
  // The X-Shoal-On-Behalf-Of value for this thread's end user (common/end_user.h):
  // "" without one, or when this client has no credential of its own to vouch with.
  std::string OnBehalf() const;

  Options options_;
  ConnectionPool pool_;
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> slow_waits_{0};
  std::mutex heard_mu_;
  std::unordered_map<std::string, Clock::time_point> heard_;  // address -> when an answer of it last arrived
};

}  // namespace shoal
