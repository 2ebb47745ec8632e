// Consistency with a changing under-store, for file:// and s3:// (s3rver):
// overwrite an object with different bytes of the same size, delete it, add
// objects to a listed prefix, and check what each consistency mode returns
// before and after its window.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Backend {
  std::string name;
};

class ConsistencyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    MountConfig base;
    if (GetParam() == "s3") {
      auto s3 = S3rverProcess::Start();
      ASSERT_TRUE(s3) << s3.error().ToString();
      s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
      ASSERT_TRUE(s3_->CreateBucket("consistency").ok());
      base.ufs = "s3://consistency/data/";
      base.options = {{"endpoint", s3_->endpoint()},
                      {"region", "us-east-1"},
                      {"access_key_id", S3rverProcess::kAccessKeyId},
                      {"secret_access_key", S3rverProcess::kSecretAccessKey}};
    } else {
      dir_ = MakeTempDir("consistency");
      base.ufs = "file://" + dir_ + "/";
    }
    // Four mounts of the same under-store, one per mode.
    auto mount = [&](std::string path, Consistency c, std::chrono::milliseconds ttl) {
      MountConfig m = base;
      m.path = std::move(path);
      m.consistency = c;
      m.ttl = ttl;
      return m;
    };
    ShoalCluster::Options o;
    o.workers = 2;
    o.mounts = {mount("/imm", Consistency::kImmutable, 1s), mount("/ttl", Consistency::kTtl, 1h),
                mount("/short", Consistency::kTtl, 1s), mount("/always", Consistency::kAlways, 1h)};
    auto ufs = OpenUnderStore(o.mounts[0]);
    ASSERT_TRUE(ufs) << ufs.error().ToString();
    ufs_ = *ufs;
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    client_ = std::move(*cluster_->NewClient());
  }

  void TearDown() override {
    cluster_.reset();
    s3_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void Put(const std::string& key, const std::string& data) { ASSERT_TRUE(ufs_->Write(key, data).ok()); }

  // The whole file as read through Shoal, or "<error: ...>".
  std::string Read(const std::string& path) { return ReadWhole(*client_, path); }

  std::vector<std::string> Names(const std::string& dir) {
    std::vector<std::string> out;
    auto l = client_->List(dir);
    if (!l) return {"<error: " + l.error().ToString() + ">"};
    for (auto& e : *l) out.push_back(e.path.substr(e.path.rfind('/') + 1));
    return out;
  }

  // Polls `f` until it returns true or `limit` passes (the 1 s ttl expiring on a busy machine).
  template <typename F>
  bool Eventually(F f, std::chrono::seconds limit = 30s) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (f()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return f();
  }

  std::unique_ptr<S3rverProcess> s3_;
  std::string dir_;
  std::shared_ptr<UnderStore> ufs_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_P(ConsistencyTest, OverwriteWithSameSize) {
  const std::string a = RandomBytes(3 * 256 * 1024 + 5, 1), b = RandomBytes(a.size(), 2);
  Put("obj", a);
  for (auto m : {"/imm", "/ttl", "/short", "/always"}) ASSERT_TRUE(Read(std::string(m) + "/obj") == a) << m;

  Put("obj", b);
  // always: revalidated at open, so the new bytes at once.
  EXPECT_TRUE(Read("/always/obj") == b);
  // ttl (1 h) and immutable: still inside their window, the cached old version.
  EXPECT_TRUE(Read("/ttl/obj") == a);
  EXPECT_TRUE(Read("/imm/obj") == a);
  // ttl (1 s): the new bytes once the window has passed, and never the old ones after that.
  EXPECT_TRUE(Eventually([&] { return Read("/short/obj") == b; }));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Read("/short/obj") == b);
  // `shoal refresh` ends any window at once.
  ASSERT_TRUE(client_->Refresh("/ttl", true, false).ok());
  ASSERT_TRUE(client_->Refresh("/imm/obj", false, false).ok());
  EXPECT_TRUE(Read("/ttl/obj") == b);
  EXPECT_TRUE(Read("/imm/obj") == b);
}

