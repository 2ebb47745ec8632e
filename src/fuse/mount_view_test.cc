#include "fuse/mount_view.h"

#include <gtest/gtest.h>

#include "fuse/errno_map.h"

namespace shoal::fuse {
namespace {

MountInfo M(std::string path, std::string consistency, bool ro = false) {
  MountInfo m;
  m.path = std::move(path);
  m.ufs = "file:///x/";
  m.consistency = std::move(consistency);
  m.read_only = ro;
  return m;
}

TEST(MountViewTest, CacheRulesFollowConsistency) {
  EXPECT_EQ(CacheRuleFor(M("/a", "immutable"))->timeout_s, kLongTimeoutS);
  EXPECT_EQ(CacheRuleFor(M("/a", "ttl=90s"))->timeout_s, 90.0);
  EXPECT_EQ(CacheRuleFor(M("/a", "ttl=500ms"))->listing, std::chrono::milliseconds(500));
  EXPECT_EQ(CacheRuleFor(M("/a", "always"))->timeout_s, 0.0);
  EXPECT_EQ(CacheRuleFor(M("/a", "always"))->listing.count(), 0);
  EXPECT_TRUE(CacheRuleFor(M("/a", "always", true))->read_only);
  auto bad = CacheRuleFor(M("/a", "sometimes"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("/a"), std::string::npos);
}

TEST(MountViewTest, RootShowsMountsAndTheDirectoriesAboveThem) {
  auto v = MountView::Make({M("/data", "ttl=60s"), M("/sets/imagenet", "immutable"), M("/sets/coco", "always")}, "/");
  ASSERT_TRUE(v) << v.error().ToString();
  EXPECT_EQ(v->NsPath(""), "/");
  EXPECT_EQ(v->NsPath("sets/coco/x"), "/sets/coco/x");
  EXPECT_EQ(v->Classify("/").kind, MountView::Kind::kAboveMount);
  EXPECT_EQ(v->Classify("/sets").kind, MountView::Kind::kAboveMount);
  EXPECT_EQ(v->Classify("/sets/coco/x").kind, MountView::Kind::kInMount);
  EXPECT_EQ(v->Classify("/sets/coco/x").rule.timeout_s, 0.0);
  EXPECT_EQ(v->Classify("/datax").kind, MountView::Kind::kOutside);
  EXPECT_EQ(v->ChildrenAbove("/"), (std::vector<std::string>{"data", "sets"}));
  EXPECT_EQ(v->ChildrenAbove("/sets"), (std::vector<std::string>{"coco", "imagenet"}));
}

TEST(MountViewTest, BasePathInsideAMount) {
  auto v = MountView::Make({M("/data", "ttl=60s")}, "/data/train/");
  ASSERT_TRUE(v) << v.error().ToString();
  EXPECT_EQ(v->NsPath(""), "/data/train");
  EXPECT_EQ(v->NsPath("a b.jpg"), "/data/train/a b.jpg");
  auto outside = MountView::Make({M("/data", "ttl=60s")}, "/elsewhere");
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message().find("/data"), std::string::npos);  // names the mounts
  EXPECT_FALSE(MountView::Make({M("/data", "ttl=60s")}, "relative"));
}

TEST(ErrnoMapTest, OneTable) {
  EXPECT_EQ(ErrnoFor(Code::kOk), 0);
  EXPECT_EQ(ErrnoFor(Code::kNotFound), ENOENT);
  EXPECT_EQ(ErrnoFor(Code::kPermissionDenied), EACCES);
  EXPECT_EQ(ErrnoFor(Code::kReadOnly), EROFS);
  EXPECT_EQ(ErrnoFor(Code::kNotEmpty), ENOTEMPTY);
  EXPECT_EQ(ErrnoFor(Code::kIsDirectory), EISDIR);
  EXPECT_EQ(ErrnoFor(Code::kNotDirectory), ENOTDIR);
  EXPECT_EQ(ErrnoFor(Code::kAlreadyExists), EEXIST);
  EXPECT_EQ(ErrnoFor(Code::kNotSupported), EOPNOTSUPP);
  EXPECT_EQ(ErrnoFor(Code::kUnavailable), EIO);
  EXPECT_EQ(ErrnoFor(Code::kTimeout), EIO);
  EXPECT_EQ(ErrnoFor(Code::kVersionMismatch), ESTALE);
}

}  // namespace
}  // namespace shoal::fuse
