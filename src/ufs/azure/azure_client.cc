#include "ufs/azure/azure_client.h"

#include <algorithm>
#include <cstdlib>

#include "common/config.h"
#include "common/units.h"
#include "ufs/azure/azure_xml.h"
#include "ufs/cloud/azure_credentials.h"
#include "ufs/http/retry.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

// The REST version we speak (bearer tokens need 2017-11-09 or later); Azurite
// runs with --skipApiVersionCheck in tests.
constexpr const char* kApiVersion = "2021-08-06";

bool IsTransient(long s) { return s == 500 || s == 502 || s == 503 || s == 504 || s == 429 || s == 408; }

// The options of az:// mounts.
constexpr OptionSpec kOptions[] = {
    option::Text("account",
                 "storage account name (3 to 24 lowercase letters and digits); default: from "
                 "connection_string or endpoint"),
    option::Secret("key", "Shared Key authorization: the base64 account key"),
    option::Secret("sas_token", "SAS authorization: the token (sv=...&sig=...), with or without '?'"),
    option::Secret("connection_string",
                   "an Azure connection string (AccountName, AccountKey, SharedAccessSignature, BlobEndpoint, ...)"),
    option::Choice("credentials", cloud::kAzureCredentialChoices,
                   "how requests are authorized: auto tries key, sas_token, connection_string, then Entra ID "
                   "(AZURE_CLIENT_SECRET, AZURE_FEDERATED_TOKEN_FILE, managed identity); or one of them (auto)"),
    option::Text("endpoint",
                 "blob endpoint (default https://ACCOUNT.blob.core.windows.net; Azurite: "
                 "http://127.0.0.1:PORT/devstoreaccount1)"),
    option::File("ca_file", "PEM CA bundle for HTTPS (default: the system's CAs)"),
    option::Size("block_size", 1, 4000ll << 20, "Put Block size for large writes (8MiB)"),
    option::Size("upload_threshold", 1, option::kNoMax, "larger writes are uploaded in blocks (32MiB)"),
    option::Int("upload_concurrency", 1, 64, "blocks uploaded in parallel per writer (4)"),
    option::Duration("request_timeout", 1, "deadline of one call, retries included (60s)"),
    option::Int("max_retries", 0, 100, "retries of throttled, 5xx or failed requests (3)"),
    option::Bool("posix_attributes",
                 "keep files' modes, owners and modification times (chmod, chown, touch through the FUSE mount) in "
                 "blob metadata; a FUSE listing then stats each file (false)"),
};

