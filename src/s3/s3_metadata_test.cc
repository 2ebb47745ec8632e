// The part sizes a Complete keeps with an object (GET ?partNumber=N): the
// run-length text, and what a reader accepts of it (the store's bytes are
// untrusted like a client's).
#include "s3/s3_metadata.h"

#include <gtest/gtest.h>

namespace shoal::s3 {
namespace {

ObjectMetadata With(std::string text) {
  ObjectMetadata m;
  m.user = {{"k", "v"}, {std::string(kPartSizesName), std::move(text)}};
  return m;
}

TEST(PartSizes, RunsEncodeAndDecodeBack) {
  const std::vector<uint64_t> sizes = {8 << 20, 8 << 20, 8 << 20, 5 << 20, 5 << 20, 1000};
  const std::string text = EncodePartSizes(sizes);
  EXPECT_EQ(text, "8388608*3,5242880*2,1000");
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  auto back = PartSizesOf(With(text), sizes.size(), total);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, sizes);
  // 10,000 parts of one size are a few bytes.
  EXPECT_EQ(EncodePartSizes(std::vector<uint64_t>(10000, 5 << 20)), "5242880*10000");
}

TEST(PartSizesOf, RefusesWhatDoesNotAddUp) {
  EXPECT_FALSE(PartSizesOf(ObjectMetadata{}, 2, 10)) << "none kept";
  EXPECT_FALSE(PartSizesOf(With("5*2"), 3, 10)) << "fewer parts than the ETag says";
  EXPECT_FALSE(PartSizesOf(With("5*2"), 2, 11)) << "not the object's size";
  EXPECT_FALSE(PartSizesOf(With("5*3"), 2, 15)) << "more parts than the ETag says";
  EXPECT_FALSE(PartSizesOf(With("5*0,10"), 1, 10)) << "an empty run";
  for (const char* bad : {"", "x", "5*", "*2", "5**2", "5,,5", "-5,15", "5 ,5", "99999999999999*1", "5*99999999999"}) {
    EXPECT_FALSE(PartSizesOf(With(bad), 2, 10)) << "'" << bad << "'";
  }
  EXPECT_FALSE(PartSizesOf(With(std::string(kMaxPartSizesText + 1, '1')), 1, 1)) << "too long";
  EXPECT_TRUE(PartSizesOf(With("5,5"), 2, 10));
}

TEST(PartSizes, TheReservedNameIsNeverPassedOnOrShown) {
  CreateOptions o;
  SetCreateMetadata(With("5*2"), &o);
  EXPECT_EQ(o.metadata, (std::vector<std::pair<std::string, std::string>>{{"k", "v"}}));
  net::HttpResponse r;
  AddMetadataHeaders(With("5*2"), &r);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "x-amz-meta-k");
}

// Metadata is shown again as text (HEAD, listings, a pending write's JSON):
// bytes that are not UTF-8 once made CreateMultipartUpload throw out of its
// handler after staging a directory (nlohmann's dump()). They are a 400
// naming the header now, before anything is staged.
TEST(MetadataFromHeaders, BytesThatAreNotUtf8AreRefusedNamingTheHeader) {
  auto with = [](std::string name, std::string value) {
    net::HttpRequest r;
    r.method = "PUT";
    r.target = "/b/k";
    r.headers = {{"Content-Type", "text/plain"}, {std::move(name), std::move(value)}};
    return MetadataFromHeaders(r);
  };
  auto latin1 = with("x-amz-meta-author", "J\xFCrgen");
  ASSERT_FALSE(latin1);
  EXPECT_EQ(latin1.error().http_status, 400);
  EXPECT_NE(latin1.error().message.find("x-amz-meta-author is not UTF-8"), std::string::npos) << latin1.error().message;
  EXPECT_FALSE(with("x-amz-meta-\xFF", "v"));
  EXPECT_FALSE(with("Cache-Control", "max-age=\xC0\x80"));
  net::HttpRequest bad_type;
  bad_type.headers = {{"Content-Type", "text/\xFF"}};
  EXPECT_FALSE(MetadataFromHeaders(bad_type));
  auto fine = with("x-amz-meta-author", "J\xC3\xBCrgen");
  ASSERT_TRUE(fine) << fine.error().message;
  ASSERT_EQ(fine->user.size(), 1u);
  EXPECT_EQ(fine->user[0].second, "J\xC3\xBCrgen");
}

}  // namespace
}  // namespace shoal::s3
