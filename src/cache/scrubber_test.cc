#include "cache/scrubber.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <thread>

#include "cache/page_store.h"
#include "common/metrics.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kPage = 64 * 1024;

class ScrubberTest : public ::testing::TestWithParam<PageStore::Layout> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-scrub-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    PageStore::Options o;
    o.dirs = {{root_ + "/d0", 64 * kPage}};
    o.layout = GetParam();
    o.page_size = kPage;
    o.metrics = &metrics_;
    o.high_watermark = 0;
    auto s = PageStore::Open(o);
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
    std::mt19937_64 rng(5);
    data_.resize(kPage);
    for (auto& c : data_) c = static_cast<char>(rng());
    for (const char* path : {"/a/x", "/a/y", "/b/z"}) {
      for (uint64_t off = 0; off < 3 * kPage; off += kPage) ASSERT_TRUE(store_->Put({path, "v1", off}, data_).ok());
    }
  }
  void TearDown() override {
    scrubber_.reset();
    store_.reset();
    fs::remove_all(root_);
  }

  // Flips one data byte of page `key` on disk, where the store's ref says it is.
  void Flip(const PageKey& key) {
    auto ref = store_->Get(key, 0);
    ASSERT_TRUE(ref);
    char c;
    const off_t at = static_cast<off_t>(ref->data_offset() + 100);
    ASSERT_EQ(::pread(ref->fd(), &c, 1, at), 1);
    c ^= 1;
    // Another descriptor opened for writing: the store's may be read-only.
    std::string proc = "/proc/self/fd/" + std::to_string(ref->fd());
    int fd = ::open(proc.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
    ::close(fd);
  }

  // Runs an asked pass to its end (up to 30 s) and returns what it did.
  Scrubber::Progress Scrub(const std::string& path, bool now) {
    auto want = scrubber_->Start(path, now);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      auto p = scrubber_->progress();
      if (p.pass >= want.pass && !p.running) return p;
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "the scrub pass did not end";
        return p;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  double Counter(const std::string& name, const Labels& labels = {}) {
    return static_cast<double>(metrics_.GetCounter(name, "", labels).value());
  }

  std::string root_;
  MetricsRegistry metrics_;
  std::unique_ptr<PageStore> store_;
  std::unique_ptr<Scrubber> scrubber_;
  std::string data_;
};

TEST_P(ScrubberTest, AnAskedPassChecksEveryPageUnderItsPathAndDropsTheBadOnes) {
  scrubber_ = std::make_unique<Scrubber>(*store_, Scrubber::Options{.rate = 0, .metrics = &metrics_});
  Flip({"/a/y", "v1", kPage});
  Flip({"/b/z", "v1", 0});

  auto a = Scrub("/a", /*now=*/true);
  EXPECT_EQ(a.pages, 6u) << "the pages of /a/x and /a/y, not of /b";
  EXPECT_EQ(a.bytes, 6 * kPage);
  EXPECT_EQ(a.corrupt, 1u);
  EXPECT_FALSE(store_->Contains({"/a/y", "v1", kPage})) << "the bad page is dropped";
  EXPECT_TRUE(store_->Contains({"/b/z", "v1", 0})) << "outside the path: not looked at";
  EXPECT_EQ(Counter("shoal_cache_corrupt_pages_total", {{"found_by", "scrub"}}), 1);

  auto all = Scrub("", /*now=*/true);
  EXPECT_EQ(all.pages, 8u) << "every page left, recently checked or not";
  EXPECT_EQ(all.corrupt, 1u);
  EXPECT_FALSE(store_->Contains({"/b/z", "v1", 0}));
  EXPECT_EQ(Counter("shoal_cache_scrubbed_bytes_total"), 14.0 * kPage);
  EXPECT_EQ(Counter("shoal_cache_corrupt_pages_total", {{"found_by", "scrub"}}), 2);
  EXPECT_EQ(store_->stats().pages, 7u);
}

TEST_P(ScrubberTest, APacedPassTakesAboutItsBytesOverTheRate) {
  // 9 pages of 64 KiB at 2 MiB/s: at least 0.28 s (paced), done within the deadline.
  scrubber_ = std::make_unique<Scrubber>(
      *store_, Scrubber::Options{.rate = 2 << 20, .interval = std::chrono::hours(1), .metrics = &metrics_});
  auto started = std::chrono::steady_clock::now();
  auto p = Scrub("/", /*now=*/false);
  EXPECT_EQ(p.pages, 9u);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(250));
}

INSTANTIATE_TEST_SUITE_P(Layouts, ScrubberTest,
                         ::testing::Values(PageStore::Layout::kFiles, PageStore::Layout::kBlocks),
                         [](const auto& info) { return info.param == PageStore::Layout::kFiles ? "files" : "blocks"; });

}  // namespace
}  // namespace shoal
