#include "ufs/uri.h"

#include "common/sigv4.h"

#include <cctype>

namespace shoal {

Result<UfsUri> ParseUfsUri(std::string_view uri) {
  auto pos = uri.find("://");
  if (pos == std::string_view::npos || pos == 0) {
    return Err(Code::kInvalidArgument, "malformed under-store URI '" + std::string(uri) +
                                           "': expected scheme://..., e.g. file:///srv/data/ or s3://bucket/prefix/");
  }
  UfsUri out;
  out.scheme = std::string(uri.substr(0, pos));
  for (auto& c : out.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view rest = uri.substr(pos + 3);
  if (out.scheme == "file") {
    if (rest.empty() || rest[0] != '/') {
      return Err(Code::kInvalidArgument,
                 "malformed file URI '" + std::string(uri) + "': use file:///absolute/path (three slashes)");
    }
    out.path = std::string(rest);
    while (out.path.size() > 1 && out.path.back() == '/') out.path.pop_back();
    if (out.path != "/") out.path += '/';
    return out;
  }
  if (out.scheme != "s3" && out.scheme != "gs" && out.scheme != "az" && out.scheme != "hdfs" &&
      out.scheme != "webhdfs") {
    return Err(Code::kInvalidArgument, "unknown under-store scheme '" + out.scheme + "' in '" + std::string(uri) +
                                           "' (supported: file, s3, gs, az, hdfs)");
  }
  auto slash = rest.find('/');
  out.authority = std::string(rest.substr(0, slash));
  if (out.authority.empty()) {
    const char* what = out.scheme == "az" ? "container" : out.scheme == "hdfs" ? "namenode host:port" : "bucket";
    return Err(Code::kInvalidArgument,
               "malformed URI '" + std::string(uri) + "': missing " + what + " (" + out.scheme + "://" + what + "/prefix/)");
  }
  std::string prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1));
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty()) prefix += '/';
  out.path = std::move(prefix);
  return out;
}

Result<std::string> NormaliseKey(std::string_view key) {
  if (key.size() > kMaxPathBytes) {
    return Err(Code::kInvalidArgument, "path of " + std::to_string(key.size()) + " bytes: the longest is " +
                                           std::to_string(kMaxPathBytes) + " (name too long)");
  }
  std::string out;
  size_t i = 0;
  while (i <= key.size()) {
    size_t j = key.find('/', i);
    if (j == std::string_view::npos) j = key.size();
    std::string_view seg = key.substr(i, j - i);
    if (seg == "..") {
      return Err(Code::kInvalidArgument, "path '" + std::string(key) + "' contains '..': paths may not leave their mount");
    }
    if (seg.find('\0') != std::string_view::npos) {
      return Err(Code::kInvalidArgument, "path contains a NUL byte");
    }
    if (seg.size() > kMaxNameBytes) {
      return Err(Code::kInvalidArgument, "path with a name of " + std::to_string(seg.size()) +
                                             " bytes: the longest is " + std::to_string(kMaxNameBytes) +
                                             " (name too long)");
    }
    if (!seg.empty() && seg != ".") {
      if (!out.empty()) out += '/';
      out.append(seg);
    }
    i = j + 1;
  }
  return out;
}

std::string TrimSlashes(std::string_view key) {
  while (!key.empty() && key.front() == '/') key.remove_prefix(1);
  while (!key.empty() && key.back() == '/') key.remove_suffix(1);
  return std::string(key);
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        return Err(Code::kInvalidArgument, "bad percent-escape in '" + std::string(s) + "'");
      }
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string PercentEncode(std::string_view s, bool keep_slash) { return s3::UriEncode(s, keep_slash); }

}  // namespace shoal
