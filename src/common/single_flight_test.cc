#include "common/single_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shoal {
namespace {

// A run that blocks until released, counting how often it ran.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int inside = 0;
  std::atomic<int> runs{0};
  int Run(int value) {
    ++runs;
    std::unique_lock lock(mu);
    ++inside;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    return value;
  }
  void WaitInside(int n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return inside >= n; });
  }
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

// Waits (bounded) until `n` callers wait for the call in flight for `key`.
bool WaitForWaiters(const SingleFlight<int>& flight, const std::string& key, size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (flight.waiting(key) < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(SingleFlight, ConcurrentCallsOfOneKeyShareOneRun) {
  SingleFlight<int> flight;
  Gate gate;
  std::vector<int> got(6, 0);
  std::vector<std::thread> callers;
  callers.emplace_back([&] { got[0] = flight.Do("k", [&] { return gate.Run(7); }); });
  gate.WaitInside(1);  // the leader runs
  for (int i = 1; i < 6; ++i) callers.emplace_back([&, i] { got[i] = flight.Do("k", [&] { return gate.Run(i); }); });
  ASSERT_TRUE(WaitForWaiters(flight, "k", 5));
  gate.Open();
  for (auto& t : callers) t.join();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], 7) << "caller " << i;
  EXPECT_EQ(gate.runs.load(), 1);
  // The key is free again: the next call runs.
  EXPECT_EQ(flight.waiting("k"), 0u);
  EXPECT_EQ(flight.Do("k", [] { return 9; }), 9);
}

TEST(SingleFlight, OtherKeysRunApart) {
  SingleFlight<std::string> flight;
  Gate gate;
  std::string a;
  std::thread t([&] { a = flight.Do("a", [&] { return std::to_string(gate.Run(1)); }); });
  gate.WaitInside(1);
  EXPECT_EQ(flight.Do("b", [] { return std::string("b"); }), "b");  // not held behind "a"
  gate.Open();
  t.join();
  EXPECT_EQ(a, "1");
}

TEST(SingleFlight, ADetachedCallIsNotJoinedButItsWaitersGetItsResult) {
  SingleFlight<int> flight;
  Gate gate;
  int leader = 0, joined = 0;
  std::thread t([&] { leader = flight.Do("/d/x", [&] { return gate.Run(1); }); });
  gate.WaitInside(1);
  std::thread j([&] { joined = flight.Do("/d/x", [] { return -1; }); });
  ASSERT_TRUE(WaitForWaiters(flight, "/d/x", 1));
  flight.Detach([](const std::string& k) { return k.starts_with("/d/"); });
  // A call after the detach runs anew instead of joining the old one.
  EXPECT_EQ(flight.Do("/d/x", [] { return 2; }), 2);
  gate.Open();
  t.join();
  j.join();
  EXPECT_EQ(leader, 1);
  EXPECT_EQ(joined, 1);  // it joined before the detach: the old call's result
  EXPECT_EQ(gate.runs.load(), 1);
}

}  // namespace
}  // namespace shoal
