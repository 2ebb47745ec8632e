#include "worker/hot_reads.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cache/page_store.h"
#include "cluster/hash_ring.h"
#include "common/metrics.h"

namespace shoal {

HotReads::HotReads(const Config& config, PageStore* pages, std::string self)
    : shard_size_(config.cluster.shard_size),
      page_size_(config.worker.page_size),
      window_(config.worker.hot_shard_window),
      self_(std::move(self)),
      pages_(pages),
      rules_(PathRules::Make(config.rules).value_or(PathRules())),
      heat_(ShardHeat::Options{static_cast<double>(config.worker.hot_shard_rps), config.worker.hot_shard_window}) {
  auto& m = MetricsRegistry::Global();
  hot_gauge_ = &m.GetGauge("shoal_hot_shards", "Shards this worker finds hot now (worker.hot_shard_rps)");
  copies_gauge_ = &m.GetGauge("shoal_hot_copies", "Other workers' hot shards this worker serves a copy of");
  answers_ = &m.GetCounter("shoal_hot_answers_total", "Read answers marked X-Shoal-Hot (clients spread those shards)");
  spread_reads_ = &m.GetCounter("shoal_hot_spread_reads_total", "Reads served as the next owner of a hot shard");
  spread_bytes_ = &m.GetCounter("shoal_hot_spread_bytes_total", "Bytes asked for by reads served as a hot shard's next owner");
  dropped_ = &m.GetCounter("shoal_hot_copies_dropped_total", "Extra copies of hot shards dropped after the heat went");
}

HotReads::~HotReads() = default;

void HotReads::SetMembership(std::shared_ptr<const Membership> membership) {
  std::lock_guard lock(mu_);
  membership_ = std::move(membership);
}

Result<bool> HotReads::SpreadFlag(const std::string* value) {
  if (value == nullptr || *value == "0") return false;
  if (*value == "1") return true;
  return Err(Code::kInvalidArgument, "spread=" + *value + " is not 0 or 1");
}

void HotReads::Note(const std::string& path, const std::string& version, uint64_t size, uint64_t offset,
                    uint64_t length, bool spread, net::Headers* headers) {
  const auto now = Clock::now();
  const uint64_t shard = offset / shard_size_;
  const std::string key = HashRing::DataKey(path, version, shard);
  if (heat_.Note(key, path, shard, now)) {
    headers->emplace_back(kHeader, "2");
    answers_->Add();
  }
  if (spread) {
    spread_reads_->Add();
    spread_bytes_->Add(length);
    std::lock_guard lock(mu_);
    auto it = copies_.find(key);
    if (it != copies_.end()) {
      it->second.last = now;
    } else if (copies_.size() < kMaxCopies) {  // past the bound a copy is ordinary cache
      copies_.emplace(key, Copy{path, version, size, shard, now});
    }
  }
  SweepCopies(now, false);
}

bool HotReads::Holds(const std::string& key, const std::string& path) const {
  auto ring = membership_->Current();
  if (ring->ring.empty()) return true;  // nothing to judge by: keep it
  const size_t n = static_cast<size_t>(std::max(1, rules_.For(path).replicas.value_or(1)));
  for (size_t i : ring->ring.Owners(key, n)) {
    if (ring->workers[i].id == self_) return true;
  }
  return false;
}

void HotReads::SweepCopies(Clock::time_point now, bool force) {
  std::vector<Copy> drop;
  {
    std::lock_guard lock(mu_);
    if (!membership_ || copies_.empty() || (!force && now < next_sweep_)) return;
    next_sweep_ = now + window_;
    const auto idle = std::chrono::duration_cast<Clock::duration>(HotKeys::kHold + 2 * window_);
    for (auto it = copies_.begin(); it != copies_.end();) {
      if (now - it->second.last < idle) {
        ++it;
        continue;
      }
      if (!Holds(it->first, it->second.path)) drop.push_back(std::move(it->second));
      it = copies_.erase(it);
    }
  }
  for (const Copy& c : drop) {
    const uint64_t end = std::min(c.size, (c.shard + 1) * shard_size_);
    size_t pages = 0;
    for (uint64_t off = c.shard * shard_size_; off < end; off += page_size_) {
      pages += pages_->Drop(PageKey{c.path, c.version, off});
    }
    dropped_->Add();
    spdlog::info("hot shard {} shard {} cooled: dropped this worker's extra copy ({} pages)", c.path, c.shard, pages);
  }
}

nlohmann::json HotReads::StatusJson() {
  const auto now = Clock::now();
  SweepCopies(now, false);
  nlohmann::json hot = nlohmann::json::array();
  auto shards = heat_.HotShards(now);
  for (const auto& h : shards) {
    hot.push_back({{"path", h.path}, {"shard", h.shard}, {"rps", h.rps}, {"hot_seconds", h.hot_seconds}});
  }
  hot_gauge_->Set(static_cast<int64_t>(shards.size()));
  size_t copies;
  {
    std::lock_guard lock(mu_);
    copies = copies_.size();
  }
  copies_gauge_->Set(static_cast<int64_t>(copies));
  return {{"hot_shards", std::move(hot)},
          {"hot_spread_reads", spread_reads_->value()},
          {"hot_copies", copies},
          {"hot_copies_dropped", dropped_->value()}};
}

void HotReads::UpdateMetrics() { (void)StatusJson(); }

}  // namespace shoal
