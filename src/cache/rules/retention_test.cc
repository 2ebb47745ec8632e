// The retention layer's decisions (cache/rules/retention.h), alone and
// through a PageStore, with an injected clock.
#include "cache/rules/retention.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "cache/page_store.h"
#include "common/metrics.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
constexpr uint64_t kPage = 4096;

PathRule Rule(std::string path, std::vector<std::pair<std::string, std::string>> fields) {
  PathRule r = EmptyRule(std::move(path));
  for (auto& [f, v] : fields) EXPECT_TRUE(SetRuleField(&r, f, v).ok()) << f << "=" << v;
  return r;
}

PathRules Rules(std::vector<PathRule> rules) {
  auto r = PathRules::Make(std::move(rules));
  EXPECT_TRUE(r) << r.error().ToString();
  return r ? *r : PathRules();
}

PageId Id(uint64_t n) { return PageId{0, n}; }

TEST(RetentionTest, PinnedNeverVictimAndPriorityOrdersClasses) {
  auto r = *Retention::Make("lru", 1);
  r->SetRules(Rules({Rule("/pin", {{"pin", "true"}}), Rule("/low", {{"priority", "low"}}),
                     Rule("/high", {{"priority", "high"}})}),
              1);
  EvictionPolicy::Time t{};
  auto pin = r->ClassFor("/pin/a"), low = r->ClassFor("/low/a"), high = r->ClassFor("/high/a"),
       mid = r->ClassFor("/other");
  // Inserted in an order that plain LRU would evict first to last: pin, high, mid, low.
  r->Insert(0, pin, Id(1), 100, t);
  r->Insert(0, high, Id(2), 100, t + 1s);
  r->Insert(0, mid, Id(3), 100, t + 2s);
  r->Insert(0, low, Id(4), 100, t + 3s);
  EXPECT_EQ(r->pinned_bytes(), 100u);
  std::vector<uint64_t> order;
  while (auto v = r->Victim(0)) {
    order.push_back(v->second.lo);
    r->Erase(0, v->first, v->second, 100);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{4, 3, 2}));  // low, medium, high; never the pinned one
  EXPECT_EQ(r->pinned_bytes(), 100u);
}

TEST(RetentionTest, QuotaCountsNestedRulesAndPicksItsOwnPages) {
  auto r = *Retention::Make("fifo", 1);
  r->SetRules(Rules({Rule("/team", {{"quota", "1000"}}), Rule("/team/a", {{"cluster_quota", "1000"}})}), 0.5);
  auto quotas = r->quotas();
  ASSERT_EQ(quotas.size(), 2u);
  EXPECT_EQ(quotas[0].path, "/team");
  EXPECT_EQ(quotas[0].limit, 1000u);
  EXPECT_EQ(quotas[1].path, "/team/a");
  EXPECT_EQ(quotas[1].limit, 500u);  // half the ring's weight: half the cluster quota
  EvictionPolicy::Time t{};
  auto a = r->ClassFor("/team/a/x"), b = r->ClassFor("/team/b/x"), other = r->ClassFor("/else");
  r->Insert(0, other, Id(1), 400, t);
  r->Insert(0, a, Id(2), 400, t + 1s);
  EXPECT_FALSE(r->OverQuota(a, 100));
  EXPECT_EQ(r->OverQuota(a, 101), std::optional<std::string>("/team/a"));
  r->Insert(0, b, Id(3), 500, t + 2s);
  EXPECT_EQ(r->OverQuota(b, 101), std::optional<std::string>("/team"));
  // The victim for /team/a is its own page, never the older page outside it.
  auto v = r->QuotaVictim("/team/a");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->id, Id(2));
  r->Erase(0, v->cls, v->id, 400);
  EXPECT_FALSE(r->QuotaVictim("/team/a"));
  EXPECT_EQ(r->QuotaUsed("/team"), 500u);
}

TEST(RetentionTest, TtlExpiresByTheInjectedClock) {
  auto r = *Retention::Make("lru", 1);
  r->SetRules(Rules({Rule("/tmp", {{"ttl", "10s"}})}), 1);
  EXPECT_TRUE(r->any_ttl());
  EvictionPolicy::Time t0{};
  auto c = r->ClassFor("/tmp/x");
  EXPECT_FALSE(r->Expired(c, t0, t0 + 9s));
  EXPECT_TRUE(r->Expired(c, t0, t0 + 10s));
  EXPECT_FALSE(r->Expired(r->ClassFor("/keep"), t0, t0 + 1000h));
}

class RulesStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-rules-XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<PageStore> Open(uint64_t pages, PathRules rules) {
    PageStore::Options o;
    o.policy = "lru";
    o.dirs = {{root_ + "/d0", pages * (PageBytes("/p/0000") + 32)}};  // slack for longer paths
    o.page_size = kPage;
    o.metrics = &metrics_;
    o.rules = std::move(rules);
    o.clock = [this] { return now_; };
    o.ttl_sweep_interval = 0ms;  // the tests sweep by hand
    o.reuse_window = 0ms;        // every read counts, also right after the write
    o.high_watermark = 0;        // evictions where the tests look for them
    auto s = PageStore::Open(o);
    EXPECT_TRUE(s) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }
  // What one page of `path` takes on disk (header included).
  uint64_t PageBytes(const std::string& path) {
    std::string data(kPage, 'x');
    return page_format::EncodeHeader(PageKey{path, "v", 0}, data).size() + kPage;
  }
  Status Put(PageStore& s, const std::string& path) {
    std::string data(kPage, 'x');
    now_ += 1s;
    return s.Put(PageKey{path, "v", 0}, data);
  }
  bool Has(PageStore& s, const std::string& path) { return s.Contains(PageKey{path, "v", 0}); }

  std::string root_;
  MetricsRegistry metrics_;
  EvictionPolicy::Time now_{std::chrono::hours(1000)};
};

TEST_F(RulesStoreTest, PinnedPagesSurvivePressureAndFullPinRefusesNewPages) {
  auto s = Open(4, Rules({Rule("/val", {{"pin", "true"}})}));
  ASSERT_TRUE(Put(*s, "/val/0001").ok());
  ASSERT_TRUE(Put(*s, "/val/0002").ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Put(*s, "/scan/" + std::to_string(1000 + i)).ok());
  EXPECT_TRUE(Has(*s, "/val/0001"));
  EXPECT_TRUE(Has(*s, "/val/0002"));
  EXPECT_EQ(s->stats().pinned_bytes, PageBytes("/val/0001") + PageBytes("/val/0002"));
  ASSERT_TRUE(Put(*s, "/val/0003").ok());
  ASSERT_TRUE(Put(*s, "/val/0004").ok());
  // Everything is pinned now: a new page is refused, nothing is evicted.
  Status st = Put(*s, "/scan/x");
  EXPECT_EQ(st.code(), Code::kNoSpace) << st.ToString();
  EXPECT_NE(st.message().find("pinned"), std::string::npos);
  EXPECT_FALSE(Has(*s, "/scan/x"));
  EXPECT_EQ(s->stats().pages, 4u);
  EXPECT_EQ(s->stats().rule_refusals, 1u);
  // Unpinned, they are evictable again.
  s->SetRules(Rules({}), 1);
  EXPECT_EQ(s->stats().pinned_bytes, 0u);
  ASSERT_TRUE(Put(*s, "/scan/y").ok());
  EXPECT_TRUE(Has(*s, "/scan/y"));
  EXPECT_EQ(s->stats().pages, 4u);
}

TEST_F(RulesStoreTest, LowPriorityGoesBeforeHigh) {
  auto s = Open(4, Rules({Rule("/low", {{"priority", "low"}}), Rule("/high", {{"priority", "high"}})}));
  ASSERT_TRUE(Put(*s, "/high/a").ok());
  ASSERT_TRUE(Put(*s, "/high/b").ok());
  ASSERT_TRUE(Put(*s, "/low/a").ok());
  ASSERT_TRUE(Put(*s, "/low/b").ok());
  ASSERT_TRUE(Put(*s, "/mid/a").ok());  // evicts a low page, though the high ones are older
  EXPECT_TRUE(Has(*s, "/high/a"));
  EXPECT_FALSE(Has(*s, "/low/a"));
  ASSERT_TRUE(Put(*s, "/mid/b").ok());
  ASSERT_TRUE(Put(*s, "/mid/c").ok());  // low is gone: now medium, oldest first
  EXPECT_FALSE(Has(*s, "/low/b"));
  EXPECT_FALSE(Has(*s, "/mid/a"));
  EXPECT_TRUE(Has(*s, "/high/a"));
  EXPECT_TRUE(Has(*s, "/high/b"));
}

