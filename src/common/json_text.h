// JSON string contents as written by hand (error bodies, test and fuzz
// documents): quotes and backslashes escaped, control bytes as \u00XX, every
// other byte as given (so bytes that are not UTF-8 stay as they were).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace shoal {

inline std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace shoal
