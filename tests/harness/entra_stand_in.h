// A stand-in for Microsoft Entra ID and Azure managed identity, written from
// Microsoft's public documentation, on one loopback port (url()):
//
//   POST /{tenant}/oauth2/v2.0/token              the v2.0 token endpoint,
//        grant_type=client_credentials with client_secret, or with
//        client_assertion_type=...jwt-bearer and client_assertion (workload
//        identity); scope must be https://storage.azure.com/.default
//   GET  /metadata/identity/oauth2/token          instance metadata (IMDS),
//        api-version=2018-02-01; needs "Metadata: true" (400 without, as IMDS)
//   GET  /msi/token                               App Service's IDENTITY_ENDPOINT,
//        api-version=2019-08-01; needs X-IDENTITY-HEADER
//
// Managed identity paths need resource=https://storage.azure.com/ and take
// client_id= only for the user-assigned identity the test set. Tokens are
// JWT-shaped (base64url header.payload.signature, unsigned) with aud
// https://storage.azure.com, iss https://sts.windows.net/{tenant}/, iat, nbf
// and exp, as Azurite's `--oauth basic` check wants; each one is new (jti).
// Answers are shaped as each service answers: expires_in (a number) from
// v2.0, strings expires_in/expires_on from IMDS, expires_on from App Service.
// Errors never repeat a secret.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/http_server.h"

namespace shoal::testing {

class EntraStandIn {
 public:
  // What the next token requests get (every path):
  //   kServerError  500 with an OAuth error body
  //   kHang         no answer until the stand-in is destroyed (longer than any caller waits)
  //   kGarbage      200 with a body that is not a token answer
  //   kExpired      a token whose expiry has passed
  enum class Fault { kNone, kServerError, kHang, kGarbage, kExpired };
  struct Requests {
    int token = 0;        // v2.0 token endpoint
    int imds = 0;         // instance metadata
    int app_service = 0;  // IDENTITY_ENDPOINT
    int total() const { return token + imds + app_service; }
  };

  // Serves tenant `tenant` on a free loopback port; throws when it cannot listen.
  explicit EntraStandIn(std::string tenant);
  ~EntraStandIn();
  EntraStandIn(const EntraStandIn&) = delete;
  EntraStandIn& operator=(const EntraStandIn&) = delete;

  // http://127.0.0.1:PORT: AZURE_AUTHORITY_HOST and AZURE_POD_IDENTITY_AUTHORITY_HOST.
  std::string url() const;
  // url() + "/msi/token": IDENTITY_ENDPOINT.
  std::string identity_endpoint() const;

  // The service principal the token endpoint accepts: a client secret, and/or
  // a federated assertion (what the token file must hold).
  void SetClientSecret(std::string client_id, std::string secret);
  void SetFederatedAssertion(std::string client_id, std::string assertion);
  // X-IDENTITY-HEADER's value on the App Service path.
  void SetIdentityHeader(std::string header);
  // The user-assigned managed identity's client id ("" : only the system-assigned one).
  void SetUserAssignedClientId(std::string client_id);
  // Lifetime of the tokens issued from now on (default an hour).
  void SetLifetime(std::chrono::seconds lifetime);
  void SetFault(Fault fault);

  Requests requests() const;
  // The last token issued ("" before the first).
  std::string last_token() const;
  // The decoded claims (JSON text) of a token this stand-in issued; "" when it is not one.
  static std::string ClaimsOf(const std::string& token);

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace shoal::testing
