// The page store with worker.page_store: blocks (cache/block_files.h): pages
// in slots of block files reused in place, an index rebuilt from the slot
// headers, generations that tell a reused slot apart, and crash safety (a
// torn write is never served).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "cache/page_store.h"
#include "common/metrics.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kPage = 64 * 1024;

// The bytes of a page follow from its key, so that any read can be checked.
std::string PageBytes(const PageKey& k, size_t n) {
  std::mt19937_64 rng(std::hash<std::string>()(k.path + "|" + k.version) ^ k.offset);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// What every reader of a page does: check the chunks it reads.
Status ReadChecked(const PageRef& r, std::string* out) {
  page_format::PageFileReader reader;
  SHOAL_RETURN_IF_ERROR(r.BeginRead(reader));
  out->assign(r.length(), '\0');
  return reader.Read(0, std::span<char>(out->data(), out->size()));
}

class BlockStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-blocks-XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root_); }

  PageStore::Options Options(uint64_t capacity, PageStore::Layout layout = PageStore::Layout::kBlocks) {
    PageStore::Options o;
    o.dirs = {{root_ + "/d0", capacity}};
    o.page_size = kPage;
    o.metrics = &metrics_;
    o.layout = layout;
    o.policy = "lru";
    o.high_watermark = 0;  // evictions where the tests look for them
    return o;
  }
  std::unique_ptr<PageStore> Open(uint64_t capacity, std::shared_ptr<PageFileWriter> writer = nullptr,
                                  PageStore::Layout layout = PageStore::Layout::kBlocks) {
    auto o = Options(capacity, layout);
    o.writer = std::move(writer);
    auto s = PageStore::Open(o);
    EXPECT_TRUE(s) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }
  // The slot size of a whole page (header included): what it takes of the capacity.
  static uint64_t SlotOfPage() {
    auto sizes = BlockFiles::SlotSizes(kPage);
    PageKey k{"/f", "v", 0};
    return *std::lower_bound(sizes.begin(), sizes.end(), page_format::HeaderSize(k, kPage) + kPage);
  }

  // Files under the cache dir with `ext` (".pg" page files, ".blk" block files).
  std::vector<fs::path> Files(const std::string& ext) {
    std::vector<fs::path> out;
    for (auto& e : fs::recursive_directory_iterator(root_)) {
      if (e.path().extension() == ext) out.push_back(e.path());
    }
    return out;
  }

  void ExpectServes(PageStore& s, const PageKey& k, size_t n) {
    auto r = s.Get(k);
    ASSERT_TRUE(r) << k.path << " " << k.offset;
    std::string got;
    ASSERT_TRUE(ReadChecked(*r, &got).ok());
    EXPECT_TRUE(got == PageBytes(k, n)) << k.path << " " << k.offset;
  }

  std::string root_;
  MetricsRegistry metrics_;
};

TEST_F(BlockStoreTest, PagesOfEverySizeRoundTripWithoutPageFiles) {
  auto s = Open(100 * kPage);
  std::vector<std::pair<PageKey, size_t>> pages;
  for (size_t n : {size_t{1}, size_t{4000}, size_t{5000}, size_t{150 * 1024 / 4}, size_t{kPage - 1}, size_t{kPage}}) {
    PageKey k{"/sizes/" + std::to_string(n), "v1", 0};
    ASSERT_TRUE(s->Put(k, PageBytes(k, n)).ok());
    pages.emplace_back(k, n);
  }
  for (auto& [k, n] : pages) ExpectServes(*s, k, n);
  EXPECT_EQ(s->stats().pages, pages.size());
  EXPECT_TRUE(Files(".pg").empty());
  EXPECT_FALSE(Files(".blk").empty());
  EXPECT_FALSE(s->Get(PageKey{"/sizes/1", "v2", 0})) << "another version is another page";
}

