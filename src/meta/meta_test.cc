#include <gtest/gtest.h>

#include "meta/metadata_cache.h"
#include "meta/mount_table.h"

namespace shoal {
namespace {

MountConfig Mount(std::string path, std::string ufs, Consistency c = Consistency::kTtl) {
  MountConfig m;
  m.path = std::move(path);
  m.ufs = std::move(ufs);
  m.consistency = c;
  m.ttl = std::chrono::seconds(60);
  return m;
}

TEST(MountTable, ResolvesNamespacePaths) {
  MountTable t({Mount("/imagenet", "s3://bucket/imagenet/"), Mount("/nas", "file:///mnt/nas")});
  auto r = t.Resolve("/imagenet/train//x.jpg");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->mount_index, 0u);
  EXPECT_EQ(r->ns_path, "/imagenet/train/x.jpg");
  EXPECT_EQ(r->key, "train/x.jpg");
  auto root = t.Resolve("/nas/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->key, "");
  EXPECT_EQ(root->ns_path, "/nas");
}

TEST(MountTable, ResolvesPhysicalUris) {
  MountTable t({Mount("/imagenet", "s3://bucket/imagenet/"), Mount("/nas", "file:///mnt/nas")});
  auto r = t.Resolve("s3://bucket/imagenet/train/x.jpg");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->ns_path, "/imagenet/train/x.jpg");
  EXPECT_EQ(r->key, "train/x.jpg");
  auto f = t.Resolve("file:///mnt/nas/a/b");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->ns_path, "/nas/a/b");
  auto out = t.Resolve("s3://other-bucket/x");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), Code::kNotFound);
  EXPECT_NE(out.error().message().find("outside every mount"), std::string::npos);
  // A sibling prefix is not inside the mount.
  EXPECT_FALSE(t.Resolve("s3://bucket/imagenet-old/x"));
}

TEST(MountTable, RejectsTraversalAndOutsidePaths) {
  MountTable t({Mount("/data", "file:///srv/")});
  EXPECT_EQ(t.Resolve("/data/../etc/passwd").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(t.Resolve("/database/x").error().code(), Code::kNotFound);
  EXPECT_EQ(t.Resolve("relative").error().code(), Code::kInvalidArgument);
  EXPECT_NE(t.Resolve("/other").error().message().find("/data -> file:///srv/"), std::string::npos);
}

struct FakeClock {
  MetadataCache::Clock::time_point t{};
  MetadataCache::Now fn() {
    return [this] { return t; };
  }
};

FileInfo Info(uint64_t size) {
  FileInfo f;
  f.key = "k";
  f.size = size;
  return f;
}

TEST(MetadataCache, TtlMode) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto m = Mount("/d", "file:///x", Consistency::kTtl);
  EXPECT_FALSE(c.LookupStat("/d/a", m));
  c.InsertStat("/d/a", Info(5));
  ASSERT_TRUE(c.LookupStat("/d/a", m));
  EXPECT_EQ(c.LookupStat("/d/a", m)->value().size, 5u);
  clock.t += std::chrono::seconds(61);
  EXPECT_FALSE(c.LookupStat("/d/a", m));
}

TEST(MetadataCache, ImmutableAndAlwaysModes) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto imm = Mount("/d", "file:///x", Consistency::kImmutable);
  auto always = Mount("/d", "file:///x", Consistency::kAlways);
  c.InsertStat("/d/a", Info(5));
  c.InsertStat("/d/missing", Err(Code::kNotFound, "no"));
  clock.t += std::chrono::hours(1000);
  EXPECT_TRUE(c.LookupStat("/d/a", imm));
  EXPECT_FALSE(c.LookupStat("/d/missing", imm)) << "negative lookups expire after the ttl even when immutable";
  EXPECT_FALSE(c.LookupStat("/d/a", always));
}

TEST(MetadataCache, ImmutableListingsExpireLikeNegativeLookups) {
  // An immutable mount promises that a file never changes once seen, not that
  // no file is ever added: listings and negative lookups agree after the ttl.
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto imm = Mount("/d", "file:///x", Consistency::kImmutable);
  c.InsertList("/d", {Info(1)});
  EXPECT_TRUE(c.LookupList("/d", imm));
  clock.t += std::chrono::seconds(61);
  EXPECT_FALSE(c.LookupList("/d", imm)) << "a listing of an immutable mount must expire with its ttl";
}

