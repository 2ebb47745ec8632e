#include "s3/s3_auth.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <optional>

#include "common/sigv4.h"
#include "ufs/uri.h"

namespace shoal::s3 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kStreaming = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
constexpr long kMaxPresignExpiry = 7 * 24 * 3600;  // what AWS allows

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool IsHex64(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

struct CredentialParts {
  std::string access_key, date, region, service;
};

S3Result<CredentialParts> ParseCredential(std::string_view c) {
  // AK/20240517/us-east-1/s3/aws4_request (the access key holds no '/').
  std::vector<std::string_view> parts;
  while (parts.size() < 6) {
    auto slash = c.find('/');
    parts.push_back(c.substr(0, slash));
    if (slash == std::string_view::npos) break;
    c.remove_prefix(slash + 1);
  }
  if (parts.size() != 5 || parts[4] != "aws4_request" || parts[1].size() != 8 || parts[0].empty()) {
    return S3Err(400, "AuthorizationHeaderMalformed",
                 "the credential must be ACCESS_KEY/YYYYMMDD/REGION/s3/aws4_request");
  }
  if (parts[3] != "s3") {
    return S3Err(400, "AuthorizationHeaderMalformed",
                 "the credential is scoped to service '" + std::string(parts[3]) + "': sign for service s3");
  }
  return CredentialParts{std::string(parts[0]), std::string(parts[1]), std::string(parts[2]), std::string(parts[3])};
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  auto num = [&](size_t pos, size_t len) -> int {
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  tm.tm_hour = num(9, 2);
  tm.tm_min = num(11, 2);
  tm.tm_sec = num(13, 2);
  // Years past 2200 do not fit the clock's nanoseconds (2262) and sign nothing real.
  if (tm.tm_year < 70 || tm.tm_year > 2200 - 1900 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
      tm.tm_mday > 31 || tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 ||
      tm.tm_sec > 60) {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

Authenticator::Authenticator(std::map<std::string, std::string> keys, std::chrono::milliseconds max_skew)
    : keys_(std::move(keys)), max_skew_(max_skew) {}

S3Result<AuthInfo> Authenticator::Verify(const net::HttpRequest& req, const QueryParams& query,
                                         std::chrono::system_clock::time_point now) const {
  if (const std::string* auth = req.Header("Authorization")) {
    if (Param(query, "X-Amz-Signature")) {
      return S3Err(400, "InvalidArgument",
                   "a request is signed either in the Authorization header or in the query, not both");
    }
    return VerifyHeader(req, query, *auth, now);
  }
  if (Param(query, "X-Amz-Signature") || Param(query, "X-Amz-Credential")) return VerifyPresigned(req, query, now);
  if (Param(query, "Signature") || Param(query, "AWSAccessKeyId")) {
    return S3Err(400, "InvalidRequest", "Signature Version 2 is not supported: presign with Signature Version 4");
  }
  return AuthInfo{};
}

S3Result<AuthInfo> Authenticator::VerifyHeader(const net::HttpRequest& req, const QueryParams& query,
                                               const std::string& header,
                                               std::chrono::system_clock::time_point now) const {
  std::string_view h = Trim(header);
  if (!h.starts_with(kAlgorithm) || h.size() == kAlgorithm.size() || h[kAlgorithm.size()] != ' ') {
    if (h.starts_with("AWS ")) {
      return S3Err(400, "InvalidRequest",
                   "Signature Version 2 is not supported: configure the client for Signature Version 4 (s3v4)");
    }
    return S3Err(400, "AuthorizationHeaderMalformed", "the Authorization header must start with AWS4-HMAC-SHA256");
  }
  h.remove_prefix(kAlgorithm.size());
  std::string credential, signed_headers, signature;
  for (int i = 0; i < 8 && !h.empty(); ++i) {
    auto comma = h.find(',');
    std::string_view item = Trim(h.substr(0, comma));
    h = comma == std::string_view::npos ? std::string_view() : h.substr(comma + 1);
    auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    auto name = item.substr(0, eq);
    std::string value(item.substr(eq + 1));
    if (name == "Credential") credential = value;
    if (name == "SignedHeaders") signed_headers = value;
    if (name == "Signature") signature = value;
  }
  if (credential.empty() || signed_headers.empty() || signature.empty()) {
    return S3Err(400, "AuthorizationHeaderMalformed",
                 "the Authorization header needs Credential=, SignedHeaders= and Signature=");
  }
  auto cred = ParseCredential(credential);
  if (!cred) return std::unexpected(cred.error());
  if (!keys_.contains(cred->access_key)) {
    return S3Err(
        403, "InvalidAccessKeyId",
        "access key '" + cred->access_key + "' is not known to this endpoint (see s3.credentials in the config)");
  }
  const std::string* date_header = req.Header("x-amz-date");
  if (!date_header) return S3Err(403, "AccessDenied", "the request has no x-amz-date header: sign it with a date");
  auto when = ParseAmzDate(*date_header);
  if (!when) return S3Err(403, "AccessDenied", "x-amz-date '" + *date_header + "' is not YYYYMMDDTHHMMSSZ");
  if (*when > now + max_skew_ || *when < now - max_skew_) {
    return S3Err(403, "RequestTimeTooSkewed",
                 "the request time " + *date_header + " differs from the server time " + AmzDate(now) +
                     " by more than the allowed skew: fix the client's clock");
  }
  if (date_header->substr(0, 8) != cred->date) {
    return S3Err(403, "SignatureDoesNotMatch", "the credential date " + cred->date + " is not the date of x-amz-date");
  }
  const std::string* content = req.Header("x-amz-content-sha256");
  if (!content) {
    return S3Err(400, "InvalidRequest",
                 "missing required header x-amz-content-sha256 (the payload hash or UNSIGNED-PAYLOAD)");
  }
  bool streaming = *content == kStreaming;
  if (!streaming && *content != kUnsignedPayload && !IsHex64(*content)) {
    return S3Err(400, "InvalidArgument",
                 "x-amz-content-sha256 '" + *content +
                     "' is not a SHA-256, UNSIGNED-PAYLOAD or STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
  }
  auto sig = Check(req, query, false, cred->access_key, *date_header, cred->date, cred->region, cred->service,
                   signed_headers, *content, signature);
  if (!sig) return std::unexpected(sig.error());
  // A streamed body is checked by its reader (PayloadReader), at its end.
  if (IsHex64(*content) && !req.body_stream && !ConstantTimeEqual(Sha256Hex(req.body), *content)) {
    return S3Err(400, "XAmzContentSHA256Mismatch",
                 "the body's SHA-256 is not the x-amz-content-sha256 it was signed with");
  }
  AuthInfo info;
  info.access_key = cred->access_key;
  info.streaming = streaming;
  if (streaming) {
    info.signing_key = SigningKey(keys_.at(cred->access_key), cred->date, cred->region, cred->service);
    info.scope = CredentialScope(cred->date, cred->region, cred->service);
    info.amz_date = *date_header;
    info.seed_signature = *sig;
  }
  return info;
}

S3Result<AuthInfo> Authenticator::VerifyPresigned(const net::HttpRequest& req, const QueryParams& query,
                                                  std::chrono::system_clock::time_point now) const {
  const std::string* alg = Param(query, "X-Amz-Algorithm");
  const std::string* credential = Param(query, "X-Amz-Credential");
  const std::string* date = Param(query, "X-Amz-Date");
  const std::string* expires = Param(query, "X-Amz-Expires");
  const std::string* signed_headers = Param(query, "X-Amz-SignedHeaders");
  const std::string* signature = Param(query, "X-Amz-Signature");
  if (!alg || !credential || !date || !expires || !signed_headers || !signature) {
    return S3Err(400, "AuthorizationQueryParametersError",
                 "a presigned URL needs X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires, "
                 "X-Amz-SignedHeaders and X-Amz-Signature");
  }
  if (*alg != kAlgorithm) {
    return S3Err(400, "AuthorizationQueryParametersError", "X-Amz-Algorithm must be AWS4-HMAC-SHA256");
  }
  auto cred = ParseCredential(*credential);
  if (!cred) return std::unexpected(S3Error{400, "AuthorizationQueryParametersError", cred.error().message});
  if (!keys_.contains(cred->access_key)) {
    return S3Err(
        403, "InvalidAccessKeyId",
        "access key '" + cred->access_key + "' is not known to this endpoint (see s3.credentials in the config)");
  }
  auto when = ParseAmzDate(*date);
  long secs = -1;
  if (!expires->empty() && expires->size() <= 7 && std::all_of(expires->begin(), expires->end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    secs = std::stol(*expires);
  }
  if (!when || secs < 1 || secs > kMaxPresignExpiry) {
    return S3Err(400, "AuthorizationQueryParametersError",
                 "X-Amz-Date must be YYYYMMDDTHHMMSSZ and X-Amz-Expires between 1 and 604800 seconds");
  }
  if (*when > now + max_skew_) {
    return S3Err(
        403, "RequestTimeTooSkewed",
        "the presigned URL is dated " + *date + ", after the server time " + AmzDate(now) + ": fix the signer's clock");
  }
  if (now > *when + std::chrono::seconds(secs)) {
    return S3Err(403, "AccessDenied",
                 "Request has expired: the presigned URL was valid for " + *expires + " s from " + *date +
                     "; presign a new one");
  }
  if (date->substr(0, 8) != cred->date) {
    return S3Err(403, "SignatureDoesNotMatch", "the credential date " + cred->date + " is not the date of X-Amz-Date");
  }
  const std::string* content = req.Header("x-amz-content-sha256");
  std::string payload = content ? *content : std::string(kUnsignedPayload);
  auto sig = Check(req, query, true, cred->access_key, *date, cred->date, cred->region, cred->service, *signed_headers,
                   payload, *signature);
  if (!sig) return std::unexpected(sig.error());
  AuthInfo info;
  info.access_key = cred->access_key;
  info.presigned = true;
  info.expires_at = *when + std::chrono::seconds(secs);
  return info;
}

std::string Authenticator::Presign(std::string_view method, std::string_view host, std::string_view path,
                                   QueryParams query, const std::string& access_key, const std::string& region,
                                   std::chrono::seconds expires, std::chrono::system_clock::time_point now) const {
  std::string amz_date = AmzDate(now);
  std::string date = amz_date.substr(0, 8);
  std::string scope = CredentialScope(date, region, "s3");
  query.emplace_back("X-Amz-Algorithm", std::string(kAlgorithm));
  query.emplace_back("X-Amz-Credential", access_key + "/" + scope);
  query.emplace_back("X-Amz-Date", amz_date);
  query.emplace_back("X-Amz-Expires", std::to_string(expires.count()));
  query.emplace_back("X-Amz-SignedHeaders", "host");
  std::string canonical_query = CanonicalQuery(std::move(query));
  CanonicalHeaders canon = CanonicalizeHeaders(Headers{{"host", std::string(host)}});
  std::string sig =
      HmacHex(SigningKey(keys_.at(access_key), date, region, "s3"),
              StringToSign(amz_date, scope, CanonicalRequest(method, path, canonical_query, canon, kUnsignedPayload)));
  return std::string(path) + "?" + canonical_query + "&X-Amz-Signature=" + sig;
}

S3Result<std::string> Authenticator::Check(const net::HttpRequest& req, const QueryParams& query,
                                           bool drop_signature_param, std::string_view access_key,
                                           std::string_view amz_date, std::string_view date, std::string_view region,
                                           std::string_view service, std::string_view signed_headers,
                                           std::string_view payload_hash, std::string_view given) const {
  // The signed headers, with every value the request carries for each name.
  Headers signed_list;
  bool has_host = false;
  std::string_view names = signed_headers;
  for (int i = 0; i < 64 && !names.empty(); ++i) {
    auto semi = names.find(';');
    std::string_view name = names.substr(0, semi);
    names = semi == std::string_view::npos ? std::string_view() : names.substr(semi + 1);
    has_host = has_host || name == "host";
    bool found = false;
    for (const auto& [k, v] : req.headers) {
      if (IEquals(k, name)) {
        signed_list.emplace_back(std::string(name), v);
        found = true;
      }
    }
    if (!found) {
      return S3Err(403, "SignatureDoesNotMatch", "signed header '" + std::string(name) + "' is not in the request");
    }
  }
  if (!has_host) return S3Err(403, "SignatureDoesNotMatch", "the Host header must be signed");
  CanonicalHeaders canon = CanonicalizeHeaders(signed_list);

  QueryParams q;
  for (const auto& kv : query) {
    if (!(drop_signature_param && kv.first == "X-Amz-Signature")) q.push_back(kv);
  }
  std::string canonical_query = CanonicalQuery(std::move(q));

  const std::string& key =
      SigningKey(keys_.at(std::string(access_key)), std::string(date), std::string(region), std::string(service));
  std::string scope = CredentialScope(date, region, service);
  // The path as sent and as AWS's encoding of it: clients differ in which
  // characters they escape, and either is what they signed.
  std::string raw(req.path());
  auto decoded = PercentDecode(raw);
  std::string encoded = decoded ? UriEncode(*decoded, true) : raw;
  bool matched = false;
  std::string sig;
  for (const std::string* uri : {&raw, &encoded}) {
    if (uri == &encoded && encoded == raw) break;
    std::string s = HmacHex(
        key, StringToSign(amz_date, scope, CanonicalRequest(req.method, *uri, canonical_query, canon, payload_hash)));
    if (ConstantTimeEqual(s, given)) {
      matched = true;
      sig = std::move(s);
    }
  }
  if (!matched) {
    return S3Err(403, "SignatureDoesNotMatch",
                 "The request signature we calculated does not match the signature you provided. Check your key "
                 "and signing method.");
  }
  return sig;
}

std::string ChunkSignature(const AuthInfo& auth, std::string_view prev, std::span<const char> data) {
  static const std::string kEmptyHash = Sha256Hex(std::string_view());
  return HmacHex(auth.signing_key, "AWS4-HMAC-SHA256-PAYLOAD\n" + auth.amz_date + '\n' + auth.scope + '\n' +
                                       std::string(prev) + '\n' + kEmptyHash + '\n' + Sha256Hex(data));
}

S3Result<std::string> Authenticator::DecodeChunked(std::string_view body, const AuthInfo& auth) {
  std::string out;
  std::string prev = auth.seed_signature;
  // Every chunk carries at least its header, so the loop is bounded by the body size.
  for (;;) {
    auto eol = body.find("\r\n");
    if (eol == std::string_view::npos || eol > 256) {
      return S3Err(400, "IncompleteBody", "a chunk header of the aws-chunked body is malformed or missing");
    }
    std::string_view head = body.substr(0, eol);
    body.remove_prefix(eol + 2);
    auto semi = head.find(";chunk-signature=");
    if (semi == std::string_view::npos || semi == 0 || semi > 16) {
      return S3Err(400, "IncompleteBody", "a chunk header lacks ';chunk-signature=' (sign every chunk)");
    }
    uint64_t size = 0;
    for (char c : head.substr(0, semi)) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) {
        return S3Err(400, "IncompleteBody", "a chunk size is not hexadecimal");
      }
      size = size * 16 + static_cast<uint64_t>(
                             std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
    }
    std::string_view given = head.substr(semi + 17);
    if (size > body.size()) return S3Err(400, "IncompleteBody", "the body ends inside a chunk");
    std::string_view data = body.substr(0, size);
    body.remove_prefix(size);
    std::string sig = ChunkSignature(auth, prev, data);
    if (!ConstantTimeEqual(sig, given)) {
      return S3Err(403, "SignatureDoesNotMatch",
                   "the signature of chunk " + std::to_string(out.size()) +
                       "+ of the aws-chunked body does not match: the body was changed");
    }
    prev = std::move(sig);
    if (!body.starts_with("\r\n")) return S3Err(400, "IncompleteBody", "a chunk is not followed by CRLF");
    body.remove_prefix(2);
    if (size == 0) break;
    out.append(data);
  }
  if (!body.empty()) return S3Err(400, "IncompleteBody", "bytes follow the final chunk of the aws-chunked body");
  return out;
}

}  // namespace shoal::s3
