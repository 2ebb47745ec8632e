// Membership from etcd: workers register themselves under a lease, clients
// (and workers) watch the member set.
//
// Layout: PREFIX/members/ID (cluster.etcd.prefix) holds one worker as JSON,
// {"id": ID, "address": "HOST:PORT", "weight": CACHE_BYTES}, put under the
// worker's lease. A worker that stops cleanly deletes its key; one that dies
// drops out when its lease expires (cluster.etcd.lease_ttl).
//
// EtcdMembership reads the prefix once (an error naming the endpoints when
// etcd cannot be reached), then watches it from the next revision and swaps
// in a new immutable RingSnapshot, versioned by the etcd revision, whenever
// the member set changes. Current() is one atomic shared_ptr load. A client
// therefore learns of a join or a loss within the lease TTL plus one watch
// round trip. When etcd goes away the last ring stays in use (logged, and
// counted in shoal_membership_watch_errors_total) and the watch is retried
// with backoff; after a reconnect the prefix is read again, so nothing missed
// while away is lost.
//
// EtcdRegistration is the worker's side: grant a lease, put its key, renew at
// a third of the TTL (re-registering under a new lease if the old one expired,
// say while etcd was down), delete the key and revoke the lease on Stop().
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/etcd_client.h"
#include "cluster/membership.h"
#include "common/config.h"

namespace shoal {

// The etcd key of worker `id` (PREFIX/members/ID).
std::string EtcdMemberKey(const EtcdConfig& config, std::string_view id);
std::string EtcdMembersPrefix(const EtcdConfig& config);

// One member record: the worker and its weight (0: none given).
struct EtcdMember {
  WorkerEntry entry;
  uint64_t weight = 0;
};
// The value a worker puts under PREFIX/members/`id` ({"id", "address",
// "weight"}), written by EtcdMemberValue; read as untrusted (anyone who may
// write the prefix wrote it): kInvalidArgument saying why when it describes no
// worker or another id than its key's.
Result<EtcdMember> ParseEtcdMember(std::string_view id, std::string_view value);
std::string EtcdMemberValue(const WorkerEntry& w, uint64_t weight);

class EtcdMembership final : public Membership {
 public:
  struct Options {
    // A watch is re-opened this often even when nothing happens, so a silent
    // dead connection is noticed.
    std::chrono::milliseconds watch_round{30'000};
    std::chrono::milliseconds max_backoff{5'000};
  };

  // Reads the member set; fails (kUnavailable, naming the endpoints) when etcd
  // cannot be reached.
  static Result<std::shared_ptr<EtcdMembership>> Start(const EtcdConfig& config, Options options);
  static Result<std::shared_ptr<EtcdMembership>> Start(const EtcdConfig& config) { return Start(config, Options{}); }
  ~EtcdMembership() override;

  std::shared_ptr<const RingSnapshot> Current() const override { return snapshot_.load(); }
  std::string_view Kind() const override { return "etcd"; }

  // False while the watch is broken (the ring is the last one seen).
  bool connected() const { return connected_.load(); }
  uint64_t watch_errors() const { return watch_errors_.load(); }

 private:
  EtcdMembership(const EtcdConfig& config, Options options);
  Status Resync();  // reads the whole prefix and publishes it
  void Run();
  void Apply(const std::vector<EtcdClient::Event>& events, int64_t revision);
  void Publish(int64_t revision);

  EtcdConfig config_;
  Options options_;
  EtcdClient etcd_;
  std::string prefix_;  // PREFIX/members/

  std::map<std::string, EtcdMember> members_;  // by etcd key; only the watch thread touches it after Start
  int64_t revision_ = 0;

  std::atomic<std::shared_ptr<const RingSnapshot>> snapshot_;
  std::atomic<bool> connected_{true};
  std::atomic<uint64_t> watch_errors_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

class EtcdRegistration {
 public:
  // Registers `self` with `weight` (its cache capacity); fails naming the
  // endpoints when etcd cannot be reached.
  static Result<std::unique_ptr<EtcdRegistration>> Start(const EtcdConfig& config, WorkerEntry self, uint64_t weight);
  ~EtcdRegistration();  // Stop()

  // Deletes the key and revokes the lease (each bounded by cluster.etcd.timeout).
  void Stop();
  int64_t lease() const { return lease_.load(); }

 private:
  EtcdRegistration(const EtcdConfig& config, WorkerEntry self, uint64_t weight);
  Status Register();  // a new lease, and the key under it
  void Run();

  EtcdConfig config_;
  WorkerEntry self_;
  uint64_t weight_;
  EtcdClient etcd_;
  std::string key_;
  std::string value_;
  std::atomic<int64_t> lease_{0};
  bool stopped_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

// The membership `config` asks for: etcd when cluster.etcd.endpoints is set,
// else the static cluster.workers.
Result<std::shared_ptr<const Membership>> OpenMembership(const Config& config);

}  // namespace shoal
