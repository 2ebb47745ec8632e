// Azure Blob credentials and request signing.
//
// Credentials come from the mount options (account, key, sas_token, endpoint,
// connection_string) or, when the mount names neither account nor
// connection_string, from the standard environment variables
// (AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with
// AZURE_STORAGE_KEY / AZURE_STORAGE_SAS_TOKEN).
//
// Which of them a mount uses is its option `credentials` (ChooseAzureIdentity):
// `auto` takes the shared key, else the SAS, else an Entra ID bearer token
// (ufs/cloud/azure_credentials.h); a name picks one.
//
// Shared Key signing follows the Blob service's "Authorize with Shared Key"
// rules (version 2015-02-21 and later: a zero Content-Length signs as empty).
// Nothing here logs or returns a key or SAS token in a message.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/status.h"
#include "ufs/cloud/credential_cache.h"

namespace shoal {

struct HttpRequest;

struct AzureCredentials {
  std::string account;
  std::string key;        // base64 account key; "" when not using Shared Key
  std::string sas_token;  // query string without the leading '?'; "" when not using SAS
  std::string endpoint;   // blob endpoint, no trailing '/': https://acct.blob.core.windows.net
  // Where the key and the SAS came from, for messages and `shoal status`
  // ("option key", "AZURE_STORAGE_SAS_TOKEN", ...), never their values.
  std::string key_from;
  std::string sas_from;
  bool key_in_connection_string = false;
  bool sas_in_connection_string = false;
};

// Looks up an environment variable (injectable for tests).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

// "DefaultEndpointsProtocol=https;AccountName=..;AccountKey=..;EndpointSuffix=..",
// with optional BlobEndpoint= and SharedAccessSignature=, or UseDevelopmentStorage=true.
Result<AzureCredentials> ParseConnectionString(std::string_view cs);

// Resolves the credentials of a mount as described at the top of this file.
// The endpoint defaults to https://<account>.blob.core.windows.net.
Result<AzureCredentials> ResolveAzureCredentials(const std::map<std::string, std::string>& options,
                                                 const EnvLookup& env);

// How a mount's requests are authorized.
enum class AzureAuth { kSharedKey, kSas, kBearer, kAnonymous };

struct AzureIdentity {
  AzureAuth auth = AzureAuth::kAnonymous;
  // What the mount's CredentialCache holds: an Entra ID provider, or a fixed
  // one named "shared-key", "sas", "connection-string" or "anonymous".
  std::unique_ptr<cloud::Provider> provider;
  cloud::Secret first;  // the provider's first secret (empty for the fixed ones)
};

// Picks how a mount with `creds` (ResolveAzureCredentials) authorizes, from
// its option `credentials` (`choice`; "" means auto): auto takes the shared
// key, else the SAS, else the Entra ID chain (client-secret,
// workload-identity, managed-identity), and when none applies fails with
// RunChain's error listing each and why; a name takes that one or says what it
// lacks. Fetches an Entra ID provider's first token. `uri` is for messages.
Result<AzureIdentity> ChooseAzureIdentity(const AzureCredentials& creds, std::string_view choice, const EnvLookup& env,
                                          std::string_view uri);
// ChooseAzureIdentity's checks that need no request: a named provider has
// what it needs. For config validation.
Status CheckAzureIdentity(const AzureCredentials& creds, std::string_view choice, const EnvLookup& env);

Result<std::string> Base64Decode(std::string_view in);
std::string Base64Encode(std::string_view in);
// base64(HMAC-SHA256(key, data)).
std::string HmacSha256Base64(std::string_view key, std::string_view data);

// The Shared Key string-to-sign of a request: method, standard headers,
// canonicalized x-ms-* headers and the canonicalized resource built from the
// URL's path and query.
std::string SharedKeyStringToSign(std::string_view account, std::string_view method, std::string_view url,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  size_t content_length);

// Adds "Authorization: SharedKey <account>:<signature>" to `req` (which must
// already carry x-ms-date and x-ms-version). `key` is the decoded account key.
void SignSharedKey(HttpRequest& req, std::string_view account, std::string_view key);

// The RFC 1123 date Azure expects in x-ms-date: "Sun, 11 Oct 2009 21:49:13 GMT".
std::string HttpDate(std::chrono::system_clock::time_point t);
// Parses an RFC 1123 date; 0 when malformed. Returns ns since the epoch.
int64_t ParseHttpDate(std::string_view s);

// An account SAS token (services "b", resource types "sco") signed with the
// base64 account key, e.g. permissions "rwdlac", expiry "2030-01-01T00:00:00Z".
Result<std::string> MakeAccountSas(std::string_view account, std::string_view key_base64, std::string_view permissions,
                                   std::string_view expiry, std::string_view version = "2021-08-06");

}  // namespace shoal
