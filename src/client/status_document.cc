#include "client/status_document.h"

#include <map>

#include "client/client_internal.h"

namespace shoal {

nlohmann::json ClusterStatusDocument(Client& c) {
  using Json = nlohmann::json;
  RingInfo ring = c.Ring();
  Json members = Json::array();
  for (const auto& m : ring.members) {
    members.push_back({{"id", m.id}, {"address", m.address}, {"weight", m.weight}, {"share", m.share}});
  }
  // Pins and quotas per worker, from its own status.
  // Egress saved per mount, summed over the workers, at each mount's price.
  // One /v1/status per worker: its parsed status and its raw answer.
  std::map<std::string, Json> rules;
  std::map<std::string, Json> egress;
  std::vector<std::string> bodies;
  const std::vector<WorkerStatus> statuses = ClusterStatusWithBodies(c, &bodies);
  for (size_t i = 0; i < statuses.size() && i < bodies.size(); ++i) {
    if (bodies[i].empty()) continue;
    Json j = Json::parse(bodies[i], nullptr, false);
    if (!j.is_object()) continue;
    rules[statuses[i].address] = {{"pinned_bytes", j.value("pinned_bytes", uint64_t{0})},
                                  {"quotas", j.value("quotas", Json::array())}};
    if (!j.contains("egress") || !j["egress"].is_array()) continue;
    for (const auto& e : j["egress"]) {
      if (!e.is_object()) continue;
      Json& m = egress[e.value("mount", std::string())];
      if (m.is_null()) {
        m = {{"mount", e.value("mount", std::string())},
             {"ufs", e.value("ufs", std::string())},
             {"price_per_gb", e.value("price_per_gb", 0.0)},
             {"saved_bytes", 0}};
      }
      m["saved_bytes"] = m["saved_bytes"].get<uint64_t>() + e.value("saved_bytes", uint64_t{0});
    }
  }
  Json mounts = Json::array();
  double saved_usd = 0;
  for (auto& [path, m] : egress) {
    const double usd = static_cast<double>(m["saved_bytes"].get<uint64_t>()) / 1e9 * m["price_per_gb"].get<double>();
    m["saved_usd"] = usd;
    saved_usd += usd;
    mounts.push_back(std::move(m));
  }
  Json workers = Json::array();
  uint64_t used = 0, capacity = 0, hit = 0, miss = 0, ufs = 0, wb_bytes = 0, wb_files = 0, pinned = 0;
  int up = 0, down = 0;
  for (const auto& w : statuses) {
    Json j{{"address", w.address},
           {"up", w.up},
           {"error", w.error},
           {"cache_used_bytes", w.cache_used_bytes},
           {"cache_capacity_bytes", w.cache_capacity_bytes},
           {"cache_effective_capacity_bytes", w.cache_effective_capacity_bytes},
           {"hit_bytes", w.hit_bytes},
           {"miss_bytes", w.miss_bytes},
           {"hit_ratio", w.hit_ratio()},
           {"ufs_read_bytes", w.ufs_read_bytes},
           {"id", w.id},
           {"ring_version", w.ring_version},
           {"ring_weight", w.ring_weight},
           {"ring_share", w.ring_share},
           {"write_back_pending_bytes", w.write_back_pending_bytes},
           {"write_back_pending_files", w.write_back_pending_files},
           {"write_back_oldest_pending_seconds", w.write_back_oldest_pending_seconds},
           {"hot_shards", w.hot_shards},
           {"hot_spread_reads", w.hot_spread_reads},
           {"tls", w.tls},
           {"tls_not_after", w.tls_not_after},
           {"credentials", w.credentials},
           {"cache_dirs", Json::array()},
           {"recent_errors", w.recent_errors},
           {"errors_total", w.errors_total}};
    for (const auto& d : w.cache_dirs) {
      j["cache_dirs"].push_back({{"path", d.path},
                                 {"used_bytes", d.used_bytes},
                                 {"capacity_bytes", d.capacity_bytes},
                                 {"effective_capacity_bytes", d.effective_capacity_bytes}});
    }
    if (auto it = rules.find(w.address); it != rules.end()) {
      j["pinned_bytes"] = it->second["pinned_bytes"];
      j["quotas"] = it->second["quotas"];
      pinned += it->second["pinned_bytes"].get<uint64_t>();
    }
    if (w.up) {
      ++up;
      used += w.cache_used_bytes;
      capacity += w.cache_effective_capacity_bytes;
      hit += w.hit_bytes;
      miss += w.miss_bytes;
      ufs += w.ufs_read_bytes;
      wb_bytes += w.write_back_pending_bytes;
      wb_files += w.write_back_pending_files;
    } else {
      ++down;
    }
    workers.push_back(std::move(j));
  }
  Json summary{{"workers", up + down},
               {"up", up},
               {"down", down},
               {"cache_used_bytes", used},
               {"cache_capacity_bytes", capacity},
               {"hit_bytes", hit},
               {"miss_bytes", miss},
               {"hit_ratio", hit + miss ? static_cast<double>(hit) / static_cast<double>(hit + miss) : 0.0},
               // Bytes served that the under-stores did not send: the egress the cache saved.
               {"egress_saved_bytes", hit},
               // Each mount's saved bytes at its own price (egress_price_per_gb).
               {"egress_saved_usd", saved_usd},
               {"ufs_read_bytes", ufs},
               {"pinned_bytes", pinned},
               {"write_back_pending_bytes", wb_bytes},
               {"write_back_pending_files", wb_files}};
  // `shoal load` jobs, each over every worker that runs a part of it: running
  // while any part runs, else failed when one failed, else stopped or done.
  std::map<std::string, Json> jobs;
  for (const auto& r : CallWorkers(c, "GET", [](const std::string&) { return "/v1/load"; })) {
    if (!r.status.ok()) continue;
    Json j = Json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array()) continue;
    for (const auto& part : j["jobs"]) {
      if (!part.is_object() || !part.contains("id")) continue;
      Json& job = jobs[part.value("id", std::string())];
      if (job.is_null()) {
        job = {{"id", part.value("id", std::string())},
               {"path", part.value("path", std::string())},
               {"state", part.value("state", std::string())},
               {"workers", 0},
               {"files_total", 0},
               {"files_done", 0},
               {"files_failed", 0},
               {"bytes_total", 0},
               {"bytes_done", 0}};
      }
      job["workers"] = job["workers"].get<int>() + 1;
      for (const char* k : {"files_total", "files_done", "files_failed", "bytes_total", "bytes_done"}) {
        job[k] = job[k].get<uint64_t>() + part.value(k, uint64_t{0});
      }
      const std::string state = part.value("state", std::string());
      const std::string now = job["state"].get<std::string>();
      for (const char* rank : {"running", "failed", "stopped", "done"}) {
        if (now == rank) break;
        if (state == rank) {
          job["state"] = state;
          break;
        }
      }
    }
  }
  Json loads = Json::array();
  for (auto& [id, job] : jobs) loads.push_back(std::move(job));
  return Json{{"ring", {{"membership", ring.membership}, {"version", ring.version}, {"members", members}}},
              {"summary", summary},
              {"workers", workers},
              {"mounts", mounts},
              {"loads", loads}};
}

}  // namespace shoal
