// HotReads: the worker's side of hot shards (cluster/hot_shards.h).
//
// Every read a client sends (GET /v1/read, /v1/open; not the cache-only reads
// of peers) is counted per shard in a ShardHeat. While a shard is hot, the
// answer carries `X-Shoal-Hot: 2`, and clients spread its reads over this
// worker and the next one on the ring; a read sent to that next worker
// because of the heat says so with `spread=1`. The next worker fills its copy
// like any miss: peer fetch asks the owner's cache first (cache-only reads),
// so the store is not read again.
//
// The extra copy: a worker that served spread reads of a shard it does not
// hold on its own ring remembers it (at most kMaxCopies), and once no spread
// read has come for kHold of the client plus two windows (the heat has gone
// and every client has gone back to the owner), drops those pages. Checked
// at most once a window, on the next read or status call. Without a ring
// (worker.peer_fetch off) the copy is left as ordinary evictable cache.
//
// Metrics: shoal_hot_shards (gauge), shoal_hot_answers_total,
// shoal_hot_spread_reads_total, shoal_hot_spread_bytes_total,
// shoal_hot_copies (gauge), shoal_hot_copies_dropped_total.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cluster/hot_shards.h"
#include "cluster/membership.h"
#include "common/config.h"
#include "common/path_rules.h"
#include "net/http_server.h"

namespace shoal {

class Counter;
class Gauge;
class PageStore;

class HotReads {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxCopies = 4096;
  static constexpr const char* kHeader = "X-Shoal-Hot";

  // `pages`: where extra copies are dropped; `self`: this worker's ring id.
  HotReads(const Config& config, PageStore* pages, std::string self);
  ~HotReads();

  // The ring this worker routes by (peer fetch's); without it copies are not dropped.
  void SetMembership(std::shared_ptr<const Membership> membership);

  // The `spread` query parameter: absent or "0" is false, "1" true, anything
  // else kInvalidArgument.
  static Result<bool> SpreadFlag(const std::string* value);

  // Counts a read of `length` bytes at `offset` of (path, version, size) and
  // adds X-Shoal-Hot to `headers` when its shard is hot. `spread`: the client
  // sent it here as the shard's next owner.
  void Note(const std::string& path, const std::string& version, uint64_t size, uint64_t offset, uint64_t length,
            bool spread, net::Headers* headers);

  // For /v1/status: hot_shards [{path, shard, rps, hot_seconds}],
  // hot_spread_reads, hot_copies, hot_copies_dropped.
  nlohmann::json StatusJson();
  // Sets the gauges (before /metrics is rendered).
  void UpdateMetrics();

 private:
  struct Copy {
    std::string path, version;
    uint64_t size = 0, shard = 0;
    Clock::time_point last;
  };
  // Drops the copies no spread read has asked for lately (at most once a window).
  void SweepCopies(Clock::time_point now, bool force);
  // Whether this worker holds `key` on its own ring (the ring changed, or the path is replicated).
  bool Holds(const std::string& key, const std::string& path) const;

  const uint64_t shard_size_;
  const uint64_t page_size_;
  const std::chrono::milliseconds window_;
  const std::string self_;
  PageStore* pages_;
  PathRules rules_;
  ShardHeat heat_;
  std::shared_ptr<const Membership> membership_;

  std::mutex mu_;
  std::unordered_map<std::string, Copy> copies_;  // ring key -> extra copy served here
  Clock::time_point next_sweep_{};

  Gauge* hot_gauge_;
  Gauge* copies_gauge_;
  Counter* answers_;
  Counter* spread_reads_;
  Counter* spread_bytes_;
  Counter* dropped_;
};

}  // namespace shoal
