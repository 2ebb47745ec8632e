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

// Asks every worker on `client`'s ring (in parallel, within client.timeout).
// `mounts` holds each mount's egress saved: its hit bytes over the workers at
// the mount's egress_price_per_gb; summary.egress_saved_usd is their sum.
nlohmann::json ClusterStatusDocument(Client& client);

}  // namespace shoal
