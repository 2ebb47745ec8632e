// LocalServer: the worker's end of short-circuit reads (common/local_wire.h).
//
// Listens on a SOCK_SEQPACKET UNIX socket. Only processes of the worker's own
// user may connect (SO_PEERCRED, and the socket's directory is 0700), and each
// connection must first present the worker's instance token. Every later
// request goes to the handler, whose reply is sent with the page fds it
// returns. A thread per connection: short-circuit clients are the few
// processes on this host, and each request is a lookup, never I/O to a UFS.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/page_store.h"
#include "common/local_wire.h"
#include "shoal/status.h"

namespace shoal {

class LocalServer {
 public:
  // Fills the reply; the fds of `pages` are sent along, one per reply segment.
  using Handler = std::function<local_wire::Reply(const local_wire::Request&, std::vector<PageRef>* pages)>;

  // Listens on `path`, replacing a stale socket file left by a dead worker but
  // never a live one. `epoch_fd` (>= 0; not taken, it must outlive the
  // server) is passed with every accepted hello (local_wire.h).
  // A connection that sends no hello within `hello_deadline` is closed; at
  // kMaxConnections (256) open, a new one takes the place of the one idle
  // longest (never-greeted ones first), whose client connects again when it
  // next asks.
  static Result<std::unique_ptr<LocalServer>> Start(const std::string& path, std::string token, Handler handler,
                                                    int epoch_fd = -1,
                                                    std::chrono::milliseconds hello_deadline = std::chrono::seconds(5));
  // The path "auto" stands for: $TMPDIR/shoal-sockets-UID/worker-PORT.sock (directory made 0700).
  static Result<std::string> AutoPath(unsigned port);

  ~LocalServer();  // stops: closes every connection and joins its threads; removes the socket file
  const std::string& path() const;

  class Impl;

 private:
  explicit LocalServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal
