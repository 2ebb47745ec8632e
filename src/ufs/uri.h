// Parsing of under-store URIs: scheme://authority/path.
#pragma once

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

// Normalises a relative key: collapses "//", drops "." segments, strips leading and
// trailing '/'. Rejects ".." segments and NUL bytes (kInvalidArgument).
Result<std::string> NormaliseKey(std::string_view key);

// A key without leading or trailing '/' ("/a/b/" -> "a/b"); nothing else changes.
std::string TrimSlashes(std::string_view key);

// Percent-decodes a URL path component ("%2e%2e" -> ".."); kInvalidArgument on bad escapes.
Result<std::string> PercentDecode(std::string_view s);
// Percent-encodes everything but unreserved characters (and '/' when keep_slash).
std::string PercentEncode(std::string_view s, bool keep_slash);

}  // namespace shoal
