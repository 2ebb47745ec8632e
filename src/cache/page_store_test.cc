#include "cache/page_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "common/metrics.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kPage = 64 * 1024;

std::string Bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string ReadRef(const PageRef& r) {
  std::string out(r.length(), '\0');
  EXPECT_EQ(::pread(r.fd(), out.data(), out.size(), static_cast<off_t>(r.data_offset())),
            static_cast<ssize_t>(out.size()));
  return out;
}

class PageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-pages-XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root_); }

  // One cache dir (root_/d0) of `capacity`.
  PageStore::Options Options(uint64_t capacity, std::string policy = "") {
    PageStore::Options o;
    o.policy = std::move(policy);
    o.dirs = {{root_ + "/d0", capacity}};
    o.page_size = kPage;
    o.metrics = &metrics_;
    o.reuse_window = std::chrono::milliseconds(0);  // every read counts, also right after the write
    o.high_watermark = 0;  // evictions where the tests look for them (the watermark tests turn it on)
    return o;
  }
  std::unique_ptr<PageStore> Open(uint64_t capacity, std::shared_ptr<PageFileWriter> writer = nullptr,
                                  std::function<Result<uint64_t>(const std::string&)> free_bytes = nullptr,
                                  std::string policy = "") {
    PageStore::Options o = Options(capacity, std::move(policy));
    o.writer = std::move(writer);
    o.free_bytes = std::move(free_bytes);
    auto s = PageStore::Open(o);
    EXPECT_TRUE(s) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }

  // Every page file on disk.
  std::vector<std::string> PageFiles() {
    std::vector<std::string> out;
    for (auto& e : fs::recursive_directory_iterator(root_)) {
      if (e.path().extension() == ".pg" && e.path().parent_path().filename() != "tmp") out.push_back(e.path());
    }
    return out;
  }

  std::string root_;
  MetricsRegistry metrics_;
};

TEST_F(PageStoreTest, PutGetRoundTrip) {
  auto s = Open(10 * kPage);
  auto data = Bytes(kPage, 1);
  PageKey k{"/data/a", "v1", 0};
  EXPECT_FALSE(s->Get(k));
  ASSERT_TRUE(s->Put(k, data).ok());
  auto r = s->Get(k);
  ASSERT_TRUE(r);
  EXPECT_EQ(ReadRef(*r), data);
  // Same path, other version or offset: different pages.
  EXPECT_FALSE(s->Get(PageKey{"/data/a", "v2", 0}));
  EXPECT_FALSE(s->Get(PageKey{"/data/a", "v1", kPage}));
  // A short last page.
  ASSERT_TRUE(s->Put(PageKey{"/data/a", "v1", kPage}, std::string_view("tail")).ok());
  EXPECT_EQ(ReadRef(*s->Get(PageKey{"/data/a", "v1", kPage})), "tail");
}

TEST_F(PageStoreTest, DropDeletesOnePageAndItsFile) {
  auto s = Open(10 * kPage);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(s->Put(PageKey{"/f", "v", i * kPage}, Bytes(kPage, i)).ok());
  const uint64_t used = s->stats().used_bytes;
  EXPECT_TRUE(s->Drop(PageKey{"/f", "v", kPage}));
  EXPECT_FALSE(s->Drop(PageKey{"/f", "v", kPage}));  // already gone
  EXPECT_FALSE(s->Drop(PageKey{"/f", "other", 0}));  // never cached
  EXPECT_FALSE(s->Contains(PageKey{"/f", "v", kPage}));
  EXPECT_TRUE(s->Contains(PageKey{"/f", "v", 0}));
  EXPECT_TRUE(s->Contains(PageKey{"/f", "v", 2 * kPage}));
  EXPECT_EQ(s->stats().pages, 2u);
  EXPECT_LT(s->stats().used_bytes, used);
  EXPECT_EQ(PageFiles().size(), 2u);
}

