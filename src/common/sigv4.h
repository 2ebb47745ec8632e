// AWS Signature Version 4: the canonical request, string to sign and signing
// key, written once and used both to sign (the S3 under-store, and GCS HMAC
// keys through its S3-interoperable XML API) and to verify (the S3 endpoint,
// src/s3/s3_auth.h), plus the small hash helpers both need.
//
// Everything here is a pure function of its inputs (no clock, no I/O), so the
// signer is tested against fixed vectors produced by botocore (see
// gen_sigv4_vectors.py).
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
  std::string payload_hash;  // hex SHA-256 of the body, or kUnsignedPayload
  std::string region;        // "us-east-1"; "auto" for GCS
  std::string service = "s3";
};

// Signs a request: appends Host (unless present), x-amz-date,
// x-amz-content-sha256, x-amz-security-token (with a session token) and
// Authorization to `headers`. Every header in `headers` is signed, so callers
// must add only headers that are sent unchanged (libcurl's own User-Agent,
// Accept and Content-Length are not in the list and so are not signed).
void SignV4(const SigningInput& in, const Credentials& creds, std::chrono::system_clock::time_point now,
            Headers& headers);

// The pieces of a signature, shared by SignV4 and the endpoint's verifier.

// AWS's URI encoding: RFC 3986 unreserved characters kept, everything else
// %XX (upper-case hex); '/' kept when keep_slash.
std::string UriEncode(std::string_view s, bool keep_slash);

// Canonical headers: lower-case names, sorted, values trimmed with inner runs
// of spaces collapsed, repeated names joined with ','.
struct CanonicalHeaders {
  std::string block;         // "host:x\nx-amz-date:y\n"
  std::string signed_names;  // "host;x-amz-date"
};
CanonicalHeaders CanonicalizeHeaders(const Headers& headers);

// METHOD \n URI \n QUERY \n HEADERS \n SIGNED \n PAYLOAD_HASH
std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri, std::string_view canonical_query,
                             const CanonicalHeaders& headers, std::string_view payload_hash);
// "20240517/us-east-1/s3/aws4_request"
std::string CredentialScope(std::string_view date, std::string_view region, std::string_view service);
// "AWS4-HMAC-SHA256\n" amz_date \n scope \n hex(sha256(canonical_request))
std::string StringToSign(std::string_view amz_date, std::string_view scope, std::string_view canonical_request);
// The derived key (binary) for a day, region and service; cached per thread.
const std::string& SigningKey(const std::string& secret, const std::string& date, const std::string& region,
                              const std::string& service);
// Lower-case hex HMAC-SHA256 of `data` under `key`: a signature.
std::string HmacHex(std::string_view key, std::string_view data);
// Compares two signatures in time that depends on their length only.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

// Query string in SigV4 canonical form: keys sorted, keys and values
// percent-encoded (RFC 3986 unreserved set kept). Also what goes on the URL.
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> query);

// Lower-case hex SHA-256.
std::string Sha256Hex(std::span<const char> data);
// Base64 MD5 (the Content-MD5 header value), required by DeleteObjects.
std::string Md5Base64(std::span<const char> data);
// Lower-case hex MD5 (an S3 part's ETag).
std::string Md5Hex(std::span<const char> data);

// An MD5 or SHA-256 over bytes that arrive in pieces. Not copyable; one
// thread at a time.
class StreamDigest {
 public:
  enum class Kind { kMd5, kSha256 };
  explicit StreamDigest(Kind kind);
  ~StreamDigest();
  StreamDigest(const StreamDigest&) = delete;
  StreamDigest& operator=(const StreamDigest&) = delete;
  void Update(std::span<const char> data);
  // The digest's raw bytes; call once, after the last Update.
  std::string Bytes();

 private:
  void* ctx_;  // EVP_MD_CTX
};

// Lower-case hex of raw bytes (a digest).
std::string HexOf(std::string_view bytes);
// Base64 of raw bytes (a Content-MD5 value).
std::string Base64Of(std::string_view bytes);

// "20240517T123456Z" for a time point (UTC).
std::string AmzDate(std::chrono::system_clock::time_point t);

}  // namespace shoal::s3