TEST_P(ConsistencyTest, ChangedObjectNeverMixesVersions) {
  // 6 MiB: the tail read below lands in shard 1 (4 MiB shards), which the
  // worker's read-ahead after the open never touches, so nothing reads the
  // object while it is being overwritten (s3rver overwrites in place).
  const std::string a = RandomBytes(6 * 1024 * 1024, 3), b = RandomBytes(a.size(), 4);
  Put("mix", a);
  auto f = client_->OpenFile("/always/mix");
  ASSERT_TRUE(f);
  std::string head(1000, '\0');
  ASSERT_TRUE((*f)->Pread(0, std::span<char>(head.data(), head.size())));
  Put("mix", b);
  // The rest of the open file is not cached: reading it finds the object changed.
  std::string tail(1000, '\0');
  auto n = (*f)->Pread(a.size() - 1000, std::span<char>(tail.data(), tail.size()));
  if (n) {
    EXPECT_TRUE(tail == a.substr(a.size() - 1000)) << "old-version read returned bytes of another version";
  } else {
    EXPECT_EQ(n.error().code(), Code::kVersionMismatch) << n.error().ToString();
    EXPECT_NE(n.error().message().find("open it again"), std::string::npos);
  }
  EXPECT_TRUE(Read("/always/mix") == b);
}

TEST_P(ConsistencyTest, DeletedObjectDisappears) {
  Put("dir/gone", "bytes");
  Put("dir/stays", "bytes");
  for (auto m : {"/ttl", "/short", "/always"}) {
    EXPECT_EQ(Names(std::string(m) + "/dir"), (std::vector<std::string>{"gone", "stays"})) << m;
    EXPECT_TRUE(client_->Stat(std::string(m) + "/dir/gone")) << m;
  }
  ASSERT_TRUE(ufs_->Delete("dir/gone").ok());
  auto st = client_->Stat("/always/dir/gone");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound);
  EXPECT_EQ(Names("/always/dir"), (std::vector<std::string>{"stays"}));
  EXPECT_EQ(Names("/ttl/dir"), (std::vector<std::string>{"gone", "stays"})) << "the 1 h window is not over";
  EXPECT_TRUE(Eventually([&] { return !client_->Stat("/short/dir/gone"); }));
  EXPECT_TRUE(Eventually([&] { return Names("/short/dir") == std::vector<std::string>{"stays"}; }));
  ASSERT_TRUE(client_->Refresh("/ttl/dir", true, false).ok());
  EXPECT_EQ(Names("/ttl/dir"), (std::vector<std::string>{"stays"}));
  EXPECT_FALSE(client_->Stat("/ttl/dir/gone"));
}

