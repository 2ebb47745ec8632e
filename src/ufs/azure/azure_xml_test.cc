#include "ufs/azure/azure_xml.h"

#include <gtest/gtest.h>

#include "ufs/http/xml.h"

namespace shoal {
namespace {

TEST(AzureXml, ListBlobsKeepsOrderOfBlobsAndPrefixes) {
  const char* xml = R"(<?xml version="1.0" encoding="utf-8"?>
<EnumerationResults ServiceEndpoint="http://127.0.0.1:1/devstoreaccount1" ContainerName="c">
 <Prefix>p/</Prefix><MaxResults>3</MaxResults><Delimiter>/</Delimiter>
 <Blobs>
  <Blob><Name>p/a&amp;b</Name><Properties><Last-Modified>Sun, 11 Oct 2009 21:49:13 GMT</Last-Modified>
   <Etag>"0x8D1"</Etag><Content-Length>42</Content-Length></Properties></Blob>
  <BlobPrefix><Name>p/dir/</Name></BlobPrefix>
  <Blob><Name>p/z</Name><Properties><Etag>0x8D2</Etag><Content-Length>0</Content-Length></Properties></Blob>
 </Blobs>
 <NextMarker>marker/1</NextMarker>
</EnumerationResults>)";
  auto l = ParseListBlobs(xml);
  ASSERT_TRUE(l) << l.error().ToString();
  ASSERT_EQ(l->items.size(), 3u);
  EXPECT_EQ(l->items[0].name, "p/a&b");
  EXPECT_EQ(l->items[0].size, 42u);
  EXPECT_EQ(l->items[0].etag, "0x8D1");
  EXPECT_EQ(l->items[0].mtime_ns, int64_t{1255297753} * 1'000'000'000);
  EXPECT_TRUE(l->items[1].is_prefix);
  EXPECT_EQ(l->items[1].name, "p/dir/");
  EXPECT_EQ(l->items[2].etag, "0x8D2");
  EXPECT_EQ(l->next_marker, "marker/1");
}

TEST(AzureXml, EmptyListingAndSelfClosingMarker) {
  auto l = ParseListBlobs("<EnumerationResults><Blobs /><NextMarker /></EnumerationResults>");
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->items.empty());
  EXPECT_TRUE(l->next_marker.empty());
  EXPECT_FALSE(ParseListBlobs("<html>proxy error</html>"));
}

TEST(AzureXml, ErrorBodyAndBlockList) {
  auto e = ParseAzureError("<?xml version=\"1.0\"?><Error><Code>AuthenticationFailed</Code><Message>bad &lt;sig&gt;</Message></Error>");
  EXPECT_EQ(e.code, "AuthenticationFailed");
  EXPECT_EQ(e.message, "bad <sig>");
  EXPECT_EQ(BlockListXml({"QQ==", "Qg=="}),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>QQ==</Latest><Latest>Qg==</Latest></BlockList>");
  EXPECT_EQ(XmlDecode("&#65;&#x42;&quot;&apos;"), "AB\"'");
  EXPECT_EQ(XmlDecode("&#xZZ;&#;"), "&#xZZ;&#;");  // malformed references are kept as is
}

}  // namespace
}  // namespace shoal
