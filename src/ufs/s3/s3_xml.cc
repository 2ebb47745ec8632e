#include "ufs/s3/s3_xml.h"

#include <cctype>
#include <charconv>
#include <ctime>

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
  // YYYY-MM-DDTHH:MM:SS[.fff]Z
  if (s.size() < 19) return 0;
  std::tm tm{};
  auto num = [&](size_t pos, size_t len, int& out) {
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
    return ec == std::errc() && p == s.data() + pos + len;
  };
  int y, mo, d, h, mi, sec;
  if (!num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) || !num(11, 2, h) || !num(14, 2, mi) || !num(17, 2, sec)) {
    return 0;
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  int64_t ns = static_cast<int64_t>(timegm(&tm)) * 1'000'000'000;
  if (s.size() > 20 && s[19] == '.') {
    int64_t frac = 0, scale = 100'000'000;
    for (size_t i = 20; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && scale > 0; ++i) {
      frac += (s[i] - '0') * scale;
      scale /= 10;
    }
    ns += frac;
  }
  return ns;
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
