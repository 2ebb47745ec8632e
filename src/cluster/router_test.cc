#include "cluster/router.h"

#include "cluster/ring_history.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace shoal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::vector<WorkerEntry> Workers(int n) {
  std::vector<WorkerEntry> w;
  for (int i = 0; i < n; ++i) w.push_back({"w" + std::to_string(i), "127.0.0.1:" + std::to_string(7000 + i)});
  return w;
}

template <typename F>
bool WaitUntil(F done, Clock::duration limit = 20s) {
  auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A probe whose answer the test sets; counts its calls.
struct FakeProbe {
  std::atomic<bool> healthy{false};
  std::atomic<int> calls{0};
  WorkerHealth::Probe fn() {
    return [this](const WorkerEntry& w) {
      ++calls;
      return healthy ? Status() : Status(Code::kUnavailable, "worker " + w.address + " still down");
    };
  }
};

struct Fixture {
  explicit Fixture(bool fallback = true, int workers = 3)
      : membership(std::make_shared<StaticMembership>(Workers(workers))),
        health(probe.fn(), {10ms, 80ms}),
        router(membership, &health, {fallback, 5s, 0}) {}
  FakeProbe probe;
  std::shared_ptr<StaticMembership> membership;
  WorkerHealth health;
  Router router;
};

TEST(Membership, StaticSnapshotIsImmutableAndVersioned) {
  StaticMembership m(Workers(3));
  auto a = m.Current();
  auto b = m.Current();
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->version, 1u);
  ASSERT_EQ(a->workers.size(), 3u);
  EXPECT_EQ(a->ring.members()[1], "w1");  // keyed by id, not address
}

TEST(Router, CandidatesAreTheOwnerThenReplicasMinusDownWorkers) {
  Fixture f;
  auto c = f.router.For(HashRing::MetaKey("/data/x"));
  ASSERT_EQ(c.live.size(), 1u);  // no replicas yet
  EXPECT_EQ(c.live[0], &c.ring->workers[c.ring->ring.Owner(HashRing::MetaKey("/data/x"))]);
  f.health.MarkDown(*c.live[0], Status(Code::kUnavailable, "gone"));
  auto d = f.router.For(HashRing::MetaKey("/data/x"));
  EXPECT_TRUE(d.live.empty());
  ASSERT_EQ(d.down.size(), 1u);
  EXPECT_EQ(d.down[0].second.message(), "gone");
}

TEST(Router, AnAnswerIsFinalAndAWorkerFailureFallsBackOnce) {
  Fixture f;
  int store_calls = 0;
  auto store = [&]() -> Result<int> {
    ++store_calls;
    return 7;
  };
  auto deadline = Clock::now() + 5s;
  // A worker's error answer is final: no store read.
  auto r = f.router.Route<int>("k", deadline, "stat /k", [](const WorkerEntry&) -> WorkerAttempt<int> {
    return {Err(Code::kNotFound, "no such file")};
  }, store);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kNotFound);
  EXPECT_EQ(store_calls, 0);
  // A failed worker: marked down, store read.
  int worker_calls = 0;
  auto failing = [&](const WorkerEntry& w) {
    ++worker_calls;
    return WorkerFailed<int>(Status(Code::kUnavailable, "worker " + w.address + " unreachable"));
  };
  auto s = f.router.Route<int>("k", deadline, "stat /k", failing, store);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(*s, 7);
  EXPECT_EQ(worker_calls, 1);
  // Later calls skip it without trying.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(f.router.Route<int>("k", deadline, "stat /k", failing, store));
  EXPECT_EQ(worker_calls, 1);
  EXPECT_EQ(store_calls, 6);
}