TEST_F(RulesStoreTest, QuotaEvictsWithinItsPrefixFirst) {
  auto s = Open(100, Rules({Rule("/team", {{"quota", std::to_string(3 * PageBytes("/team/0"))}})}));
  ASSERT_TRUE(Put(*s, "/other/a").ok());
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(Put(*s, "/team/" + std::to_string(i)).ok());
  auto st = s->stats();
  ASSERT_EQ(st.quotas.size(), 1u);
  EXPECT_EQ(st.quotas[0].used, 3 * PageBytes("/team/0"));
  EXPECT_EQ(s->BytesUnder("/team"), 3 * PageBytes("/team/0"));
  EXPECT_TRUE(Has(*s, "/other/a"));
  EXPECT_TRUE(Has(*s, "/team/8"));
  EXPECT_FALSE(Has(*s, "/team/0"));
  // A lowered quota evicts down to it at once.
  s->SetRules(Rules({Rule("/team", {{"quota", std::to_string(PageBytes("/team/0"))}})}), 1);
  EXPECT_EQ(s->BytesUnder("/team"), PageBytes("/team/0"));
  EXPECT_TRUE(Has(*s, "/other/a"));
}

TEST_F(RulesStoreTest, TtlExpiresOnReadAndInTheSweep) {
  auto s = Open(100, Rules({Rule("/scratch", {{"ttl", "10s"}})}));
  ASSERT_TRUE(Put(*s, "/scratch/a").ok());
  ASSERT_TRUE(Put(*s, "/scratch/b").ok());
  ASSERT_TRUE(Put(*s, "/keep/a").ok());
  EXPECT_EQ(s->SweepExpired(100), 0u);
  now_ += 7s;  // /scratch/a is 9 s old, /scratch/b 8 s
  EXPECT_TRUE(s->Get(PageKey{"/scratch/a", "v", 0}));
  now_ += 1s;
  EXPECT_FALSE(s->Get(PageKey{"/scratch/a", "v", 0}));  // a read of an expired page is a miss
  EXPECT_EQ(s->SweepExpired(100), 0u);
  now_ += 1s;
  EXPECT_EQ(s->SweepExpired(100), 1u);  // /scratch/b
  EXPECT_TRUE(Has(*s, "/keep/a"));
  EXPECT_EQ(s->stats().pages, 1u);
  EXPECT_EQ(s->stats().expired_pages, 2u);
}

TEST_F(RulesStoreTest, AdmissionSkipCachesNothing) {
  auto s = Open(100, Rules({Rule("/stream", {{"admission", "skip"}})}));
  EXPECT_FALSE(s->Admits("/stream/x"));
  ASSERT_TRUE(Put(*s, "/stream/x").ok());
  EXPECT_FALSE(Has(*s, "/stream/x"));
  EXPECT_EQ(s->stats().used_bytes, 0u);
  EXPECT_EQ(s->stats().admission_skips, 1u);
  // A rule added later drops what the prefix had cached.
  ASSERT_TRUE(Put(*s, "/later/x").ok());
  s->SetRules(Rules({Rule("/later", {{"admission", "skip"}})}), 1);
  EXPECT_FALSE(Has(*s, "/later/x"));
}

TEST_F(RulesStoreTest, RulesApplyToPagesFoundAtRestart) {
  auto rules = Rules({Rule("/val", {{"pin", "true"}})});
  {
    auto s = Open(4, rules);
    ASSERT_TRUE(Put(*s, "/val/a").ok());
    ASSERT_TRUE(Put(*s, "/scan/a").ok());
  }
  auto s = Open(4, rules);
  EXPECT_EQ(s->stats().pinned_bytes, PageBytes("/val/a"));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put(*s, "/scan/" + std::to_string(10 + i)).ok());
  EXPECT_TRUE(Has(*s, "/val/a"));
  EXPECT_FALSE(Has(*s, "/scan/a"));
}

}  // namespace
}  // namespace shoal
