// The write-back journal on its own, with a file:// store: appends read from a
// request body as it arrives (AppendFrom), and uploads that yield to writes
// streaming in. The protocol end to end is tests/writeback_test.cc.
#include "worker/writeback_journal.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/metrics.h"
#include "ufs/under_store.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string Bytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
  return s;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Waits up to 30 s for `done`, checking every 10 ms.
template <class F>
bool WaitFor(F done) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class WritebackJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("shoal-wbj-test-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "store");
    MountConfig m;
    m.path = "/m";
    m.ufs = "file://" + (root_ / "store").string() + "/";
    auto store = OpenUnderStore(m);
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = *store;
  }
  void TearDown() override {
    journal_.reset();
    fs::remove_all(root_);
  }

  void Open(WritebackJournal::Options o) {
    o.dir = (root_ / "wb").string();
    o.self_id = "w1";
    o.max_pending = 1ull << 30;
    WritebackJournal::Hooks h;
    h.store_for = [this](const std::string& path, std::string* key) -> Result<std::shared_ptr<UnderStore>> {
      *key = path.substr(3);  // "/m/<key>"
      return store_;
    };
    h.uploaded = [](const std::string&) {};
    h.committed = [](const std::string&) {};
    h.cache_uploaded = [](const WritebackCommit&, const FileInfo&, int) {};
    h.call_peer = [](const WorkerEntry&, const std::string&) { return Status(); };
    h.get_peer = [](const WorkerEntry&, const std::string&) -> Result<std::string> { return std::string(); };
    auto j = WritebackJournal::Open(std::move(o), std::move(h));
    ASSERT_TRUE(j) << j.error().ToString();
    journal_ = std::move(*j);
  }

  const std::vector<WorkerEntry> holders_{{"w1", "127.0.0.1:1"}};
  fs::path root_;
  std::shared_ptr<UnderStore> store_;
  std::unique_ptr<WritebackJournal> journal_;
};

constexpr char kIdA[] = "0123456789abcdef0123456789abcdef";
constexpr char kIdB[] = "fedcba9876543210fedcba9876543210";

TEST_F(WritebackJournalTest, AnAppendReadFromABodyInOddPiecesKeepsEveryByteAndCommits) {
  Open({});
  journal_->Pause(true);  // keep the data file to compare
  ASSERT_TRUE(journal_->Begin(kIdA, "/m/ckpt.pt", holders_).ok());
  const std::string bytes = Bytes((3 << 20) + 12345, 1);
  // The body arrives in pieces of every awkward size.
  const size_t sizes[] = {1, 4095, (1 << 20) + 3, 7, 2 << 20, 1 << 19};
  size_t at = 0, next = 0;
  auto source = [&]() -> Result<std::string_view> {
    size_t n = std::min(sizes[next++ % std::size(sizes)], bytes.size() - at);
    std::string_view piece(bytes.data() + at, n);
    at += n;
    return piece;  // empty at the end
  };
  auto first = journal_->AppendFrom(kIdA, 0, source);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(*first, bytes.size());
  // A second append continues at the end; a wrong offset is refused and names the expected one.
  auto wrong = journal_->AppendFrom(kIdA, 5, []() -> Result<std::string_view> { return std::string_view(); });
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("expected is at " + std::to_string(bytes.size())), std::string::npos)
      << wrong.error().message();
  auto c = journal_->Commit(kIdA, bytes.size(), XXH3_64bits(bytes.data(), bytes.size()));
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(ReadAll((root_ / "wb" / (std::string(kIdA) + ".data")).string()), bytes);
}

TEST_F(WritebackJournalTest, ABodyThatStopsPartWayFailsTheWriteAndSaysWhere) {
  Open({});
  ASSERT_TRUE(journal_->Begin(kIdA, "/m/ckpt.pt", holders_).ok());
  const std::string bytes = Bytes(3 << 20, 2);
  size_t at = 0;
  auto source = [&]() -> Result<std::string_view> {
    if (at >= (2 << 20) + 100) return Err(Code::kUnavailable, "the client left before sending the request body");
    std::string_view piece(bytes.data() + at, 65536);
    at += piece.size();
    return piece;
  };
  auto r = journal_->AppendFrom(kIdA, 0, source);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kUnavailable);
  EXPECT_NE(r.error().message().find("/m/ckpt.pt"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("the client left"), std::string::npos) << r.error().message();
  // The write is failed: it can be neither continued nor committed.
  EXPECT_FALSE(journal_->Append(kIdA, 1 << 20, "x").ok());
  EXPECT_FALSE(journal_->Commit(kIdA, at, XXH3_64bits(bytes.data(), at)));
}

