#include "ufs/s3/s3_xml.h"

#include <cctype>
#include <charconv>
#include <ctime>

namespace shoal::s3 {
namespace {

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(tag);
  const std::string close = "</" + std::string(tag) + ">";
  size_t pos = 0;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    size_t after = pos + open.size();
    if (after >= xml.size()) break;
    char c = xml[after];
    if (c != '>' && c != ' ' && c != '/' && c != '\t' && c != '\n' && c != '\r') {
      pos = after;  // a longer tag name sharing the prefix (<Prefix> vs <PrefixX>)
      continue;
    }
    size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') {  // <Tag/>
      out.push_back(xml.substr(gt + 1, 0));
      pos = gt + 1;
      continue;
    }
    size_t end = xml.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(gt + 1, end - gt - 1));
    pos = end + close.size();
  }
  return out;
}

std::optional<std::string> XmlText(std::string_view xml, std::string_view tag) {
  auto v = XmlElements(xml, tag);
  if (v.empty()) return std::nullopt;
  return XmlDecode(v.front());
}

std::string XmlDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string_view::npos) {
      out += s[i];
      continue;
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") out += '&';
    else if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      uint32_t cp = 0;
      bool hex = ent[1] == 'x' || ent[1] == 'X';
      auto digits = ent.substr(hex ? 2 : 1);
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (ec != std::errc() || p != digits.data() + digits.size()) {
        out.append(s.substr(i, semi - i + 1));
      } else {
        AppendUtf8(out, cp);
      }
    } else {
      out.append(s.substr(i, semi - i + 1));
    }
    i = semi;
  }
  return out;
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\r': out += "&#13;"; break;
      case '\n': out += "&#10;"; break;
      default: out += c;
    }
  }
  return out;
}

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
