// What the server and ParseRequest (request_parse.h) share of parsing a
// request with Beast: the head's limits, the head as an HttpRequest, and the
// status a parse error is answered with. Includes Beast: for src/net only.
#pragma once

#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "net/http_server.h"

namespace shoal::net {

// A head parser under the server's header limit; the body limit is set once
// the route (and so the limit) is known.
inline void LimitHead(boost::beast::http::request_parser<boost::beast::http::empty_body>& head, size_t header_limit) {
  head.header_limit(static_cast<uint32_t>(header_limit));
  head.body_limit(boost::none);
}

// The parsed head into `req` (method, target, headers as sent); whether the
// connection may serve another request after this one.
template <class Message>
bool TakeHead(const Message& msg, HttpRequest* req) {
  req->method.assign(msg.method_string().data(), msg.method_string().size());
  req->target.assign(msg.target().data(), msg.target().size());
  for (const auto& f : msg) {
    req->headers.emplace_back(std::string(f.name_string().data(), f.name_string().size()),
                              std::string(f.value().data(), f.value().size()));
  }
  return msg.keep_alive();
}

// The status a request that failed to parse is answered with.
inline int RequestErrorStatus(const boost::system::error_code& ec) {
  namespace http = boost::beast::http;
  return ec == http::error::header_limit ? 431 : ec == http::error::body_limit ? 413 : 400;
}

}  // namespace shoal::net
