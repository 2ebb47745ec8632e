// What object stores answer, read back by the under-stores: S3's
// ListObjectsV2 and error documents (src/ufs/s3/s3_xml.cc) and Azure's List
// Blobs and error documents (src/ufs/azure/azure_xml.cc), on the tag scanner
// of ufs/http/xml.cc. The first byte picks a mode:
//   0: the rest is an answer as a store (or anything in front of it) sent it;
//   1: a ListObjectsV2 page the harness writes from fuzz-chosen keys, sizes
//      and prefixes (escaped with XmlEscape): every key, size and prefix
//      reads back exactly, in order;
//   2: the same for an Azure List Blobs page.
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "ufs/azure/azure_xml.h"
#include "ufs/http/xml.h"
#include "ufs/s3/s3_xml.h"

namespace {

using namespace shoal;

// XML 1.0 allows no control characters but tab, CR and LF (the scanner keeps
// CR as it is given): a store never sends others, so the written keys have none.
bool XmlText(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 && c != '\t' && c != '\n') return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 256 * 1024) return 0;
  fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.Byte() % 3;
  if (mode == 0) {
    const std::string_view xml = in.rest();
    auto l = s3::ParseListV2(xml);
    for (const auto& o : l.objects) (void)o.key.size();
    (void)s3::ParseError(xml);
    (void)s3::ParseIso8601(xml.substr(0, 64));
    (void)s3::UnquoteEtag(xml.substr(0, 64));
    auto b = ParseListBlobs(xml);
    (void)ParseAzureError(xml);
    return 0;
  }
  std::vector<std::pair<std::string, uint64_t>> objects;
  std::vector<std::string> prefixes;
  for (int i = 0; i < 16 && in.rest().size() > 2; ++i) {
    std::string name(in.Bytes(40));
    if (name.empty() || !XmlText(name)) continue;
    if (in.Byte() % 4 == 0) {
      prefixes.push_back(name + "/");
    } else {
      objects.emplace_back(name, in.Int<uint32_t>());
    }
  }
  if (mode == 1) {
    std::string xml = "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>";
    for (const auto& [k, n] : objects) {
      xml += "<Contents><Key>" + XmlEscape(k) + "</Key><LastModified>2024-05-17T12:34:56.250Z</LastModified>" +
             "<ETag>&quot;abc&quot;</ETag><Size>" + std::to_string(n) + "</Size></Contents>";
    }
    for (const auto& p : prefixes) xml += "<CommonPrefixes><Prefix>" + XmlEscape(p) + "</Prefix></CommonPrefixes>";
    xml += "<IsTruncated>false</IsTruncated></ListBucketResult>";
    auto l = s3::ParseListV2(xml);
    FUZZ_CHECK(l.objects.size() == objects.size(), "%zu objects read back, %zu written", l.objects.size(),
               objects.size());
    for (size_t i = 0; i < objects.size(); ++i) {
      FUZZ_CHECK(
          l.objects[i].key == objects[i].first && l.objects[i].size == objects[i].second && l.objects[i].etag == "abc",
          "object %zu does not read back as written", i);
    }
    FUZZ_CHECK(l.common_prefixes == prefixes, "the common prefixes do not read back as written");
    return 0;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ContainerName=\"c\"><Blobs>";
  for (const auto& [k, n] : objects) {
    xml += "<Blob><Name>" + XmlEscape(k) + "</Name><Properties><Etag>\"0x8D1\"</Etag><Content-Length>" +
           std::to_string(n) + "</Content-Length></Properties></Blob>";
  }
  for (const auto& p : prefixes) xml += "<BlobPrefix><Name>" + XmlEscape(p) + "</Name></BlobPrefix>";
  xml += "</Blobs><NextMarker /></EnumerationResults>";
  auto b = ParseListBlobs(xml);
  FUZZ_CHECK(b.has_value(), "a List Blobs page the harness wrote was refused: %s",
             b ? "" : b.error().message().c_str());
  FUZZ_CHECK(b->items.size() == objects.size() + prefixes.size(), "%zu items read back, %zu written", b->items.size(),
             objects.size() + prefixes.size());
  for (size_t i = 0; i < b->items.size(); ++i) {
    const bool prefix = i >= objects.size();
    const auto& want = prefix ? prefixes[i - objects.size()] : objects[i].first;
    FUZZ_CHECK(b->items[i].name == want && b->items[i].is_prefix == prefix &&
                   (prefix || (b->items[i].size == objects[i].second && b->items[i].etag == "0x8D1")),
               "item %zu does not read back as written", i);
  }
  return 0;
}