TEST_F(WritebackJournalTest, UploadsWaitWhileAWriteStreamsInAndGoOnceItEnds) {
  WritebackJournal::Options o;
  o.upload_yield_window = std::chrono::hours(1);  // every open write counts as streaming
  o.upload_yield_max = std::chrono::hours(1);
  Open(o);
  Counter& yields = MetricsRegistry::Global().GetCounter("shoal_writeback_upload_yields_total", "");
  // A is streaming in; B, small, is committed meanwhile.
  ASSERT_TRUE(journal_->Begin(kIdA, "/m/a.pt", holders_).ok());
  const std::string a = Bytes(1 << 20, 3);
  ASSERT_TRUE(journal_->Append(kIdA, 0, a).ok());
  const std::string b = Bytes(1000, 4);
  const uint64_t yields_before = yields.value();
  ASSERT_TRUE(journal_->Put(kIdB, "/m/b.pt", holders_, b, b.size(), XXH3_64bits(b.data(), b.size())));
  // The uploader looks at B at least twice and leaves it pending.
  ASSERT_TRUE(WaitFor([&] { return yields.value() >= yields_before + 2; }));
  EXPECT_EQ(journal_->State(kIdB), "pending");
  EXPECT_FALSE(fs::exists(root_ / "store" / "b.pt"));
  // A ends (committed): nothing streams, and B goes up, then A.
  ASSERT_TRUE(journal_->Commit(kIdA, a.size(), XXH3_64bits(a.data(), a.size())));
  ASSERT_TRUE(WaitFor([&] { return journal_->State(kIdB) == "done" && journal_->State(kIdA) == "done"; }));
  EXPECT_EQ(ReadAll((root_ / "store" / "b.pt").string()), b);
  EXPECT_EQ(ReadAll((root_ / "store" / "a.pt").string()), a);
}

TEST_F(WritebackJournalTest, AWriteThatWaitedItsLongestIsUploadedWhileOthersStillStream) {
  WritebackJournal::Options o;
  o.upload_yield_window = std::chrono::hours(1);
  o.upload_yield_max = 0ms;  // no write waits
  Open(o);
  ASSERT_TRUE(journal_->Begin(kIdA, "/m/a.pt", holders_).ok());
  ASSERT_TRUE(journal_->Append(kIdA, 0, Bytes(4096, 5)).ok());
  const std::string b = Bytes(1000, 6);
  ASSERT_TRUE(journal_->Put(kIdB, "/m/b.pt", holders_, b, b.size(), XXH3_64bits(b.data(), b.size())));
  ASSERT_TRUE(WaitFor([&] { return journal_->State(kIdB) == "done"; }));
  EXPECT_EQ(ReadAll((root_ / "store" / "b.pt").string()), b);
  journal_->Abort(kIdA);
}

