// EtcdClient: the few etcd v3 calls membership needs, over etcd's JSON
// gateway (POST /v3/..., keys and values base64) on libcurl: lease grant,
// keepalive and revoke, put, delete, range over a prefix, and watch. Over
// https:// endpoints it verifies etcd's certificate (and name) against Tls's
// CA and presents the client certificate etcd's --client-cert-auth asks for.
//
// Every call has a deadline (`timeout`, cluster.etcd.timeout). A call tries
// the endpoints in order and fails with kUnavailable naming every endpoint it
// tried and what each said, so "etcd is down" reads as such. Bodies from etcd
// are bounded (kMaxBody) and parsed defensively.
//
// Thread safety: every method is safe from any thread (each call uses its own
// curl handle).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct EtcdConfig;

class EtcdClient {
 public:
  static constexpr size_t kMaxBody = 64ull << 20;

  // TLS to https:// endpoints: etcd's CA ("" = the system's) and the client
  // certificate and key it asks for ("" = none).
  struct Tls {
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
  };
  EtcdClient(std::vector<std::string> endpoints, std::chrono::milliseconds timeout, Tls tls = {});
  // cluster.etcd's endpoints, timeout and TLS files.
  explicit EtcdClient(const EtcdConfig& config);

  struct KeyValue {
    std::string key;
    std::string value;
    int64_t mod_revision = 0;
  };
  struct RangeResult {
    int64_t revision = 0;  // the store's revision when read
    std::vector<KeyValue> kvs;
  };
  struct Event {
    bool deleted = false;  // else a put
    KeyValue kv;
  };

  // A lease of `ttl` (whole seconds, at least 1): its id.
  Result<int64_t> GrantLease(std::chrono::seconds ttl);
  // Refreshes the lease: its remaining TTL in seconds, 0 when it no longer exists.
  Result<int64_t> KeepAlive(int64_t lease);
  Status RevokeLease(int64_t lease);
  // lease 0: no lease.
  Status Put(std::string_view key, std::string_view value, int64_t lease);
  Status Delete(std::string_view key);
  Result<RangeResult> RangePrefix(std::string_view prefix);

  // Watches every key under `prefix` from `start_revision` until `stop` is set,
  // `max_duration` passes, or the stream breaks. `on_events(events, revision)`
  // gets each batch with the revision it brings the caller to. Returns OK on a
  // stop or at max_duration (the caller watches again from revision + 1), an
  // error when the stream failed; kOutOfRange when start_revision was
  // compacted away (the caller reads the whole prefix again).
  Status Watch(std::string_view prefix, int64_t start_revision, std::chrono::milliseconds max_duration,
               const std::atomic<bool>& stop,
               const std::function<void(const std::vector<Event>&, int64_t revision)>& on_events);

  const std::vector<std::string>& endpoints() const { return endpoints_; }

  // etcd's JSON gateway answers, read as untrusted (exposed for tests and
  // fuzz/etcd_json.cc): a field of the wrong type reads as absent, a key or
  // value that is not base64 is kCorruption, and none of them throws.
  // kv/range: the revision and every key-value.
  static Result<RangeResult> ParseRange(std::string_view body);
  // lease/grant: the lease's id (never 0).
  static Result<int64_t> ParseLeaseGrant(std::string_view body);
  // lease/keepalive's first stream message: the TTL left, 0 when the lease is gone.
  static Result<int64_t> ParseKeepAlive(std::string_view body);
  // One line of a watch stream.
  struct WatchMessage {
    Status stop;  // why the watch must end (kOutOfRange: `start_revision` was compacted away)
    bool created = false;
    int64_t revision = 0;
    std::vector<Event> events;
  };
  static WatchMessage ParseWatchLine(std::string_view line, int64_t start_revision);
  // etcd's error text from an error body, else the body's start (one line, 200 bytes at most).
  static std::string ErrorText(std::string_view body);

  static std::string Base64Encode(std::string_view in);
  static Result<std::string> Base64Decode(std::string_view in);
  // The end of the range of every key with this prefix (etcd's range_end).
  static std::string PrefixEnd(std::string_view prefix);

 private:
  // POST `body` (JSON) to /v3/<path> on each endpoint in turn; the first 200 answer.
  Result<std::string> Call(std::string_view path, const std::string& body, std::string_view what);

  std::vector<std::string> endpoints_;
  std::chrono::milliseconds timeout_;
  Tls tls_;
};

}  // namespace shoal
