// The worker's query strings (worker/query.h): parsing, the typed reads every
// route makes, and a round trip through AWS's %-encoding (the client's).
#include <algorithm>

#include "common/sigv4.h"
#include "fuzz_check.h"
#include "worker/query.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  shoal::Query q = shoal::Query::Parse(text);
  if (!q.error.empty()) {
    FUZZ_CHECK(q.error.starts_with("malformed query string: "), "error '%s'", q.error.c_str());
    return 0;
  }
  FUZZ_CHECK(q.params.size() <= text.size(), "%zu parameters from %zu bytes", q.params.size(), text.size());
  // The parameters the routes read (worker.cc, load_job.cc, rules_route.cc).
  for (const char* k : {"path", "version", "offset", "length", "size", "recursive", "data", "cache_only", "id",
                        "holders", "spread", "limit", "token"}) {
    q.Flag(k);
    auto n = q.Number(k);
    if (n) {
      const std::string& v = *q.Get(k);
      FUZZ_CHECK(!v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }),
                 "Number(%s) accepted '%s'", k, v.c_str());
    }
  }
  std::string again;
  for (const auto& [k, v] : q.params) {
    if (k.empty()) continue;  // "=v" has no name to send back
    again += (again.empty() ? "" : "&") + shoal::s3::UriEncode(k, false) + "=" + shoal::s3::UriEncode(v, false);
    q.Number(k);
  }
  shoal::Query r = shoal::Query::Parse(again);
  FUZZ_CHECK(r.error.empty(), "re-encoded query '%s' does not parse: %s", again.c_str(), r.error.c_str());
  for (const auto& [k, v] : q.params) {
    if (k.empty()) continue;
    const std::string* back = r.Get(k);
    FUZZ_CHECK(back && *back == v, "parameter '%s' did not survive a round trip", k.c_str());
  }
  return 0;
}
