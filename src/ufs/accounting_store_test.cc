#include "ufs/accounting_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/config.h"
#include "common/metrics.h"
#include "ufs/conformance_test.h"

namespace shoal {
namespace {

std::shared_ptr<UnderStore> FreshDir() { return FreshLocalStore("acct"); }

// The wrapper must not change behaviour: it passes the same conformance suite.
INSTANTIATE_TEST_SUITE_P(Accounting, UnderStoreConformance,
                         ::testing::Values(StoreFactory{"accounting", [] { return WithAccounting(FreshDir(), 4); },
                                                        /*has_rename=*/true, /*renames_dirs=*/true,
                                                        /*keeps_metadata=*/true, /*keeps_modes=*/true, 1, true, false,
                                                        /*keeps_owners=*/true}),
                         [](const auto& info) { return info.param.name; });

TEST(AccountingStore, CountsRequestsAndBytes) {
  MetricsRegistry m;
  auto inner = FreshDir();
  auto s = WithAccounting(inner, 2, &m);
  ASSERT_TRUE(s->Write("f", std::string(1000, 'x')).ok());
  char buf[300];
  ASSERT_EQ(*s->Read("f", 100, buf), 300u);
  ASSERT_TRUE(s->Stat("f"));
  EXPECT_FALSE(s->Stat("missing"));
  Labels base{{"ufs", inner->uri()}};
  auto op = [&](const char* o) {
    Labels l = base;
    l.emplace_back("op", o);
    return l;
  };
  EXPECT_EQ(m.GetCounter("shoal_ufs_read_bytes_total", "", base).value(), 300u);
  EXPECT_EQ(m.GetCounter("shoal_ufs_written_bytes_total", "", base).value(), 1000u);
  EXPECT_EQ(m.GetCounter("shoal_ufs_requests_total", "", op("read")).value(), 1u);
  EXPECT_EQ(m.GetCounter("shoal_ufs_requests_total", "", op("stat")).value(), 2u);
  EXPECT_EQ(m.GetCounter("shoal_ufs_errors_total", "", op("stat")).value(), 1u);
  EXPECT_EQ(m.GetCounter("shoal_ufs_requests_total", "", op("write")).value(), 1u);
  // Each request is timed under its op, and its wait for a slot under the store.
  EXPECT_EQ(m.GetHistogram("shoal_ufs_request_seconds", "", op("read")).count(), 1u);
  EXPECT_EQ(m.GetHistogram("shoal_ufs_request_seconds", "", op("stat")).count(), 2u);
  EXPECT_EQ(m.GetHistogram("shoal_ufs_request_seconds", "", op("write")).count(), 1u);
  EXPECT_EQ(m.GetHistogram("shoal_ufs_request_seconds", "", op("list")).count(), 0u);
  EXPECT_EQ(m.GetHistogram("shoal_ufs_queue_seconds", "", base).count(), 4u);
}

// A store whose reads block until released, to watch the concurrency cap.
class GateStore final : public UnderStore {
 public:
  const std::string& uri() const override { return uri_; }
  Result<FileInfo> Stat(std::string_view) override { return Err(Code::kNotFound, "x"); }
  Result<ListPage> List(std::string_view, const ListOptions&) override { return ListPage{}; }
  Result<size_t> Read(std::string_view, uint64_t, std::span<char> out, const ReadOptions&) override {
    std::unique_lock lock(mu_);
    int now = ++inside_;
    max_inside_ = std::max(max_inside_, now);
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    --inside_;
    return out.size();
  }
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view, const WriteOptions& = {}) override {
    return Err(Code::kNotSupported, "x");
  }
  Status Delete(std::string_view) override { return {}; }

  void WaitInside(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return inside_ >= n; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int inside() {
    std::lock_guard lock(mu_);
    return inside_;
  }
  int max_inside() {
    std::lock_guard lock(mu_);
    return max_inside_;
  }

 private:
  std::string uri_ = "gate://";
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0, max_inside_ = 0;
  bool open_ = false;
};

TEST(AccountingStore, CapsConcurrentRequests) {
  MetricsRegistry m;
  auto gate = std::make_shared<GateStore>();
  auto s = WithAccounting(gate, 3, &m);
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&] {
      char b[1];
      (void)s->Read("k", 0, b);
    });
  }
  gate->WaitInside(3);
  // Three are inside; the other five wait for a slot. Let them all through.
  EXPECT_EQ(m.GetGauge("shoal_ufs_inflight", "", {{"ufs", "gate://"}}).value(), 3);
  gate->Open();
  for (auto& t : readers) t.join();
  EXPECT_EQ(gate->max_inside(), 3);
  EXPECT_EQ(m.GetCounter("shoal_ufs_requests_total", "", {{"ufs", "gate://"}, {"op", "read"}}).value(), 8u);
  // Every request's wait for a slot is timed, also of those that did not wait.
  const auto& queued = m.GetHistogram("shoal_ufs_queue_seconds", "", {{"ufs", "gate://"}});
  EXPECT_EQ(queued.count(), 8u);
  EXPECT_EQ(m.GetHistogram("shoal_ufs_request_seconds", "", {{"ufs", "gate://"}, {"op", "read"}}).count(), 8u);
}

}  // namespace
}  // namespace shoal
