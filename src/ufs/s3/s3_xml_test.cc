#include "ufs/s3/s3_xml.h"

#include <gtest/gtest.h>

namespace shoal::s3 {
namespace {

TEST(S3Xml, ListV2WithPrefixesAndToken) {
  const char* xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<Contents><Key>p/a&amp;b.txt</Key><LastModified>2024-05-17T12:34:56.250Z</LastModified>
<ETag>&quot;abc123&quot;</ETag><Size>42</Size><StorageClass>STANDARD</StorageClass></Contents>
<Contents><Key>p/c</Key><ETag>"def-2"</ETag><Size>7</Size></Contents>
<CommonPrefixes><Prefix>p/dir/</Prefix></CommonPrefixes>
<IsTruncated>true</IsTruncated><NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>)";
  auto r = ParseListV2(xml);
  ASSERT_EQ(r.objects.size(), 2u);
  EXPECT_EQ(r.objects[0].key, "p/a&b.txt");
  EXPECT_EQ(r.objects[0].size, 42u);
  EXPECT_EQ(r.objects[0].etag, "abc123");
  EXPECT_EQ(r.objects[0].mtime_ns, 1715949296'250'000'000);
  EXPECT_EQ(r.objects[1].etag, "def-2");
  ASSERT_EQ(r.common_prefixes.size(), 1u);
  EXPECT_EQ(r.common_prefixes[0], "p/dir/");
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.next_token, "tok/+=");
}

TEST(S3Xml, ErrorAndEntities) {
  auto e = ParseError("<Error><Code>SlowDown</Code><Message>Please &lt;slow&gt; down&#33; &#x263A;</Message></Error>");
  EXPECT_EQ(e.code, "SlowDown");
  EXPECT_EQ(e.message, "Please <slow> down! \xE2\x98\xBA");
  EXPECT_TRUE(ParseError("not xml").code.empty());
  EXPECT_EQ(XmlElements("<A/><A x=\"1\">t</A><AB>no</AB>", "A").size(), 2u);
}

TEST(S3Xml, RequestBodies) {
  EXPECT_EQ(CompleteMultipartXml({"e1", "e2"}),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part></CompleteMultipartUpload>");
  EXPECT_EQ(DeleteObjectsXml({"a<b"}), "<Delete><Quiet>true</Quiet><Object><Key>a&lt;b</Key></Object></Delete>");
  EXPECT_EQ(UnquoteEtag("W/\"x\""), "x");
}

}  // namespace
}  // namespace shoal::s3
