// The S3 endpoint's signature checks (s3/s3_auth.h) over whole requests:
// the Authorization header, presigned query strings, x-amz-date, the
// credential scope and the signed-header list. The first byte picks a mode:
//   0: the request as given (every check that comes before the HMAC);
//   1: the request signed with SignV4 (common/sigv4.h, the under-store's
//      signer) must verify, as the same request;
//   2: a URL presigned by Authenticator::Presign must verify.
// The rest is the request: "METHOD TARGET", then "Name: value" lines, a blank
// line, and the body.
#include <algorithm>
#include <cctype>

#include "common/sigv4.h"
#include "fuzz_check.h"
#include "s3/s3_auth.h"
#include "s3/s3_request_parse.h"

namespace {

using namespace shoal;

constexpr const char* kKey = "AKIDEXAMPLE";
constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr const char* kRegion = "us-east-1";

// 2024-05-17T12:00:00Z
const auto kNow = std::chrono::system_clock::from_time_t(1715947200);

const s3::Authenticator& Auth() {
  static const s3::Authenticator a({{kKey, kSecret}}, std::chrono::minutes(15));
  return a;
}

bool IsToken(std::string_view s) {
  return !s.empty() && s.size() < 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

net::HttpRequest ReadRequest(std::string_view in) {
  net::HttpRequest req;
  auto line = [&] {
    auto at = in.find('\n');
    std::string_view l = in.substr(0, at);
    in.remove_prefix(at == std::string_view::npos ? in.size() : at + 1);
    return l;
  };
  std::string_view first = line();
  auto sp = first.find(' ');
  req.method = std::string(first.substr(0, sp));
  req.target = sp == std::string_view::npos ? "/" : std::string(first.substr(sp + 1));
  for (int i = 0; i < 32 && !in.empty(); ++i) {
    std::string_view h = line();
    if (h.empty()) break;
    auto colon = h.find(':');
    std::string_view value = colon == std::string_view::npos ? std::string_view() : h.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    req.headers.emplace_back(std::string(h.substr(0, colon)), std::string(value));
  }
  req.body = std::string(in);
  return req;
}

// A date the request carries that names a real second of a real day must
// come back from ParseAmzDate as that second (AmzDate prints it back).
void CheckDate(const std::string* s) {
  if (!s) return;
  auto t = s3::ParseAmzDate(*s);
  if (!t) return;
  auto num = [&](size_t pos, size_t len) { return std::stoi(s->substr(pos, len)); };
  std::chrono::year_month_day day{std::chrono::year(num(0, 4)), std::chrono::month(num(4, 2)),
                                  std::chrono::day(num(6, 2))};
  if (!day.ok() || num(13, 2) > 59) return;
  FUZZ_CHECK(s3::AmzDate(*t) == *s, "date %s parses as %s", s->c_str(), s3::AmzDate(*t).c_str());
}

void CheckVerified(const s3::S3Result<s3::AuthInfo>& v, bool presigned, const std::string& what) {
  FUZZ_CHECK(v.has_value(), "a request %s does not verify: %s %s", what.c_str(), v ? "" : v.error().code.c_str(),
             v ? "" : v.error().message.c_str());
  FUZZ_CHECK(v->access_key == kKey && v->presigned == presigned, "verified as '%s'", v->access_key.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 16 * 1024) return 0;
  const int mode = data[0] % 3;
  net::HttpRequest req = ReadRequest(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  auto query = s3::ParseQuery(req.query());
  if (!query) return 0;
  if (mode == 0) {
    CheckDate(req.Header("x-amz-date"));
    CheckDate(s3::Param(*query, "X-Amz-Date"));
    auto v = Auth().Verify(req, *query, kNow);
    if (v && !v->access_key.empty()) {
      FUZZ_CHECK(v->access_key == kKey, "verified under unknown key '%s'", v->access_key.c_str());
      if (v->presigned) FUZZ_CHECK(v->expires_at >= kNow, "an expired presigned URL verified");
    }
    return 0;
  }
  // The signed modes: what a real client can send (tokens for names, no line breaks).
  if (!IsToken(req.method)) return 0;
  s3::QueryParams params;
  for (const auto& [k, v] : *query) {
    if (!k.starts_with("X-Amz-") && k != "Signature" && k != "AWSAccessKeyId") params.emplace_back(k, v);
  }
  std::string host = "127.0.0.1:9001";
  if (mode == 1) {
    if (!req.target.starts_with('/') || req.target.find_first_of(" \r\n#") != std::string::npos) return 0;
    net::HttpRequest signed_req;
    signed_req.method = req.method;
    signed_req.body = req.body;
    for (const auto& [k, v] : req.headers) {
      if (!IsToken(k) || v.find_first_of("\r\n") != std::string::npos) return 0;
      if (IEquals(k, "authorization") || IEquals(k, "x-amz-date") || IEquals(k, "x-amz-content-sha256") ||
          IEquals(k, "x-amz-security-token") || IEquals(k, "host")) {
        continue;
      }
      signed_req.headers.emplace_back(k, v);
    }
    std::string path(req.path());
    signed_req.target = path + (params.empty() ? "" : "?" + s3::CanonicalQuery(params));
    s3::SigningInput in;
    in.method = req.method;
    in.host = host;
    in.canonical_uri = path;
    in.query = params;
    in.payload_hash = (data[size - 1] & 1) ? std::string(s3::kUnsignedPayload) : s3::Sha256Hex(req.body);
    in.region = kRegion;
    s3::Credentials creds{kKey, kSecret, "", "fuzz"};
    s3::SignV4(in, creds, kNow, signed_req.headers);
    auto q = s3::ParseQuery(signed_req.query());
    FUZZ_CHECK(q.has_value(), "the signer's query does not parse");
    CheckVerified(Auth().Verify(signed_req, *q, kNow), false, "signed with SignV4");
    return 0;
  }
  // mode 2: a presigned URL for the request's path (sent %-encoded) and parameters.
  std::string path = "/" + s3::UriEncode(req.path(), true);
  auto expires = std::chrono::seconds(1 + data[size - 1] % 3600);
  net::HttpRequest get;
  get.method = req.method;
  get.target = Auth().Presign(req.method, host, path, params, kKey, kRegion, expires, kNow);
  get.headers.emplace_back("Host", host);
  auto q = s3::ParseQuery(get.query());
  if (!q) return 0;  // over kMaxQueryParams with the six X-Amz-* ones
  CheckVerified(Auth().Verify(get, *q, kNow), true, "presigned by Presign");
  return 0;
}
