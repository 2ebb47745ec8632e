// Redirector: redirect mode of the S3 endpoint (s3.mode: redirect). A GET or
// HEAD of an object whose owner (the worker serving its first byte) is
// another worker with an S3 listener is answered `307 Temporary Redirect` to
// that worker's endpoint, so the bytes do not cross this node.
//
// Only requests a client can follow are redirected:
//   - presigned URLs: their signature covers the Host, so the Location is a
//     new presigned URL for the owner's host, signed with the same access key
//     (every worker holds the s3 credentials), valid for at most 60 s and
//     never past the original's expiry; the request's own query parameters
//     (response-content-type, ...) are kept;
//   - anonymous reads of a public bucket: the same path and query.
// Header-signed requests (the SDKs, awscli) are proxied: their signature also
// covers the Host, and the SDKs do not follow a redirect to another host.
//
// The owners' S3 endpoints come from their /v1/status ("s3_endpoint"),
// asked of every worker at most every 2 s when a member is not known.
//
// Thread safety: safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "net/http_server.h"
#include "s3/s3_auth.h"
#include "shoal/client.h"

namespace shoal::s3 {

class Redirector {
 public:
  Redirector(const Authenticator& auth, std::string region, std::string self_id);

  // The 307 answer, or nullopt: serve the request here.
  std::optional<net::HttpResponse> For(Client& client, const net::HttpRequest& request, const QueryParams& query,
                                       const AuthInfo& auth, const FileStatus& status);

 private:
  // The S3 endpoint of ring member `id`, "" when it has none (or is unknown).
  std::string EndpointOf(Client& client, const std::string& id);

  const Authenticator& auth_;
  std::string region_;
  std::string self_id_;
  std::mutex mu_;
  std::map<std::string, std::string> endpoints_;  // member id -> host:port ("" = none)
  std::chrono::steady_clock::time_point fetched_{};
};

}  // namespace shoal::s3
