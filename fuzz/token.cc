// Bearer tokens and the identity headers a worker trusts (security/token.h,
// security/request_guard.h). The first byte picks a mode:
//   0: the rest is a bearer credential as a client sent it. No key of the
//      harness signed it, so Verify refuses it (never crashes), and the
//      guard, given it in Authorization, answers 401 on every route but health.
//   1: a token the harness issues for a fuzz-chosen user and groups (what
//      `shoal token issue` accepts), then one fuzz-chosen byte set to a
//      fuzz-chosen value. Verify accepts it only unchanged, and then names
//      exactly that user and those groups.
//   2: the rest is an X-Shoal-On-Behalf-Of value from a trusted door: the
//      guard admits only header-safe names (common/end_user.h), else 400.
#include <memory>
#include <string>
#include <vector>

#include "common/end_user.h"
#include "fuzz_check.h"
#include "security/request_guard.h"
#include "security/token.h"

namespace {

using namespace shoal;
using namespace shoal::security;
using namespace std::chrono_literals;

constexpr int64_t kNow = 1'800'000'000;

const std::shared_ptr<const TokenKeys>& Keys() {
  static const auto keys = std::make_shared<const TokenKeys>(TokenKeys::FromSecrets({std::string(32, 'k')}));
  return keys;
}

net::HttpRequest Request(std::string_view authorization, std::string_view on_behalf) {
  net::HttpRequest r;
  r.method = "GET";
  r.target = "/v1/stat?path=/data/x";
  if (!authorization.empty()) r.headers.emplace_back("Authorization", std::string(authorization));
  if (!on_behalf.empty()) r.headers.emplace_back(std::string(kOnBehalfHeader), std::string(on_behalf));
  return r;
}

// A name `shoal token issue` accepts, from the input.
std::string Name(fuzz::FuzzInput& in) {
  std::string n(in.Bytes(24));
  return IsHeaderSafeName(n) ? n : "u" + std::to_string(n.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 16 * 1024) return 0;
  fuzz::FuzzInput in(data, size);
  const int mode = in.Byte() % 3;
  RequestGuard guard({.tokens = Keys(), .proxy_users = {"door"}});
  if (mode == 0) {
    std::string_view bearer = in.rest();
    auto v = Keys()->Verify(bearer, kNow);
    FUZZ_CHECK(!v, "a token no key signed verified as %s", v->user.c_str());
    FUZZ_CHECK(v.error().code() == Code::kPermissionDenied && !v.error().message().empty(),
               "a refusal that says nothing or has code %d", static_cast<int>(v.error().code()));
    auto id = guard.Admit(Request("Bearer " + std::string(bearer), ""), Access::kRead);
    FUZZ_CHECK(!id && id.error().http_status == 401, "the guard admitted a bad credential or answered %d",
               id ? 200 : id.error().http_status);
    FUZZ_CHECK(guard.Admit(Request("Bearer " + std::string(bearer), ""), Access::kPublic).has_value(),
               "health refused a caller for its credential");
    return 0;
  }
  if (mode == 1) {
    const std::string user = Name(in);
    std::vector<std::string> groups;
    for (int n = in.Byte() % 4; n > 0; --n) groups.push_back(Name(in));
    const std::string token = Keys()->Issue(user, groups, 1h, kNow);
    std::string changed = token;
    const size_t at = in.Below(changed.size() - 1);
    changed[at] = static_cast<char>(in.Byte());
    auto v = Keys()->Verify(changed, kNow);
    if (changed == token) {
      FUZZ_CHECK(v, "the token as issued was refused: %s", v.error().message().c_str());
      FUZZ_CHECK(v->user == user && v->groups == groups, "the token names %s, not %s", v->user.c_str(), user.c_str());
    } else {
      FUZZ_CHECK(!v, "a token with byte %zu changed still verified (as %s)", at, v->user.c_str());
    }
    auto late = Keys()->Verify(token, kNow + 3600);
    FUZZ_CHECK(!late, "a token verified at its expiry");
    return 0;
  }
  std::string_view value = in.rest();
  const std::string door = Keys()->Issue("door", {}, 1h, kNow);
  auto id = guard.Admit(Request("Bearer " + door, value), Access::kRead);
  if (!id) {
    FUZZ_CHECK(id.error().http_status == 400, "an On-Behalf-Of value from a trusted door answered %d",
               id.error().http_status);
    return 0;
  }
  FUZZ_CHECK(IsHeaderSafeName(id->user), "admitted end user '%s' is not a header-safe name", id->user.c_str());
  for (const auto& g : id->groups) FUZZ_CHECK(IsHeaderSafeName(g), "admitted group '%s'", g.c_str());
  FUZZ_CHECK(id->groups.size() <= 256, "%zu groups admitted", id->groups.size());
  FUZZ_CHECK(id->acting_for_by == "door" || id->user == "door", "acting for %s by '%s'", id->user.c_str(),
             id->acting_for_by.c_str());
  return 0;
}
