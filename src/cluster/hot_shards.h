// Hot shards: a shard asked for so often that its owner alone is the
// bottleneck is served by its next owner in ring order too.
//
// Two halves, one per side of the wire (docs/protocol.md, "Hot shards"):
//
// ShardHeat (worker). Counts the reads of each ring key (HashRing::DataKey:
// a shard) over a sliding window and says which keys are hot. The counts sit
// in a count-min sketch of fixed size (kRows x kColumns counters, for the
// current window and the one before), so any number of distinct keys, keys a
// client made up included, costs the same memory; a key's rate is its
// smallest counter, an overestimate by at most the sketch's collisions. The
// rate is the previous window's count weighted by how much of it still
// overlaps the sliding window, plus the current one's, per second. A key
// becomes hot when that rate reaches `hot_rps`, and is remembered (at most
// `max_hot` keys; more are not marked) until its rate falls under a quarter of
// `hot_rps`: an owner whose hot shard is spread over two workers sees about
// half of its reads, so the shard stays hot while the readers do.
//
// HotKeys (client). The ring keys the workers said were hot, each for at most
// kHold after the last answer that said so, at most kMaxKeys of them. Reads of
// a hot key are spread over its owner and the next workers on the ring
// (Router::RouteKey::spread); an answer from the key's owner without the mark
// takes it out at once, so readers go back as soon as the owner cools.
//
// Thread safety: all methods of both classes are safe from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shoal {

class ShardHeat {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kRows = 4;
  static constexpr size_t kColumns = 4096;

  struct Options {
    double hot_rps = 500;  // worker.hot_shard_rps; 0: nothing is ever hot
    std::chrono::milliseconds window{1'000};  // worker.hot_shard_window
    size_t max_hot = 256;
  };
  explicit ShardHeat(Options options);

  // Counts one read of `key` (a shard of `path`, for status) at `now`, and
  // answers whether the key is hot after it.
  bool Note(std::string_view key, std::string_view path, uint64_t shard, Clock::time_point now);

  // The estimated read rate of `key` at `now` (reads per second).
  double Rate(std::string_view key, Clock::time_point now);

  struct Hot {
    std::string path;
    uint64_t shard = 0;
    double rps = 0;        // estimated now
    double hot_seconds = 0;  // how long it has been hot
  };
  // The hot keys at `now`, after cooling those whose rate has fallen.
  std::vector<Hot> HotShards(Clock::time_point now);

  // Keys that became hot, since the start.
  uint64_t heated() const { return heated_.load(std::memory_order_relaxed); }
  // Keys that cooled down again, since the start.
  uint64_t cooled() const { return cooled_.load(std::memory_order_relaxed); }
  // Keys not marked because max_hot were already hot.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  using Counts = std::array<std::array<uint32_t, kColumns>, kRows>;
  struct Entry {
    std::string path;
    uint64_t shard = 0;
    Clock::time_point since;
  };
  // REQUIRES: mu_ held.
  void AdvanceLocked(Clock::time_point now);
  double RateLocked(uint64_t hash, Clock::time_point now) const;
  void CoolLocked(Clock::time_point now);
  static size_t Column(uint64_t hash, size_t row);

  const Options options_;
  const double cool_rps_;
  std::mutex mu_;
  Counts current_{};
  Counts previous_{};
  Clock::time_point window_start_{};
  bool started_ = false;
  std::unordered_map<std::string, Entry> hot_;  // ring key -> since when hot
  std::atomic<uint64_t> heated_{0}, cooled_{0}, refused_{0};
};

class HotKeys {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kHold{10};
  static constexpr size_t kMaxKeys = 4096;
  static constexpr uint32_t kMaxSpread = 4;

  // A worker answered a read of `key` with X-Shoal-Hot: `spread` (the number
  // of workers to spread it over, clamped to [2, kMaxSpread]).
  void Mark(const std::string& key, uint32_t spread, Clock::time_point now);
  // The key's owner answered without the mark: it is cold again.
  void Clear(const std::string& key);
  // Over how many workers reads of `key` go: 0 when it is not hot.
  uint32_t Spread(const std::string& key, Clock::time_point now);
  bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  struct Entry {
    uint32_t spread;
    Clock::time_point until;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> keys_;
  std::atomic<size_t> size_{0};
};

}  // namespace shoal
