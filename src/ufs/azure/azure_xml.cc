#include "ufs/azure/azure_xml.h"

#include <cstdlib>

#include "ufs/azure/azure_auth.h"

namespace shoal {
namespace {

struct Element {
  std::string_view content;  // between the tags; empty for <Tag/>
  size_t end = std::string_view::npos;  // position after the closing tag; npos when not found
};

// Finds <tag ...>content</tag> (or <tag/>) at or after `from`.
Element Find(std::string_view xml, std::string_view tag, size_t from = 0) {
  std::string open = "<" + std::string(tag);
  for (size_t p = xml.find(open, from); p != std::string_view::npos; p = xml.find(open, p + 1)) {
    size_t after = p + open.size();
    if (after >= xml.size()) break;
    char c = xml[after];
    if (c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\r' && c != '\n') continue;  // a longer tag name
    size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') return {std::string_view(), gt + 1};
    std::string close = "</" + std::string(tag) + ">";
    size_t ce = xml.find(close, gt + 1);
    if (ce == std::string_view::npos) break;
    return {xml.substr(gt + 1, ce - gt - 1), ce + close.size()};
  }
  return {};
}

std::string Text(std::string_view xml, std::string_view tag) { return XmlUnescape(Find(xml, tag).content); }

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

std::string XmlUnescape(std::string_view s) {
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
    else if (!ent.empty() && ent[0] == '#') {
      std::string num(ent.substr(1));
      unsigned long cp = num[0] == 'x' ? std::strtoul(num.c_str() + 1, nullptr, 16) : std::strtoul(num.c_str(), nullptr, 10);
      // UTF-8 encode the code point.
      if (cp < 0x80) out += static_cast<char>(cp);
      else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 63)); }
      else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12)); out += static_cast<char>(0x80 | ((cp >> 6) & 63));
        out += static_cast<char>(0x80 | (cp & 63));
      } else {
        out += static_cast<char>(0xF0 | (cp >> 18)); out += static_cast<char>(0x80 | ((cp >> 12) & 63));
        out += static_cast<char>(0x80 | ((cp >> 6) & 63)); out += static_cast<char>(0x80 | (cp & 63));
      }
    } else {
      out.append(s.substr(i, semi - i + 1));  // unknown entity: keep as is
    }
    i = semi;
  }
  return out;
}

Result<BlobListing> ParseListBlobs(std::string_view xml) {
  if (xml.find("<EnumerationResults") == std::string_view::npos) {
    return Err(Code::kIo, "List Blobs answer is not an EnumerationResults document");
  }
  BlobListing out;
  out.next_marker = Text(xml, "NextMarker");
  Element blobs = Find(xml, "Blobs");
  std::string_view body = blobs.content;
  size_t pos = 0;
  for (;;) {
    Element blob = Find(body, "Blob", pos);
    Element prefix = Find(body, "BlobPrefix", pos);
    if (blob.end == std::string_view::npos && prefix.end == std::string_view::npos) break;
    // Take whichever element comes first, keeping the service's order.
    bool is_prefix = blob.end == std::string_view::npos ||
                     (prefix.end != std::string_view::npos && prefix.end < blob.end);
    Element e = is_prefix ? prefix : blob;
    BlobItem item;
    item.is_prefix = is_prefix;
    item.name = Text(e.content, "Name");
    if (!is_prefix) {
      Element props = Find(e.content, "Properties");
      item.size = std::strtoull(std::string(Find(props.content, "Content-Length").content).c_str(), nullptr, 10);
      item.etag = Unquote(Text(props.content, "Etag"));
      item.mtime_ns = ParseHttpDate(Text(props.content, "Last-Modified"));
    }
    out.items.push_back(std::move(item));
    pos = e.end;
  }
  return out;
}

AzureErrorBody ParseAzureError(std::string_view xml) { return {Text(xml, "Code"), Text(xml, "Message")}; }

std::string BlockListXml(const std::vector<std::string>& block_ids) {
  std::string s = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
  for (const auto& id : block_ids) s += "<Latest>" + id + "</Latest>";  // base64 needs no escaping
  return s + "</BlockList>";
}

}  // namespace shoal
