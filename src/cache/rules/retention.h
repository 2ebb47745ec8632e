// Retention: the path rules (pin, priority, ttl, quota, admission; README
// "Path rules") applied to the pages of one page store, in one place beside
// the eviction policy rather than inside each policy.
//
// Every cached page belongs to a rule class: the pages whose paths get the
// same answer from PathRules::For (pin, priority, ttl, admission and the
// quota rules that cover them). Each class has its own instance of the
// configured eviction policy in each cache dir, so the policy orders pages
// within a class and the layer decides between classes:
//   - admission: a class that does not admit is never cached (the caller
//     serves the bytes it fetched and counts a skip);
//   - pin: a pinned class is never asked for a victim; when only pinned pages
//     are left the caller refuses the new page (never an overshoot or a stall);
//   - priority: a dir's victim comes from a low class before a medium one
//     before a high one; between classes of one priority, the one holding the
//     most bytes in the dir gives the victim (the policies' orders cannot be
//     compared across instances);
//   - quota: bytes per quota rule (summed over the dirs) against its limit,
//     min(quota, cluster_quota x this worker's share of the ring); a page over
//     a quota evicts the prefix's own pages first, by the same class order;
//   - ttl: a page cached longer ago than its class's ttl is expired: the
//     caller drops it on a read (a miss) and in a bounded background sweep.
// A new rule table (SetRules) reclassifies: the caller calls Reclassify for
// every page, which moves it to the policy of its new class (its place in the
// old order is lost: it enters the new class as just inserted).
//
// Thread safety: none; the PageStore calls it under its own lock. O(classes)
// per call at most, never I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/policy/eviction_policy.h"
#include "common/path_rules.h"

namespace shoal {

class Retention {
 public:
  using Time = EvictionPolicy::Time;
  using ClassId = uint16_t;

  // One rule class: what every page in it shares.
  struct Class {
    bool pin = false;
    Priority priority = Priority::kMedium;
    std::chrono::milliseconds ttl{0};
    bool admit = true;
    std::vector<std::string> quota_paths;  // the quota rules covering it, outermost first
    bool operator<(const Class& o) const;
  };

  // Bytes one quota rule's prefix holds on this worker, and its limit here.
  struct QuotaUse {
    std::string path;
    uint64_t used = 0;
    uint64_t limit = 0;
  };

  // A policy built with `policy` (a registered name) per class and dir.
  // Fails (naming worker.eviction) when the name is unknown.
  static Result<std::unique_ptr<Retention>> Make(std::string_view policy, size_t dirs);

  // Installs a rule table. `cluster_share` (0 < share <= 1) is this worker's
  // fraction of the ring's weight: its share of each cluster_quota. Pages
  // keep their old class until Reclassify is called for them.
  void SetRules(PathRules rules, double cluster_share);
  const PathRules& rules() const { return rules_; }

  // The class of a page of namespace path `path` under the current rules.
  ClassId ClassFor(std::string_view path);
  const Class& class_of(ClassId c) const { return classes_[c].key; }
  std::string_view policy_name() const { return policy_name_; }

  // Membership, mirroring EvictionPolicy, plus the byte accounting.
  void Insert(size_t dir, ClassId c, const PageId& id, uint64_t bytes, Time now);
  void Restore(size_t dir, ClassId c, const EvictionPolicy::Entry& e, Time now);
  void Touch(size_t dir, ClassId c, const PageId& id, Time now);
  void Erase(size_t dir, ClassId c, const PageId& id, uint64_t bytes);
  // Moves a page to class `to` (as just inserted). No-op when from == to.
  void Move(size_t dir, ClassId from, ClassId to, const PageId& id, uint64_t bytes, Time now);

  // The next page to evict from `dir` (its class and id): unpinned classes,
  // low priority first. nullopt: nothing evictable (empty, or all pinned).
  std::optional<std::pair<ClassId, PageId>> Victim(size_t dir);
  // The first quota of class `c` that `bytes` more would exceed, or nullopt.
  std::optional<std::string> OverQuota(ClassId c, uint64_t bytes) const;
  // Counts `delta` bytes of a page of class `c` being written against its
  // quotas (so that concurrent writes cannot overshoot); undone with -delta.
  void Reserve(ClassId c, int64_t delta);
  uint64_t QuotaUsed(const std::string& quota_path) const;
  // The next page to evict for quota `path`: (dir, class, id) of an unpinned
  // page under it, low priority first. nullopt: nothing left to evict there.
  struct Located {
    size_t dir;
    ClassId cls;
    PageId id;
  };
  std::optional<Located> QuotaVictim(const std::string& quota_path);

  // Whether a page of class `c` cached at `cached_at` has expired at `now`.
  bool Expired(ClassId c, Time cached_at, Time now) const;
  // Whether any class has a ttl (the sweep has work to do).
  bool any_ttl() const { return any_ttl_; }

  // Every page of `dir` in an order that Restore replays class by class.
  std::vector<EvictionPolicy::Entry> Save(size_t dir) const;

  uint64_t pinned_bytes() const;
  std::vector<QuotaUse> quotas() const;

 private:
  struct ClassState {
    Class key;
    std::vector<std::unique_ptr<EvictionPolicy>> policy;  // per dir
    std::vector<uint64_t> bytes;                          // per dir
  };
  struct Quota {
    uint64_t used = 0;
    uint64_t limit = UINT64_MAX;  // UINT64_MAX: no rule sets it now
  };

  Retention() = default;
  ClassId Intern(Class key);
  // Unpinned classes matching `want` (all when null), low priority first, then most bytes in `dir`.
  std::optional<std::pair<ClassId, PageId>> VictimAmong(size_t dir, const std::string* quota_path);
  void Account(ClassId c, int64_t delta, size_t dir);

  std::string policy_name_;
  size_t dirs_ = 0;
  PathRules rules_;
  double share_ = 1;
  std::vector<ClassState> classes_;
  std::map<Class, ClassId> class_index_;
  std::map<std::string, Quota> quotas_;  // by rule path
  bool any_ttl_ = false;
};

}  // namespace shoal
