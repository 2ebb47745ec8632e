// The few S3 XML documents the backend reads and writes, on the tag scanner
// of ufs/http/xml.h (XmlElements, XmlText, XmlDecode, XmlEscape).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ufs/http/xml.h"

namespace shoal::s3 {

struct S3Error {
  std::string code;     // "NoSuchKey", "SlowDown", ...; "" when the body was not an S3 error
  std::string message;
  std::string region;   // <Region> in redirect errors
};
S3Error ParseError(std::string_view xml);

struct ListedObject {
  std::string key;  // full key in the bucket
  uint64_t size = 0;
  std::string etag;  // without quotes
  int64_t mtime_ns = 0;
};
struct ListResult {
  std::vector<ListedObject> objects;
  std::vector<std::string> common_prefixes;  // full prefixes, ending in the delimiter
  bool truncated = false;
  std::string next_token;
};
// Parses a ListObjectsV2 response (ListBucketResult).
ListResult ParseListV2(std::string_view xml);

// "2024-05-17T12:34:56.000Z" -> ns since the epoch; 0 if malformed.
int64_t ParseIso8601(std::string_view s);
// Strips surrounding quotes (and a W/ weak marker) from an ETag.
std::string UnquoteEtag(std::string_view etag);

// <CompleteMultipartUpload> for parts 1..n with these ETags (unquoted).
std::string CompleteMultipartXml(const std::vector<std::string>& etags);
// <Delete> for full keys (Quiet mode: only failures are reported).
std::string DeleteObjectsXml(const std::vector<std::string>& keys);

}  // namespace shoal::s3
