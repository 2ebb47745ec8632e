// The Shoal configuration file (YAML): cluster membership, the mount table, and
// worker and client settings. Every key has a default, so an empty file is a
// valid single-node config without mounts. Errors name the key and the line.
//
// See README.md "Configuration reference" for every key.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
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

struct MountConfig {
  std::string path;  // namespace path: "/data" (normalised: leading '/', no trailing '/')
  std::string ufs;   // under-store URI: "file:///srv/datasets/", "s3://bucket/prefix/"
  Consistency consistency = Consistency::kTtl;
  std::chrono::milliseconds ttl{60'000};
  bool read_only = false;
  // Backend-specific options (endpoint, region, credentials, ...). Values are strings.
  std::map<std::string, std::string> options;
};

struct CacheDirConfig {
  std::string path;
  uint64_t capacity = 0;
};

struct ClusterConfig {
  std::vector<std::string> workers;  // "host:port"
  uint64_t shard_size = 64ull << 20;
};

struct WorkerConfig {
  std::string listen = "127.0.0.1:0";
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
  // Check every cached byte against its page's chunk checksums before sending
  // it. Off only to measure what the checks cost (bench/core_bench) or to
  // diagnose: a page changed on disk is then served as it is.
  bool verify_checksums = true;
};

struct ClientConfig {
  std::chrono::milliseconds timeout{10'000};         // whole call to a worker
  std::chrono::milliseconds connect_timeout{2'000};
  bool ufs_fallback = true;     // read the under-store directly when a worker fails
  uint64_t readahead = 8ull << 20;
  int max_parallel = 8;         // concurrent shard requests per read
  std::chrono::milliseconds down_backoff{2'000};  // skip a failed worker for this long
  // Read cached pages of workers on this host through their page files (fds
  // passed over a UNIX socket) instead of TCP.
  bool short_circuit = true;
  // Check the bytes read short-circuit against their page's chunk checksums.
  // Off only for benchmarks and diagnosis, like worker.verify_checksums.
  bool verify_checksums = true;
};

struct Config {
  ClusterConfig cluster;
  std::vector<MountConfig> mounts;
  WorkerConfig worker;
  ClientConfig client;
  std::string source;  // file the config came from, for messages
};

// Parses YAML text. `source` names it in error messages ("shoal.yaml:12: ...").
Result<Config> ParseConfig(const std::string& text, const std::string& source);
Result<Config> LoadConfig(const std::string& path);
// The config as YAML that ParseConfig reads back to an equal config.
std::string ToYaml(const Config& config);
// Checks cross-field rules (mount nesting, shard/page sizes, ...).
Status Validate(const Config& config);

}  // namespace shoal
