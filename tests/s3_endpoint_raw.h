// Raw HTTP exchanges with the S3 endpoint for tests/s3_endpoint_test.cc:
// requests no client would send. (The harness's RawConnection cannot be
// linked beside cli_helpers: both define a testing::HttpGet.)
#pragma once

#include <optional>
#include <string>

namespace shoal::testing {

struct RawAnswer {
  int status = 0;
  std::string body;
};

// Sends `request` on a new connection and reads one answer (30 s at most).
std::optional<RawAnswer> Exchange(const std::string& address, const std::string& request);
// Sends `request`, waits for the head of the answer, and closes the
// connection with the body unread.
bool SendAndHangUp(const std::string& address, const std::string& request);

}  // namespace shoal::testing
