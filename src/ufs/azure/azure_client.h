// AzureClient: Blob service requests for AzureStore. It adds the version and
// date headers, authorizes each attempt (Shared Key signature, SAS query, or
// an Entra ID bearer token taken from the mount's CredentialCache anew for
// every attempt, so a refreshed token is used as soon as it is there),
// retries throttling, 5xx and connection failures with backoff and jitter
// within the request deadline, and maps error answers to Status codes whose
// messages name the blob or container and what to do. Secrets never appear
// in a message.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ufs/azure/azure_auth.h"
#include "ufs/cloud/credential_cache.h"
#include "ufs/http/http_transport.h"
#include "ufs/mount_options.h"
#include "ufs/uri.h"

namespace shoal {

struct MountConfig;

struct AzureSettings {
  AzureCredentials creds;
  AzureAuth auth = AzureAuth::kAnonymous;
  // The mount's credentials, whatever they are (shared keys and SAS too, as a
  // provider that never expires), for bearer tokens and `shoal status`.
  std::shared_ptr<cloud::CredentialCache> credentials;
  std::string key_bytes;   // decoded account key ("" without Shared Key)
  std::string container;
  std::string prefix;      // blob-name prefix of the mount root ("" or ending in '/')
  std::string uri;         // az://container/prefix/, for messages
  std::string mount_path;  // for messages
  std::string ca_file;
  uint64_t block_size = 8ull << 20;         // Put Block size for large writes
  uint64_t upload_threshold = 32ull << 20;  // writes up to this size are one Put Blob
  int upload_concurrency = 4;               // blocks in flight per writer
  std::chrono::milliseconds request_timeout{60'000};  // one call, retries included
  int max_retries = 3;
  bool posix_attributes = false;  // modes, owners and times in blob metadata (ufs/posix_metadata.h)
};

// The options of az:// mounts.
OptionTable AzureOptions();

// Reads the mount options (AzureOptions()), checks the container name and
// resolves the credentials (ChooseAzureIdentity). With `start_credentials`
// the chosen provider's CredentialCache is started, which fetches an Entra ID
// token (the chain may probe instance metadata); without, no request is made
// and `credentials` stays null (for config validation).
Result<AzureSettings> ParseAzureSettings(const UfsUri& uri, const MountConfig& mount, const EnvLookup& env,
                                         bool start_credentials = true);

class AzureClient {
 public:
  explicit AzureClient(AzureSettings s) : s_(std::move(s)) {}
  const AzureSettings& settings() const { return s_; }

  // URL of a blob given its full name in the container (prefix included).
  std::string BlobUrl(std::string_view blob_name) const;
  std::string ContainerUrl() const;

  // Sends `req` (url without the SAS), authorized, with retries. Any HTTP
  // status is a value; transport failures and timeouts are errors.
  Result<HttpResponse> Send(HttpRequest req) const;

  // A Status for a non-2xx answer to `what` (e.g. "read") on `blob_name`.
  Status ErrorFor(const HttpResponse& resp, std::string_view what, std::string_view blob_name) const;

  // "az://container/name", for messages.
  std::string Display(std::string_view blob_name) const;

 private:
  std::string Redact(std::string text) const;
  std::string PermissionAdvice() const;

  AzureSettings s_;
};

}  // namespace shoal
