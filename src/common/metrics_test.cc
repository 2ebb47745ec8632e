#include "common/metrics.h"

#include <gtest/gtest.h>

namespace shoal {

TEST(Metrics, RendersPrometheusText) {
  MetricsRegistry r;
  r.GetCounter("shoal_test_total", "A test counter", {{"op", "get"}}).Add(3);
  r.GetGauge("shoal_test_used_bytes", "A test gauge").Set(42);
  auto& h = r.GetHistogram("shoal_test_seconds", "A test histogram");
  h.Observe(0.0002);
  h.Observe(0.003);
  auto text = r.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE shoal_test_total counter"), std::string::npos);
  EXPECT_NE(text.find("shoal_test_total{op=\"get\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("shoal_test_used_bytes 42"), std::string::npos);
  EXPECT_NE(text.find("shoal_test_seconds_bucket{le=\"0.00025\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("shoal_test_seconds_bucket{le=\"+Inf\"} 2"), std::string::npos);
  EXPECT_NE(text.find("shoal_test_seconds_count 2"), std::string::npos);
  EXPECT_EQ(&r.GetCounter("shoal_test_total", "", {{"op", "get"}}), &r.GetCounter("shoal_test_total", "", {{"op", "get"}}));
}

}  // namespace shoal
