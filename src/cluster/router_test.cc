#include "cluster/router.h"

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

}  // namespace
}  // namespace shoal
