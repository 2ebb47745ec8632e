#include "worker/idle_writer.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <future>

namespace shoal {
namespace {

TEST(IdleWriter, RunsTasksAtIdlePriority) {
  IdleWriter w(1 << 20);
  std::promise<int> policy;
  std::function<void()> t = [&] { policy.set_value(sched_getscheduler(0)); };
  ASSERT_TRUE(w.Submit(1000, t));
  EXPECT_EQ(policy.get_future().get(), SCHED_IDLE);
}

TEST(IdleWriter, RunsEveryQueuedTaskBeforeItIsDestroyed) {
  std::atomic<int> ran{0};
  {
    IdleWriter w(1 << 20);
    for (int i = 0; i < 100; ++i) {
      std::function<void()> t = [&] { ran++; };
      ASSERT_TRUE(w.Submit(1000, t));
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(IdleWriter, RefusesWorkPastItsBoundAndLeavesTheTaskToTheCaller) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> started;
  std::atomic<int> ran{0};
  IdleWriter w(100);
  std::function<void()> blocker = [&, gate] {
    started.set_value();
    gate.wait();
    ran++;
  };
  ASSERT_TRUE(w.Submit(60, blocker));
  started.get_future().wait();  // running, so its 60 bytes are still pending
  EXPECT_EQ(w.pending_bytes(), 60u);
  std::function<void()> big = [&] { ran += 10; };
  EXPECT_FALSE(w.Submit(50, big));
  ASSERT_TRUE(big);  // untouched: the caller runs it some other way
  big();
  std::promise<void> small_done;
  std::function<void()> small = [&] {
    ran += 100;
    small_done.set_value();
  };
  EXPECT_TRUE(w.Submit(40, small));
  release.set_value();
  small_done.get_future().wait();  // tasks run in order: the blocker is done too
  EXPECT_EQ(ran.load(), 111);
}

}  // namespace
}  // namespace shoal
