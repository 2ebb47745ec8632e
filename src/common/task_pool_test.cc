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
