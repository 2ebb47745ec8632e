// What cloud credential endpoints answer, read by the credential providers
// (src/ufs/cloud/): the OAuth 2.0 token answer of Google's token endpoint and
// metadata server and of Entra ID and Azure's IMDS (ParseOAuthToken), the JSON
// of AWS's instance-metadata and container endpoints (ParseAwsJson), what a
// credential_process prints (ParseProcessOutput), STS's XML answer
// (ParseStsAnswer) and the ISO 8601 times they carry. Whatever reads as a
// secret must be fit for a request header (CheckSecretFields) and expire
// within the clock's range. The first byte picks a mode:
//   0..3: the rest is an answer to the parser of that number, as sent;
//   4:    an OAuth answer the harness writes from a fuzz-chosen token and
//         lifetime: it reads back exactly when both are sane, else is refused.
#include <chrono>
#include <string>

#include "fuzz_check.h"
#include "ufs/cloud/aws_credentials.h"
#include "ufs/cloud/credential_cache.h"
#include "ufs/cloud/token_http.h"

namespace {

using namespace shoal;
using namespace shoal::cloud;

// 2026-12-07T00:00:00Z: a fixed "now", so an input means the same every run.
const WallClock::time_point kNow = WallClock::from_time_t(1'796'601'600);

void CheckSecret(const Result<Secret>& s, bool bearer) {
  if (!s) {
    FUZZ_CHECK(!s.error().message().empty(), "a refusal without a message");
    return;
  }
  FUZZ_CHECK(CheckSecretFields("fuzz", *s).ok(), "a secret unfit for a header was accepted");
  if (bearer) {
    FUZZ_CHECK(!s->bearer_token.empty() && s->access_key_id.empty(), "a token answer without its token");
    FUZZ_CHECK(s->expires > kNow, "an expired token was accepted");
  } else {
    FUZZ_CHECK(!s->access_key_id.empty() && !s->secret_access_key.empty(), "keys accepted without both parts");
  }
  if (s->expiring()) (void)FormatExpiry(s->expires);
}

bool HeaderSafe(std::string_view v) {
  if (v.empty() || v.size() > kMaxSecretField) return false;
  for (unsigned char c : v) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.Byte() % 5;
  const std::string_view body = in.rest();
  switch (mode) {
    case 0: CheckSecret(ParseOAuthToken("fuzz", body, kNow), true); return 0;
    case 1: CheckSecret(ParseAwsJson("fuzz", body, "Token"), false); return 0;
    case 2: CheckSecret(ParseProcessOutput("fuzz", body), false); return 0;
    case 3: {
      auto s = ParseStsAnswer("fuzz", body, kNow);
      CheckSecret(s, false);
      if (s) FUZZ_CHECK(s->expires > kNow && !s->session_token.empty(), "STS keys without a live session token");
      if (auto t = ParseIso8601(body.substr(0, 40))) (void)FormatExpiry(*t);
      return 0;
    }
    default: break;
  }
  const int64_t lifetime = in.Int<int32_t>();
  const std::string token(in.rest());
  // Valid UTF-8 only: nlohmann refuses the rest, which is the JSON parser's
  // business, not the provider's.
  const std::string answer = "{\"access_token\":" + fuzz::JsonQuote(token) +
                             ",\"token_type\":\"Bearer\",\"expires_in\":" + std::to_string(lifetime) + "}";
  auto s = ParseOAuthToken("fuzz", answer, kNow);
  CheckSecret(s, true);
  const bool ascii = HeaderSafe(token);
  const bool sane_lifetime = lifetime > 0 && lifetime <= int64_t{10} * 366 * 86400;
  if (ascii && sane_lifetime) {
    FUZZ_CHECK(s.has_value(), "a sane token answer was refused: %s", s.error().message().c_str());
    FUZZ_CHECK(s->bearer_token == token && s->expires == kNow + std::chrono::seconds(lifetime),
               "the token does not read back as written");
  }
  if (!ascii || !sane_lifetime)
    FUZZ_CHECK(!s.has_value(), "a token unfit for a header or of no sane lifetime was accepted");
  return 0;
}
