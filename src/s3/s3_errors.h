// S3 errors: the code, HTTP status and message of an S3 error response, and
// the one place where a Shoal Status becomes one (FromStatus).
//
//   <?xml version="1.0" encoding="UTF-8"?>
//   <Error><Code>NoSuchKey</Code><Message>...</Message><Resource>/data/x</Resource>
//   <RequestId>...</RequestId></Error>
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "net/http_server.h"
#include "shoal/status.h"

namespace shoal::s3 {

struct S3Error {
  int http_status = 500;
  std::string code;     // "NoSuchKey", "SignatureDoesNotMatch", ...
  std::string message;  // one line: what failed and what to do
};

template <typename T>
using S3Result = std::expected<T, S3Error>;

inline std::unexpected<S3Error> S3Err(int http_status, std::string code, std::string message) {
  return std::unexpected<S3Error>(S3Error{http_status, std::move(code), std::move(message)});
}

// A Status from the client library as the S3 error a client expects for it;
// `not_found_code` is NoSuchKey for objects, NoSuchBucket for buckets.
S3Error FromStatus(const Status& status, std::string_view not_found_code = "NoSuchKey");

// The error response: XML body (none for HEAD, which the server strips),
// x-amz-request-id.
net::HttpResponse ErrorResponse(const S3Error& error, std::string_view resource, std::string_view request_id);

// The errors the HTTP server answers itself (malformed request, body over the
// limit, over the connection limit) in S3's form, for ServerOptions::error_response.
net::HttpResponse ServerErrorResponse(int http_status, const Status& status);

}  // namespace shoal::s3