TEST_F(PageStoreTest, EvictsLeastRecentlyUsedAtCapacity) {
  // Room for three pages (plus headers).
  auto s = Open(3 * kPage + 3 * 200, nullptr, nullptr, "lru");
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(s->Put(PageKey{"/f", "v", i * kPage}, Bytes(kPage, i)).ok());
  ASSERT_TRUE(s->Get(PageKey{"/f", "v", 0}));  // page 0 is now most recent
  ASSERT_TRUE(s->Put(PageKey{"/f", "v", 3 * kPage}, Bytes(kPage, 3)).ok());
  EXPECT_TRUE(s->Contains(PageKey{"/f", "v", 0}));
  EXPECT_FALSE(s->Contains(PageKey{"/f", "v", kPage}));  // the least recently used went
  EXPECT_TRUE(s->Contains(PageKey{"/f", "v", 3 * kPage}));
  EXPECT_LE(s->stats().used_bytes, 3 * kPage + 600);
  EXPECT_EQ(s->stats().pages, 3u);
  EXPECT_GE(s->stats().evicted_bytes, kPage);
  EXPECT_EQ(PageFiles().size(), 3u);
}

// Every way a page leaves the store tells Options::on_remove (the worker's
// epoch, which ends the answers clients hold); a put, a read or a touch does not.
TEST_F(PageStoreTest, EveryRemovalIsSignalledAndNothingElse) {
  int removed = 0;
  PageStore::Options o = Options(3 * kPage + 3 * 200, "lru");
  o.on_remove = [&] { ++removed; };
  auto opened = PageStore::Open(o);
  ASSERT_TRUE(opened) << opened.error().ToString();
  auto& s = **opened;
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(s.Put(PageKey{"/f", "v", i * kPage}, Bytes(kPage, i)).ok());
  ASSERT_TRUE(s.Get(PageKey{"/f", "v", 0}));
  EXPECT_EQ(s.Touch(PageKey{"/f", "v", kPage}, 3), kPage);
  EXPECT_EQ(s.Touch(PageKey{"/f", "w", 0}, 1), 0u) << "not cached";
  EXPECT_EQ(removed, 0);
  ASSERT_TRUE(s.Put(PageKey{"/f", "v", 3 * kPage}, Bytes(kPage, 3)).ok());  // evicts page 2, the least recent
  EXPECT_EQ(removed, 1) << "an eviction";
  EXPECT_FALSE(s.Contains(PageKey{"/f", "v", 2 * kPage})) << "the touch counted as a read of page 1";
  EXPECT_TRUE(s.Drop(PageKey{"/f", "v", 3 * kPage}));
  EXPECT_EQ(removed, 2) << "a drop";
  EXPECT_EQ(s.DropPath("/f", false), 2u);
  EXPECT_EQ(removed, 4) << "a path dropped";
}

// Eviction off the read path: past the high watermark a background thread
// evicts, in the policy's order, down to the low one; no Put evicted itself.
TEST_F(PageStoreTest, AboveTheHighWatermarkABackgroundThreadEvictsDownToTheLowOne) {
  PageStore::Options o = Options(20 * (kPage + 200), "lru");
  o.high_watermark = 80;
  o.low_watermark = 50;
  auto opened = PageStore::Open(o);
  ASSERT_TRUE(opened) << opened.error().ToString();
  auto& s = **opened;
  for (uint64_t i = 0; i < 15; ++i) ASSERT_TRUE(s.Put(PageKey{"/f", "v", i * kPage}, Bytes(kPage, i)).ok());
  EXPECT_EQ(s.stats().pages, 15u) << "below the high watermark nothing goes";
  for (uint64_t i = 15; i < 17; ++i) ASSERT_TRUE(s.Put(PageKey{"/f", "v", i * kPage}, Bytes(kPage, i)).ok());
  const uint64_t low = s.stats().capacity_bytes / 2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (s.stats().used_bytes > low) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "used " << s.stats().used_bytes << " of " << low;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a condition with a deadline
  }
  const auto pages = s.stats().pages;
  EXPECT_GE(pages, 9u) << "evicted below the low watermark";
  for (uint64_t i = 0; i < 17; ++i) {
    EXPECT_EQ(s.Contains(PageKey{"/f", "v", i * kPage}), i >= 17 - pages) << "page " << i << ": not in LRU order";
  }
  auto& m = metrics_;
  EXPECT_EQ(m.GetCounter("shoal_cache_evictions_total", "", {{"where", "inline"}}).value(), 0u);
  EXPECT_EQ(m.GetCounter("shoal_cache_evictions_total", "", {{"where", "background"}}).value(), 17u - pages);
}

