// AccountingStore: wraps an UnderStore so that every request and byte sent to
// it is counted (the egress bill can be read off /metrics) and the number of
// concurrent requests to it is capped.
//
// Metrics (label ufs="<uri>"): shoal_ufs_requests_total{op}, shoal_ufs_errors_total{op},
// shoal_ufs_read_bytes_total, shoal_ufs_written_bytes_total, shoal_ufs_inflight.
#pragma once

#include <memory>

#include "ufs/under_store.h"

namespace shoal {

class MetricsRegistry;

std::shared_ptr<UnderStore> WithAccounting(std::shared_ptr<UnderStore> inner, int max_concurrency,
                                           MetricsRegistry* metrics = nullptr);

}  // namespace shoal
