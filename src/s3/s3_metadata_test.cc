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

}  // namespace
}  // namespace shoal::s3