TEST_F(PageStoreTest, WatermarksOutOfOrderAreAClearError) {
  PageStore::Options o = Options(10 * kPage);
  o.high_watermark = 90;
  o.low_watermark = 90;
  auto s = PageStore::Open(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("watermarks"), std::string::npos) << s.error().message();
  o.high_watermark = 101;
  o.low_watermark = 50;
  EXPECT_FALSE(PageStore::Open(o));
}

TEST_F(PageStoreTest, EvictedPageStaysReadableThroughRef) {
  auto s = Open(kPage + 200);
  auto a = Bytes(kPage, 7);
  ASSERT_TRUE(s->Put(PageKey{"/f", "v", 0}, a).ok());
  auto ref = s->Get(PageKey{"/f", "v", 0});
  ASSERT_TRUE(ref);
  ASSERT_TRUE(s->Put(PageKey{"/f", "v", kPage}, Bytes(kPage, 8)).ok());
  EXPECT_FALSE(s->Contains(PageKey{"/f", "v", 0}));
  EXPECT_EQ(ReadRef(*ref), a);
}

// The descriptors of this process open on a file under `dir`.
size_t OpenFilesUnder(const std::string& dir) {
  size_t n = 0;
  for (auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = fs::read_symlink(e.path(), ec);
    if (!ec && target.string().starts_with(dir)) ++n;
  }
  return n;
}

ino_t InodeOf(const PageRef& r) {
  struct stat st {};
  EXPECT_EQ(::fstat(r.fd(), &st), 0);
  return st.st_ino;
}

TEST_F(PageStoreTest, WarmReadsShareTheOpenPageFileUntilThePageLeaves) {
  auto s = Open(kPage + 200);  // room for one page
  const PageKey k{"/f", "v", 0};
  const auto a = Bytes(kPage, 21);
  ASSERT_TRUE(s->Put(k, a).ok());
  auto r1 = s->Get(k);
  auto r2 = s->Get(k);
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->fd(), r2->fd()) << "the second read opened the page file again";
  EXPECT_EQ(ReadRef(*r2), a);
  r1.reset();
  r2.reset();
  EXPECT_EQ(OpenFilesUnder(root_), 1u) << "the page file is held open between reads";
  auto held = s->Get(k);  // keeps the old file (and its inode number) alive
  ASSERT_TRUE(held);
  const ino_t old_inode = InodeOf(*held);
  // Evicted (another page takes the room), then cached again with other
  // bytes: a read gets the new file, never the descriptor held before.
  ASSERT_TRUE(s->Put(PageKey{"/f", "v", kPage}, Bytes(kPage, 22)).ok());
  EXPECT_FALSE(s->Contains(k));
  const auto b = Bytes(kPage, 23);
  ASSERT_TRUE(s->Put(k, b).ok());
  auto r3 = s->Get(k);
  ASSERT_TRUE(r3);
  EXPECT_NE(InodeOf(*r3), old_inode);
  EXPECT_EQ(ReadRef(*r3), b);
  EXPECT_EQ(ReadRef(*held), a);
  held.reset();
  // Dropped: the next read misses, and the file is let go with the last reference.
  auto r4 = s->Get(k);
  EXPECT_TRUE(s->Drop(k));
  EXPECT_FALSE(s->Get(k));
  EXPECT_EQ(ReadRef(*r4), b);
  r3.reset();
  r4.reset();
  EXPECT_EQ(OpenFilesUnder(root_), 0u) << "a dropped page's file is still open";
}

TEST_F(PageStoreTest, AtMostOpenPageFilesStayOpen) {
  for (size_t cap : {size_t{0}, size_t{2}}) {
    SCOPED_TRACE("open_page_files " + std::to_string(cap));
    PageStore::Options o = Options(10 * kPage);
    o.dirs = {{root_ + "/cap" + std::to_string(cap), 10 * kPage}};
    o.open_page_files = cap;
    auto s = PageStore::Open(o);
    ASSERT_TRUE(s) << s.error().ToString();
    for (uint64_t i = 0; i < 5; ++i) {
      const PageKey k{"/f", "v", i * kPage};
      const auto data = Bytes(kPage, 30 + i);
      ASSERT_TRUE((*s)->Put(k, data).ok());
      for (int read = 0; read < 2; ++read) {
        auto r = (*s)->Get(k);
        ASSERT_TRUE(r);
        EXPECT_EQ(ReadRef(*r), data);
      }
    }
    EXPECT_EQ(OpenFilesUnder(o.dirs[0].path), cap);
  }
}