// Azure's rules: 3-63 lowercase letters, digits and '-', starting and ending
// with a letter or digit, no "--"; or one of the service's $ containers.
bool IsContainerName(std::string_view c) {
  if (c == "$root" || c == "$logs" || c == "$web") return true;
  if (c.size() < 3 || c.size() > 63 || c.front() == '-' || c.back() == '-' || c.find("--") != std::string_view::npos) {
    return false;
  }
  return std::all_of(c.begin(), c.end(), [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'; });
}

bool IsAccountName(std::string_view a) {
  return a.size() >= 3 && a.size() <= 24 &&
         std::all_of(a.begin(), a.end(), [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'); });
}

}  // namespace

OptionTable AzureOptions() { return kOptions; }

Result<AzureSettings> ParseAzureSettings(const UfsUri& uri, const MountConfig& mount, const EnvLookup& env,
                                         bool start_credentials) {
  auto o = MountOptions::Parse("az", kOptions, mount.options);
  if (!o) return Err(o.error());
  if (!IsContainerName(uri.authority)) {
    return Err(Code::kInvalidArgument, "invalid Azure container name '" + uri.authority +
                                           "': names are 3 to 63 lowercase letters, digits and '-', starting and "
                                           "ending with a letter or digit, without '--'; fix the az:// URI");
  }
  if (o->has("account") && !IsAccountName(o->String("account"))) {
    return Err(Code::kInvalidArgument, "option account='" + o->String("account") +
                                           "' is not a storage account name: 3 to 24 lowercase letters and digits");
  }
  AzureSettings s;
  s.container = uri.authority;
  s.prefix = uri.path;
  s.uri = "az://" + uri.authority + "/" + uri.path;
  s.mount_path = mount.path;
  s.ca_file = o->String("ca_file");
  s.block_size = o->Size("block_size").value_or(s.block_size);
  s.upload_threshold = o->Size("upload_threshold").value_or(s.upload_threshold);
  s.upload_concurrency = static_cast<int>(o->Int("upload_concurrency").value_or(s.upload_concurrency));
  s.max_retries = static_cast<int>(o->Int("max_retries").value_or(s.max_retries));
  s.posix_attributes = o->Bool("posix_attributes").value_or(false);
  s.request_timeout = o->Duration("request_timeout").value_or(s.request_timeout);
  auto creds = ResolveAzureCredentials(mount.options, env);
  if (!creds) return Err(creds.error());
  s.creds = std::move(*creds);
  std::string choice = o->has("credentials") ? o->String("credentials") : "auto";
  if (!start_credentials) {
    if (auto st = CheckAzureIdentity(s.creds, choice, env); !st.ok()) return Err(st);
    return s;
  }
  auto id = ChooseAzureIdentity(s.creds, choice, env, s.uri);
  if (!id) return Err(id.error());
  s.auth = id->auth;
  if (s.auth == AzureAuth::kSharedKey)
    s.key_bytes = *Base64Decode(s.creds.key);  // validated by ResolveAzureCredentials
  auto cache = cloud::CredentialCache::Start(std::move(id->provider), {.mount = mount.path}, std::move(id->first));
  if (!cache) return Err(cache.error().WithContext("mount " + mount.path));
  s.credentials = std::move(*cache);
  return s;
}

std::string AzureClient::ContainerUrl() const { return s_.creds.endpoint + "/" + PercentEncode(s_.container, false); }

std::string AzureClient::BlobUrl(std::string_view blob_name) const {
  return ContainerUrl() + "/" + PercentEncode(blob_name, /*keep_slash=*/true);
}

std::string AzureClient::Display(std::string_view blob_name) const { return "az://" + s_.container + "/" + std::string(blob_name); }

std::string AzureClient::PermissionAdvice() const {
  switch (s_.auth) {
    case AzureAuth::kSharedKey:
    case AzureAuth::kSas: return "check the account key or SAS token";
    case AzureAuth::kBearer:
      return "check that the identity of " + (s_.credentials ? s_.credentials->Describe() : std::string("the mount")) +
             " has a Storage Blob Data role (Reader to read, Contributor to write) on account '" + s_.creds.account +
             "' or the container";
    case AzureAuth::kAnonymous:
      return "the container does not allow anonymous access: give the mount credentials (option credentials)";
  }
  return {};
}

std::string AzureClient::Redact(std::string text) const {
  if (s_.creds.sas_token.empty()) return text;
  for (size_t p; (p = text.find(s_.creds.sas_token)) != std::string::npos;) text.replace(p, s_.creds.sas_token.size(), "<sas>");
  return text;
}

Result<HttpResponse> AzureClient::Send(HttpRequest req) const {
  auto deadline = Clock::now() + s_.request_timeout;
  req.ca_file = s_.ca_file;
  if (s_.auth == AzureAuth::kSas) {
    req.url += (req.url.find('?') == std::string::npos ? "?" : "&") + s_.creds.sas_token;
  }
  const auto base_headers = req.headers;
  RetryPolicy policy;  // 50 ms, 100 ms, ... capped at 2 s
  policy.max_retries = s_.max_retries;
  policy.deadline = deadline;
  std::optional<Status> no_token;  // the CredentialCache had no valid token: not worth retrying
  auto attempt = [&](std::chrono::milliseconds left) -> Result<HttpResponse> {
    req.timeout = left;
    req.connect_timeout = std::min(req.connect_timeout, left);
    req.headers = base_headers;
    req.headers.emplace_back("x-ms-version", kApiVersion);
    req.headers.emplace_back("x-ms-date", HttpDate(std::chrono::system_clock::now()));  // fresh per attempt
    if (s_.auth == AzureAuth::kSharedKey) SignSharedKey(req, s_.creds.account, s_.key_bytes);
    if (s_.auth == AzureAuth::kBearer) {
      auto secret = s_.credentials->Current();
      if (!secret) {
        no_token = secret.error();
        return Err(secret.error());
      }
      req.headers.emplace_back("Authorization", "Bearer " + (*secret)->bearer_token);
    }
    return PerformHttp(req);
  };
  auto transient = [&](const Result<HttpResponse>& r) { return !no_token && (!r || IsTransient(r->status)); };
  auto outcome = RunWithRetries(policy, attempt, transient);
  if (no_token) {
    return Err(no_token->code(), "Azure Blob request for " + s_.uri + " (mount " + s_.mount_path +
                                     ") has no valid token: " + no_token->message());
  }
  if (outcome.out_of_time) {
    return Err(Code::kTimeout, req.method + " on " + s_.uri + " did not succeed within request_timeout=" +
                                   std::to_string(s_.request_timeout.count()) + "ms after " +
                                   std::to_string(outcome.attempts) + " attempts: raise request_timeout or check the network");
  }
  auto& r = *outcome.last;
  if (!r) {
    return Err(r.error().code(), Redact("Azure Blob request for " + s_.uri + " (mount " + s_.mount_path +
                                        ") failed after " + std::to_string(outcome.attempts) + " attempts: " +
                                        r.error().message() + "; check the endpoint and the network"));
  }
  return std::move(r);
}

Status AzureClient::ErrorFor(const HttpResponse& resp, std::string_view what, std::string_view blob_name) const {
  auto body = ParseAzureError(resp.body);
  std::string code = resp.Header("x-ms-error-code");
  if (code.empty()) code = body.code;
  std::string detail = "HTTP " + std::to_string(resp.status) + (code.empty() ? "" : " " + code);
  if (code == "ContainerNotFound") {
    return Status(Code::kNotFound, "container '" + s_.container + "' not found in Azure account '" + s_.creds.account +
                                       "' (mount " + s_.mount_path + "): create it or fix the az:// URI");
  }
  if (resp.status == 403 || resp.status == 401) {
    return Status(Code::kPermissionDenied, "permission denied by " + s_.uri + " (mount " + s_.mount_path + ") for " +
                                               std::string(what) + " " + Display(blob_name) + " (" + detail +
                                               "): " + PermissionAdvice());
  }
  if (resp.status == 404) return Status(Code::kNotFound, "no such blob: " + Display(blob_name));
  if (resp.status == 412) {
    return Status(Code::kVersionMismatch, Display(blob_name) + " changed since it was opened (" + detail + ")");
  }
  if (resp.status == 409) return Status(Code::kAlreadyExists, std::string(what) + " " + Display(blob_name) + ": " + detail);
  if (resp.status == 400) {
    return Status(Code::kInvalidArgument, std::string(what) + " " + Display(blob_name) + " was refused: " + detail +
                                              (body.message.empty() ? "" : ": " + Redact(body.message)));
  }
  if (resp.status >= 500 || resp.status == 429) {
    return Status(Code::kUnavailable, std::string(what) + " " + Display(blob_name) + " failed after " +
                                          std::to_string(s_.max_retries + 1) + " attempts: " + detail +
                                          ": the service is busy or failing; retry later");
  }
  return Status(Code::kIo, std::string(what) + " " + Display(blob_name) + " failed: " + detail);
}

}  // namespace shoal
