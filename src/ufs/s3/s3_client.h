// S3Client: one bucket's requests, signed (SigV4) or anonymous, with retries.
//
// Send() retries what S3 says is worth retrying: 5xx, 429, SlowDown,
// RequestTimeout, connection failures, and responses the caller's validator
// rejects (truncated bodies). Backoff doubles from retry_base_delay up to
// retry_max_delay with jitter, and the whole call, retries included, ends by
// request_timeout, so a dead endpoint never hangs a caller.
//
// Thread safety: const methods may be called concurrently.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/status.h"
#include "ufs/http/http_transport.h"
#include "ufs/s3/s3_settings.h"

namespace shoal::s3 {

struct S3Request {
  std::string method = "GET";
  std::string key;  // full key in the bucket (prefix included); "" addresses the bucket
  std::vector<std::pair<std::string, std::string>> query;  // raw; encoded when sent
  Headers headers;                                         // extra headers, all signed
  std::span<const char> body;
  std::span<char> body_out;  // a 2xx body goes here (zero-copy ranged GET)
  bool accept_partial = false;  // a cut-short body reaches the validator (HttpResponse::truncated)
};

class S3Client {
 public:
  // Checks a 2xx response; a non-OK Status marks it bad (e.g. truncated) and
  // the request is retried. The Status of the last attempt is returned.
  using Validator = std::function<Status(const HttpResponse&)>;

  explicit S3Client(S3Settings settings) : s_(std::move(settings)) {}
  const S3Settings& settings() const { return s_; }

  // Returns the response of the last attempt for any HTTP status that is not
  // retryable (callers map non-2xx with ErrorFor); fails with kUnavailable,
  // kTimeout or the validator's Status when retries run out.
  Result<HttpResponse> Send(const S3Request& request, const Validator& validate = {}) const;

  // Maps a non-2xx response for `key` (full key, "" for the bucket) to a Status
  // naming the object, the mount and what to do.
  Status ErrorFor(const HttpResponse& response, const S3Request& request) const;

  // "s3://bucket/full/key" for messages.
  std::string UriOf(std::string_view full_key) const;

 private:
  std::string Url(const S3Request& r, std::string* canonical_uri) const;
  static bool Retryable(const HttpResponse& r);

  S3Settings s_;
};

}  // namespace shoal::s3
