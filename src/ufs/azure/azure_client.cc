#include "ufs/azure/azure_client.h"

#include <algorithm>
#include <cstdlib>

#include "common/config.h"
#include "common/units.h"
#include "ufs/azure/azure_xml.h"
#include "ufs/http/retry.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

// The REST version we speak; Azurite runs with --skipApiVersionCheck in tests.
constexpr const char* kApiVersion = "2021-08-06";

bool IsTransient(long s) { return s == 500 || s == 502 || s == 503 || s == 504 || s == 429 || s == 408; }

Result<uint64_t> SizeOption(const MountConfig& m, const std::string& k, const std::string& v) {
  auto n = ParseSize(v);
  if (!n || *n == 0) return Err(Code::kInvalidArgument, "mount " + m.path + ": option " + k + "='" + v + "' is not a size such as 8MiB");
  return *n;
}

Result<int> CountOption(const MountConfig& m, const std::string& k, const std::string& v, int lo, int hi) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi) {
    return Err(Code::kInvalidArgument, "mount " + m.path + ": option " + k + "='" + v + "' must be a count from " +
                                           std::to_string(lo) + " to " + std::to_string(hi));
  }
  return static_cast<int>(n);
}

}  // namespace

Result<AzureSettings> ParseAzureSettings(const UfsUri& uri, const MountConfig& mount, const EnvLookup& env) {
  AzureSettings s;
  s.container = uri.authority;
  s.prefix = uri.path;
  s.uri = "az://" + uri.authority + "/" + uri.path;
  s.mount_path = mount.path;
  for (const auto& [k, v] : mount.options) {
    if (k == "account" || k == "key" || k == "sas_token" || k == "endpoint" || k == "connection_string") continue;
    if (k == "ca_file") {
      s.ca_file = v;
    } else if (k == "block_size") {
      auto n = SizeOption(mount, k, v);
      if (!n) return Err(n.error());
      if (*n > (4000ull << 20)) return Err(Code::kInvalidArgument, "mount " + mount.path + ": block_size may be at most 4000MiB");
      s.block_size = *n;
    } else if (k == "upload_threshold") {
      auto n = SizeOption(mount, k, v);
      if (!n) return Err(n.error());
      s.upload_threshold = *n;
    } else if (k == "upload_concurrency") {
      auto n = CountOption(mount, k, v, 1, 64);
      if (!n) return Err(n.error());
      s.upload_concurrency = *n;
    } else if (k == "max_retries") {
      auto n = CountOption(mount, k, v, 0, 100);
      if (!n) return Err(n.error());
      s.max_retries = *n;
    } else if (k == "request_timeout") {
      auto d = ParseDuration(v);
      if (!d || d->count() <= 0) {
        return Err(Code::kInvalidArgument, "mount " + mount.path + ": option request_timeout='" + v + "' is not a duration such as 30s");
      }
      s.request_timeout = *d;
    } else {
      return Err(Code::kInvalidArgument, "mount " + mount.path + ": unknown option '" + k +
                                             "' for an az:// mount (known: account, key, sas_token, endpoint, "
                                             "connection_string, ca_file, block_size, upload_threshold, "
                                             "upload_concurrency, request_timeout, max_retries)");
    }
  }
  auto creds = ResolveAzureCredentials(mount.options, env);
  if (!creds) return Err(creds.error().WithContext("mount " + mount.path + " (" + s.uri + ")"));
  s.creds = std::move(*creds);
  if (!s.creds.key.empty()) s.key_bytes = *Base64Decode(s.creds.key);  // validated by ResolveAzureCredentials
  return s;
}

std::string AzureClient::ContainerUrl() const { return s_.creds.endpoint + "/" + PercentEncode(s_.container, false); }

std::string AzureClient::BlobUrl(std::string_view blob_name) const {
  return ContainerUrl() + "/" + PercentEncode(blob_name, /*keep_slash=*/true);
}

std::string AzureClient::Display(std::string_view blob_name) const { return "az://" + s_.container + "/" + std::string(blob_name); }

std::string AzureClient::Redact(std::string text) const {
  if (s_.creds.sas_token.empty()) return text;
  for (size_t p; (p = text.find(s_.creds.sas_token)) != std::string::npos;) text.replace(p, s_.creds.sas_token.size(), "<sas>");
  return text;
}

Result<HttpResponse> AzureClient::Send(HttpRequest req) const {
  auto deadline = Clock::now() + s_.request_timeout;
  req.ca_file = s_.ca_file;
  if (s_.key_bytes.empty() && !s_.creds.sas_token.empty()) {
    req.url += (req.url.find('?') == std::string::npos ? "?" : "&") + s_.creds.sas_token;
  }
  const auto base_headers = req.headers;
  RetryPolicy policy;  // 50 ms, 100 ms, ... capped at 2 s
  policy.max_retries = s_.max_retries;
  policy.deadline = deadline;
  auto attempt = [&](std::chrono::milliseconds left) {
    req.timeout = left;
    req.connect_timeout = std::min(req.connect_timeout, left);
    req.headers = base_headers;
    req.headers.emplace_back("x-ms-version", kApiVersion);
    req.headers.emplace_back("x-ms-date", HttpDate(std::chrono::system_clock::now()));  // fresh per attempt
    if (!s_.key_bytes.empty()) SignSharedKey(req, s_.creds.account, s_.key_bytes);
    return PerformHttp(req);
  };
  auto transient = [](const Result<HttpResponse>& r) { return !r || IsTransient(r->status); };
  auto outcome = RunWithRetries(policy, attempt, transient);
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
                                               "): check the account key or SAS token");
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