TEST(MetadataCache, StaleIfErrorWindow) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto m = Mount("/d", "file:///x");  // ttl 60 s
  m.stale_if_error = std::chrono::hours(1);
  c.InsertStat("/d/a", Info(5));
  c.InsertStat("/d/missing", Err(Code::kNotFound, "no"));
  c.InsertList("/d", {Info(5)});
  clock.t += std::chrono::seconds(61);
  EXPECT_FALSE(c.LookupStat("/d/a", m)) << "past its ttl: revalidate";
  auto stale = c.LookupStaleStat("/d/a", m);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->size, 5u);
  EXPECT_TRUE(c.LookupStaleList("/d", m));
  EXPECT_FALSE(c.LookupStaleStat("/d/missing", m)) << "only positive answers are served stale";
  clock.t += std::chrono::minutes(59);
  EXPECT_TRUE(c.LookupStaleStat("/d/a", m));
  clock.t += std::chrono::minutes(2);
  EXPECT_FALSE(c.LookupStaleStat("/d/a", m)) << "past ttl + stale_if_error";
  EXPECT_FALSE(c.LookupStaleList("/d", m));

  auto off = Mount("/d", "file:///x");
  off.stale_if_error = std::chrono::milliseconds(0);
  c.InsertStat("/d/b", Info(1));
  clock.t += std::chrono::seconds(61);
  EXPECT_FALSE(c.LookupStaleStat("/d/b", off)) << "stale_if_error: 0 turns it off";

  auto always = Mount("/d", "file:///x", Consistency::kAlways);
  c.InsertStat("/d/c", Info(2));
  EXPECT_FALSE(c.LookupStat("/d/c", always));
  EXPECT_TRUE(c.LookupStaleStat("/d/c", always)) << "always still rides out an outage, within the window";
}

TEST(MetadataCache, NegativeResultsCachedOnlyForTtlAndErrorsNotAtAll) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto m = Mount("/d", "file:///x");
  c.InsertStat("/d/missing", Err(Code::kNotFound, "no"));
  c.InsertStat("/d/flaky", Err(Code::kUnavailable, "down"));
  auto hit = c.LookupStat("/d/missing", m);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->error().code(), Code::kNotFound);
  EXPECT_FALSE(c.LookupStat("/d/flaky", m));
  clock.t += std::chrono::seconds(61);
  EXPECT_FALSE(c.LookupStat("/d/missing", m));
}

TEST(MetadataCache, ListsInvalidationAndBound) {
  FakeClock clock;
  MetadataCache c(3, clock.fn());
  auto m = Mount("/d", "file:///x");
  c.InsertList("/d", {Info(1), Info(2)});
  c.InsertStat("/d", Info(0));
  ASSERT_TRUE(c.LookupList("/d", m));
  EXPECT_EQ(c.LookupList("/d", m)->size(), 2u);
  c.InsertStat("/d/sub/x", Info(1));
  EXPECT_EQ(c.Invalidate("/d", true), 3u);
  EXPECT_EQ(c.size(), 0u);
  for (int i = 0; i < 10; ++i) c.InsertStat("/d/" + std::to_string(i), Info(1));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_TRUE(c.LookupStat("/d/9", m));
  EXPECT_FALSE(c.LookupStat("/d/0", m));
}

// A store answer fetched before an invalidation (a write through Shoal that
// raced with the fetch) must not be cached after it.
TEST(MetadataCache, AnswersFromBeforeAnInvalidationAreNotCached) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto m = Mount("/d", "file:///x", Consistency::kImmutable);
  uint64_t before = c.generation();
  c.Invalidate("/d/new", false);  // the write lands while the store is being asked
  c.InsertStat("/d/new", Err(Code::kNotFound, "no such file"), before);
  c.InsertList("/d", {}, before);
  EXPECT_FALSE(c.LookupStat("/d/new", m));
  EXPECT_FALSE(c.LookupList("/d", m));
  uint64_t now = c.generation();
  c.InsertStat("/d/new", Info(3), now);
  ASSERT_TRUE(c.LookupStat("/d/new", m));
  EXPECT_EQ(c.LookupStat("/d/new", m)->value().size, 3u);
}

