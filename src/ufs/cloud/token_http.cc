#include "ufs/cloud/token_http.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "ufs/http/http_transport.h"
#include "ufs/http/retry.h"
#include "ufs/uri.h"

namespace shoal::cloud {
namespace {

// What an endpoint said, short and without anything that could be a secret:
// OAuth's error/error_description, AWS's Code/Message, else the first line.
std::string Said(const HttpResponse& r) {
  std::string out = "HTTP " + std::to_string(r.status);
  auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    for (const char* k : {"error", "error_description", "Code", "Message", "message"}) {
      if (j.contains(k) && j[k].is_string()) out += " " + j[k].get<std::string>();
    }
    return out.size() > 300 ? out.substr(0, 300) + "..." : out;
  }
  for (const char* tag : {"<Code>", "<Message>"}) {
    auto at = r.body.find(tag);
    if (at == std::string::npos) continue;
    at += std::string_view(tag).size();
    out += " " + r.body.substr(at, std::min<size_t>(r.body.find('<', at) - at, 200));
  }
  return out;
}

}  // namespace

std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += '&';
    out += PercentEncode(k, false) + "=" + PercentEncode(v, false);
  }
  return out;
}

std::map<std::string, std::string> FormDecode(std::string_view text) {
  std::map<std::string, std::string> out;
  auto decode = [](std::string_view s) {
    std::string plus(s);
    for (char& c : plus) {
      if (c == '+') c = ' ';
    }
    return PercentDecode(plus).value_or(plus);
  };
  for (size_t i = 0; i <= text.size();) {
    size_t j = text.find('&', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view part = text.substr(i, j - i);
    i = j + 1;
    if (part.empty()) continue;
    auto eq = part.find('=');
    out[decode(part.substr(0, eq))] = eq == std::string_view::npos ? std::string() : decode(part.substr(eq + 1));
  }
  return out;
}

Result<std::string> CallTokenEndpoint(std::string_view who, const TokenCall& call) {
  const std::string what = std::string(who) + ": " + call.method + " " + call.url;
  RetryPolicy policy;
  policy.max_retries = std::max(0, call.attempts - 1);
  policy.base_delay = std::chrono::milliseconds(100);
  policy.max_delay = std::chrono::milliseconds(1'000);
  policy.deadline = std::chrono::steady_clock::now() + call.timeout * std::max(1, call.attempts);
  policy.give_up_if_pause_reaches_deadline = true;
  auto attempt = [&](std::chrono::milliseconds left) -> Result<HttpResponse> {
    HttpRequest req;
    req.method = call.method;
    req.url = call.url;
    req.headers = call.headers;
    req.body = call.body;
    req.timeout = std::min(left, call.timeout);
    req.connect_timeout = std::min(req.timeout, std::chrono::milliseconds(1'000));
    auto r = PerformHttp(req);
    if (r && (r->status >= 500 || r->status == 429)) return Err(Code::kUnavailable, Said(*r));
    return r;
  };
  auto outcome = RunWithRetries(policy, attempt, [](const Result<HttpResponse>& r) { return !r; });
  if (!outcome.last) return Err(Code::kTimeout, what + " did not answer in time");
  auto& r = *outcome.last;
  if (!r) {
    Code c = r.error().code() == Code::kTimeout ? Code::kTimeout : Code::kUnavailable;
    return Err(c, what + " failed after " + std::to_string(outcome.attempts) + " attempt" +
                      (outcome.attempts == 1 ? "" : "s") + ": " + r.error().message());
  }
  if (r->status < 200 || r->status >= 300) {
    Code c = (r->status == 401 || r->status == 403) ? Code::kPermissionDenied
             : r->status == 404                     ? Code::kNotFound
                                                    : Code::kInvalidArgument;
    return Err(c, what + " was refused: " + Said(*r));
  }
  return std::move(r->body);
}

namespace {

Status OutOfRange(std::string_view who, std::string_view field, int64_t value) {
  return Status(Code::kIo, std::string(who) + ": the token endpoint's " + std::string(field) + " (" +
                               std::to_string(value) +
                               ") is beyond any token's lifetime: check what answers at that endpoint");
}

}  // namespace

Result<Secret> ParseOAuthToken(std::string_view who, std::string_view body, WallClock::time_point now) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("access_token") || !j["access_token"].is_string() ||
      j["access_token"].get<std::string>().empty()) {
    return Err(Code::kIo, std::string(who) + ": the token endpoint's answer has no access_token (" +
                              std::to_string(body.size()) + " bytes that are not an OAuth token answer)");
  }
  // A lifetime or an expiry outside these is no token's (and would overflow
  // the clock's nanoseconds): the answer is refused rather than read as "never".
  constexpr int64_t kMaxSeconds = int64_t{10} * 366 * 86400;  // expires_in: ten years
  constexpr int64_t kLastUnixSecond = 7'258'118'400;          // expires_on: 2200-01-01
  auto number = [&](const char* key) -> std::optional<int64_t> {
    if (!j.contains(key)) return std::nullopt;
    const auto& v = j[key];
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (!(d >= -1e15 && d <= 1e15)) return std::numeric_limits<int64_t>::max();  // NaN or no token's: refused below
      return static_cast<int64_t>(d);
    }
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return std::nullopt;
      return std::stoll(s);
    }
    return std::nullopt;
  };
  Secret s;
  s.bearer_token = j["access_token"].get<std::string>();
  if (auto st = CheckSecretFields(who, s); !st.ok()) return Err(st);
  if (auto in = number("expires_in")) {
    if (*in > kMaxSeconds) return Err(OutOfRange(who, "expires_in", *in));
    s.expires = now + std::chrono::seconds(std::max<int64_t>(*in, -1));
  } else if (auto on = number("expires_on")) {
    if (*on > kLastUnixSecond) return Err(OutOfRange(who, "expires_on", *on));
    s.expires = WallClock::from_time_t(static_cast<std::time_t>(std::max<int64_t>(*on, 0)));
  } else {
    s.expires = now + std::chrono::seconds(3600);  // RFC 6749 leaves it optional; an hour is every cloud's default
  }
  if (s.expires <= now) {
    return Err(Code::kIo, std::string(who) + ": the token endpoint gave a token that expired at " +
                              FormatExpiry(s.expires) + " (the clock here says " + FormatExpiry(now) +
                              "): check the endpoint and this machine's clock");
  }
  return s;
}

}  // namespace shoal::cloud