TEST_F(BlockStoreTest, EvictionReusesSlotsInPlace) {
  const uint64_t slot = SlotOfPage();
  auto s = Open(4 * slot);
  std::set<uint64_t> offsets;
  for (uint64_t i = 0; i < 40; ++i) {
    PageKey k{"/e", "v", i * kPage};
    ASSERT_TRUE(s->Put(k, PageBytes(k, kPage)).ok());
    auto r = s->Get(k);
    ASSERT_TRUE(r);
    offsets.insert(r->page_offset());
  }
  EXPECT_EQ(s->stats().pages, 4u);
  EXPECT_LE(s->stats().used_bytes, 4 * slot);
  EXPECT_LE(offsets.size(), 5u) << "40 pages in 4 slots' room: the slots are reused";
  for (uint64_t i = 36; i < 40; ++i) ExpectServes(*s, PageKey{"/e", "v", i * kPage}, kPage);
  auto blk = Files(".blk");
  ASSERT_EQ(blk.size(), 1u);
  EXPECT_LE(fs::file_size(blk[0]), 5 * slot) << "the block file does not grow past the capacity";
}

TEST_F(BlockStoreTest, WarmRestartRebuildsTheIndexFromSlotHeaders) {
  {
    auto s = Open(100 * kPage);
    for (uint64_t i = 0; i < 20; ++i) {
      PageKey k{"/warm/" + std::to_string(i % 4), "v", (i / 4) * kPage};
      ASSERT_TRUE(s->Put(k, PageBytes(k, kPage - i)).ok());
    }
    EXPECT_EQ(s->DropPath("/warm/3", false), 5u);
  }
  auto s = Open(100 * kPage);
  EXPECT_EQ(s->stats().pages, 15u) << "dropped pages stay dropped after a restart";
  for (uint64_t i = 0; i < 20; ++i) {
    PageKey k{"/warm/" + std::to_string(i % 4), "v", (i / 4) * kPage};
    if (i % 4 == 3) {
      EXPECT_FALSE(s->Contains(k));
    } else {
      ExpectServes(*s, k, kPage - i);
    }
  }
  // New pages after the restart get new generations and do not disturb the old ones.
  PageKey k{"/after", "v", 0};
  ASSERT_TRUE(s->Put(k, PageBytes(k, 100)).ok());
  ExpectServes(*s, k, 100);
  ExpectServes(*s, PageKey{"/warm/0", "v", 0}, kPage);
}

TEST_F(BlockStoreTest, EvictedPagesDoNotComeBackAfterARestart) {
  const uint64_t slot = SlotOfPage();
  {
    auto s = Open(3 * slot);
    for (uint64_t i = 0; i < 10; ++i) {
      PageKey k{"/ev", "v", i * kPage};
      ASSERT_TRUE(s->Put(k, PageBytes(k, kPage)).ok());
    }
  }
  auto s = Open(3 * slot);
  EXPECT_EQ(s->stats().pages, 3u);
  for (uint64_t i = 7; i < 10; ++i) ExpectServes(*s, PageKey{"/ev", "v", i * kPage}, kPage);
}

TEST_F(BlockStoreTest, ALeasedSlotIsNotReusedAndAReusedSlotIsToldApart) {
  auto s = Open(8 * SlotOfPage());
  PageKey a{"/a", "v", 0}, b{"/b", "v", 0}, c{"/c", "v", 0};
  ASSERT_TRUE(s->Put(a, PageBytes(a, kPage)).ok());
  auto ref_a = s->Get(a);
  ASSERT_TRUE(ref_a);
  ASSERT_EQ(s->DropPath("/a", false), 1u);  // freed while a reader holds its slot
  ASSERT_TRUE(s->Put(b, PageBytes(b, kPage)).ok());
  auto ref_b = s->Get(b);
  ASSERT_TRUE(ref_b);
  EXPECT_NE(ref_b->page_offset(), ref_a->page_offset()) << "a leased slot was reused";
  std::string got;
  ASSERT_TRUE(ReadChecked(*ref_a, &got).ok());
  EXPECT_TRUE(got == PageBytes(a, kPage)) << "an evicted page stays readable through its ref";

  // What a client holds after the worker sent it the fd: no lease, only the
  // descriptor, the slot's place and the generation.
  const int fd = ::dup(ref_a->fd());
  const uint64_t at = ref_a->page_offset(), gen = ref_a->generation();
  const uint32_t header_len = ref_a->header_len();
  ref_a.reset();
  ref_b.reset();
  ASSERT_TRUE(s->Put(c, PageBytes(c, kPage)).ok());  // a's slot is free again: c takes it
  auto ref_c = s->Get(c);
  ASSERT_TRUE(ref_c);
  EXPECT_EQ(ref_c->page_offset(), at) << "the freed slot was not reused";
  EXPECT_NE(ref_c->generation(), gen);
  page_format::PageFileReader reader;
  Status st = reader.Begin(fd, header_len, at, gen);
  EXPECT_EQ(st.code(), Code::kNotFound) << "a reused slot was read as the old page: " << st.ToString();
  EXPECT_NE(st.message().find("generation"), std::string::npos) << st.message();
  ::close(fd);
}

