// Authenticator: verifies AWS Signature V4 on requests to the S3 endpoint,
// with the canonical-request code the S3 under-store signs with
// (common/sigv4.h).
//
// Accepted: header auth (Authorization: AWS4-HMAC-SHA256 ...) with a signed
// payload hash (checked against the body), UNSIGNED-PAYLOAD, or
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD (an aws-chunked body whose every chunk
// signature DecodeChunked checks); and presigned URLs (query auth, expiry
// enforced). A request dated more than max_skew from now is refused
// (RequestTimeTooSkewed). Signatures are compared in constant time.
//
// A request with no signature at all verifies as anonymous (empty
// access_key): whether that is allowed is the caller's decision.
//
// Thread safety: const methods are safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/http_server.h"
#include "s3/s3_common.h"
#include "s3/s3_errors.h"

namespace shoal::s3 {

struct AuthInfo {
  std::string access_key;  // "" for an anonymous request
  bool presigned = false;
  std::chrono::system_clock::time_point expires_at;  // presigned only
  bool streaming = false;  // the body is aws-chunked: DecodeChunked it
  // What the chunk signatures chain from (streaming only).
  std::string signing_key, scope, amz_date, seed_signature;
};

class Authenticator {
 public:
  // keys: access key -> secret key.
  Authenticator(std::map<std::string, std::string> keys, std::chrono::milliseconds max_skew);

  S3Result<AuthInfo> Verify(const net::HttpRequest& request, const QueryParams& query,
                            std::chrono::system_clock::time_point now) const;

  // The payload of an aws-chunked body, every chunk's signature checked in
  // order against the chain that starts at the request's signature.
  static S3Result<std::string> DecodeChunked(std::string_view body, const AuthInfo& auth);

  // The path and query of a presigned URL for `method` of `path` (as it will
  // be sent, already %-encoded) on `host` ("127.0.0.1:9001"), signed with
  // `access_key`'s secret for `expires` from `now`. `query` holds the
  // request's own parameters (no X-Amz-* auth ones). REQUIRES: a known key.
  std::string Presign(std::string_view method, std::string_view host, std::string_view path, QueryParams query,
                      const std::string& access_key, const std::string& region, std::chrono::seconds expires,
                      std::chrono::system_clock::time_point now) const;

 private:
  S3Result<AuthInfo> VerifyHeader(const net::HttpRequest& request, const QueryParams& query, const std::string& auth,
                                  std::chrono::system_clock::time_point now) const;
  S3Result<AuthInfo> VerifyPresigned(const net::HttpRequest& request, const QueryParams& query,
                                     std::chrono::system_clock::time_point now) const;
  // The signature of the request as the holder of the secret computes it;
  // checks it against `given` for each canonical form of the path.
  S3Result<std::string> Check(const net::HttpRequest& request, const QueryParams& query, bool drop_signature_param,
                              std::string_view access_key, std::string_view amz_date, std::string_view date,
                              std::string_view region, std::string_view service, std::string_view signed_headers,
                              std::string_view payload_hash, std::string_view given) const;

  std::map<std::string, std::string> keys_;
  std::chrono::milliseconds max_skew_;
};

// The signature of one aws-chunked chunk holding `data`, chained from `prev`
// (the request's signature for the first chunk).
std::string ChunkSignature(const AuthInfo& auth, std::string_view prev, std::span<const char> data);

// "20240517T123456Z" -> time point; nullopt when malformed or past the year 2200.
std::optional<std::chrono::system_clock::time_point> ParseAmzDate(std::string_view s);

}  // namespace shoal::s3