TEST_F(PageStoreTest, WarmRestartRebuildsIndex) {
  std::vector<std::string> pages;
  {
    auto s = Open(100 * kPage);
    for (uint64_t i = 0; i < 20; ++i) {
      pages.push_back(Bytes(kPage, 100 + i));
      ASSERT_TRUE(s->Put(PageKey{"/warm/" + std::to_string(i % 4), "v", (i / 4) * kPage}, pages.back()).ok());
    }
  }
  auto s = Open(100 * kPage);
  EXPECT_EQ(s->stats().pages, 20u);
  for (uint64_t i = 0; i < 20; ++i) {
    auto r = s->Get(PageKey{"/warm/" + std::to_string(i % 4), "v", (i / 4) * kPage});
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(ReadRef(*r), pages[i]);
  }
}

TEST_F(PageStoreTest, RestartWithSmallerCapacityEvicts) {
  {
    auto s = Open(100 * kPage);
    for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(s->Put(PageKey{"/f", "v", i * kPage}, Bytes(kPage, i)).ok());
  }
  auto s = Open(5 * kPage);
  EXPECT_LE(s->stats().used_bytes, 5 * kPage);
  EXPECT_LE(PageFiles().size(), 5u);
}

TEST_F(PageStoreTest, UnknownPolicyIsAClearError) {
  auto s = PageStore::Open(Options(kPage, "mru"));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), Code::kInvalidArgument);
  EXPECT_NE(s.error().message().find("worker.eviction"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("s3fifo"), std::string::npos) << s.error().message();
}

// A read right after the write (the access that fetched the page: a stat and
// the read after it, read-ahead) is not a re-use; a read after the window is.
TEST_F(PageStoreTest, ReadsWithinTheReuseWindowOfTheWriteDoNotCountAsReuse) {
  auto now = std::chrono::system_clock::now();
  PageStore::Options o = Options(3 * kPage + 3 * 200, "lru");
  o.reuse_window = std::chrono::seconds(1);
  o.clock = [&now] { return now; };
  auto s = PageStore::Open(o);
  ASSERT_TRUE(s) << s.error().ToString();
  auto page = [](uint64_t i) { return PageKey{"/w", "v", i * kPage}; };
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE((*s)->Put(page(i), Bytes(kPage, i)).ok());
  ASSERT_TRUE((*s)->Get(page(0)));  // at once: the same access, page 0 stays the oldest
  ASSERT_TRUE((*s)->Put(page(3), Bytes(kPage, 3)).ok());
  EXPECT_FALSE((*s)->Contains(page(0)));
  EXPECT_TRUE((*s)->Contains(page(1)));

  now += std::chrono::seconds(2);
  ASSERT_TRUE((*s)->Get(page(1)));  // past the window: a re-use, page 1 becomes the newest
  ASSERT_TRUE((*s)->Put(page(4), Bytes(kPage, 4)).ok());
  EXPECT_TRUE((*s)->Contains(page(1)));
  EXPECT_FALSE((*s)->Contains(page(2)));
}

// Policy state across a restart. Page 0 is written first (the oldest mtime)
// and then read: by recency it is the page to keep, by mtime the one to
// evict. Room for three pages; a fourth is put after the restart.
class PolicyRestartTest : public PageStoreTest {
 protected:
  static constexpr uint64_t kRoom = 3 * kPage + 3 * 200;
  PageKey Page(uint64_t i) { return PageKey{"/hot-cold", "v", i * kPage}; }
  // Each page file gets its own mtime, a second apart: pages written within
  // one tick of the file system's clock would share one, and the restart's
  // order among equal mtimes is the scan's, not the writes'.
  void Fill(const std::string& policy) {
    auto s = Open(kRoom, nullptr, nullptr, policy);
    std::vector<std::string> seen;
    for (uint64_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(s->Put(Page(i), Bytes(kPage, i)).ok());
      for (const auto& f : PageFiles()) {
        if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
        seen.push_back(f);
        const timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
                                   {.tv_sec = 1'000'000'000 + static_cast<time_t>(i), .tv_nsec = 0}};
        ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0) << f;
      }
    }
    ASSERT_EQ(seen.size(), 3u);
    for (int r = 0; r < 3; ++r) ASSERT_TRUE(s->Get(Page(0)));
  }  // destroyed: the state is saved
  // After a restart and one more page: which of pages 0..2 are still cached.
  std::vector<bool> AfterRestart(const std::string& policy) {
    auto s = Open(kRoom, nullptr, nullptr, policy);
    EXPECT_TRUE(s->Put(Page(3), Bytes(kPage, 3)).ok());
    std::vector<bool> cached;
    for (uint64_t i = 0; i < 3; ++i) cached.push_back(s->Contains(Page(i)));
    EXPECT_EQ(s->stats().pages, 3u);
    return cached;
  }
  std::string StateFile() { return root_ + "/d0/policy.state"; }
};

