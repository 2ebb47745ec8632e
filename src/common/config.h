// The Shoal configuration file (YAML): cluster membership, the mount table, and
// worker and client settings. Every key has a default, so an empty file is a
// valid single-node config without mounts. Errors name the key and the line.
//
// See README.md "Configuration reference" for every key.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

enum class Consistency {
  kImmutable,  // never revalidate metadata: frozen datasets
  kTtl,        // revalidate metadata older than `ttl` (the default, 60 s)
  kAlways,     // revalidate on every open/stat
};
std::string_view ConsistencyName(Consistency c);

// How a write to a mount is acknowledged (README "Write modes").
enum class WriteMode {
  kThrough,       // acknowledged once the under-store committed the object; pages are not cached
  kCacheThrough,  // as kThrough, and the written pages are cached under the new version (the default)
  kWriteBack,  // acknowledged once fsync'd in the journals of write_back_replicas workers; uploaded in the background
};
std::string_view WriteModeName(WriteMode m);
// "through" | "cache-through" | "write-back" (what WriteModeName gives); an error lists them.
Result<WriteMode> ParseWriteMode(std::string_view text);

// How long a cached page of a path is kept against its peers (rules, below).
enum class Priority { kLow, kMedium, kHigh };
std::string_view PriorityName(Priority p);

// One rule of the `rules:` table: settings for every path under a namespace
// prefix (the prefix itself, and below it at a '/' boundary). A field left
// unset inherits from the next shorter prefix with a rule, then the default.
// Matched in one place, common/path_rules.h; enforced by the cache (pin,
// priority, ttl, quota, admission) and the client (write_mode, replicas).
struct PathRule {
  std::string path;                              // "/data/val" (normalised like a mount path)
  std::optional<bool> pin;                       // never evicted
  std::optional<Priority> priority;              // evicted after lower priorities
  std::optional<std::chrono::milliseconds> ttl;  // cached pages expire this long after caching
  std::optional<uint64_t> quota;                 // bytes cached under the prefix, per worker
  std::optional<uint64_t> cluster_quota;         // bytes cached under the prefix, whole cluster
  std::optional<bool> admit;                     // false ("admission: skip"): never cached
  std::optional<WriteMode> write_mode;           // overrides the mount's
  std::optional<int> replicas;                   // copies of each shard / write-back holders
  bool operator==(const PathRule&) const = default;
};
// A rule for `path` with no field set.
inline PathRule EmptyRule(std::string path) {
  PathRule r;
  r.path = std::move(path);
  return r;
}
// Sets one field of `rule` from text as written in YAML or on the command line
// ("pin" "true", "ttl" "1h", "quota" "10GiB", "admission" "skip", ...). An
// error names the field and what it accepts. Empty `value` unsets the field.
Status SetRuleField(PathRule* rule, std::string_view field, std::string_view value);
// The fields SetRuleField knows, in the order ToYaml writes them.
const std::vector<std::string>& RuleFieldNames();
// The set fields as "field=value" texts that SetRuleField reads back.
std::vector<std::string> FormatRuleFields(const PathRule& rule);

