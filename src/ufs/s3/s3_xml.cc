#include "ufs/s3/s3_xml.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <ctime>

#include "ufs/cloud/credential_cache.h"

namespace shoal::s3 {

S3Error ParseError(std::string_view xml) {
  S3Error e;
  auto body = XmlElements(xml, "Error");
  if (body.empty()) return e;
  e.code = XmlText(body.front(), "Code").value_or("");
  e.message = XmlText(body.front(), "Message").value_or("");
  e.region = XmlText(body.front(), "Region").value_or("");
  return e;
}

int64_t ParseIso8601(std::string_view s) {
  auto t = cloud::ParseIso8601(s);
  return t ? std::chrono::duration_cast<std::chrono::nanoseconds>(t->time_since_epoch()).count() : 0;
}

std::string UnquoteEtag(std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  // ListObjects returns the quotes XML-escaped in some servers.
  std::string out = XmlDecode(etag);
  if (out.size() >= 2 && out.front() == '"' && out.back() == '"') out = out.substr(1, out.size() - 2);
  return out;
}

ListResult ParseListV2(std::string_view xml) {
  ListResult r;
  for (auto c : XmlElements(xml, "Contents")) {
    ListedObject o;
    o.key = XmlText(c, "Key").value_or("");
    auto size = XmlText(c, "Size").value_or("0");
    std::from_chars(size.data(), size.data() + size.size(), o.size);
    o.etag = UnquoteEtag(XmlText(c, "ETag").value_or(""));
    o.mtime_ns = ParseIso8601(XmlText(c, "LastModified").value_or(""));
    r.objects.push_back(std::move(o));
  }
  for (auto cp : XmlElements(xml, "CommonPrefixes")) {
    for (auto p : XmlElements(cp, "Prefix")) r.common_prefixes.push_back(XmlDecode(p));
  }
  // <IsTruncated> and <NextContinuationToken> live at the top level, after the
  // entries; keys cannot contain them unescaped, so a plain search is safe.
  r.truncated = XmlText(xml, "IsTruncated").value_or("false") == "true";
  r.next_token = XmlText(xml, "NextContinuationToken").value_or("");
  return r;
}

std::string CompleteMultipartXml(const std::vector<std::string>& etags) {
  std::string x = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    x += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>&quot;" + XmlEscape(etags[i]) +
         "&quot;</ETag></Part>";
  }
  x += "</CompleteMultipartUpload>";
  return x;
}

std::string DeleteObjectsXml(const std::vector<std::string>& keys) {
  std::string x = "<Delete><Quiet>true</Quiet>";
  for (const auto& k : keys) x += "<Object><Key>" + XmlEscape(k) + "</Key></Object>";
  x += "</Delete>";
  return x;
}

}  // namespace shoal::s3
