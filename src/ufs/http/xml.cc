#include "ufs/http/xml.h"

#include <charconv>
#include <cstdint>

namespace shoal {
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

XmlElement FindXmlElement(std::string_view xml, std::string_view tag, size_t from) {
  const std::string open = "<" + std::string(tag);
  for (size_t p = xml.find(open, from); p != std::string_view::npos; p = xml.find(open, p + 1)) {
    size_t after = p + open.size();
    if (after >= xml.size()) break;
    char c = xml[after];
    if (c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\r' && c != '\n') continue;  // <Prefix> vs <PrefixX>
    size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') return {xml.substr(gt + 1, 0), gt + 1};  // <Tag/>
    const std::string close = "</" + std::string(tag) + ">";
    size_t end = xml.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    return {xml.substr(gt + 1, end - gt - 1), end + close.size()};
  }
  return {};
}

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  for (XmlElement e = FindXmlElement(xml, tag); e.end != std::string_view::npos; e = FindXmlElement(xml, tag, e.end)) {
    out.push_back(e.content);
  }
  return out;
}

std::optional<std::string> XmlText(std::string_view xml, std::string_view tag) {
  XmlElement e = FindXmlElement(xml, tag);
  if (e.end == std::string_view::npos) return std::nullopt;
  return XmlDecode(e.content);
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
      out.append(s.substr(i, semi - i + 1));  // unknown entity: keep as is
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

}  // namespace shoal
