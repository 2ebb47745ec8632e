#include "s3/s3_errors.h"

#include "ufs/http/xml.h"

namespace shoal::s3 {

S3Error FromStatus(const Status& st, std::string_view not_found_code) {
  const std::string& m = st.message();
  switch (st.code()) {
    case Code::kNotFound: return {404, std::string(not_found_code), m};
    // A policy's refusal (authz) or the under-store's: each message says which.
    case Code::kPermissionDenied: return {403, "AccessDenied", m};
    case Code::kInvalidArgument:
    case Code::kOutOfRange: return {400, "InvalidArgument", m};
    case Code::kAlreadyExists: return {409, "OperationAborted", m};
    case Code::kReadOnly: return {403, "AccessDenied", m + " (the mount is read_only)"};
    case Code::kIsDirectory: return {404, std::string(not_found_code), m + " (a directory, not an object)"};
    case Code::kNotDirectory:
    case Code::kNotEmpty: return {409, "OperationAborted", m};
    case Code::kNotSupported: return {501, "NotImplemented", m};
    case Code::kVersionMismatch: return {503, "SlowDown", m + " (the object changed while it was read: retry)"};
    case Code::kUnavailable:
    case Code::kTimeout: return {503, "ServiceUnavailable", m + " (retry later)"};
    case Code::kNoSpace: return {507, "InsufficientStorage", m};
    default: return {500, "InternalError", m};
  }
}

net::HttpResponse ErrorResponse(const S3Error& e, std::string_view resource, std::string_view request_id) {
  std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + XmlEscape(e.code) +
                     "</Code><Message>" + XmlEscape(e.message) + "</Message><Resource>" + XmlEscape(resource) +
                     "</Resource><RequestId>" + XmlEscape(request_id) + "</RequestId></Error>\n";
  auto r = net::HttpResponse::Text(e.http_status, std::move(body), "application/xml");
  r.headers.emplace_back("x-amz-request-id", std::string(request_id));
  return r;
}

net::HttpResponse ServerErrorResponse(int http_status, const Status& status) {
  std::string code = "InternalError";
  switch (http_status) {
    case 400: code = "BadRequest"; break;
    case 404: code = "NoSuchKey"; break;
    case 405: code = "MethodNotAllowed"; break;
    case 413: code = "EntityTooLarge"; break;
    case 431: code = "RequestHeaderSectionTooLarge"; break;
    case 503: code = "SlowDown"; break;
    default: break;
  }
  return ErrorResponse({http_status, code, status.message()}, "", "");
}

}  // namespace shoal::s3