// A write's options for the store: given at begin, replaced at commit (an
// ETag known only from the bytes), kept through a restart (replay reads them
// from the commit record) and given to the upload; bad ones refused at once.
TEST_F(WritebackJournalTest, OptionsGivenAtBeginOrCommitSurviveAReplayAndReachTheStore) {
  Open({});
  journal_->Pause(true);
  const std::string begin_attrs = R"({"content_type":"text/x-a","metadata":[["k","v"]]})";
  const std::string commit_attrs =
      R"({"content_type":"text/x-a","etag":"0123456789abcdef0123456789abcdef","metadata":[["k","v"]],"mode":416})";
  ASSERT_TRUE(journal_->Begin(kIdA, "/m/a.bin", holders_, begin_attrs).ok());
  const std::string a = Bytes(100000, 7);
  ASSERT_TRUE(journal_->Append(kIdA, 0, a).ok());
  auto c = journal_->Commit(kIdA, a.size(), XXH3_64bits(a.data(), a.size()), commit_attrs);
  ASSERT_TRUE(c) << c.error().ToString();
  const std::string b = Bytes(500, 8);
  ASSERT_TRUE(journal_->Put(kIdB, "/m/b.bin", holders_, b, b.size(), XXH3_64bits(b.data(), b.size()),
                            R"({"headers":[["cache-control","no-store"]]})"));
  for (const char* bad : {"{", R"({"mode":99999})", R"({"metadata":[["k","a
b"]]})"}) {
    Status st = journal_->Begin(kIdB, "/m/c.bin", holders_, bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("/m/c.bin"), std::string::npos) << st.message();
  }
  // A restart: the options come back from journal.log alone.
  journal_.reset();
  Open({});
  auto pending = journal_->Pending("/m/a.bin");
  ASSERT_TRUE(pending);
  EXPECT_NE(pending->attrs.find("\"mode\":416"), std::string::npos) << pending->attrs;
  ASSERT_TRUE(WaitFor([&] { return journal_->State(kIdA) == "done" && journal_->State(kIdB) == "done"; }));
  EXPECT_EQ(ReadAll((root_ / "store" / "a.bin").string()), a);
  auto ma = store_->Metadata("a.bin");
  ASSERT_TRUE(ma) << ma.error().ToString();
  EXPECT_EQ(ma->content_type, "text/x-a");
  EXPECT_EQ(ma->user, (std::vector<std::pair<std::string, std::string>>{{"k", "v"}}));
  auto ia = store_->Stat("a.bin");
  ASSERT_TRUE(ia);
  EXPECT_EQ(ia->etag, "0123456789abcdef0123456789abcdef") << "the ETag given at commit";
  EXPECT_EQ(ia->mode, 0640u);
  auto mb = store_->Metadata("b.bin");
  ASSERT_TRUE(mb);
  EXPECT_EQ(mb->headers, (std::vector<std::pair<std::string, std::string>>{{"cache-control", "no-store"}}));
}

// The directories a listing shows for pending writes deeper down, and the
// stat of one: "/m/a" and "/m/a/b" hold "/m/a/b/c.bin"; a name that only
// starts like a directory ("/m/ab") does not; an uploaded write leaves none.
TEST_F(WritebackJournalTest, PendingWritesDeeperDownMakeTheirDirectories) {
  Open({});
  journal_->Pause(true);
  const std::string b = Bytes(10, 1);
  ASSERT_TRUE(journal_->Put(kIdA, "/m/a/b/c.bin", holders_, b, b.size(), XXH3_64bits(b.data(), b.size()), ""));
  ASSERT_TRUE(journal_->Put(kIdB, "/m/top.bin", holders_, b, b.size(), XXH3_64bits(b.data(), b.size()), ""));
  EXPECT_EQ(journal_->PendingDirsUnder("/m"), (std::vector<std::string>{"/m/a"}));
  EXPECT_EQ(journal_->PendingDirsUnder("/m/a"), (std::vector<std::string>{"/m/a/b"}));
  EXPECT_TRUE(journal_->PendingDirsUnder("/m/a/b").empty()) << "c.bin is a file there, not a directory";
  EXPECT_TRUE(journal_->PendingDirsUnder("/").size() == 1 && journal_->PendingDirsUnder("/")[0] == "/m");
  for (const char* dir : {"/", "/m", "/m/a", "/m/a/b"}) EXPECT_TRUE(journal_->HasPendingBelow(dir)) << dir;
  for (const char* dir : {"/m/ab", "/m/a/b/c.bin", "/n", "/m/top"}) EXPECT_FALSE(journal_->HasPendingBelow(dir)) << dir;
  journal_->Pause(false);
  ASSERT_TRUE(WaitFor([&] { return journal_->State(kIdA) == "done" && journal_->State(kIdB) == "done"; }));
  EXPECT_TRUE(journal_->PendingDirsUnder("/m").empty());
  EXPECT_FALSE(journal_->HasPendingBelow("/m"));
}

}  // namespace
}  // namespace shoal
