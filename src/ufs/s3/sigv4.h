// AWS Signature Version 4 for S3 requests (Authorization header form), plus the
// small hash helpers the S3 backend needs. Also used for GCS HMAC keys through
// its S3-interoperable XML API.
//
// The signer is a pure function of its inputs (no clock, no I/O), so it is
// tested against fixed vectors produced by botocore (see gen_sigv4_vectors.py).
//
// Thread safety: all functions are reentrant.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shoal::s3 {

// An access key. Empty access_key_id means anonymous: requests go unsigned.
struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials (STS) only
  std::string source;         // where they came from, for messages: "mount options", "environment", ...

  bool anonymous() const { return access_key_id.empty(); }
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// The payload hash value S3 accepts instead of hashing the body.
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

struct SigningInput {
  std::string method;         // "GET", "PUT", ...
  std::string host;           // Host header value: "bucket.s3.amazonaws.com" or "127.0.0.1:9000"
  std::string canonical_uri;  // the request path exactly as sent, already percent-encoded ("/bucket/a%20b")
  // Query parameters, raw (not encoded); the signer sorts and encodes them.
  std::vector<std::pair<std::string, std::string>> query;
  std::string payload_hash;   // hex SHA-256 of the body, or kUnsignedPayload
  std::string region;         // "us-east-1"; "auto" for GCS
  std::string service = "s3";
};

// Signs a request: appends Host (unless present), x-amz-date,
// x-amz-content-sha256, x-amz-security-token (with a session token) and
// Authorization to `headers`. Every header in `headers` is signed, so callers
// must add only headers that are sent unchanged (libcurl's own User-Agent,
// Accept and Content-Length are not in the list and so are not signed).
void SignV4(const SigningInput& in, const Credentials& creds, std::chrono::system_clock::time_point now,
            Headers& headers);

// Query string in SigV4 canonical form: keys sorted, keys and values
// percent-encoded (RFC 3986 unreserved set kept). Also what goes on the URL.
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> query);

// Lower-case hex SHA-256.
std::string Sha256Hex(std::span<const char> data);
// Base64 MD5 (the Content-MD5 header value), required by DeleteObjects.
std::string Md5Base64(std::span<const char> data);

// "20240517T123456Z" for a time point (UTC).
std::string AmzDate(std::chrono::system_clock::time_point t);

}  // namespace shoal::s3
