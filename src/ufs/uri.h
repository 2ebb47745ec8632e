// Parsing of under-store URIs: scheme://authority/path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

struct UfsUri {
  std::string scheme;     // "file", "s3", "gs", "az", "hdfs"
  std::string authority;  // bucket, container, or namenode host:port; "" for file://
  std::string path;       // for file://: absolute dir path; else the key prefix ("" or ending in '/')
};

// "s3://bucket/prefix" -> {s3, bucket, "prefix/"}; "file:///srv/data" -> {file, "", "/srv/data/"}.
// The path always ends in '/' (it names a directory or key prefix).
Result<UfsUri> ParseUfsUri(std::string_view uri);

// The longest path, and the longest name (segment) in one, any door takes:
// PATH_MAX less its NUL, and the longest key the object stores take (a POSIX
// under-store refuses names over NAME_MAX itself, also as kInvalidArgument).
constexpr size_t kMaxPathBytes = 4095;
constexpr size_t kMaxNameBytes = 1024;

// Normalises a relative key: collapses "//", drops "." segments, strips leading and
// trailing '/'. Rejects ".." segments, NUL bytes and paths or names longer
// than kMaxPathBytes or kMaxNameBytes (kInvalidArgument; the message does not
// repeat the path).
Result<std::string> NormaliseKey(std::string_view key);

// A key without leading or trailing '/' ("/a/b/" -> "a/b"); nothing else changes.
std::string TrimSlashes(std::string_view key);

// Percent-decodes a URL path component ("%2e%2e" -> ".."); kInvalidArgument on bad escapes.
Result<std::string> PercentDecode(std::string_view s);
// Percent-encodes everything but unreserved characters (and '/' when keep_slash).
std::string PercentEncode(std::string_view s, bool keep_slash);

}  // namespace shoal
