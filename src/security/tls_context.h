// TLS contexts: the one factory of OpenSSL contexts, for the server side
// (worker API, S3 endpoint) and the client side (clients, peer calls).
//
// Certificates rotate without a restart: Current() looks at the files' change
// times at most once a second, and when one changed it builds a new context
// from them; connections opened from then on use it, open ones finish on the
// old. A pair that does not load (a renewal half-written) keeps the old
// context in service and is tried again at the next look.
//
// Thread safety: every method is safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.h"
#include "shoal/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct ssl_session_st SSL_SESSION;

namespace shoal::security {

class TlsContext {
 public:
  enum class Side { kServer, kClient };
  // A server context needs cert_file and key_file; a client one verifies
  // servers against ca_file (the system's CAs when empty) and presents
  // cert_file/key_file when given. `what` names the settings in messages
  // ("tls", "client.tls").
  static Result<std::shared_ptr<TlsContext>> Create(Side side, const TlsConfig& files, std::string what);
  ~TlsContext();

  // The context for a new connection (reloaded first when the files changed).
  std::shared_ptr<SSL_CTX> Current();

  // The current certificate's expiry (Unix seconds; 0 when none) and subject.
  int64_t not_after() const;
  std::string subject() const;
  // Contexts built since Create because the files changed.
  uint64_t reloads() const;

  // Client side: a session to resume with `address` (null when none), and
  // the session a connection ended up with. Shortens reconnects (session
  // resumption) to one round trip without certificate checks.
  SSL_SESSION* TakeSession(const std::string& address);
  void PutSession(const std::string& address, SSL_SESSION* session);

 private:
  TlsContext(Side side, TlsConfig files, std::string what)
      : side_(side), files_(std::move(files)), what_(std::move(what)) {}
  Result<std::shared_ptr<SSL_CTX>> Build(int64_t* not_after, std::string* subject) const;
  std::string Stamp() const;

  const Side side_;
  const TlsConfig files_;
  const std::string what_;
  mutable std::mutex mu_;
  std::shared_ptr<SSL_CTX> ctx_;
  std::string stamp_;  // the files' identities and change times when ctx_ was built
  std::chrono::steady_clock::time_point next_look_;
  int64_t not_after_ = 0;
  std::string subject_;
  uint64_t reloads_ = 0;
  std::vector<std::pair<std::string, SSL_SESSION*>> sessions_;  // client side, a few recent addresses
};

// Sets the name the server's certificate must carry (an IP address or DNS
// name, from a host:port address) on a client connection.
Status ExpectServerName(SSL* ssl, const std::string& address);

// The last OpenSSL error as text ("" when none), clearing the queue.
std::string OpenSslError();

// Whether the kernel offers TLS offload (the `tls` module: kTLS).
bool KernelHasTls();

}  // namespace shoal::security
