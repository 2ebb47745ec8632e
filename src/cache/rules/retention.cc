#include "cache/rules/retention.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "cache/policy/registry.h"

namespace shoal {

bool Retention::Class::operator<(const Class& o) const {
  return std::tie(pin, priority, ttl, admit, quota_paths) < std::tie(o.pin, o.priority, o.ttl, o.admit, o.quota_paths);
}

Result<std::unique_ptr<Retention>> Retention::Make(std::string_view policy, size_t dirs) {
  auto probe = MakeEvictionPolicy(policy);
  if (!probe) return Err(probe.error());  // names worker.eviction and the choices
  std::unique_ptr<Retention> r(new Retention());
  r->policy_name_ = std::string((*probe)->name());
  r->dirs_ = dirs;
  r->Intern(Class{});  // class 0: no rule applies
  return r;
}

void Retention::SetRules(PathRules rules, double cluster_share) {
  rules_ = std::move(rules);
  share_ = std::clamp(cluster_share, 0.0, 1.0);
  for (auto& [path, q] : quotas_) q.limit = UINT64_MAX;
  any_ttl_ = false;
  for (const auto& r : rules_.rules()) {
    if (r.ttl && r.ttl->count() > 0) any_ttl_ = true;
    if (!r.quota && !r.cluster_quota) continue;
    uint64_t limit = UINT64_MAX;
    if (r.quota) limit = *r.quota;
    if (r.cluster_quota) {
      // This worker's share of the cluster-wide limit: an approximation that
      // holds while the prefix's pages spread over the ring by weight.
      auto mine = static_cast<uint64_t>(std::floor(static_cast<double>(*r.cluster_quota) * share_));
      limit = std::min(limit, mine);
    }
    quotas_[r.path].limit = limit;
  }
}

Retention::ClassId Retention::Intern(Class key) {
  if (auto it = class_index_.find(key); it != class_index_.end()) return it->second;
  if (classes_.size() >= UINT16_MAX) return 0;  // cannot happen with a sane rule table; no rules then
  ClassState s;
  s.key = key;
  for (size_t d = 0; d < dirs_; ++d) s.policy.push_back(std::move(*MakeEvictionPolicy(policy_name_)));
  s.bytes.assign(dirs_, 0);
  auto id = static_cast<ClassId>(classes_.size());
  classes_.push_back(std::move(s));
  class_index_.emplace(std::move(key), id);
  return id;
}

Retention::ClassId Retention::ClassFor(std::string_view path) {
  if (rules_.empty()) return 0;
  EffectiveRule e = rules_.For(path);
  Class k;
  k.pin = e.pin;
  k.priority = e.priority;
  k.ttl = e.ttl;
  k.admit = e.admit;
  for (size_t i : e.quotas) k.quota_paths.push_back(rules_.rules()[i].path);
  return Intern(std::move(k));
}

void Retention::Account(ClassId c, int64_t delta, size_t dir) {
  auto& s = classes_[c];
  s.bytes[dir] = static_cast<uint64_t>(static_cast<int64_t>(s.bytes[dir]) + delta);
  Reserve(c, delta);
}

void Retention::Reserve(ClassId c, int64_t delta) {
  for (const auto& q : classes_[c].key.quota_paths) {
    auto& u = quotas_[q].used;
    u = static_cast<uint64_t>(static_cast<int64_t>(u) + delta);
  }
}

uint64_t Retention::QuotaUsed(const std::string& quota_path) const {
  auto it = quotas_.find(quota_path);
  return it == quotas_.end() ? 0 : it->second.used;
}

void Retention::Insert(size_t dir, ClassId c, const PageId& id, uint64_t bytes, Time now) {
  classes_[c].policy[dir]->Insert(id, bytes, now);
  Account(c, static_cast<int64_t>(bytes), dir);
}

void Retention::Restore(size_t dir, ClassId c, const EvictionPolicy::Entry& e, Time now) {
  classes_[c].policy[dir]->Restore(e, now);
  Account(c, static_cast<int64_t>(e.bytes), dir);
}

void Retention::Touch(size_t dir, ClassId c, const PageId& id, Time now) { classes_[c].policy[dir]->Touch(id, now); }

void Retention::Erase(size_t dir, ClassId c, const PageId& id, uint64_t bytes) {
  auto& p = *classes_[c].policy[dir];
  size_t before = p.size();
  p.Erase(id);
  if (p.size() < before) Account(c, -static_cast<int64_t>(bytes), dir);
}

void Retention::Move(size_t dir, ClassId from, ClassId to, const PageId& id, uint64_t bytes, Time now) {
  if (from == to) return;
  Erase(dir, from, id, bytes);
  Insert(dir, to, id, bytes, now);
}

std::optional<std::pair<Retention::ClassId, PageId>> Retention::VictimAmong(size_t dir, const std::string* quota_path) {
  std::optional<ClassId> best;
  for (size_t i = 0; i < classes_.size(); ++i) {
    const auto& s = classes_[i];
    if (s.key.pin || s.policy[dir]->size() == 0) continue;
    if (quota_path &&
        std::find(s.key.quota_paths.begin(), s.key.quota_paths.end(), *quota_path) == s.key.quota_paths.end()) {
      continue;
    }
    if (!best) {
      best = static_cast<ClassId>(i);
      continue;
    }
    const auto& b = classes_[*best];
    if (s.key.priority < b.key.priority || (s.key.priority == b.key.priority && s.bytes[dir] > b.bytes[dir])) {
      best = static_cast<ClassId>(i);
    }
  }
  if (!best) return std::nullopt;
  auto v = classes_[*best].policy[dir]->Victim();
  if (!v) return std::nullopt;
  return std::pair{*best, *v};
}

std::optional<std::pair<Retention::ClassId, PageId>> Retention::Victim(size_t dir) { return VictimAmong(dir, nullptr); }

std::optional<std::string> Retention::OverQuota(ClassId c, uint64_t bytes) const {
  for (const auto& q : classes_[c].key.quota_paths) {
    auto it = quotas_.find(q);
    if (it != quotas_.end() && it->second.used + bytes > it->second.limit) return q;
  }
  return std::nullopt;
}

std::optional<Retention::Located> Retention::QuotaVictim(const std::string& quota_path) {
  // The dir with the lowest-priority candidate, then the most bytes in it.
  std::optional<Located> best;
  Priority best_priority = Priority::kHigh;
  uint64_t best_bytes = 0;
  for (size_t d = 0; d < dirs_; ++d) {
    auto v = VictimAmong(d, &quota_path);
    if (!v) continue;
    const auto& s = classes_[v->first];
    if (!best || s.key.priority < best_priority || (s.key.priority == best_priority && s.bytes[d] > best_bytes)) {
      best = Located{d, v->first, v->second};
      best_priority = s.key.priority;
      best_bytes = s.bytes[d];
    }
  }
  return best;
}

bool Retention::Expired(ClassId c, Time cached_at, Time now) const {
  auto ttl = classes_[c].key.ttl;
  return ttl.count() > 0 && now - cached_at >= ttl;
}

std::vector<EvictionPolicy::Entry> Retention::Save(size_t dir) const {
  std::vector<EvictionPolicy::Entry> out;
  for (const auto& s : classes_) {
    auto e = s.policy[dir]->Save();
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

uint64_t Retention::pinned_bytes() const {
  uint64_t n = 0;
  for (const auto& s : classes_) {
    if (!s.key.pin) continue;
    for (auto b : s.bytes) n += b;
  }
  return n;
}

std::vector<Retention::QuotaUse> Retention::quotas() const {
  std::vector<QuotaUse> out;
  for (const auto& [path, q] : quotas_) {
    if (q.limit == UINT64_MAX) continue;  // no longer a quota rule
    out.push_back({path, q.used, q.limit});
  }
  return out;
}

}  // namespace shoal
