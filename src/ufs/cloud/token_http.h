// The HTTP calls every credential provider makes: a metadata GET, a token
// POST with a form body, and the OAuth 2.0 token answer Google and Entra ID
// both give. Written once here so each provider is only its protocol.
//
// Thread safety: all functions are reentrant.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/status.h"
#include "ufs/cloud/credential_cache.h"

namespace shoal::cloud {

struct TokenCall {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // a form (FormEncode) or JSON
  std::chrono::milliseconds timeout{5'000};
  int attempts = 3;  // transport errors and 5xx are retried (short pauses)
};

// The 2xx body of `call`, or an error "<who>: <method> <url> failed: HTTP 403:
// <the endpoint's error, secrets cut>" / "... cannot be reached: ...". `who`
// names the provider ("instance-metadata").
Result<std::string> CallTokenEndpoint(std::string_view who, const TokenCall& call);

// application/x-www-form-urlencoded.
std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields);
// Its inverse ('+' is a space; a malformed %-escape is kept as sent); the
// last of repeated names wins. Also reads a query string.
std::map<std::string, std::string> FormDecode(std::string_view text);

// An OAuth 2.0 token answer: {"access_token", "expires_in" (number or string)}
// or Azure's "expires_on" (unix seconds). A bearer Secret expiring then.
Result<Secret> ParseOAuthToken(std::string_view who, std::string_view body, WallClock::time_point now);

}  // namespace shoal::cloud
