// What the S3 endpoint reads out of a request's bytes before it acts on
// them: the query string, a part number, and the XML documents of
// CompleteMultipartUpload and DeleteObjects. Each is a pure function of
// untrusted bytes, bounded in what it accepts, answering the S3 error a
// client expects for what it refuses (fuzz/ drives them directly).
//
// Thread safety: the functions are pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "s3/s3_common.h"
#include "s3/s3_errors.h"

namespace shoal::s3 {

inline constexpr size_t kMaxQueryParams = 64;
inline constexpr int kMaxParts = 10000;
inline constexpr size_t kMaxDeleteKeys = 1000;

// The query string, %-decoded, in order (a repeated name is kept twice).
S3Result<QueryParams> ParseQuery(std::string_view query);

// A partNumber (query parameter or <PartNumber>): 1 to kMaxParts.
S3Result<int> ParsePartNumber(const std::string* text);

// One <Part> of a CompleteMultipartUpload document.
struct CompletedPart {
  int number = 0;
  std::string etag;  // without its quotes
};
// The parts of a <CompleteMultipartUpload>: 1 to kMaxParts, in strictly
// ascending order of part number.
S3Result<std::vector<CompletedPart>> ParseCompleteMultipart(std::string_view xml);

// A DeleteObjects (<Delete>) document: up to kMaxDeleteKeys non-empty keys.
struct DeleteRequest {
  std::vector<std::string> keys;
  bool quiet = false;
};
S3Result<DeleteRequest> ParseDeleteObjects(std::string_view xml);

// `s` without its '"' characters (ETags are compared unquoted).
std::string Unquote(std::string_view s);

}  // namespace shoal::s3