// A served block-file page hands out the block file's own descriptor (no dup:
// no fcntl and no close per page read), kept open by the reference's lease,
// even past the store's end; moving a reference into another keeps its lease.
TEST_F(BlockStoreTest, ReferencesShareTheBlockFilesDescriptorAndKeepItOpen) {
  auto s = Open(8 * SlotOfPage());
  PageKey a{"/a", "v", 0}, b{"/b", "v", 0};
  ASSERT_TRUE(s->Put(a, PageBytes(a, kPage)).ok());
  ASSERT_TRUE(s->Put(b, PageBytes(b, kPage)).ok());
  auto open_fds = [] {
    return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{});
  };
  const auto before = open_fds();
  std::vector<PageRef> refs;
  for (int i = 0; i < 100; ++i) {
    auto r = s->Get(i % 2 ? a : b);
    ASSERT_TRUE(r);
    refs.push_back(std::move(*r));
  }
  EXPECT_EQ(open_fds(), before) << "each served page opened a descriptor";
  EXPECT_EQ(refs[0].fd(), refs[1].fd()) << "pages of one block file, one descriptor";

  // Assigned over another reference: the lease, place and generation move too.
  std::optional<PageRef> held = s->Get(b);
  ASSERT_TRUE(held);
  const uint64_t at_a = refs[1].page_offset(), gen_a = refs[1].generation();
  *held = std::move(refs[1]);
  EXPECT_EQ(held->page_offset(), at_a);
  EXPECT_EQ(held->generation(), gen_a);
  refs.clear();
  ASSERT_EQ(s->DropPath("/a", false), 1u);
  PageKey c{"/c", "v", 0};
  ASSERT_TRUE(s->Put(c, PageBytes(c, kPage)).ok());
  auto ref_c = s->Get(c);
  ASSERT_TRUE(ref_c);
  EXPECT_NE(ref_c->page_offset(), at_a) << "the assigned reference lost its lease: its slot was reused";
  ref_c.reset();

  s.reset();  // the store ends; the reference still reads its page
  std::string got;
  ASSERT_TRUE(ReadChecked(*held, &got).ok());
  EXPECT_TRUE(got == PageBytes(a, kPage));
  held.reset();
  EXPECT_LT(open_fds(), before) << "the block file stayed open after its last reference";
}

