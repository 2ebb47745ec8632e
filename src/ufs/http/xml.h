// A small tag scanner for the XML the object stores answer with (S3/GCS and
// Azure Blob). Their documents are flat and machine-written, so no general
// parser is needed: elements are found by name (attributes and <Tag/>
// allowed), and text is decoded from the five XML entities and numeric
// character references. Elements of the same name must not nest.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

struct XmlElement {
  std::string_view content;               // raw text between the tags; empty for <Tag/>
  size_t end = std::string_view::npos;    // offset just past the element; npos when none was found
};

// The first <tag> element starting at or after offset `from` of `xml`.
XmlElement FindXmlElement(std::string_view xml, std::string_view tag, size_t from = 0);
// Raw (not decoded) content of each <tag> element in `xml`, in order.
std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag);
// Decoded content of the first <tag> element, or nullopt when there is none.
std::optional<std::string> XmlText(std::string_view xml, std::string_view tag);

// Decodes &amp; &lt; &gt; &quot; &apos; and numeric character references
// (to UTF-8); anything else after '&', malformed references included, is kept
// as is.
std::string XmlDecode(std::string_view s);
// Escapes text for element content or a quoted attribute value.
std::string XmlEscape(std::string_view s);

}  // namespace shoal