struct MountConfig {
  std::string path;  // namespace path: "/data" (normalised: leading '/', no trailing '/')
  std::string ufs;   // under-store URI: "file:///srv/datasets/", "s3://bucket/prefix/"
  Consistency consistency = Consistency::kTtl;
  std::chrono::milliseconds ttl{60'000};
  // When revalidation fails because the under-store cannot be reached (not
  // because the object changed or vanished), cached metadata is still served
  // for up to this long past its freshness (HTTP's stale-if-error), so the
  // cache carries readers through a store outage. 0 turns it off.
  std::chrono::milliseconds stale_if_error{3'600'000};
  bool read_only = false;
  WriteMode write_mode = WriteMode::kCacheThrough;
  // write-back: how many workers must hold a write (fsync'd, journaled) before
  // Close returns; capped at the live workers. At least 1.
  int write_back_replicas = 2;
  // What a GB read from this store costs (USD): the bill the cache saves is
  // its hit bytes at this price. < 0: EgressPricePerGb's default.
  double egress_price_per_gb = -1;
  // Backend-specific options (endpoint, region, credentials, ...). Values are
  // strings, with ${NAME} references to environment variables expanded.
  std::map<std::string, std::string> options;
  // The options whose value, as written, refers to environment variables:
  // name -> the text as written ("${AZURE_KEY}"). ToYaml writes these, so a
  // secret kept in the environment is never copied into a config file.
  std::map<std::string, std::string> written_options;
};

// A mount's egress price: egress_price_per_gb when set, else
// kDefaultEgressPricePerGb for a store reached over the network (S3's first
// internet tier) and 0 for file://.
constexpr double kDefaultEgressPricePerGb = 0.09;
double EgressPricePerGb(const MountConfig& m);

// Capacity of a cache dir given on the command line without --cache-size
// (`shoal up`, per worker, and `shoal worker --cache-dir`).
inline constexpr uint64_t kDefaultCacheCapacity = 2ull << 30;

struct CacheDirConfig {
  std::string path;
  uint64_t capacity = 0;
};

// One member of the cluster. Written "ID@HOST:PORT" in a config ("HOST:PORT"
// alone uses the address as the id). The ring is keyed by the id, which a
// worker keeps in its cache dir: a worker that comes back on another port
// still owns the same data, so a restarted cluster is warm.
struct WorkerEntry {
  std::string id;
  std::string address;  // host:port
  bool operator==(const WorkerEntry&) const = default;
};
Result<WorkerEntry> ParseWorkerEntry(std::string_view text);
std::string FormatWorkerEntry(const WorkerEntry& w);
// What `shoal worker` prints once it serves: "listening: HOST:PORT id=ID".
std::string ListeningLine(const WorkerEntry& w);
Result<WorkerEntry> ParseListeningLine(std::string_view line);

// Membership from etcd (cluster/etcd_membership.h) instead of a static list:
// on when `endpoints` is not empty. Workers register under
// PREFIX/members/ID with a lease of `lease_ttl`; clients watch that prefix.
struct EtcdConfig {
  std::vector<std::string> endpoints;  // "http://127.0.0.1:2379"
  std::string prefix = "/shoal/default";
  std::chrono::milliseconds lease_ttl{10'000};
  std::chrono::milliseconds timeout{5'000};  // the deadline of one etcd call
  // TLS to etcd (https:// endpoints): the CA that signed etcd's certificate
  // ("" = the system's), and the client certificate and key etcd asks for
  // with --client-cert-auth ("" = none).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool operator==(const EtcdConfig&) const = default;
};

struct ClusterConfig {
  std::vector<WorkerEntry> workers;
  uint64_t shard_size = 64ull << 20;
  EtcdConfig etcd;
  // The shared secret of the cluster's processes: when set, a worker answers
  // only requests that carry it (`Authorization: Bearer SECRET`), except
  // health, metrics and status; clients send it. `shoal up` makes one.
  // ${NAME} references are expanded; `secret_written` keeps the text as
  // written, so ToYaml never copies a secret kept in the environment.
  std::string secret;
  std::string secret_written;
};

struct WorkerConfig {
  std::string listen = "127.0.0.1:0";
  // The worker's identity on the ring. "" (the default): the id kept in the
  // first cache dir (worker.id), made at the first start.
  std::string id;
  uint64_t page_size = 1ull << 20;
  std::vector<CacheDirConfig> cache_dirs;
  int io_threads = 2;              // Asio threads serving HTTP
  int ufs_threads = 16;            // blocking under-store calls run here
  int ufs_max_concurrency = 32;    // cap on concurrent requests to one under-store
  uint64_t readahead = 4ull << 20; // bytes fetched ahead of a sequential reader
  size_t metadata_entries = 200'000;
  // UNIX socket for short-circuit reads by clients on the same host: "auto"
  // ($TMPDIR/shoal-sockets-UID/worker-PORT.sock), "off", or a path.
  std::string local_socket = "auto";
  // HTTP connection limits (docs/protocol.md, "Limits").
  std::chrono::milliseconds header_timeout{10'000};  // a request must arrive within this of its first byte
  std::chrono::milliseconds idle_timeout{120'000};   // a keep-alive connection idle this long is closed
  std::chrono::milliseconds write_timeout{60'000};   // a client that takes no bytes this long is cut off
  // An upload to the S3 listener whose body sends no byte this long is cut off.
  std::chrono::milliseconds body_read_timeout{30'000};
  std::chrono::milliseconds heartbeat_interval{300}; // 102 Processing interval while an answer is not ready
  size_t max_connections = 0;                         // 0: derived from the open-files limit
  // When cached bytes are checked against their page's chunk checksums
  // (cache/page_format.h): "once" (the default) checks a page's first read
  // after a start or after its file changed (any write moves its ctime) and
  // trusts it while its file is unchanged, the scrubber re-checking the rest;
  // "always" checks every read (what it costs: README); "off" never (only to
  // measure what the checks cost, or to diagnose). The old key
  // verify_checksums: false means "off".
  std::string verify = "once";
  // The background scrubber: checks every cached page at this many bytes a
  // second (0: off), a full pass at most every scrub_interval; pages read
  // (and so checked) within the last interval are skipped.
  uint64_t scrub_rate = 4 << 20;
  std::chrono::milliseconds scrub_interval{24 * 3600 * 1000};
  // The eviction policy of the page store: a name in cache/policy/registry.h
  // (epoch, lru, fifo, lfu, s3fifo, sieve); "": the default. Checked when the
  // worker opens its cache.
  std::string eviction;
  // host:port of a plain-HTTP listener serving only /metrics (and health),
  // for Prometheus when the API is TLS-only; "" (the default): off.
  std::string metrics_listen;
  // host:port on which this worker also serves the S3 API (the `s3:`
  // section; port 0 picks a free one); "" (the default): off.
  std::string s3_listen;
  // write-back (src/worker/writeback_journal.h): past this many bytes of
  // pending uploads, new write-back writes are refused as busy (the client
  // then writes through). 0: a quarter of the first cache dir's capacity.
  uint64_t write_back_max_pending = 0;
  // A holder that is not a write's primary uploads it itself once the write is
  // this old and the primary is unreachable or has lost it.
  std::chrono::milliseconds write_back_takeover{60'000};
  // On a miss, ask the shard's previous owner or another replica for the
  // bytes (cache only) before the under-store (src/worker/peer_fetch.h).
  bool peer_fetch = true;
  // HOST or HOST:PORT other hosts connect to (etcd membership, /v1/status).
  // "" (the default): the listen address, or, when that is a wildcard
  // (0.0.0.0, [::]), this host's first non-loopback address (src/worker/advertise.h).
  std::string advertise;
  // How the page store keeps pages on disk (docs/page-format.md): "files" (a
  // file per page) or "blocks" (slots of block files reused in place: a miss
  // creates no file). Switching drops what the other layout cached.
  std::string page_store = "files";
  // Hot shards (cluster/hot_shards.h): a shard read more often than this
  // (reads/s over a sliding window of hot_shard_window) is marked hot in the
  // answers, and clients spread its reads over this worker and the next one
  // on the ring; it cools below a quarter of the rate. 0: off.
  int hot_shard_rps = 500;
  std::chrono::milliseconds hot_shard_window{1'000};
  // Eviction off the read path: above eviction_high_watermark percent of a
  // cache dir's capacity, a background thread evicts down to
  // eviction_low_watermark percent. 0 for the high one: a page write evicts
  // what it needs itself.
  int eviction_high_watermark = 98;
  int eviction_low_watermark = 96;
};

// TLS files of one side of a connection (src/security/tls_context.h). The
// top-level `tls:` section secures the worker's listeners; `client.tls:`
// makes clients (and workers calling their peers) speak TLS to workers.
struct TlsConfig {
  std::string cert_file;  // PEM chain; a listener's certificate, or a client's for mTLS
  std::string key_file;   // PEM private key of cert_file (mode 0600)
  std::string ca_file;    // PEM CAs that peers' certificates must chain to ("": the system's, client side)
  // Server side: whether clients must present a certificate from ca_file:
  // none | optional (verified when sent) | required (mTLS).
  std::string client_auth = "none";
  // Client side: speak TLS to workers (also on when ca_file is set).
  bool enabled = false;
  bool operator==(const TlsConfig&) const = default;
};

// How a process logs (common/library_log.h). SHOAL_LOG_FORMAT overrides it.
struct LogConfig {
  std::string format = "text";  // text | json (one JSON object per line)
  bool operator==(const LogConfig&) const = default;
};

// Authentication (src/security/). Without any of it, a worker answers
// everyone as before (cluster.secret aside).
struct SecurityConfig {
  // Refuse requests without a credential (token, client certificate, cluster
  // secret) on every route but health.
  bool required = false;
  // The cluster key that signs bearer tokens (`shoal token issue`), 64 hex
  // digits in a file of mode 0600; "" : tokens are refused.
  std::string token_key_file;
  // Keys still accepted after a rotation, until their tokens have expired.
  std::vector<std::string> previous_token_key_files;
  // Identities (token users, certificate names) that may act on behalf of
  // others (FUSE mounts, S3 endpoints), as HDFS proxy users do.
  std::vector<std::string> proxy_users;
  bool operator==(const SecurityConfig&) const = default;
};

// Authorization (src/authz/): Apache Ranger policies (HDFS service definition)
// over namespace paths, checked by the worker for every request's end user.
// Off unless policy_file or ranger_url is set.
struct AuthzConfig {
  // A Ranger ServicePolicies JSON file (what Ranger admin's policy download returns).
  std::string policy_file;
  // Ranger admin, polled for `ranger_service`'s policies every poll_interval;
  // the last good download is kept in policy_cache ("" : STATE/ranger-policies.json).
  std::string ranger_url;
  std::string ranger_service;
  std::string ranger_user;
  std::string ranger_password;  // ${NAME} expanded; never logged
  std::string policy_cache;
  std::chrono::milliseconds poll_interval{30'000};
  std::string fallback = "deny";       // no policy matched: deny | allow
  std::string audit = "deny";          // which decisions are audited: all | deny | off
  std::string audit_failure = "deny";  // an audit line that cannot be written: deny | allow
  // "" : CACHE_DIR/audit/shoal-audit.log; ending in '/': a directory of WORKER_ID.log files.
  std::string audit_file;
  uint64_t audit_max_bytes = 64ull << 20;
  int audit_keep = 5;
  // Members may load, free, pin and change rules anywhere, and read the status
  // when status_open is false.
  std::vector<std::string> admin_groups;
  bool status_open = true;  // /v1/status, the status page and /metrics need no policy
  bool enabled() const { return !policy_file.empty() || !ranger_url.empty(); }
  bool operator==(const AuthzConfig&) const = default;
};

struct ClientConfig {
  // The deadline of one whole call (stat, list, open, one read), including
  // failover and the direct under-store read.
  std::chrono::milliseconds timeout{30'000};
  std::chrono::milliseconds connect_timeout{1'000};
  // The longest a worker may stay silent (no byte, no heartbeat) before it is
  // taken as hung and marked down.
  std::chrono::milliseconds response_timeout{1'500};
  bool ufs_fallback = true;     // read the under-store directly when a worker fails
  uint64_t readahead = 8ull << 20;
  int max_parallel = 8;         // concurrent shard requests per read
  // A down worker is first probed this long after it failed, then less often
  // (doubling, up to 30 s) until it answers.
  std::chrono::milliseconds down_backoff{2'000};
  // Read cached pages of workers on this host through their page files (fds
  // passed over a UNIX socket) instead of TCP.
  bool short_circuit = true;
  // Check the bytes read short-circuit against their page's chunk checksums.
  // Off only for benchmarks and diagnosis, like worker.verify_checksums.
  bool verify_checksums = true;
  // Under-store fallback limits of this client (a token bucket each, with one
  // second of burst; 0 = unlimited): a lost worker must not stampede the store.
  uint64_t fallback_rate = 200ull << 20;  // bytes/s
  int fallback_requests = 100;            // requests/s
  // TLS to workers: on when tls.enabled or tls.ca_file is set.
  TlsConfig tls;
  // A file holding the bearer token to send (`shoal token issue`); SHOAL_TOKEN overrides it.
  std::string token_file;
};

// One user of the S3 endpoint: the key it signs with, and its groups. The
// workers authorize this user for the requests it signs (X-Shoal-On-Behalf-Of).
struct S3User {
  std::string access_key;
  std::string secret_key;  // ${NAME} expanded; never logged
  std::vector<std::string> groups;
  bool operator==(const S3User&) const = default;
};

// The S3-compatible endpoint (`shoal s3`, `shoal up --s3`; src/s3/).
struct S3Config {
  std::string listen;                              // host:port for `shoal s3` without --listen
  std::string region = "us-east-1";                // what GetBucketLocation answers
  std::map<std::string, std::string> credentials;  // access key -> secret key (${NAME} expanded)
  // More keys, lines of "ACCESS_KEY SECRET_KEY [USER [GROUP,GROUP...]]"; mode 0600.
  std::string credentials_file;
  // user name -> its key and groups. A key of `credentials` (or of a file line
  // without USER) is a user of the same name as the key, without groups.
  std::map<std::string, S3User> users;
  // bucket -> namespace path. Empty: each top-level mount is a bucket (/data -> data).
  std::map<std::string, std::string> buckets;
  std::vector<std::string> public_buckets;         // readable without a signature
  std::chrono::milliseconds max_clock_skew{900'000};
  std::string staging_dir;  // multipart parts until completed; "" = $TMPDIR/shoal-s3-uploads-UID
  // How a node answers a read of a key another worker owns: "proxy" (the
  // default: streams the bytes through itself) or "redirect" (307 to the
  // owner's S3 listener, for presigned and anonymous reads).
  std::string mode = "proxy";
  // The client config a worker's S3 listener reads the cluster from, opened
  // at its first request ("": the worker's own config, which must then list
  // cluster.workers or use etcd).
  std::string client_config;
  bool operator==(const S3Config&) const = default;
};

struct Config {
  ClusterConfig cluster;
  std::vector<MountConfig> mounts;
  WorkerConfig worker;
  ClientConfig client;
  S3Config s3;
  std::vector<PathRule> rules;  // sorted by path; at most one per path
  TlsConfig tls;                // the worker's listeners (on when tls.cert_file is set)
  SecurityConfig security;
  AuthzConfig authz;
  LogConfig log;
  std::string source;  // file the config came from, for messages
};

// Replaces each ${NAME} in `text` by the value of environment variable NAME.
// kInvalidArgument naming the variable (never a value) when one is unset or
// empty, or a reference is malformed.
Result<std::string> ExpandEnvReferences(const std::string& text);

// Parses YAML text. `source` names it in error messages ("shoal.yaml:12: ...").
// Mount option values may hold ${NAME} references to environment variables,
// expanded here; an unset (or empty) variable is an error naming it.
Result<Config> ParseConfig(const std::string& text, const std::string& source);
// A file that cannot be read is kInvalidArgument (a config error, exit 2).
Result<Config> LoadConfig(const std::string& path);
// The config as YAML that ParseConfig reads back to an equal config.
std::string ToYaml(const Config& config);
// Checks cross-field rules (mount nesting, shard/page sizes, ...).
Status Validate(const Config& config);

}  // namespace shoal