// A stat another worker cached (after a ring change) keeps its age: the
// mount's ttl counts from when the store gave it, never from the copy.
TEST(MetadataCache, AnAgedStatKeepsItsOriginalTimeAndIsRefusedWhenTooOld) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto m = Mount("/d", "file:///x");  // ttl 60 s
  clock.t += std::chrono::hours(1);
  ASSERT_TRUE(c.InsertAgedStat("/d/a", Info(5), std::chrono::seconds(50), c.generation(), m));
  auto aged = c.LookupFreshStat("/d/a", m);
  ASSERT_TRUE(aged);
  EXPECT_EQ(aged->info.size, 5u);
  EXPECT_EQ(aged->age, std::chrono::seconds(50));
  clock.t += std::chrono::seconds(9);
  EXPECT_TRUE(c.LookupStat("/d/a", m));
  clock.t += std::chrono::seconds(2);
  EXPECT_FALSE(c.LookupStat("/d/a", m)) << "fresh for 60 s from the store's answer, not from the copy";
  EXPECT_FALSE(c.LookupFreshStat("/d/a", m));

  EXPECT_FALSE(c.InsertAgedStat("/d/b", Info(1), std::chrono::seconds(60), c.generation(), m)) << "as old as the ttl";
  EXPECT_FALSE(c.InsertAgedStat("/d/b", Info(1), -std::chrono::seconds(1), c.generation(), m)) << "from the future";
  EXPECT_FALSE(c.LookupStat("/d/b", m));
  auto always = Mount("/d", "file:///x", Consistency::kAlways);
  EXPECT_FALSE(c.InsertAgedStat("/d/b", Info(1), std::chrono::seconds(0), c.generation(), always));
  auto imm = Mount("/d", "file:///x", Consistency::kImmutable);
  EXPECT_TRUE(c.InsertAgedStat("/d/b", Info(1), std::chrono::hours(1000), c.generation(), imm));
  EXPECT_TRUE(c.LookupStat("/d/b", imm));
  EXPECT_FALSE(c.LookupFreshStat("/d/missing", m));
  c.InsertStat("/d/missing", Err(Code::kNotFound, "no"));
  EXPECT_FALSE(c.LookupFreshStat("/d/missing", m)) << "only positive stats are handed to peers";
}

// What same-host clients may hold an answer for (common/local_wire.h leases):
// how long the stat stays fresh, and a change signalled whenever an entry
// goes or is replaced, never for a new one.
TEST(MetadataCache, FreshStatsSayHowLongTheyStayFreshAndChangesAreSignalled) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  int changes = 0;
  c.OnChange([&] { ++changes; });
  auto ttl = Mount("/d", "file:///x");  // ttl 60 s
  auto imm = Mount("/d", "file:///x", Consistency::kImmutable);
  c.InsertStat("/d/a", Info(5));
  EXPECT_EQ(changes, 0) << "a new entry changes no earlier answer";
  clock.t += std::chrono::seconds(20);
  auto f = c.LookupFreshStat("/d/a", ttl);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->fresh_for, std::chrono::seconds(40));
  EXPECT_EQ(c.LookupFreshStat("/d/a", imm)->fresh_for, MetadataCache::Clock::duration::max());
  c.InsertStat("/d/a", Info(6));
  EXPECT_EQ(changes, 1) << "a replaced stat";
  EXPECT_TRUE(c.InsertAgedStat("/d/a", Info(7), std::chrono::seconds(1), c.generation(), ttl));
  EXPECT_EQ(changes, 2) << "a stat replaced by a peer's";
  c.Invalidate("/d/zzz", false);
  EXPECT_EQ(changes, 3) << "every invalidation";
  c.InsertList("/d", {Info(1)});
  EXPECT_EQ(changes, 3) << "a listing is not leased";
}

// A peer may still hold what this worker was told to drop (a write through
// Shoal refreshes the path's current owner only): not taken from before it.
TEST(MetadataCache, AnAgedStatFromBeforeAnInvalidationIsRefused) {
  FakeClock clock;
  MetadataCache c(100, clock.fn());
  auto m = Mount("/d", "file:///x");
  clock.t += std::chrono::hours(1);
  c.Invalidate("/d/a", false);
  clock.t += std::chrono::seconds(10);
  EXPECT_FALSE(c.InsertAgedStat("/d/a", Info(1), std::chrono::seconds(11), c.generation(), m));
  EXPECT_TRUE(c.InsertAgedStat("/d/a", Info(2), std::chrono::seconds(9), c.generation(), m)) << "given after it";
  EXPECT_TRUE(c.InsertAgedStat("/d/other", Info(2), std::chrono::seconds(11), c.generation(), m));

  c.Invalidate("/d/sub", true);  // a subtree
  clock.t += std::chrono::seconds(1);
  EXPECT_FALSE(c.InsertAgedStat("/d/sub/x/y", Info(1), std::chrono::seconds(2), c.generation(), m));
  EXPECT_TRUE(c.InsertAgedStat("/d/subway", Info(1), std::chrono::seconds(2), c.generation(), m));
  uint64_t before = c.generation();
  c.Invalidate("/elsewhere", false);  // while the peer was asked
  EXPECT_FALSE(c.InsertAgedStat("/d/c", Info(1), std::chrono::seconds(0), before, m));

  // Past its bound the record of invalidations is dropped, and everything counts as invalidated then.
  for (int i = 0; i < 10'001; ++i) c.Invalidate("/x/" + std::to_string(i), false);
  clock.t += std::chrono::seconds(1);
  EXPECT_FALSE(c.InsertAgedStat("/d/d", Info(1), std::chrono::seconds(2), c.generation(), m));
  EXPECT_TRUE(c.InsertAgedStat("/d/d", Info(1), std::chrono::milliseconds(500), c.generation(), m));
}

}  // namespace
}  // namespace shoal
