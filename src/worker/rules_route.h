// The worker's path rules: the config's `rules:` plus the rules set at run
// time from the CLI (`shoal pin/unpin/rules set/rules rm`), and the admin
// routes that change and list them (docs/protocol.md, "Path rules").
//
// CLI rules are kept in `rules.state` in the worker's first cache dir: one
// JSON line (the rules and a version that counts changes), then the XXH3-64
// of that line in hex. It is written to a temporary file and renamed, so a
// crash leaves the old or the new file; a file that fails its checksum or
// does not parse stops the worker with an error naming it (rules are never
// silently dropped). A CLI rule for the same path as a config rule overrides
// the fields it sets; the others stay the config's.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/path_rules.h"
#include "shoal/status.h"

namespace shoal {

class PageStore;
class WorkerService;

class RuleBook {
 public:
  // Loads the CLI rules kept in `dir` (none when the file is absent).
  static Result<std::unique_ptr<RuleBook>> Open(const std::string& dir, std::vector<PathRule> config_rules);

  // The config rules with the CLI rules over them.
  PathRules Effective() const;
  uint64_t version() const;

  // Merges `fields` (field -> value; "" unsets the field of the CLI rule)
  // into the CLI rule for `path` and saves. Bad input changes nothing and
  // names the field. Returns the new effective rules.
  Result<PathRules> Set(const std::string& path, const std::map<std::string, std::string>& fields);
  // Removes the CLI rule for `path` (kNotFound when there is none).
  Result<PathRules> Remove(const std::string& path);

  // {"version", "rules": [{"path", "source": "config"|"cli"|"config+cli",
  //  "fields": [...], "bytes"}]} with the bytes `pages` holds under each.
  std::string ListJson(const PageStore& pages) const;

 private:
  RuleBook() = default;
  Status SaveLocked() const;
  Result<PathRules> MergeLocked(const std::vector<PathRule>& cli) const;

  mutable std::mutex mu_;
  std::string file_;
  std::vector<PathRule> config_;
  std::vector<PathRule> cli_;  // sorted by path
  uint64_t version_ = 0;
};

// This worker's share of each cluster_quota: its ring weight over the total.
// With a static worker list every worker weighs the same (1/N); with etcd
// (weights are cache capacities the worker does not see at start) it is also
// taken as 1/N of the configured list, or 1 alone. Documented approximation.
double ClusterShare(const Config& config);

// The routes: GET /v1/rules, POST /v1/rules?path=P&FIELD=VALUE...,
// POST /v1/rules/rm?path=P. Each change is applied to the page store before
// the answer. Returns the JSON body or the error to answer.
Result<std::string> HandleRulesRoute(WorkerService& svc, RuleBook& book, const std::string& method,
                                     const std::string& route, const std::map<std::string, std::string>& query,
                                     double cluster_share);

}  // namespace shoal
