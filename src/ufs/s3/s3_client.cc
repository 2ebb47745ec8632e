#include "ufs/s3/s3_client.h"

#include <algorithm>
#include <chrono>

#include "ufs/cloud/credential_cache.h"
#include "ufs/http/retry.h"
#include "ufs/s3/s3_xml.h"
#include "ufs/uri.h"

namespace shoal::s3 {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Describe(const HttpResponse& r) {
  auto e = ParseError(r.body);
  std::string out = "HTTP " + std::to_string(r.status);
  if (!e.code.empty()) out += " " + e.code;
  if (!e.message.empty()) out += ": " + e.message;
  return out;
}

}  // namespace

std::string S3Client::UriOf(std::string_view full_key) const {
  return s_.uri.substr(0, s_.uri.find("://") + 3) + s_.bucket + "/" + std::string(full_key);
}

std::string S3Client::Url(const S3Request& r, std::string* canonical_uri) const {
  std::string path = s_.BucketPath();
  if (!r.key.empty() || !s_.path_style) path += "/" + PercentEncode(r.key, /*keep_slash=*/true);
  *canonical_uri = path;
  std::string url = s_.endpoint.substr(0, s_.endpoint.find("://") + 3) + s_.Host() + path;
  if (!r.query.empty()) url += "?" + CanonicalQuery(r.query);
  return url;
}

bool S3Client::Retryable(const HttpResponse& r) {
  if (r.status >= 500 || r.status == 429) return true;
  if (r.status == 400 || r.status == 403) {
    auto code = ParseError(r.body).code;
    return code == "RequestTimeout" || code == "SlowDown";
  }
  return false;
}

Result<HttpResponse> S3Client::Send(const S3Request& request, const Validator& validate) const {
  const auto start = Clock::now();
  const auto deadline = start + s_.request_timeout;
  std::string canonical_uri;
  const std::string url = Url(request, &canonical_uri);

  std::string payload_hash;  // made on the first signed attempt

  RetryPolicy policy;
  policy.max_retries = s_.max_retries;
  policy.base_delay = s_.retry_base_delay;
  policy.max_delay = s_.retry_max_delay;
  policy.deadline = deadline;
  policy.give_up_if_pause_reaches_deadline = true;
  // An attempt's error is worth retrying; a response (2xx and valid, or a
  // status not worth retrying) is the answer.
  auto attempt = [&](milliseconds left) -> Result<HttpResponse> {
    HttpRequest http;
    http.method = request.method;
    http.url = url;
    http.headers = request.headers;
    http.body = request.body;
    http.body_out = request.body_out;
    http.accept_partial = request.accept_partial;
    http.timeout = left;
    http.connect_timeout = std::min(left, s_.connect_timeout);
    http.ca_file = s_.ca_file;
    http.verify_tls = s_.verify_tls;
    // Asked at every attempt: a retry after a refresh signs with the new keys.
    Credentials keys = s_.creds;
    if (s_.credentials) {
      auto secret = s_.credentials->Current();
      if (!secret) return Err(secret.error());
      if (!(*secret)->bearer_token.empty()) {
        http.headers.emplace_back("Authorization", "Bearer " + (*secret)->bearer_token);
        keys = {};
      } else {
        keys = {(*secret)->access_key_id, (*secret)->secret_access_key, (*secret)->session_token, {}};
      }
    }
    if (!keys.anonymous()) {
      if (payload_hash.empty()) {
        payload_hash =
            (request.body.empty() || s_.sign_payload) ? Sha256Hex(request.body) : std::string(kUnsignedPayload);
      }
      SigningInput in{request.method, s_.Host(), canonical_uri, request.query, payload_hash, s_.region, "s3"};
      SignV4(in, keys, std::chrono::system_clock::now(), http.headers);
    }
    auto resp = PerformHttp(http);
    if (!resp) return resp;
    if (resp->status >= 200 && resp->status < 300) {
      Status ok = validate ? validate(*resp) : Status::Ok();
      if (!ok.ok()) return Err(ok);
      return resp;
    }
    if (Retryable(*resp)) return Err(Code::kUnavailable, Describe(*resp));
    return resp;
  };
  auto outcome = RunWithRetries(policy, attempt, [](const Result<HttpResponse>& r) { return !r; });
  if (outcome.last && *outcome.last) return std::move(*outcome.last);
  Status last = outcome.last ? outcome.last->error() : Status();
  // The count includes the attempt the deadline cut off.
  int attempts = outcome.attempts + (outcome.out_of_time ? 1 : 0);

  auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  std::string what = request.method + " " + UriOf(request.key) + " at " + s_.endpoint + " (mount " + s_.mount_path +
                     ") failed after " + std::to_string(attempts) + " attempt" + (attempts == 1 ? "" : "s") + " in " +
                     std::to_string(elapsed) + " ms";
  if (last.ok()) {
    return Err(Code::kTimeout, what + ": request_timeout of " + std::to_string(s_.request_timeout.count()) +
                                   " ms passed; check that the endpoint is reachable");
  }
  Code code = last.code();
  if (Clock::now() >= deadline && code == Code::kUnavailable) code = Code::kTimeout;
  return Err(code, what + ": " + last.message());
}

Status S3Client::ErrorFor(const HttpResponse& r, const S3Request& req) const {
  auto e = ParseError(r.body);
  std::string uri = UriOf(req.key);
  std::string said = Describe(r);
  std::string mount = " (mount " + s_.mount_path + ")";
  // Expired or malformed credentials come back as 400 from some stores.
  const bool credential_error = e.code == "ExpiredToken" || e.code == "InvalidToken" ||
                                e.code == "InvalidAccessKeyId" || e.code == "SignatureDoesNotMatch";
  if (r.status == 401 || r.status == 403 || credential_error) {
    std::string creds = s_.credentials         ? "credentials from " + s_.credentials->Describe()
                        : s_.creds.anonymous() ? "no credentials were found, so the request was anonymous"
                                               : "access key " + s_.creds.access_key_id + " from " + s_.creds.source;
    return Status(Code::kPermissionDenied, "permission denied by " + uri + mount +
                                               ": check the credentials (" + creds +
                                               ") and the bucket policy; the store said " + said);
  }
  std::string region = e.region.empty() ? r.Header("x-amz-bucket-region") : e.region;
  if ((r.status == 301 || r.status == 307 || r.status == 400) && !region.empty() && region != s_.region) {
    return Status(Code::kInvalidArgument, "bucket '" + s_.bucket + "'" + mount + " is in region '" + region +
                                              "', not '" + s_.region + "': set the mount option region: " + region);
  }
  if (r.status == 404) {
    if (e.code == "NoSuchBucket") {
      return Status(Code::kNotFound, "bucket '" + s_.bucket + "' does not exist at " + s_.endpoint + mount +
                                         ": check the bucket name and the endpoint/region");
    }
    return Status(Code::kNotFound, "no such object: " + uri + mount);
  }
  if (r.status == 412) {
    return Status(Code::kVersionMismatch, uri + " changed since it was opened (its ETag no longer matches)");
  }
  if (r.status >= 500 || r.status == 429) {
    return Status(Code::kUnavailable, req.method + " " + uri + " at " + s_.endpoint + mount + " failed: " + said);
  }
  return Status(Code::kIo, req.method + " " + uri + mount + " failed: " + said);
}

}  // namespace shoal::s3