TEST_P(ConsistencyTest, NewObjectsAppearInListingsAndNegativeLookupsExpire) {
  Put("grow/a", "1");
  EXPECT_EQ(Names("/always/grow"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(Names("/short/grow"), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(client_->Stat("/short/grow/b"));  // a cached negative lookup
  EXPECT_FALSE(client_->Stat("/imm/grow/b"));
  EXPECT_EQ(Names("/imm/grow"), (std::vector<std::string>{"a"}));
  Put("grow/b", "2");
  EXPECT_EQ(Names("/always/grow"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(Eventually([&] { return Names("/short/grow") == std::vector<std::string>{"a", "b"}; }));
  EXPECT_TRUE(Eventually([&] { return client_->Stat("/short/grow/b").has_value(); }));
  // Even an immutable mount forgets a negative lookup after its ttl, and its
  // listing agrees with its lookups: the new object appears in both.
  EXPECT_TRUE(Eventually([&] { return client_->Stat("/imm/grow/b").has_value(); }));
  EXPECT_TRUE(Eventually([&] { return Names("/imm/grow") == std::vector<std::string>{"a", "b"}; }));
}

// README "Consistency modes": `always` keeps no negative lookup at all, while
// ttl keeps one for its ttl (1 h on /ttl).
TEST_P(ConsistencyTest, AlwaysModeKeepsNoNegativeLookup) {
  EXPECT_FALSE(client_->Stat("/always/late/x"));
  EXPECT_FALSE(client_->Stat("/ttl/late/x"));
  Put("late/x", "here now");
  auto st = client_->Stat("/always/late/x");
  EXPECT_TRUE(st) << "the miss was cached: " << st.error().ToString();
  EXPECT_FALSE(client_->Stat("/ttl/late/x")) << "a ttl mount keeps its negative lookup for the ttl";
}

TEST_P(ConsistencyTest, ColdSmallFileCostsOneUfsRequest) {
  const std::string data = RandomBytes(120 * 1024, 5);
  Put("small/one", data);
  auto before = cluster_->MetricSum("shoal_ufs_requests_total");
  ASSERT_TRUE(before) << before.error().ToString();
  EXPECT_TRUE(Read("/ttl/small/one") == data);
  auto after = cluster_->MetricSum("shoal_ufs_requests_total");
  ASSERT_TRUE(after);
  // Stat and data from one ranged read on the worker that owns the path.
  EXPECT_EQ(*after - *before, 1);
  EXPECT_TRUE(Read("/ttl/small/one") == data);
  EXPECT_EQ(*cluster_->MetricSum("shoal_ufs_requests_total"), *after) << "a warm read went to the under-store";
}

// A store outage: a fully cached file whose metadata is past its ttl is still
// served (stale-if-error) while the store cannot be reached, and a mount with
// stale_if_error: 0 fails as before.
TEST(StoreOutageTest, CachedFilesAreServedStaleWhileTheStoreIsDown) {
  auto s3 = S3rverProcess::Start();
  ASSERT_TRUE(s3) << s3.error().ToString();
  auto s3p = std::make_unique<S3rverProcess>(std::move(*s3));
  ASSERT_TRUE(s3p->CreateBucket("outage").ok());
  MountConfig base;
  base.ufs = "s3://outage/data/";
  base.options = {{"endpoint", s3p->endpoint()},
                  {"region", "us-east-1"},
                  {"access_key_id", S3rverProcess::kAccessKeyId},
                  {"secret_access_key", S3rverProcess::kSecretAccessKey},
                  {"max_retries", "1"},
                  {"retry_base_delay", "10ms"}};
  auto mount = [&](std::string path, std::chrono::milliseconds stale) {
    MountConfig m = base;
    m.path = std::move(path);
    m.consistency = Consistency::kTtl;
    m.ttl = 1s;
    m.stale_if_error = stale;
    return m;
  };
  ShoalCluster::Options o;
  o.workers = 2;
  o.mounts = {mount("/stale", 1h), mount("/strict", 0ms)};
  auto ufs = OpenUnderStore(o.mounts[0]);
  ASSERT_TRUE(ufs) << ufs.error().ToString();
  const std::string data = RandomBytes(1300 * 1024, 7);
  ASSERT_TRUE((*ufs)->Write("dir/f", data).ok());
  auto cluster = ShoalCluster::Start(o);
  ASSERT_TRUE(cluster) << cluster.error().ToString();
  auto client = (*cluster)->NewClient();
  ASSERT_TRUE(client);

  auto read = [&](const std::string& path) -> std::string {
    auto f = (*client)->OpenFile(path);
    if (!f) return "<error: " + f.error().ToString() + ">";
    std::string out((*f)->status().size, '\0');
    auto n = (*f)->Pread(0, std::span<char>(out.data(), out.size()));
    if (!n) return "<error: " + n.error().ToString() + ">";
    return out;
  };
  ASSERT_TRUE(read("/stale/dir/f") == data);
  ASSERT_TRUE(read("/strict/dir/f") == data);
  ASSERT_TRUE((*client)->List("/stale/dir"));
  // Every page on disk before the store goes away (page 0 is written off the stat's path).
  auto pages = [&] { return (*cluster)->MetricSum("shoal_cache_pages").value_or(0); };
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (pages() < 2 * 6 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_GE(pages(), 2 * 6) << "1300 KiB in 256 KiB pages, twice";

  s3p.reset();  // the store is gone: connections are refused

  // Once the 1 s ttl has passed, the strict mount must revalidate and cannot.
  deadline = std::chrono::steady_clock::now() + 60s;
  std::string strict;
  while (std::chrono::steady_clock::now() < deadline) {
    strict = read("/strict/dir/f");
    if (strict.starts_with("<error")) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(strict.starts_with("<error: Unavailable")) << strict.substr(0, 300);
  // The same file under stale_if_error: every byte from the cache.
  EXPECT_TRUE(read("/stale/dir/f") == data);
  auto listed = (*client)->List("/stale/dir");
  ASSERT_TRUE(listed) << listed.error().ToString();
  EXPECT_EQ(listed->size(), 1u);
  EXPECT_GE((*cluster)->MetricSum("shoal_stale_served_total{kind=\"stat\"}").value_or(0), 1);
  EXPECT_EQ((*client)->stats().fallback_read_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Ufs, ConsistencyTest, ::testing::Values("file", "s3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace shoal::testing
