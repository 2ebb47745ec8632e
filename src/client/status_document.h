// The cluster's status as one JSON document: the ring (membership, version,
// members and shares), a summary over the workers (the numbers an operator
// reads first: hit ratio, egress saved, cache use, write-back backlog) and
// each worker's own status. `shoal status` prints it (--json) or renders it
// as text, and every worker's status page (GET /) and its JSON route
// (GET /v1/cluster/status) serve it: one source for all three.
#pragma once

#include <nlohmann/json.hpp>

#include "shoal/client.h"

namespace shoal {

struct StatusDocumentOptions {
  // What a GB of egress from the under-stores costs (USD): the bill saved is
  // egress_saved_bytes at this price. 0.09 is S3's first internet tier.
  double egress_price_per_gb = 0.09;
};

// Asks every worker on `client`'s ring (in parallel, within client.timeout).
nlohmann::json ClusterStatusDocument(Client& client, const StatusDocumentOptions& options = {});

}  // namespace shoal
