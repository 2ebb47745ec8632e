#include "ufs/write_options_codec.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

TEST(WriteOptionsCodec, EverythingAWriteKeepsReadsBackEqual) {
  WriteOptions o;
  o.metadata.content_type = "text/plain; charset=utf-8";
  o.metadata.user = {{"k", "v"}, {"epoch", "12"}, {"name", "caf\xc3\xa9"}};
  o.metadata.headers = {{"cache-control", "max-age=60"}, {"expires", "Thu, 01 Dec 2044 16:00:00 GMT"}};
  o.etag = "0123456789abcdef0123456789abcdef-3";
  o.mode = 0640;
  o.uid = 1234;
  o.gid = 0;
  auto text = EncodeWriteOptions(o);
  ASSERT_TRUE(text) << text.error().message();
  auto back = DecodeWriteOptions(*text);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->metadata.content_type, o.metadata.content_type);
  EXPECT_EQ(back->metadata.user, o.metadata.user);
  EXPECT_EQ(back->metadata.headers, o.metadata.headers);
  EXPECT_EQ(back->etag, o.etag);
  EXPECT_EQ(back->mode, o.mode);
  EXPECT_EQ(back->uid, 1234);
  EXPECT_EQ(back->gid, 0);
  EXPECT_EQ(*EncodeWriteOptions(*back), *text);
}

TEST(WriteOptionsCodec, NothingToKeepIsTheEmptyText) {
  auto text = EncodeWriteOptions({});
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "");
  auto back = DecodeWriteOptions("");
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->metadata.empty());
  EXPECT_EQ(back->mode, 0u);
  EXPECT_EQ(back->uid, -1);
  EXPECT_EQ(back->gid, -1);
}

TEST(WriteOptionsCodec, ANameOrValueThatIsNotUtf8CannotBeCarried) {
  WriteOptions o;
  o.metadata.user = {{"k", "\xff\xfe"}};
  auto text = EncodeWriteOptions(o);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message().find("not UTF-8"), std::string::npos) << text.error().message();
}

TEST(WriteOptionsCodec, UntrustedTextIsCheckedLikeACreate) {
  const char* bad[] = {
      "[]",
      "{\"nope\":1}",
      "{\"content_type\":\"a\\nb\"}",
      "{\"metadata\":[[\"k\",\"v\"],[\"k\",\"w\"]]}",
      "{\"metadata\":[[\"K\",\"v\"]]}",
      "{\"metadata\":[[\"a=b\",\"v\"]]}",
      "{\"metadata\":[[\"k\",\"v\\r\"]]}",
      "{\"metadata\":[[\"k\"]]}",
      "{\"metadata\":{\"k\":\"v\"}}",
      "{\"headers\":[[\"x-evil\",\"v\"]]}",
      "{\"etag\":\"a b\"}",
      "{\"etag\":\"\"}",
      "{\"mode\":4096}",
      "{\"mode\":-1}",
      "{\"mode\":\"644\"}",
      "{\"uid\":-1}",
      "{\"uid\":4294967295}",
      "{\"gid\":\"0\"}",
      "{\"gid\":1.5}",
      "{\"content_type\":",
  };
  for (const char* text : bad) {
    auto o = DecodeWriteOptions(text);
    EXPECT_FALSE(o) << text;
    if (!o) {
      EXPECT_NE(o.error().message().find("write options"), std::string::npos) << o.error().message();
    }
  }
  EXPECT_FALSE(DecodeWriteOptions(std::string(kMaxWriteOptionsText + 1, ' ')));
}

TEST(WriteOptionsCodec, HeadersComeBackInTheOrderAnObjectKeepsThem) {
  auto o = DecodeWriteOptions("{\"headers\":[[\"expires\",\"x\"],[\"cache-control\",\"y\"]]}");
  ASSERT_TRUE(o) << o.error().message();
  ASSERT_EQ(o->metadata.headers.size(), 2u);
  EXPECT_EQ(o->metadata.headers[0].first, "cache-control");
  EXPECT_EQ(o->metadata.headers[1].first, "expires");
}

}  // namespace
}  // namespace shoal
