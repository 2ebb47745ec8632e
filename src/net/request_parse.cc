#include "net/request_parse.h"

#include <boost/asio/buffer.hpp>

#include "net/beast_request.h"

namespace shoal::net {

namespace http = boost::beast::http;

namespace {

// Feeds `bytes` from *used to `p` until it is done with what it parses (the
// head, or the whole message) or wants bytes that are not there.
template <class Parser, class Done>
boost::system::error_code Feed(Parser& p, std::string_view bytes, size_t* used, Done done) {
  boost::system::error_code ec;
  while (!done()) {
    size_t n = p.put(boost::asio::buffer(bytes.data() + *used, bytes.size() - *used), ec);
    *used += n;
    if (ec) return ec;
    if (n == 0) return http::error::need_more;
  }
  return ec;
}

}  // namespace

Result<ParsedRequest> ParseRequest(std::string_view bytes, size_t header_limit, size_t body_limit, int* http_status) {
  size_t used = 0;
  http::request_parser<http::empty_body> head;
  LimitHead(head, header_limit);  // not eager: the head parser must stop before the body (Beast refuses to move it on)
  auto ec = Feed(head, bytes, &used, [&] { return head.is_header_done(); });
  if (!ec && head.content_length() && *head.content_length() > body_limit) ec = http::error::body_limit;
  http::request_parser<http::string_body> parser(std::move(head));
  if (!ec) {
    parser.body_limit(body_limit);
    parser.eager(true);
    ec = Feed(parser, bytes, &used, [&] { return parser.is_done(); });
  }
  if (ec == http::error::need_more) return Err(Code::kUnavailable, "the bytes end inside the request");
  if (ec) {
    if (http_status) *http_status = RequestErrorStatus(ec);
    return Err(Code::kInvalidArgument, "malformed HTTP request: " + ec.message());
  }
  ParsedRequest out;
  out.keep_alive = TakeHead(parser.get(), &out.request);
  out.request.body = std::move(parser.get().body());
  out.consumed = used;
  return out;
}

}  // namespace shoal::net
