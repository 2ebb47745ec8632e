// A stand-in for Google's credential endpoints, written from Google's public
// docs, on one loopback HTTP server:
//
//   the GCE/GKE metadata server (requests without `Metadata-Flavor: Google`
//   get 403; answers carry that header too):
//     GET /                                                         200 (google-auth's ping)
//     GET /computeMetadata/v1/project/project-id                    "shoal-stand-in"
//     GET /computeMetadata/v1/instance/service-accounts/default/    ?recursive=true: email, scopes
//     GET /computeMetadata/v1/instance/service-accounts/default/token
//     (and the same two under the account's email in place of "default")
//   the OAuth 2.0 token endpoint (a service account's token_uri):
//     POST /token  grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT
//                  the JWT's RS256 signature is checked with the PUBLIC half of
//                  the key pair this stand-in generated, and its kid, iss
//                  (client_email), aud (this token_uri), iat and exp;
//                  grant_type=refresh_token&client_id&client_secret&refresh_token
//                  checked against the authorized user this stand-in made up.
//   Refusals are 400/401 {"error", "error_description"} as Google's are.
//
// Tokens live `lifetime` seconds. Either endpoint can fail on demand (Fault).
// Use ServiceAccountJson() / AuthorizedUserJson() for key files a client
// reads, and Accepts() to check that a token a client holds came from here.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/http_server.h"

namespace shoal::testing {

class GcpStandIn {
 public:
  enum class Endpoint { kMetadata, kToken };
  enum class Fault {
    kNone,
    kServerError,  // 500
    kHang,         // no answer until the stand-in is destroyed
    kGarbage,      // 200 with a body that is not a token answer
    kExpired,      // 200 with a token whose expires_in is in the past
  };
  struct Issued {
    std::string token;
    std::string grant;    // "metadata", "jwt-bearer", "refresh_token"
    std::string subject;  // the JWT's iss, the client_id, or the metadata email
    std::string scope;    // the JWT's scope claim, or the metadata ?scopes=
    std::string key_id;   // the JWT header's kid
  };

  // Generates an RSA-2048 key pair and listens on a free loopback port;
  // throws std::runtime_error when it cannot.
  GcpStandIn();
  ~GcpStandIn();
  GcpStandIn(const GcpStandIn&) = delete;
  GcpStandIn& operator=(const GcpStandIn&) = delete;

  std::string host() const;       // "127.0.0.1:PORT": GCE_METADATA_HOST
  std::string token_uri() const;  // "http://127.0.0.1:PORT/token"
  std::string client_email() const { return client_email_; }
  std::string key_id() const { return key_id_; }
  std::string private_key_pem() const { return private_key_pem_; }  // PKCS#8
  std::string client_id() const { return client_id_; }
  std::string client_secret() const { return client_secret_; }
  std::string refresh_token() const { return refresh_token_; }

  // A service account key file's JSON, as IAM hands it out, for this
  // stand-in's key pair and token_uri.
  std::string ServiceAccountJson() const;
  // gcloud's authorized_user file, with token_uri pointing here.
  std::string AuthorizedUserJson() const;
  // A fresh RSA-2048 private key (PKCS#8 PEM) this stand-in does not know.
  static std::string NewRsaKeyPem();

  void SetLifetime(std::chrono::seconds lifetime);
  void SetFault(Endpoint endpoint, Fault fault);

  int metadata_requests() const;  // token requests to the metadata path, any answer
  int token_requests() const;     // POST /token, any answer
  int issued_count() const;
  Issued last_issued() const;
  // Why the last refused request was refused ("" when none was).
  std::string last_refusal() const;
  // Whether `token` was issued here and has not expired.
  bool Accepts(const std::string& token) const;

 private:
  struct Keys;
  void ServeMetadata(const net::HttpRequest& request, net::Responder responder);
  void ServeToken(const net::HttpRequest& request, net::Responder responder);
  // Answers `responder` as `fault` says; false when there is no fault.
  bool ApplyFault(Fault fault, net::Responder& responder);
  net::HttpResponse Issue(std::string grant, std::string subject, std::string scope = "", std::string key_id = "");
  net::HttpResponse Refuse(int status, std::string error, std::string description);

  std::shared_ptr<Keys> keys_;
  std::string client_email_, key_id_, private_key_pem_;
  std::string client_id_, client_secret_, refresh_token_;

  mutable std::mutex mu_;
  std::chrono::seconds lifetime_{3600};
  Fault metadata_fault_ = Fault::kNone;
  Fault token_fault_ = Fault::kNone;
  int metadata_requests_ = 0;
  int token_requests_ = 0;
  uint64_t next_token_ = 1;
  std::map<std::string, std::chrono::system_clock::time_point> issued_;  // token -> expiry
  Issued last_issued_;
  std::string last_refusal_;
  std::vector<net::Responder> held_;  // kHang: answered only at destruction
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace shoal::testing
