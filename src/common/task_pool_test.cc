#include "common/task_pool.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

namespace shoal {
namespace {

TEST(TaskPool, RunsTasksAndReturnsResults) {
  TaskPool pool(2);
  auto a = pool.Submit([] { return 40 + 2; });
  auto b = pool.Submit([] { throw std::runtime_error("boom"); });
  EXPECT_EQ(a.get(), 42);
  EXPECT_THROW(b.get(), std::runtime_error);
}

// The File's read-ahead chunks hold the future of the task that fills them,
// and the task holds the chunk: the pool must not keep the task alive through
// the future, or every such chunk leaks.
TEST(TaskPool, ATaskHoldingItsOwnFutureIsFreed) {
  struct Chunk {
    std::shared_future<void> done;
  };
  std::weak_ptr<Chunk> weak;
  {
    TaskPool pool(1);
    auto c = std::make_shared<Chunk>();
    weak = c;
    c->done = pool.Submit([c] {}).share();
    c->done.wait();
  }  // the pool has joined its threads: every task it ran is gone
  EXPECT_TRUE(weak.expired()) << "a finished task's captures outlived it";
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

TEST(TaskPool, ATaskRunsForItsSubmittersEndUser) {
  TaskPool pool(1);
  auto who = [] { return CurrentEndUser() ? CurrentEndUser()->user : std::string("(none)"); };
  {
    ActingFor alice(std::make_shared<EndUser>(EndUser{"alice", {"ml"}}));
    EXPECT_EQ(pool.Submit(who).get(), "alice");
    {
      ActingFor bob(std::make_shared<EndUser>(EndUser{"bob", {}}));
      EXPECT_EQ(pool.Submit(who).get(), "bob");
    }
    EXPECT_EQ(who(), "alice");
  }
  EXPECT_EQ(who(), "(none)");
  // The pool thread holds no user between tasks.
  EXPECT_EQ(pool.Submit(who).get(), "(none)");
}

TEST(EndUser, TheHeaderCarriesOnlyNamesItCanCarry) {
  EXPECT_EQ(OnBehalfValue({"alice", {"ml", "data-eng"}}), "alice;groups=ml,data-eng");
  EXPECT_EQ(OnBehalfValue({"alice", {}}), "alice");
  EXPECT_EQ(OnBehalfValue({"alice", {"bad;group", "ok", "x,y", "a b", "\r\n"}}), "alice;groups=ok");
  EXPECT_EQ(OnBehalfValue({"ali;ce", {"ml"}}), "");
  EXPECT_EQ(OnBehalfValue({"", {"ml"}}), "");
  EXPECT_EQ(OnBehalfValue({std::string(257, 'a'), {}}), "");
  EXPECT_EQ(OnBehalfValue({"DOMAIN\\alice", {}}), "DOMAIN\\alice");
}

}  // namespace
}  // namespace shoal
