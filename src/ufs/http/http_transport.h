// HttpTransport: blocking HTTP(S) requests for the object-store backends
// (S3/GCS, Azure Blob, WebHDFS), on libcurl. Easy handles, and with them their
// keep-alive connections, are pooled across threads: a request reuses the
// handle that finished last, so a process holds about as many connections as
// it has requests in flight.
//
// Thread safety: Perform() may be called from any number of threads.
#pragma once

#include <chrono>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::span<const char> body;              // request body (PUT/POST)
  std::span<char> body_out;                // when non-empty, a 2xx body is written here instead of `body`
  std::chrono::milliseconds timeout{30'000};
  std::chrono::milliseconds connect_timeout{5'000};
  bool follow_redirects = false;
  std::string ca_file;                     // custom CA bundle; "" uses the system's
  bool verify_tls = true;
  // A body cut short (fewer bytes than Content-Length) comes back as a response
  // with `truncated` set, for the caller to judge, instead of a kUnavailable error.
  bool accept_partial = false;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                             // unless body_out was given (and the status was 2xx)
  size_t body_out_size = 0;                     // bytes written into body_out
  bool body_out_overflow = false;               // the server sent more than body_out holds
  std::string effective_url;                    // after redirects
  bool truncated = false;                       // see HttpRequest::accept_partial

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Sends one request. Transport failures (refused, reset, DNS) are kUnavailable,
// a passed deadline is kTimeout; any HTTP status is a successful Result.
Result<HttpResponse> PerformHttp(const HttpRequest& request);

}  // namespace shoal
