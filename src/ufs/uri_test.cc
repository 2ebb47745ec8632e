#include "ufs/uri.h"

#include <gtest/gtest.h>

namespace shoal {

TEST(UfsUri, Parses) {
  auto s3 = ParseUfsUri("s3://bucket/some/prefix");
  ASSERT_TRUE(s3);
  EXPECT_EQ(s3->scheme, "s3");
  EXPECT_EQ(s3->authority, "bucket");
  EXPECT_EQ(s3->path, "some/prefix/");
  auto f = ParseUfsUri("file:///srv/data/");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->path, "/srv/data/");
  EXPECT_EQ(ParseUfsUri("s3://bucket")->path, "");
}

TEST(UfsUri, RejectsBadUris) {
  EXPECT_EQ(ParseUfsUri("ftp://x/y").error().code(), Code::kInvalidArgument);
  EXPECT_NE(ParseUfsUri("ftp://x/y").error().message().find("unknown under-store scheme"), std::string::npos);
  EXPECT_FALSE(ParseUfsUri("no-scheme"));
  EXPECT_NE(ParseUfsUri("s3:///prefix").error().message().find("missing bucket"), std::string::npos);
  EXPECT_FALSE(ParseUfsUri("file://relative"));
}

TEST(UfsUri, NormaliseKey) {
  EXPECT_EQ(NormaliseKey("/a//b/./c/").value(), "a/b/c");
  EXPECT_EQ(NormaliseKey("").value(), "");
  EXPECT_FALSE(NormaliseKey("a/../b"));
  EXPECT_FALSE(NormaliseKey(".."));
}

TEST(UfsUri, PercentCoding) {
  EXPECT_EQ(PercentDecode("%2e%2E/x").value(), "../x");
  EXPECT_FALSE(PercentDecode("%zz"));
  EXPECT_FALSE(PercentDecode("%2"));
  EXPECT_EQ(PercentEncode("a b/c+d", true), "a%20b/c%2Bd");
  EXPECT_EQ(PercentEncode("a/b", false), "a%2Fb");
}

}  // namespace shoal
