// The HTTP server's request parser (net/request_parse.h: the Beast parser
// with the server's limits, exactly as a connection runs it), fed pipelined
// requests, and the route table's lookup of what it parsed.
#include <algorithm>
#include <cctype>

#include "fuzz_check.h"
#include "net/request_parse.h"

namespace {

constexpr size_t kHeaderLimit = 16 * 1024;  // ServerOptions' defaults, smaller body to stay fast
constexpr size_t kBodyLimit = 64 * 1024;

const shoal::net::Router& Routes() {
  static const shoal::net::Router r = [] {
    shoal::net::Router t;
    for (const char* path : {"/v1/read", "/v1/stat", "/v1/health"}) t.Add("GET", path, [](auto&&...) {});
    t.Add("POST", "/v1/load", [](auto&&...) {});
    return t;
  }();
  return r;
}

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // A connection serves requests one after another from the same bytes.
  for (int i = 0; i < 8 && !bytes.empty(); ++i) {
    int status = 0;
    auto parsed = shoal::net::ParseRequest(bytes, kHeaderLimit, kBodyLimit, &status);
    if (!parsed) {
      if (parsed.error().code() == shoal::Code::kInvalidArgument) {
        FUZZ_CHECK(status == 400 || status == 413 || status == 431, "status %d", status);
      }
      break;
    }
    const shoal::net::HttpRequest& req = parsed->request;
    FUZZ_CHECK(parsed->consumed > 0 && parsed->consumed <= bytes.size(), "consumed %zu of %zu", parsed->consumed,
               bytes.size());
    FUZZ_CHECK(req.body.size() <= kBodyLimit, "a body of %zu bytes passed the %zu limit", req.body.size(), kBodyLimit);
    FUZZ_CHECK(!req.method.empty() && !req.target.empty(), "a request without method or target");
    FUZZ_CHECK(req.path().size() + (req.target.find('?') == std::string::npos ? 0 : req.query().size() + 1) ==
                   req.target.size(),
               "path and query do not make up the target");
    // What a handler sees must be safe to echo into a header line.
    FUZZ_CHECK(!HasLineBreak(req.method) && !HasLineBreak(req.target), "a line break in the request line");
    for (const auto& [name, value] : req.headers) {
      FUZZ_CHECK(!name.empty() && !HasLineBreak(name) && !HasLineBreak(value), "header '%s' has a line break",
                 name.c_str());
      const std::string* found = req.Header(name);
      FUZZ_CHECK(found != nullptr, "Header(%s) misses a header the request has", name.c_str());
    }
    const shoal::net::Handler* h = nullptr;
    auto m = Routes().Find(req.method, req.path(), &h);
    FUZZ_CHECK((m == shoal::net::Router::Match::kFound) == (h != nullptr), "Find's answer and handler disagree");
    bytes.remove_prefix(parsed->consumed);
    if (!parsed->keep_alive) break;
  }
  return 0;
}
