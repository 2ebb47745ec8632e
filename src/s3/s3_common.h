// What the S3 endpoint's files share: query parameters and the XML answers.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/http_server.h"
#include "ufs/http/xml.h"

namespace shoal::s3 {

using QueryParams = std::vector<std::pair<std::string, std::string>>;  // decoded, in order

// The value of the first query parameter `name`, or nullptr.
inline const std::string* Param(const QueryParams& q, std::string_view name) {
  for (const auto& [k, v] : q) {
    if (k == name) return &v;
  }
  return nullptr;
}

// The namespace attribute of S3's XML documents.
inline constexpr std::string_view kS3Xmlns = " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";

// <name>escaped value</name>
inline std::string Tag(std::string_view name, std::string_view value) {
  std::string n(name);
  return "<" + n + ">" + XmlEscape(value) + "</" + n + ">";
}

// An XML answer: the declaration, then `body`.
inline net::HttpResponse XmlResponse(int status, std::string_view body) {
  return net::HttpResponse::Text(status, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + std::string(body),
                                 "application/xml");
}

}  // namespace shoal::s3
