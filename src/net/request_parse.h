// One HTTP/1.1 request parsed from bytes already in memory, exactly as the
// server parses what it reads from a socket (the same Beast parser with the
// same limits, the same head taken into an HttpRequest; beast_request.h):
// for tests and fuzz/, which feed the server's parser without a socket.
//
// Thread safety: pure.
#pragma once

#include <cstddef>
#include <string_view>

#include "net/http_server.h"
#include "shoal/status.h"

namespace shoal::net {

struct ParsedRequest {
  HttpRequest request;
  bool keep_alive = false;
  size_t consumed = 0;  // bytes of the input the request took (the next one starts there)
};

// The first request in `bytes`, its body read whole. kInvalidArgument with
// the status the server would answer (400, 413 over body_limit, 431 over
// header_limit) in *http_status; kUnavailable when the bytes end before the
// request does.
Result<ParsedRequest> ParseRequest(std::string_view bytes, size_t header_limit, size_t body_limit,
                                   int* http_status = nullptr);

}  // namespace shoal::net
