// The query string of a request to the worker's native API, percent-decoded,
// and the typed reads of its parameters every route makes. A repeated name
// keeps its last value; a malformed %-escape leaves `error` set (the route
// answers 400 with it).
//
// Thread safety: a parsed Query is immutable; share it freely.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

struct Query {
  std::map<std::string, std::string> params;
  std::string error;  // why the query string is malformed; empty when it is not

  static Query Parse(std::string_view q);

  // The value of `k`, or nullptr.
  const std::string* Get(const std::string& k) const;
  // Present and "1", "true" or empty.
  bool Flag(const std::string& k) const;
  // A non-negative decimal integer below 2^64: kInvalidArgument names the parameter otherwise.
  Result<uint64_t> Number(const std::string& k) const;
};

}  // namespace shoal