TEST_F(PolicyRestartTest, LruKeepsTheHotPageAcrossARestart) {
  Fill("lru");
  ASSERT_TRUE(fs::exists(StateFile()));
  EXPECT_EQ(AfterRestart("lru"), (std::vector<bool>{true, false, true}));
}

TEST_F(PolicyRestartTest, LfuKeepsTheHotPageAcrossARestart) {
  Fill("lfu");
  EXPECT_EQ(AfterRestart("lfu"), (std::vector<bool>{true, false, true}));
}

TEST_F(PolicyRestartTest, WithoutTheStateTheMtimeOrderIsUsed) {
  Fill("lru");
  fs::remove(StateFile());
  // The contrast that makes the tests above mean something: page 0 is the oldest file.
  EXPECT_EQ(AfterRestart("lru"), (std::vector<bool>{false, true, true}));
}

TEST_F(PolicyRestartTest, ACorruptStateFallsBackToTheMtimeOrder) {
  Fill("lru");
  {
    std::fstream f(StateFile(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');
  }
  EXPECT_EQ(AfterRestart("lru"), (std::vector<bool>{false, true, true}));
}

TEST_F(PolicyRestartTest, AStateOfAnotherPolicyIsIgnored) {
  Fill("lfu");
  EXPECT_EQ(AfterRestart("fifo"), (std::vector<bool>{false, true, true}));
}

TEST_F(PolicyRestartTest, StateIsSavedPeriodicallyWhileRunning) {
  PageStore::Options o = Options(kRoom, "lru");
  o.state_save_interval = std::chrono::milliseconds(20);
  auto s = PageStore::Open(o);
  ASSERT_TRUE(s);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE((*s)->Put(Page(i), Bytes(kPage, i)).ok());
  ASSERT_TRUE((*s)->Get(Page(0)));
  // A save already under way may hold the order before that read; the save
  // after it cannot. Remove the file twice, each time waiting for the next one.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  Result<policy_state::Saved> st = Err(Code::kNotFound, "not yet");
  for (int round = 0; round < 2; ++round) {
    fs::remove(StateFile());
    st = Err(Code::kNotFound, "not yet");
    while (!st && std::chrono::steady_clock::now() < deadline) {
      st = policy_state::Read(StateFile());
      if (!st) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ASSERT_TRUE(st) << "no state saved within 30 s: " << st.error().ToString();
  EXPECT_EQ(st->policy, "lru");
  EXPECT_EQ(st->entries.size(), 3u);
  // A crash now: only the periodic save is left (the store's final save is undone).
  std::string periodic = policy_state::Encode(st->policy, st->entries);
  s->reset();
  std::ofstream(StateFile(), std::ios::binary | std::ios::trunc) << periodic;
  EXPECT_EQ(AfterRestart("lru"), (std::vector<bool>{true, false, true}));
}

// What every reader of a page does: check the chunks it reads.
Status ReadChecked(const PageRef& r, std::string* out) {
  page_format::PageFileReader reader;
  SHOAL_RETURN_IF_ERROR(r.BeginRead(reader));
  out->assign(r.length(), '\0');
  return reader.Read(0, std::span<char>(out->data(), out->size()));
}

void FlipByte(const std::string& file, uint64_t from_end) {
  int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c;
  auto at = static_cast<off_t>(fs::file_size(file) - from_end);
  ASSERT_EQ(::pread(fd, &c, 1, at), 1);
  c = static_cast<char>(c ^ 0x5a);
  ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
  ::close(fd);
}

TEST_F(PageStoreTest, PageCorruptedWhileOpenIsCaughtByItsReaderAndDropped) {
  auto s = Open(10 * kPage);
  const PageKey k{"/c", "v", 0};
  const auto data = Bytes(kPage, 9);
  ASSERT_TRUE(s->Put(k, data).ok());
  auto files = PageFiles();
  ASSERT_EQ(files.size(), 1u);
  FlipByte(files[0], 100);  // the store is running: nothing but a reader can notice
  auto ref = s->Get(k);
  ASSERT_TRUE(ref);
  std::string got;
  EXPECT_EQ(ReadChecked(*ref, &got).code(), Code::kCorruption);
  EXPECT_TRUE(s->DropCorrupt(k, *ref));
  EXPECT_FALSE(s->DropCorrupt(k, *ref)) << "dropped twice";
  EXPECT_FALSE(s->Contains(k));
  EXPECT_TRUE(PageFiles().empty());
  EXPECT_EQ(s->stats().dropped_corrupt, 1u);
  EXPECT_EQ(s->stats().pages, 0u);
  // Fetched and cached again, it is served; a late report through the old
  // file's fd does not drop the new page.
  ASSERT_TRUE(s->Put(k, data).ok());
  EXPECT_FALSE(s->DropCorrupt(k, *ref));
  auto again = s->Get(k);
  ASSERT_TRUE(again);
  ASSERT_TRUE(ReadChecked(*again, &got).ok());
  EXPECT_TRUE(got == data);
  EXPECT_EQ(s->stats().dropped_corrupt, 1u);
}

TEST_F(PageStoreTest, AHeldFileFoundCorruptIsNotHandedOutAgain) {
  // The file held open goes bad, and the path names a good copy by then (two
  // Puts of the page raced and the later rename replaced the file): the good
  // copy stays, and the next read gets it, not the held descriptor.
  auto s = Open(10 * kPage);
  const PageKey k{"/h", "v", 0};
  const auto data = Bytes(kPage, 41);
  ASSERT_TRUE(s->Put(k, data).ok());
  auto files = PageFiles();
  ASSERT_EQ(files.size(), 1u);
  auto bad = s->Get(k);
  ASSERT_TRUE(bad);
  const std::string good_copy = root_ + "/good.pg";
  fs::copy_file(files[0], good_copy);
  FlipByte(files[0], 100);
  ASSERT_EQ(::rename(good_copy.c_str(), files[0].c_str()), 0);
  std::string got;
  EXPECT_EQ(ReadChecked(*bad, &got).code(), Code::kCorruption);
  EXPECT_FALSE(s->DropCorrupt(k, *bad)) << "the good copy was dropped";
  auto next = s->Get(k);
  ASSERT_TRUE(next);
  EXPECT_NE(next->fd(), bad->fd());
  ASSERT_TRUE(ReadChecked(*next, &got).ok());
  EXPECT_TRUE(got == data);
}

TEST_F(PageStoreTest, PageCorruptedWhileStoppedIsCaughtByItsFirstReader) {
  {
    auto s = Open(10 * kPage);
    ASSERT_TRUE(s->Put(PageKey{"/c", "v", 0}, Bytes(kPage, 9)).ok());
  }
  auto files = PageFiles();
  ASSERT_EQ(files.size(), 1u);
  FlipByte(files[0], 100);
  auto s = Open(10 * kPage);
  auto ref = s->Get(PageKey{"/c", "v", 0});  // the header is fine: the scan keeps it
  ASSERT_TRUE(ref);
  std::string got;
  EXPECT_EQ(ReadChecked(*ref, &got).code(), Code::kCorruption);
  EXPECT_TRUE(s->DropCorrupt(PageKey{"/c", "v", 0}, *ref));
  EXPECT_TRUE(PageFiles().empty());
}

TEST_F(PageStoreTest, PagesOfTheOlderFormatAreDroppedAndCounted) {
  { auto s = Open(10 * kPage); }  // makes the directories
  // A SHOALPG1 page under a valid name, as a worker before the chunk checksums wrote it.
  std::string name = root_ + "/d0/ab/ab" + std::string(30, '0') + ".pg";
  std::string old = "SHOALPG1" + std::string(40, '\0') + "/f" + "v" + std::string(100, 'x');
  {
    std::ofstream out(name, std::ios::binary);
    out << old;
  }
  ASSERT_EQ(PageFiles().size(), 1u);
  auto s = Open(10 * kPage);
  EXPECT_TRUE(PageFiles().empty());
  EXPECT_EQ(s->stats().dropped_old_format, 1u);
  EXPECT_EQ(s->stats().dropped_corrupt, 0u);
  EXPECT_EQ(s->stats().pages, 0u);
}

TEST_F(PageStoreTest, CorruptHeaderOrTruncatedFileIsDroppedAtScan) {
  {
    auto s = Open(10 * kPage);
    ASSERT_TRUE(s->Put(PageKey{"/h", "v", 0}, Bytes(kPage, 1)).ok());
    ASSERT_TRUE(s->Put(PageKey{"/t", "v", 0}, Bytes(kPage, 2)).ok());
  }
  auto files = PageFiles();
  ASSERT_EQ(files.size(), 2u);
  {
    int fd = ::open(files[0].c_str(), O_RDWR);
    ASSERT_EQ(::pwrite(fd, "XX", 2, 20), 2);
    ::close(fd);
    fs::resize_file(files[1], fs::file_size(files[1]) - 10);
  }
  auto s = Open(10 * kPage);
  EXPECT_EQ(s->stats().pages, 0u);
  EXPECT_TRUE(PageFiles().empty());
}

class FullDiskWriter : public PageFileWriter {
 public:
  Status WriteNew(const std::string& path, std::span<const char> h, std::span<const char> d) override {
    if (fail) return Status(Code::kNoSpace, "injected ENOSPC writing " + path);
    return PageFileWriter::WriteNew(path, h, d);
  }
  // The disk's free space as the store measures it: none while it is full.
  std::function<Result<uint64_t>(const std::string&)> FreeBytes() {
    return [this](const std::string&) -> Result<uint64_t> { return fail ? 0 : 1000 * kPage; };
  }
  std::atomic<bool> fail{false};
};

TEST_F(PageStoreTest, NoSpaceFailsPutAndShrinksCapacity) {
  auto writer = std::make_shared<FullDiskWriter>();
  auto s = Open(100 * kPage, writer, writer->FreeBytes());
  ASSERT_TRUE(s->Put(PageKey{"/n", "v", 0}, Bytes(kPage, 1)).ok());
  writer->fail = true;
  auto st = s->Put(PageKey{"/n", "v", kPage}, Bytes(kPage, 2));
  EXPECT_EQ(st.code(), Code::kNoSpace);
  EXPECT_FALSE(s->Contains(PageKey{"/n", "v", kPage}));
  EXPECT_TRUE(s->Get(PageKey{"/n", "v", 0}));  // what was cached still serves
  // With the disk still full, the next Put makes room by evicting instead of growing.
  writer->fail = false;
  ASSERT_TRUE(s->Put(PageKey{"/n", "v", 2 * kPage}, Bytes(kPage, 3)).ok());
  EXPECT_EQ(s->stats().pages, 1u);
  EXPECT_TRUE(fs::is_empty(root_ + "/d0/tmp"));
}

TEST_F(PageStoreTest, FullDiskIsCountedAndLowersTheExportedCapacity) {
  auto writer = std::make_shared<FullDiskWriter>();
  auto s = Open(100 * kPage, writer, writer->FreeBytes());
  auto& enospc = metrics_.GetCounter("shoal_cache_enospc_total", "");
  auto& effective = metrics_.GetGauge("shoal_cache_effective_capacity_bytes", "");
  EXPECT_EQ(s->stats().effective_capacity_bytes, s->stats().capacity_bytes);
  EXPECT_EQ(effective.value(), static_cast<int64_t>(s->stats().capacity_bytes));
  ASSERT_TRUE(s->Put(PageKey{"/n", "v", 0}, Bytes(kPage, 1)).ok());
  writer->fail = true;
  EXPECT_EQ(s->Put(PageKey{"/n", "v", kPage}, Bytes(kPage, 2)).code(), Code::kNoSpace);
  EXPECT_EQ(enospc.value(), 1u);
  EXPECT_EQ(s->stats().effective_capacity_bytes, s->stats().used_bytes) << "lowered to what the disk holds";
  EXPECT_EQ(effective.value(), static_cast<int64_t>(s->stats().used_bytes));
  EXPECT_EQ(s->stats().capacity_bytes, 100 * kPage) << "the configured capacity is still reported";
}

// Two page writes failing at once (each ENOSPC'd by the other's bytes) leave
// the disk with room for one: the capacity is lowered to what the disk holds
// then, not to 0 (ClusterTest.FullCacheDiskServesFromUfs saw 0 on a tmpfs).
TEST_F(PageStoreTest, AFailedWriteLowersTheCapacityToWhatTheDiskHoldsNotToZero) {
  auto writer = std::make_shared<FullDiskWriter>();
  std::atomic<uint64_t> free{kPage + kPage / 2};
  auto s = Open(100 * kPage, writer, [&](const std::string&) -> Result<uint64_t> { return free.load(); });
  EXPECT_EQ(s->stats().effective_capacity_bytes, kPage + kPage / 2) << "measured at open";
  writer->fail = true;
  EXPECT_EQ(s->Put(PageKey{"/z", "v", 0}, Bytes(kPage, 1)).code(), Code::kNoSpace);
  EXPECT_GT(s->stats().effective_capacity_bytes, 0u) << "nothing cached, but the disk has room";
  EXPECT_LE(s->stats().effective_capacity_bytes, kPage + kPage / 2);
  writer->fail = false;
  EXPECT_TRUE(s->Put(PageKey{"/z", "v", 0}, Bytes(kPage, 1)).ok()) << "a page that fits is cached";
}

TEST_F(PageStoreTest, CapacityBeyondTheFreeSpaceIsLoweredAtOpen) {
  // Three workers sharing one small disk each see the disk's free space, not their configured capacity.
  auto s = Open(100 * kPage, nullptr, [](const std::string&) -> Result<uint64_t> { return 10 * kPage; });
  EXPECT_EQ(s->stats().capacity_bytes, 100 * kPage);
  EXPECT_EQ(s->stats().effective_capacity_bytes, 10 * kPage);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(s->Put(PageKey{"/f", "v", i * kPage}, Bytes(kPage / 2, i)).ok());
  EXPECT_LE(s->stats().used_bytes, 10 * kPage) << "eviction keeps the cache inside what the disk can hold";
  // A disk with room for everything keeps the configured capacity.
  auto roomy = Open(100 * kPage, nullptr, [](const std::string&) -> Result<uint64_t> { return 1000 * kPage; });
  EXPECT_EQ(roomy->stats().effective_capacity_bytes, 100 * kPage);
}

TEST_F(PageStoreTest, DropPathAndOtherVersions) {
  auto s = Open(100 * kPage);
  ASSERT_TRUE(s->Put(PageKey{"/d/a", "v1", 0}, std::string_view("a1")).ok());
  ASSERT_TRUE(s->Put(PageKey{"/d/a", "v2", 0}, std::string_view("a2")).ok());
  ASSERT_TRUE(s->Put(PageKey{"/d/sub/b", "v1", 0}, std::string_view("b")).ok());
  ASSERT_TRUE(s->Put(PageKey{"/dx", "v1", 0}, std::string_view("x")).ok());
  EXPECT_EQ(s->DropOtherVersions("/d/a", "v2"), 1u);
  EXPECT_FALSE(s->Contains(PageKey{"/d/a", "v1", 0}));
  EXPECT_TRUE(s->Contains(PageKey{"/d/a", "v2", 0}));
  EXPECT_EQ(s->DropPath("/d", true), 2u);
  EXPECT_TRUE(s->Contains(PageKey{"/dx", "v1", 0}));  // a sibling with a common prefix stays
  EXPECT_EQ(s->stats().pages, 1u);
}

TEST_F(PageStoreTest, ConcurrentPutsAndGets) {
  auto s = Open(40 * kPage);
  std::vector<std::jthread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 60; ++i) {
        uint64_t p = (i * 7 + static_cast<uint64_t>(t)) % 50;
        PageKey k{"/cc", "v", p * kPage};
        auto data = Bytes(4096, p);
        if (!s->Put(k, data).ok()) bad++;
        if (auto r = s->Get(k); r && ReadRef(*r) != data) bad++;
      }
    });
  }
  threads.clear();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(s->stats().used_bytes, 40 * kPage);
}

}  // namespace
}  // namespace shoal
