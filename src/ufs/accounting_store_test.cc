#include "ufs/accounting_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/config.h"
#include "common/metrics.h"
#include "ufs/conformance_test.h"

namespace shoal {
namespace {

std::shared_ptr<UnderStore> FreshDir() {
  char tmpl[] = "/tmp/shoal-acct-XXXXXX";
  MountConfig m;
  m.path = "/t";
  m.ufs = std::string("file://") + ::mkdtemp(tmpl);
  return *OpenUnderStore(m);
}

// The wrapper must not change behaviour: it passes the same conformance suite.
INSTANTIATE_TEST_SUITE_P(Accounting, UnderStoreConformance,
                         ::testing::Values(StoreFactory{"accounting", [] { return WithAccounting(FreshDir(), 4); },
                                                        /*has_rename=*/true}),
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
}

}  // namespace
}  // namespace shoal
