#include "s3/s3_request_parse.h"

#include <algorithm>

#include "ufs/http/xml.h"
#include "ufs/uri.h"

namespace shoal::s3 {

S3Result<QueryParams> ParseQuery(std::string_view query) {
  QueryParams out;
  while (!query.empty()) {
    if (out.size() == kMaxQueryParams) {
      return S3Err(400, "InvalidArgument", "more than " + std::to_string(kMaxQueryParams) + " query parameters");
    }
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    auto k = PercentDecode(item.substr(0, eq));
    auto v = PercentDecode(eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1));
    if (!k || !v) return S3Err(400, "InvalidURI", "the query has a malformed %-escape");
    out.emplace_back(std::move(*k), std::move(*v));
  }
  return out;
}

S3Result<int> ParsePartNumber(const std::string* p) {
  if (!p || p->empty() || p->size() > 5 ||
      !std::all_of(p->begin(), p->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return S3Err(400, "InvalidArgument", "partNumber must be a number between 1 and 10000");
  }
  int n = std::stoi(*p);
  if (n < 1 || n > kMaxParts) return S3Err(400, "InvalidArgument", "partNumber must be between 1 and 10000");
  return n;
}

S3Result<std::vector<CompletedPart>> ParseCompleteMultipart(std::string_view xml) {
  if (FindXmlElement(xml, "CompleteMultipartUpload").end == std::string_view::npos) {
    return S3Err(400, "MalformedXML", "the body is not a <CompleteMultipartUpload> document");
  }
  auto parts = XmlElements(xml, "Part");
  if (parts.empty() || parts.size() > static_cast<size_t>(kMaxParts)) {
    return S3Err(400, "MalformedXML", "a CompleteMultipartUpload names 1 to 10000 parts");
  }
  std::vector<CompletedPart> out;
  for (auto p : parts) {
    auto num = XmlText(p, "PartNumber");
    auto n = ParsePartNumber(num ? &*num : nullptr);
    if (!n) return S3Err(400, "MalformedXML", "a <Part> without a valid <PartNumber>");
    if (!out.empty() && *n < out.back().number) {
      return S3Err(400, "InvalidPartOrder", "the parts must be listed in ascending order of PartNumber");
    }
    // A number listed twice in a row (a client that sent a part again while
    // the first send was still going, as ceph/s3-tests does): the last wins.
    if (!out.empty() && *n == out.back().number) out.pop_back();
    out.push_back({*n, Unquote(XmlText(p, "ETag").value_or(""))});
  }
  return out;
}

S3Result<DeleteRequest> ParseDeleteObjects(std::string_view xml) {
  auto objects = XmlElements(xml, "Object");
  if (FindXmlElement(xml, "Delete").end == std::string_view::npos)
    return S3Err(400, "MalformedXML", "the body is not a <Delete> document");
  if (objects.size() > kMaxDeleteKeys) return S3Err(400, "MalformedXML", "at most 1000 keys per DeleteObjects");
  DeleteRequest out;
  out.quiet = XmlText(xml, "Quiet").value_or("") == "true";
  for (auto o : objects) {
    auto key = XmlText(o, "Key");
    if (!key || key->empty()) return S3Err(400, "MalformedXML", "an <Object> without a <Key>");
    out.keys.push_back(std::move(*key));
  }
  return out;
}

std::string Unquote(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '"') out += c;
  }
  return out;
}

}  // namespace shoal::s3
