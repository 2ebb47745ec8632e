#include "cluster/etcd_membership.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/metrics.h"
#include "common/units.h"

namespace shoal {
namespace {

using Json = nlohmann::json;

struct MembershipMetrics {
  Counter& watch_errors = MetricsRegistry::Global().GetCounter(
      "shoal_membership_watch_errors_total",
      "Times the etcd watch of the member set failed (the last ring stays in use)");
  Gauge& connected = MetricsRegistry::Global().GetGauge("shoal_membership_etcd_connected",
                                                        "1 while the etcd watch of the member set works, else 0");
  Gauge& version =
      MetricsRegistry::Global().GetGauge("shoal_membership_ring_version", "Version (etcd revision) of the ring in use");
  Gauge& members = MetricsRegistry::Global().GetGauge("shoal_membership_members", "Workers on the ring in use");
  Counter& lease_lost = MetricsRegistry::Global().GetCounter("shoal_membership_lease_renewals_failed_total",
                                                             "Failed renewals of this worker's etcd lease");
};

MembershipMetrics& Metrics() {
  static MembershipMetrics m;
  return m;
}

}  // namespace

std::string EtcdMemberValue(const WorkerEntry& w, uint64_t weight) {
  return Json{{"id", w.id}, {"address", w.address}, {"weight", weight}}.dump();
}

Result<EtcdMember> ParseEtcdMember(std::string_view id, std::string_view value) {
  auto j = Json::parse(value, nullptr, false);
  if (!j.is_object()) return Err(Code::kInvalidArgument, "its value is not a JSON object");
  auto text = [&](const char* name) {
    auto it = j.find(name);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto entry = ParseWorkerEntry(text("id") + "@" + text("address"));
  if (!entry) return Err(entry.error());
  if (entry->id != id) return Err(Code::kInvalidArgument, "its id is not the key's");
  auto weight = j.find("weight");
  return EtcdMember{std::move(*entry),
                    weight != j.end() && weight->is_number_unsigned() ? weight->get<uint64_t>() : uint64_t{0}};
}

std::string EtcdMembersPrefix(const EtcdConfig& config) {
  return (config.prefix == "/" ? std::string() : config.prefix) + "/members/";
}

std::string EtcdMemberKey(const EtcdConfig& config, std::string_view id) {
  return EtcdMembersPrefix(config) + std::string(id);
}

// --- EtcdMembership ---

EtcdMembership::EtcdMembership(const EtcdConfig& config, Options options)
    : config_(config), options_(options), etcd_(config), prefix_(EtcdMembersPrefix(config)) {
  snapshot_.store(std::make_shared<const RingSnapshot>(0, std::vector<WorkerEntry>{}));
}

Result<std::shared_ptr<EtcdMembership>> EtcdMembership::Start(const EtcdConfig& config, Options options) {
  std::shared_ptr<EtcdMembership> m(new EtcdMembership(config, options));
  if (auto st = m->Resync(); !st.ok()) return Err(st.WithContext("reading the cluster's members from etcd"));
  Metrics().connected.Set(1);
  m->thread_ = std::thread([raw = m.get()] { raw->Run(); });
  return m;
}

EtcdMembership::~EtcdMembership() {
  stop_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status EtcdMembership::Resync() {
  auto r = etcd_.RangePrefix(prefix_);
  if (!r) return r.error();
  members_.clear();
  std::vector<EtcdClient::Event> events;
  for (auto& kv : r->kvs) events.push_back({false, std::move(kv)});
  Apply(events, r->revision);
  if (snapshot_.load()->version == 0) Publish(revision_);  // the first ring, even with no workers
  return {};
}

void EtcdMembership::Apply(const std::vector<EtcdClient::Event>& events, int64_t revision) {
  bool changed = false;
  for (const auto& e : events) {
    revision_ = std::max(revision_, e.kv.mod_revision);
    if (!e.kv.key.starts_with(prefix_)) continue;
    if (e.deleted) {
      changed |= members_.erase(e.kv.key) > 0;
      continue;
    }
    auto member = ParseEtcdMember(std::string_view(e.kv.key).substr(prefix_.size()), e.kv.value);
    if (!member) {
      spdlog::warn("etcd key {} does not describe a worker ({}): ignored; delete it, or let its worker re-register",
                   e.kv.key, member.error().message());
      changed |= members_.erase(e.kv.key) > 0;
      continue;
    }
    members_[e.kv.key] = std::move(*member);
    changed = true;
  }
  revision_ = std::max(revision_, revision);
  if (changed) Publish(revision_);
}

void EtcdMembership::Publish(int64_t revision) {
  std::vector<WorkerEntry> workers;
  std::vector<uint64_t> weights;
  for (const auto& [key, m] : members_) {  // ordered by key: the same list in every process
    workers.push_back(m.entry);
    weights.push_back(m.weight);
  }
  auto current = snapshot_.load();
  if (current->version != 0 && current->workers == workers && current->weights == weights) return;
  auto next =
      std::make_shared<const RingSnapshot>(static_cast<uint64_t>(revision), std::move(workers), std::move(weights));
  if (next->workers != current->workers) {
    spdlog::info("membership: ring version {} has {} workers (was version {} with {})", next->version,
                 next->workers.size(), current->version, current->workers.size());
  }
  Metrics().version.Set(static_cast<int64_t>(next->version));
  Metrics().members.Set(static_cast<int64_t>(next->workers.size()));
  snapshot_.store(std::move(next));
}

void EtcdMembership::Run() {
  auto backoff = std::chrono::milliseconds(200);
  bool need_resync = false;
  while (!stop_) {
    Status st;
    if (need_resync) st = Resync();
    if (st.ok()) {
      need_resync = false;
      if (!connected_.exchange(true)) {
        spdlog::info("membership: the etcd watch works again (ring version {})", revision_);
        Metrics().connected.Set(1);
      }
      backoff = std::chrono::milliseconds(200);
      st = etcd_.Watch(prefix_, revision_ + 1, options_.watch_round, stop_,
                       // The events' own revisions move the version: a watch header's
                       // revision may run ahead of events still to come.
                       [this](const std::vector<EtcdClient::Event>& events, int64_t) { Apply(events, 0); });
      if (st.ok()) continue;
    }
    if (stop_) break;
    // Compacted away, or a broken stream: read the whole prefix again once etcd answers.
    need_resync = true;
    watch_errors_++;
    Metrics().watch_errors.Add();
    if (connected_.exchange(false)) {
      Metrics().connected.Set(0);
      spdlog::warn("membership: {}; keeping ring version {} ({} workers) and retrying", st.message(),
                   snapshot_.load()->version, snapshot_.load()->workers.size());
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, backoff, [this] { return stop_.load(); });
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

// --- EtcdRegistration ---

EtcdRegistration::EtcdRegistration(const EtcdConfig& config, WorkerEntry self, uint64_t weight)
    : config_(config),
      self_(std::move(self)),
      weight_(weight),
      etcd_(config),
      key_(EtcdMemberKey(config, self_.id)),
      value_(EtcdMemberValue(self_, weight)) {}

Result<std::unique_ptr<EtcdRegistration>> EtcdRegistration::Start(const EtcdConfig& config, WorkerEntry self,
                                                                  uint64_t weight) {
  std::unique_ptr<EtcdRegistration> r(new EtcdRegistration(config, std::move(self), weight));
  if (auto st = r->Register(); !st.ok()) return Err(st.WithContext("registering worker " + r->self_.id + " in etcd"));
  r->thread_ = std::thread([raw = r.get()] { raw->Run(); });
  return r;
}

EtcdRegistration::~EtcdRegistration() { Stop(); }

Status EtcdRegistration::Register() {
  auto ttl = std::chrono::duration_cast<std::chrono::seconds>(config_.lease_ttl);
  auto lease = etcd_.GrantLease(ttl);
  if (!lease) return lease.error();
  if (auto st = etcd_.Put(key_, value_, *lease); !st.ok()) {
    (void)etcd_.RevokeLease(*lease);
    return st;
  }
  lease_ = *lease;
  spdlog::info("worker {} registered in etcd as {} (lease {:x}, ttl {})", self_.id, key_, *lease,
               FormatDuration(config_.lease_ttl));
  return {};
}

void EtcdRegistration::Run() {
  const auto period = std::max<std::chrono::milliseconds>(config_.lease_ttl / 3, std::chrono::milliseconds(100));
  auto wait = period;
  std::unique_lock lock(mu_);
  while (!stopped_) {
    cv_.wait_for(lock, wait, [this] { return stopped_; });
    if (stopped_) break;
    lock.unlock();
    Status st;
    auto ttl = etcd_.KeepAlive(lease_);
    if (!ttl) {
      st = ttl.error();
    } else if (*ttl == 0) {
      spdlog::warn(
          "worker {}: etcd lease {:x} expired (etcd or this worker was away longer than "
          "cluster.etcd.lease_ttl); registering again",
          self_.id, lease_.load());
      st = Register();
    }
    if (!st.ok()) {
      Metrics().lease_lost.Add();
      spdlog::warn("worker {}: {}; retrying", self_.id, st.message());
    }
    // After a failure, try again sooner: the lease is running out.
    wait = st.ok() ? period : std::max<std::chrono::milliseconds>(period / 3, std::chrono::milliseconds(100));
    lock.lock();
  }
}

void EtcdRegistration::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (auto st = etcd_.Delete(key_); !st.ok()) {
    spdlog::warn("worker {}: {} (its lease expires within {})", self_.id, st.message(),
                 FormatDuration(config_.lease_ttl));
  }
  if (lease_ != 0) (void)etcd_.RevokeLease(lease_);
}

// --- OpenMembership ---

Result<std::shared_ptr<const Membership>> OpenMembership(const Config& config) {
  if (config.cluster.etcd.endpoints.empty()) {
    return std::shared_ptr<const Membership>(std::make_shared<StaticMembership>(config.cluster.workers));
  }
  auto m = EtcdMembership::Start(config.cluster.etcd);
  if (!m) return Err(m.error());
  return std::shared_ptr<const Membership>(std::move(*m));
}

}  // namespace shoal
