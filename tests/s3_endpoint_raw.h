// Helpers of the S3 endpoint tests (tests/s3_endpoint_test.cc,
// tests/s3_listen_test.cc): raw HTTP exchanges (requests no client would
// send), signed raw requests, and running the real S3 clients. (The harness's RawConnection cannot be
// linked beside cli_helpers: both define a testing::HttpGet.)
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/sigv4.h"

namespace shoal::testing {

struct Cmd {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

// Runs argv to completion (at most `timeout`) with `env` added.
Cmd RunCmd(std::vector<std::string> argv, const std::map<std::string, std::string>& env,
           std::chrono::seconds timeout = std::chrono::seconds(180));

struct RawAnswer {
  int status = 0;
  std::string body;
};

// Sends `request` on a new connection and reads one answer (30 s at most).
std::optional<RawAnswer> Exchange(const std::string& address, const std::string& request);
// Sends `request`, waits for the head of the answer, and closes the
// connection with the body unread.
bool SendAndHangUp(const std::string& address, const std::string& request);
// Sends `request` (a head and part of its body, say) and reads until the
// server closes the connection: the seconds that took, or -1 if it was still
// open after `timeout`.
double SecondsUntilClosed(const std::string& address, const std::string& request, std::chrono::seconds timeout);

// A request signed with Signature V4 (UNSIGNED-PAYLOAD, unless `extra` holds
// x-amz-content-sha256), as raw bytes: the target as given, not normalised;
// `extra` headers are signed too. No body.
std::string SignedRequest(const std::string& method, const std::string& target, const std::string& host,
                          const std::string& ak, const std::string& sk, const s3::Headers& extra = {});
// A PUT with an aws-chunked body (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), each
// chunk signed over the previous signature; with `tamper`, one byte of the
// chunk `tamper_chunk` is changed after signing.
std::string ChunkedPut(const std::string& target, const std::string& host, const std::string& ak, const std::string& sk,
                       const std::vector<std::string>& chunks, bool tamper, size_t tamper_chunk = 0);

}  // namespace shoal::testing