TEST_F(BlockStoreTest, DropCorruptIdentifiesTheSlot) {
  auto s = Open(10 * kPage);
  PageKey k{"/c", "v", 0};
  ASSERT_TRUE(s->Put(k, PageBytes(k, kPage)).ok());
  auto ref = s->Get(k);
  ASSERT_TRUE(ref);
  {
    // One byte of the data changes on disk while the store runs.
    int fd = ::open(Files(".blk")[0].c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const auto at = static_cast<off_t>(ref->data_offset() + 1000);
    char ch;
    ASSERT_EQ(::pread(fd, &ch, 1, at), 1);
    ch = static_cast<char>(ch ^ 0x10);
    ASSERT_EQ(::pwrite(fd, &ch, 1, at), 1);
    ::close(fd);
  }
  std::string got;
  EXPECT_EQ(ReadChecked(*ref, &got).code(), Code::kCorruption);
  EXPECT_TRUE(s->DropCorrupt(k, *ref));
  EXPECT_FALSE(s->DropCorrupt(k, *ref)) << "dropped twice";
  EXPECT_FALSE(s->Contains(k));
  EXPECT_EQ(s->stats().dropped_corrupt, 1u);
  // Cached again (in the same slot or another): a late report through the old ref leaves it.
  ASSERT_TRUE(s->Put(k, PageBytes(k, kPage)).ok());
  EXPECT_FALSE(s->DropCorrupt(k, *ref));
  ExpectServes(*s, k, kPage);
}

// Writes the way a crash leaves a slot: part of the page, then the process is
// gone. `header_first` is the worst order (the header lands, the data does not).
class TornWriter : public PageFileWriter {
 public:
  TornWriter(int tear_at, bool header_first) : tear_at_(tear_at), header_first_(header_first) {}
  Status WriteAt(int fd, uint64_t offset, std::span<const char> header, std::span<const char> data) override {
    if (++writes_ < tear_at_) return PageFileWriter::WriteAt(fd, offset, header, data);
    if (header_first_) {
      (void)::pwrite(fd, header.data(), header.size(), static_cast<off_t>(offset));
    }
    (void)::pwrite(fd, data.data(), data.size() / 2, static_cast<off_t>(offset + header.size()));
    ::kill(::getpid(), SIGKILL);  // kill -9 in the middle of a page write
    return Status(Code::kIo, "unreachable");
  }

 private:
  int writes_ = 0;
  const int tear_at_;
  const bool header_first_;
};

class BlockCrashTest : public BlockStoreTest, public ::testing::WithParamInterface<bool> {};

// A process writing pages is killed -9 mid-write; after a restart every page
// served matches its key's bytes (the torn one is absent or fails its check).
TEST_P(BlockCrashTest, CrashDuringABlockFileWriteNeverServesTornBytes) {
  const bool header_first = GetParam();
  const uint64_t slot = SlotOfPage();
  constexpr int kPages = 30, kTearAt = 25;  // room for 8: the torn write lands in a reused slot
  auto key = [](int i) { return PageKey{"/crash", "v", static_cast<uint64_t>(i) * kPage}; };
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto o = Options(8 * slot);
    o.writer = std::make_shared<TornWriter>(kTearAt, header_first);
    o.state_save_interval = std::chrono::milliseconds(0);
    o.ttl_sweep_interval = std::chrono::milliseconds(0);
    auto s = PageStore::Open(o);
    if (!s) ::_exit(2);
    for (int i = 0; i < kPages; ++i) (void)(*s)->Put(key(i), PageBytes(key(i), kPage));
    ::_exit(3);  // the writer should have killed us
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;

  auto s = Open(8 * slot);
  int served = 0, caught = 0;
  for (int i = 0; i < kPages; ++i) {
    auto r = s->Get(key(i));
    if (!r) continue;
    std::string got;
    Status st = ReadChecked(*r, &got);
    if (st.ok()) {
      EXPECT_TRUE(got == PageBytes(key(i), kPage)) << "page " << i << " served wrong bytes";
      EXPECT_NE(i, kTearAt - 1) << "the torn page was served";
      ++served;
    } else {
      EXPECT_EQ(st.code(), Code::kCorruption) << st.ToString();
      EXPECT_TRUE(s->DropCorrupt(key(i), *r));
      ++caught;
    }
  }
  EXPECT_GE(served, 5) << "the pages written before the crash are still cached";
  if (header_first) {
    EXPECT_GE(caught, 1) << "the torn page's header checks: its data must not";
  } else {
    EXPECT_EQ(caught, 0) << "data before header: a torn slot has no header that checks";
  }
  // What was caught is gone; a read fetches it again.
  for (int i = 0; i < kPages; ++i) {
    if (auto r = s->Get(key(i))) {
      std::string got;
      EXPECT_TRUE(ReadChecked(*r, &got).ok()) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WriteOrder, BlockCrashTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "HeaderFirst" : "DataFirst"; });

class FailingWriter : public PageFileWriter {
 public:
  Status WriteAt(int fd, uint64_t offset, std::span<const char> h, std::span<const char> d) override {
    if (fail) return Status(Code::kNoSpace, "injected ENOSPC");
    return PageFileWriter::WriteAt(fd, offset, h, d);
  }
  std::atomic<bool> fail{false};
};

TEST_F(BlockStoreTest, NoSpaceFailsThePutAndFreesTheSlot) {
  auto writer = std::make_shared<FailingWriter>();
  auto s = Open(100 * kPage, writer);
  PageKey a{"/n", "v", 0}, b{"/n", "v", kPage}, c{"/n", "v", 2 * kPage};
  ASSERT_TRUE(s->Put(a, PageBytes(a, kPage)).ok());
  writer->fail = true;
  EXPECT_EQ(s->Put(b, PageBytes(b, kPage)).code(), Code::kNoSpace);
  EXPECT_FALSE(s->Contains(b));
  ExpectServes(*s, a, kPage);
  writer->fail = false;
  ASSERT_TRUE(s->Put(c, PageBytes(c, kPage)).ok());
  ExpectServes(*s, c, kPage);
}

TEST_F(BlockStoreTest, SwitchingLayoutsDropsTheOtherLayoutsPages) {
  PageKey k{"/m", "v", 0};
  {
    auto s = Open(10 * kPage, nullptr, PageStore::Layout::kFiles);
    ASSERT_TRUE(s->Put(k, PageBytes(k, kPage)).ok());
  }
  ASSERT_EQ(Files(".pg").size(), 1u);
  {
    auto s = Open(10 * kPage);
    EXPECT_FALSE(s->Contains(k)) << "page files are dropped, not read";
    EXPECT_TRUE(Files(".pg").empty());
    ASSERT_TRUE(s->Put(k, PageBytes(k, kPage)).ok());
  }
  auto s = Open(10 * kPage, nullptr, PageStore::Layout::kFiles);
  EXPECT_FALSE(s->Contains(k));
  EXPECT_TRUE(Files(".blk").empty());
}

TEST_F(BlockStoreTest, SpaceFreedInOneSizeClassIsGivenBackWhenAnotherGrows) {
  const uint64_t capacity = 64 * SlotOfPage();
  auto s = Open(capacity);
  for (uint64_t i = 0; i < 64; ++i) {
    PageKey k{"/big", "v", i * kPage};
    ASSERT_TRUE(s->Put(k, PageBytes(k, kPage)).ok());
  }
  // The same capacity again in pages of a quarter page: another size class.
  for (uint64_t i = 0; i < 300; ++i) {
    PageKey k{"/small/" + std::to_string(i), "v", 0};
    ASSERT_TRUE(s->Put(k, PageBytes(k, kPage / 4)).ok());
  }
  EXPECT_LE(s->stats().used_bytes, capacity);
  uint64_t allocated = 0;
  for (auto& f : Files(".blk")) {
    struct stat st;
    ASSERT_EQ(::stat(f.c_str(), &st), 0);
    allocated += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  // The capacity, plus at most twice the slack kept for reuse (a quarter of
  // the capacity here: free slots, and the region a file last grew by).
  EXPECT_LE(allocated, capacity + capacity / 2 + 2 * SlotOfPage()) << "freed slots of the first class kept their blocks";
}

TEST_F(BlockStoreTest, ConcurrentPutsGetsAndEvictionsServeOnlyRightBytes) {
  auto s = Open(12 * SlotOfPage());
  std::vector<std::jthread> threads;
  std::atomic<int> bad{0}, reads{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 80; ++i) {
        PageKey k{"/cc", "v", ((i * 7 + static_cast<uint64_t>(t)) % 40) * kPage};
        if (!s->Put(k, PageBytes(k, 20000)).ok()) bad++;
        if (auto r = s->Get(k)) {
          std::string got;
          Status st = ReadChecked(*r, &got);
          if (!st.ok() || got != PageBytes(k, 20000)) bad++;
          reads++;
        }
      }
    });
  }
  threads.clear();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

}  // namespace
}  // namespace shoal
