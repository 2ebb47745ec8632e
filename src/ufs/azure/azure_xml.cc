#include "ufs/azure/azure_xml.h"

#include <cstdlib>

#include "ufs/azure/azure_auth.h"
#include "ufs/http/xml.h"

namespace shoal {
namespace {

// Decoded content of the first <tag> element; "" when there is none.
std::string Text(std::string_view xml, std::string_view tag) { return XmlText(xml, tag).value_or(""); }

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

Result<BlobListing> ParseListBlobs(std::string_view xml) {
  if (xml.find("<EnumerationResults") == std::string_view::npos) {
    return Err(Code::kIo, "List Blobs answer is not an EnumerationResults document");
  }
  BlobListing out;
  out.next_marker = Text(xml, "NextMarker");
  XmlElement blobs = FindXmlElement(xml, "Blobs");
  std::string_view body = blobs.content;
  size_t pos = 0;
  for (;;) {
    XmlElement blob = FindXmlElement(body, "Blob", pos);
    XmlElement prefix = FindXmlElement(body, "BlobPrefix", pos);
    if (blob.end == std::string_view::npos && prefix.end == std::string_view::npos) break;
    // Take whichever element comes first, keeping the service's order.
    bool is_prefix = blob.end == std::string_view::npos ||
                     (prefix.end != std::string_view::npos && prefix.end < blob.end);
    XmlElement e = is_prefix ? prefix : blob;
    BlobItem item;
    item.is_prefix = is_prefix;
    item.name = Text(e.content, "Name");
    if (!is_prefix) {
      XmlElement props = FindXmlElement(e.content, "Properties");
      item.size = std::strtoull(std::string(FindXmlElement(props.content, "Content-Length").content).c_str(), nullptr, 10);
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
