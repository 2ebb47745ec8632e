#include "worker/query.h"

#include <charconv>

#include "ufs/uri.h"

namespace shoal {

Query Query::Parse(std::string_view q) {
  Query out;
  while (!q.empty()) {
    auto amp = q.find('&');
    auto part = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (part.empty()) continue;
    auto eq = part.find('=');
    auto k = PercentDecode(part.substr(0, eq));
    auto v = PercentDecode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    if (!k || !v) {
      out.error = "malformed query string: " + (k ? v.error() : k.error()).message();
      return out;
    }
    out.params[*k] = *v;
  }
  return out;
}

const std::string* Query::Get(const std::string& k) const {
  auto it = params.find(k);
  return it == params.end() ? nullptr : &it->second;
}

bool Query::Flag(const std::string& k) const {
  auto v = Get(k);
  return v && (*v == "1" || *v == "true" || v->empty());
}

Result<uint64_t> Query::Number(const std::string& k) const {
  auto v = Get(k);
  if (!v) return Err(Code::kInvalidArgument, "missing query parameter '" + k + "'");
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec == std::errc::result_out_of_range) {
    return Err(Code::kInvalidArgument, "query parameter " + k + "=" + *v + " is out of range (at most 2^64-1)");
  }
  if (ec != std::errc() || p != v->data() + v->size()) {
    return Err(Code::kInvalidArgument, "query parameter '" + k + "' must be a non-negative integer, not '" + *v + "'");
  }
  return n;
}

}  // namespace shoal
