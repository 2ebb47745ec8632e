#include "fuse/inode_table.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace shoal::fuse {
namespace {

TEST(InodeTableTest, LookupsCountAndForgetErases) {
  InodeTable t;
  uint64_t dir = t.Lookup(InodeTable::kRoot, "train", true);
  uint64_t a = t.Lookup(dir, "a.jpg", false);
  EXPECT_EQ(t.Lookup(dir, "a.jpg", false), a);  // same entry, same inode, two lookups
  EXPECT_EQ(*t.Path(a), "train/a.jpg");
  EXPECT_EQ(*t.Path(InodeTable::kRoot), "");
  EXPECT_EQ(t.size(), 3u);
  t.Forget(a, 1);
  EXPECT_TRUE(t.Path(a).has_value());
  t.Forget(a, 1);
  EXPECT_FALSE(t.Path(a).has_value());
  EXPECT_EQ(t.size(), 2u);
  // A new lookup after the forget gets a new number (numbers are never reused).
  EXPECT_NE(t.Lookup(dir, "a.jpg", false), a);
  t.Forget(InodeTable::kRoot, 100);  // the root is never forgotten
  EXPECT_EQ(*t.Path(InodeTable::kRoot), "");
}

TEST(InodeTableTest, TypeChangeMakesANewInode) {
  InodeTable t;
  uint64_t f = t.Lookup(InodeTable::kRoot, "x", false);
  uint64_t d = t.Lookup(InodeTable::kRoot, "x", true);
  EXPECT_NE(f, d);
  EXPECT_FALSE(t.Path(f).has_value());  // detached: the kernel gets ESTALE for it
  EXPECT_EQ(*t.Path(d), "x");
  t.Forget(f, 1);
  EXPECT_EQ(t.size(), 2u);
}

TEST(InodeTableTest, MoveAndRemove) {
  InodeTable t;
  uint64_t d1 = t.Lookup(InodeTable::kRoot, "d1", true);
  uint64_t d2 = t.Lookup(InodeTable::kRoot, "d2", true);
  uint64_t f = t.Lookup(d1, "f", false);
  uint64_t g = t.Lookup(d2, "g", false);
  t.Move(d1, "f", d2, "g");  // replaces g
  EXPECT_EQ(*t.Path(f), "d2/g");
  EXPECT_FALSE(t.Path(g).has_value());
  EXPECT_EQ(t.Find(d2, "g"), f);
  EXPECT_FALSE(t.Find(d1, "f").has_value());
  t.Remove(d2, "g");
  EXPECT_FALSE(t.Path(f).has_value());
}

TEST(InodeTableTest, PageVersionsAndListingWindows) {
  InodeTable t;
  uint64_t f = t.Lookup(InodeTable::kRoot, "f", false);
  EXPECT_EQ(t.SwapPageVersion(f, 7), 0u);
  EXPECT_EQ(t.SwapPageVersion(f, 7), 7u);
  EXPECT_EQ(t.SwapPageVersion(f, 9), 7u);
  auto now = InodeTable::Clock::now();
  EXPECT_FALSE(t.KeepListing(InodeTable::kRoot, now + std::chrono::hours(1)));
  EXPECT_TRUE(t.KeepListing(InodeTable::kRoot, now + std::chrono::hours(1)));
  uint64_t d = t.Lookup(InodeTable::kRoot, "d", true);
  EXPECT_FALSE(t.KeepListing(d, now - std::chrono::seconds(1)));  // a window already over
  EXPECT_FALSE(t.KeepListing(d, now - std::chrono::seconds(1)));
}

TEST(InodeTableTest, ConcurrentLookupsAndForgetsBalance) {
  InodeTable t;
  uint64_t dir = t.Lookup(InodeTable::kRoot, "d", true);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        uint64_t ino = t.Lookup(dir, "f" + std::to_string(i % 97), false);
        ASSERT_TRUE(t.Path(ino).has_value());
        t.Forget(ino, 1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), 2u);  // the root and d: every file inode was forgotten
}

TEST(InodeTableTest, PagesHeldIsClearedByANewVersion) {
  InodeTable t;
  uint64_t ino = t.Lookup(InodeTable::kRoot, "f", false);
  EXPECT_FALSE(t.PagesHeld(ino));
  EXPECT_EQ(t.SwapPageVersion(ino, 7), 0u);
  t.SetPagesHeld(ino, true);
  EXPECT_TRUE(t.PagesHeld(ino));
  EXPECT_EQ(t.SwapPageVersion(ino, 7), 7u);  // the same version: still held
  EXPECT_TRUE(t.PagesHeld(ino));
  EXPECT_EQ(t.SwapPageVersion(ino, 8), 7u);  // a new one: the kernel's pages go
  EXPECT_FALSE(t.PagesHeld(ino));
  EXPECT_FALSE(t.PagesHeld(12345));  // unknown inodes hold nothing
  t.SetPagesHeld(12345, true);
  EXPECT_FALSE(t.PagesHeld(12345));
}

// Bytes per cached inode: what 100k lookups of 15-byte names cost the heap,
// and that forgetting them gives it back. Printed for the docs; the bound
// fails the test if the layout grows by accident.
TEST(InodeTableTest, BytesPerInode) {
  constexpr int kCount = 100'000;
  InodeTable t;
  uint64_t dir = t.Lookup(InodeTable::kRoot, "train", true);
  std::vector<uint64_t> inos;
  inos.reserve(kCount);
  char name[32];
  size_t before = mallinfo2().uordblks;
  for (int i = 0; i < kCount; ++i) {
    std::snprintf(name, sizeof name, "img-%07d.jpg", i);  // 15 bytes: stored inline
    inos.push_back(t.Lookup(dir, name, false));
  }
  size_t after = mallinfo2().uordblks;
  double per = static_cast<double>(after - before) / kCount;
  std::printf("inode table: %.0f bytes per cached inode (100k inodes, 15-byte names)\n", per);
  RecordProperty("bytes_per_inode", static_cast<int>(per));
  EXPECT_LT(per, 256.0);
  for (auto ino : inos) t.Forget(ino, 1);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_LT(mallinfo2().uordblks, before + (after - before) / 4);  // the bucket arrays stay
}

}  // namespace
}  // namespace shoal::fuse