TEST(Router, NoFallbackSaysWhyAndWhatToDo) {
  Fixture f(/*fallback=*/false);
  auto r = f.router.Route<int>(
      "k", Clock::now() + 5s, "read /data/k",
      [](const WorkerEntry& w) { return WorkerFailed<int>(Status(Code::kUnavailable, "worker " + w.address + " unreachable")); },
      []() -> Result<int> { ADD_FAILURE() << "store read with fallback off"; return 0; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kUnavailable);
  EXPECT_NE(r.error().message().find("read /data/k: worker 127.0.0.1:"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("client.ufs_fallback is off"), std::string::npos) << r.error().message();
  // Known down now: the message says so.
  auto again = f.router.Route<int>("k", Clock::now() + 5s, "read /data/k",
                                   [](const WorkerEntry&) -> WorkerAttempt<int> { return {1}; },
                                   []() -> Result<int> { return 0; });
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message().find("is down (worker 127.0.0.1:"), std::string::npos) << again.error().message();
}

TEST(Router, PassedDeadlineIsATimeoutNotAFallback) {
  Fixture f;
  auto r = f.router.Route<int>(
      "k", Clock::now() - 1ms, "stat /k", [](const WorkerEntry&) -> WorkerAttempt<int> { return {1}; },
      []() -> Result<int> { ADD_FAILURE() << "store read after the deadline"; return 0; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kTimeout);
  EXPECT_NE(r.error().message().find("client.timeout (5s)"), std::string::npos) << r.error().message();
}

TEST(Router, StoreFailureAfterAWorkerFailureNamesBoth) {
  Fixture f;
  auto r = f.router.Route<int>(
      "k", Clock::now() + 5s, "read /data/k",
      [](const WorkerEntry& w) { return WorkerFailed<int>(Status(Code::kUnavailable, "worker " + w.address + " unreachable")); },
      []() -> Result<int> { return Err(Code::kTimeout, "GET s3://b/k at http://127.0.0.1:9 timed out"); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kTimeout);
  const auto& m = r.error().message();
  EXPECT_NE(m.find("unreachable, and reading the under-store directly failed: GET s3://b/k"), std::string::npos) << m;
  EXPECT_NE(m.find("may be stalled"), std::string::npos) << m;
}

TEST(Router, NoWorkersMeansTheStore) {
  Fixture f(/*fallback=*/false, /*workers=*/0);
  auto r = f.router.Route<int>("k", Clock::now() + 5s, "stat /k",
                               [](const WorkerEntry&) -> WorkerAttempt<int> { return {1}; },
                               []() -> Result<int> { return 2; });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 2);
}

TEST(Router, ReplicasAreTheNextDistinctWorkersInRingOrderAndFailOverInTurn) {
  Fixture f;
  const std::string key = HashRing::DataKey("/data/x", "v1", 3);
  auto c = f.router.For(key, 2);
  ASSERT_EQ(c.live.size(), 2u);
  auto owners = c.ring->ring.Owners(key, 2);
  EXPECT_EQ(c.live[0], &c.ring->workers[owners[0]]);  // owner first when nothing else differs
  EXPECT_EQ(c.live[1], &c.ring->workers[owners[1]]);
  auto [ring, holders] = f.router.Holders(key, 3);
  ASSERT_EQ(holders.size(), 3u);
  EXPECT_EQ(holders[1], c.live[1]);
  // The owner fails: the replica answers, the store is not read.
  std::vector<std::string> tried;
  auto r = f.router.Route<int>(
      Router::RouteKey(key, 2, 100), Clock::now() + 5s, "read /data/x",
      [&](const WorkerEntry& w) -> WorkerAttempt<int> {
        tried.push_back(w.id);
        if (tried.size() == 1) return WorkerFailed<int>(Status(Code::kUnavailable, "worker " + w.id + " unreachable"));
        return {5};
      },
      []() -> Result<int> {
        ADD_FAILURE() << "store read while a replica was live";
        return 0;
      });
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, 5);
  ASSERT_EQ(tried.size(), 2u);
  EXPECT_EQ(tried[0], c.live[0]->id);
  EXPECT_EQ(tried[1], c.live[1]->id);
  // The owner is down now: the replica is the only live candidate.
  auto d = f.router.For(key, 2);
  ASSERT_EQ(d.live.size(), 1u);
  EXPECT_EQ(d.live[0], c.live[1]);
  EXPECT_EQ(d.down.size(), 1u);
}

TEST(Router, TheBestReplicaIsOnThisHostThenTheLeastBusy) {
  FakeProbe probe;
  WorkerHealth health(probe.fn(), {10ms, 80ms});
  auto membership = std::make_shared<StaticMembership>(Workers(3));
  const std::string key = HashRing::DataKey("/data/y", "v1", 1);
  auto owners = membership->Current()->ring.Owners(key, 3);
  const std::string local_id = membership->Current()->workers[owners[2]].id;  // the last in ring order
  Router local(membership, &health,
               {true, 5s, 0, nullptr, [&](const WorkerEntry& w) { return w.id == local_id; }});
  auto c = local.For(key, 3);
  ASSERT_EQ(c.live.size(), 3u);
  EXPECT_EQ(c.live[0]->id, local_id);

  // Without locality: the one with fewer calls in flight goes first.
  Router plain(membership, &health, {true, 5s, 0});
  const WorkerEntry* owner = plain.For(key, 2).live[0];
  std::string second_pick;
  auto r = plain.Route<int>(
      Router::RouteKey(key, 2, 0), Clock::now() + 5s, "read /data/y",
      [&](const WorkerEntry& w) -> WorkerAttempt<int> {
        EXPECT_EQ(plain.InFlight(w), 1u);
        auto inner = plain.For(key, 2);  // a concurrent call sees the owner busy
        second_pick = inner.live[0]->id;
        return {1};
      },
      []() -> Result<int> { return 0; });
  ASSERT_TRUE(r);
  EXPECT_NE(second_pick, owner->id);
  EXPECT_EQ(plain.InFlight(*owner), 0u);
}

TEST(Router, FallbackIsRateLimitedAndARejectionNamesTheLimit) {
  FakeProbe probe;
  WorkerHealth health(probe.fn(), {10ms, 80ms});
  FallbackLimiter limiter(1000, 0);  // 1000 bytes/s, one second of burst
  Router router(std::make_shared<StaticMembership>(Workers(1)), &health, {true, 5s, 0, &limiter});
  auto failing = [](const WorkerEntry& w) { return WorkerFailed<int>(Status(Code::kUnavailable, w.id + " gone")); };
  int store_calls = 0;
  auto store = [&]() -> Result<int> { return ++store_calls; };
  // The burst passes at once (and leaves the bucket in debt: 1500 bytes).
  ASSERT_TRUE(router.Route<int>(Router::RouteKey("k", 1, 1500), Clock::now() + 5s, "read /k", failing, store));
  EXPECT_EQ(limiter.throttled_waits(), 0u);
  // 100 more bytes wait for the refill (about 0.6 s), within the deadline.
  ASSERT_TRUE(router.Route<int>(Router::RouteKey("k", 1, 100), Clock::now() + 5s, "read /k", failing, store));
  EXPECT_EQ(limiter.throttled_waits(), 1u);
  // 10 KB cannot start before a 100 ms deadline: refused at once, no store read.
  auto r = router.Route<int>(Router::RouteKey("k", 1, 10'000), Clock::now() + 100ms, "read /k", failing, store);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kUnavailable);
  EXPECT_NE(r.error().message().find("under-store fallback rate-limited (client.fallback_rate"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(store_calls, 2);
  EXPECT_EQ(limiter.rejected(), 1u);
}

TEST(FallbackLimiter, RequestsPerSecondAndZeroMeansUnlimited) {
  FallbackLimiter unlimited(0, 0);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(unlimited.Acquire(1ull << 30, Clock::now(), "x").ok());
  EXPECT_EQ(unlimited.throttled_waits(), 0u);
  FallbackLimiter two(0, 2);  // 2 requests/s
  EXPECT_TRUE(two.Acquire(0, Clock::now() + 1s, "stat /a").ok());
  EXPECT_TRUE(two.Acquire(0, Clock::now() + 1s, "stat /a").ok());
  Status third = two.Acquire(0, Clock::now() + 10ms, "stat /a");
  EXPECT_FALSE(third.ok());
  EXPECT_NE(third.message().find("client.fallback_requests 2/s"), std::string::npos) << third.message();
}

// A membership whose snapshot the test replaces.
class SwappableMembership final : public Membership {
 public:
  explicit SwappableMembership(std::shared_ptr<const RingSnapshot> s) : s_(std::move(s)) {}
  std::shared_ptr<const RingSnapshot> Current() const override { return std::atomic_load(&s_); }
  void Set(std::shared_ptr<const RingSnapshot> s) { std::atomic_store(&s_, std::move(s)); }

 private:
  std::shared_ptr<const RingSnapshot> s_;
};

TEST(RingHistory, PreviousHoldersAreTheOldOwnerThenTheNextOnTheRing) {
  auto two = Workers(2);
  auto three = Workers(3);
  auto m = std::make_shared<SwappableMembership>(std::make_shared<const RingSnapshot>(1, two));
  RingHistory h(m);
  // A key the new worker w2 takes on the 3-member ring.
  auto three_snap = std::make_shared<const RingSnapshot>(2, three);
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    std::string k = "k" + std::to_string(i);
    if (three_snap->ring.Owner(k) == 2) key = k;
  }
  const std::string old_owner = two[RingSnapshot(1, two).ring.Owner(key)].id;
  m->Set(three_snap);
  EXPECT_EQ(h.Observe()->version, 2u);
  EXPECT_EQ(h.kept(), 2u);
  auto holders = h.PreviousHolders(key, "w2", 1, 2);
  ASSERT_FALSE(holders.empty());
  EXPECT_EQ(holders[0].id, old_owner);
  EXPECT_EQ(holders.size(), 1u);  // the old owner is also the next on the new ring: asked once
  // The old owner itself sees no one else for a key it still owns.
  EXPECT_TRUE(h.PreviousHolders(key, old_owner, 1, 2).size() <= 1u);
  // A joining worker with no history of its own still finds the old owner: the next on the ring.
  RingHistory fresh(m);
  auto next = fresh.PreviousHolders(key, "w2", 1, 2);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].id, old_owner);
}

TEST(WorkerHealth, DownUntilTheProbeSeesItAndTransitionsReportOnce) {
  FakeProbe probe;
  WorkerHealth h(probe.fn(), {10ms, 40ms});
  WorkerEntry w{"w0", "127.0.0.1:7000"};
  EXPECT_FALSE(h.IsDown(w));
  EXPECT_TRUE(h.MarkDown(w, Status(Code::kUnavailable, "hung")));
  EXPECT_FALSE(h.MarkDown(w, Status(Code::kUnavailable, "hung again")));  // already down: no second report
  EXPECT_TRUE(h.IsDown(w));
  EXPECT_EQ(h.DownReason(w)->message(), "hung");
  // Failing probes keep it down (backing off), a passing one brings it back.
  ASSERT_TRUE(WaitUntil([&] { return probe.calls >= 3; }));
  EXPECT_TRUE(h.IsDown(w));
  probe.healthy = true;
  ASSERT_TRUE(WaitUntil([&] { return !h.IsDown(w); }));
  EXPECT_FALSE(h.DownReason(w));
  // The same id at another address is another worker.
  EXPECT_TRUE(h.MarkDown(w, Status(Code::kUnavailable, "again")));
  EXPECT_FALSE(h.IsDown(WorkerEntry{"w0", "127.0.0.1:7999"}));
}

TEST(WorkerHealth, NoProbeThreadUntilAWorkerFails) {
  std::atomic<int> calls{0};
  {
    WorkerHealth h([&](const WorkerEntry&) {
      ++calls;
      return Status();
    }, {10ms, 40ms});
    EXPECT_FALSE(h.IsDown(WorkerEntry{"a", "b:1"}));
  }  // destroyed with no thread to join
  EXPECT_EQ(calls.load(), 0);
}

TEST(Router, ASpreadKeyAlternatesBetweenItsOwnerAndTheNextWorker) {
  Fixture f;
  const std::string key = "m\n/data/hot";
  auto holders = f.router.Holders(key, 2).second;
  ASSERT_EQ(holders.size(), 2u);
  // Not spread: the owner first every time (no calls in flight, ring order).
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.router.For(key, 2).live.front(), holders[0]);
  // Spread: each of the two first in turn, and the other second.
  int first[2] = {0, 0};
  for (int i = 0; i < 10; ++i) {
    auto c = f.router.For(key, 2, true);
    ASSERT_EQ(c.live.size(), 2u);
    EXPECT_NE(c.live[0], c.live[1]);
    first[c.live[0] == holders[0] ? 0 : 1]++;
  }
  EXPECT_EQ(first[0], 5);
  EXPECT_EQ(first[1], 5);
  // Route() takes them in that order too.
  std::vector<std::string> asked;
  for (int i = 0; i < 4; ++i) {
    auto r = f.router.Route<int>(
        Router::RouteKey(key, 2, 0, true), Clock::now() + 5s, "read /data/hot",
        [&](const WorkerEntry& w) -> WorkerAttempt<int> {
          asked.push_back(w.id);
          return {1};
        },
        [] { return Result<int>(0); });
    ASSERT_TRUE(r);
  }
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_NE(asked[0], asked[1]);
  EXPECT_EQ(asked[0], asked[2]);
  EXPECT_EQ(asked[1], asked[3]);
}

}  // namespace
}  // namespace shoal
