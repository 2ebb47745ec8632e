// A worker's stable identity: the key of its place on the hash ring.
//
// It lives in the worker's first cache dir (file `worker.id`), so it follows
// the cached data: a worker restarted on another port, or a whole cluster
// restarted, still owns the pages it holds. A new, empty cache dir is a new
// worker.
#pragma once

#include <string>

#include "shoal/status.h"

namespace shoal {

// Reads DIR/worker.id, or creates it with a new random id ("w-" and 16 hex digits).
Result<std::string> LoadOrCreateWorkerId(const std::string& cache_dir);

}  // namespace shoal
