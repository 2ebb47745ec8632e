// shoal ls / stat / mount list / refresh / status
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <map>

#include "cli/commands.h"
#include "client/client_internal.h"
#include "client/status_document.h"
#include "common/units.h"
#include "meta/etcd_mounts.h"

namespace shoal::cli {
namespace {

std::string Time(int64_t ns) {
  if (ns == 0) return "-";
  time_t t = static_cast<time_t>(ns / 1'000'000'000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

// "tls: on, certificate expires 2027-12-05 (364 days)", with a warning under 14 days.
std::string TlsLine(const WorkerStatus& w) {
  if (!w.tls) return "tls: off";
  const int64_t now = std::time(nullptr);
  const int64_t days = (w.tls_not_after - now) / 86400;
  char date[32] = "?";
  std::time_t t = static_cast<std::time_t>(w.tls_not_after);
  if (std::tm tm{}; gmtime_r(&t, &tm) != nullptr) std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
  std::string line = "tls: on, certificate expires " + std::string(date) + " (" + std::to_string(days) + " days)";
  if (w.tls_not_after <= now) return line + "  WARNING: expired: renew it now";
  if (days < 14) line += "  WARNING: renew it (under 14 days left)";
  return line;
}

// `shoal status` as text, from ClusterStatusDocument.
void PrintStatus(const nlohmann::json& doc) {
  const auto& ring = doc["ring"];
  const auto& sum = doc["summary"];
  std::printf("ring: %s membership, version %llu, %zu workers\n", ring["membership"].get<std::string>().c_str(),
              static_cast<unsigned long long>(ring["version"].get<uint64_t>()), ring["members"].size());
  std::printf(
      "cluster: %d up, %d down; cache %s / %s; hit ratio %.1f%%; egress saved %s ($%.2f); read from stores %s\n",
      sum["up"].get<int>(), sum["down"].get<int>(), FormatSize(sum["cache_used_bytes"].get<uint64_t>()).c_str(),
      FormatSize(sum["cache_capacity_bytes"].get<uint64_t>()).c_str(), 100 * sum["hit_ratio"].get<double>(),
      FormatSize(sum["egress_saved_bytes"].get<uint64_t>()).c_str(), sum["egress_saved_usd"].get<double>(),
      FormatSize(sum["ufs_read_bytes"].get<uint64_t>()).c_str());
  for (const auto& m : doc["mounts"]) {
    std::printf("mount %s (%s): egress saved %s, $%.2f at $%.3f/GB\n", m["mount"].get<std::string>().c_str(),
                m["ufs"].get<std::string>().c_str(), FormatSize(m["saved_bytes"].get<uint64_t>()).c_str(),
                m["saved_usd"].get<double>(), m["price_per_gb"].get<double>());
  }
  std::printf("%-22s %-5s %-24s %-9s %-10s %-7s %s\n", "WORKER", "STATE", "CACHE USED / CAPACITY", "HIT RATIO",
              "UFS READ", "SHARE", "ID");
  for (const auto& j : doc["workers"]) {
    WorkerStatus w;
    w.address = j["address"].get<std::string>();
    w.id = j["id"].get<std::string>();
    w.error = j["error"].get<std::string>();
    w.tls = j["tls"].get<bool>();
    w.tls_not_after = j["tls_not_after"].get<int64_t>();
    char share[16];
    std::snprintf(share, sizeof share, "%.1f%%", 100 * j["ring_share"].get<double>());
    if (!j["up"].get<bool>()) {
      std::printf("%-22s %-5s %s (id %s, share %s)\n", w.address.c_str(), "down", w.error.c_str(), w.id.c_str(), share);
      continue;
    }
    const uint64_t effective = j["cache_effective_capacity_bytes"].get<uint64_t>();
    const uint64_t configured = j["cache_capacity_bytes"].get<uint64_t>();
    std::string cache = FormatSize(j["cache_used_bytes"].get<uint64_t>()) + " / " + FormatSize(effective);
    if (effective < configured) cache += " (disk full; configured " + FormatSize(configured) + ")";
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.1f%%", 100 * j["hit_ratio"].get<double>());
    std::printf("%-22s %-5s %-24s %-9s %-10s %-7s %s\n", w.address.c_str(), "up", cache.c_str(), ratio,
                FormatSize(j["ufs_read_bytes"].get<uint64_t>()).c_str(), share, w.id.c_str());
    std::printf("%-22s write-back pending: %llu files, %s, oldest %.0fs\n", "",
                static_cast<unsigned long long>(j["write_back_pending_files"].get<uint64_t>()),
                FormatSize(j["write_back_pending_bytes"].get<uint64_t>()).c_str(),
                j["write_back_oldest_pending_seconds"].get<double>());
    std::string hot;
    for (const auto& h : j["hot_shards"]) hot += (hot.empty() ? "" : ", ") + h.get<std::string>();
    std::printf("%-22s hot shards: %s; reads served as next owner: %llu\n", "", hot.empty() ? "none" : hot.c_str(),
                static_cast<unsigned long long>(j["hot_spread_reads"].get<uint64_t>()));
    std::printf("%-22s %s\n", "", TlsLine(w).c_str());
    for (const auto& c : j.value("credentials", nlohmann::json::array())) {
      std::printf("%-22s credentials %s\n", "", c.get<std::string>().c_str());
    }
    const auto& dirs = j.value("cache_dirs", nlohmann::json::array());
    if (dirs.size() > 1) {  // one dir is the CACHE USED column already
      for (const auto& d : dirs) {
        std::printf("%-22s cache dir %s: %s / %s\n", "", d.value("path", "").c_str(),
                    FormatSize(d.value("used_bytes", uint64_t{0})).c_str(),
                    FormatSize(d.value("effective_capacity_bytes", uint64_t{0})).c_str());
      }
    }
    const auto& errors = j.value("recent_errors", nlohmann::json::array());
    std::printf("%-22s errors: %llu", "", static_cast<unsigned long long>(j.value("errors_total", uint64_t{0})));
    std::printf(errors.empty() ? "\n" : ", latest:\n");
    for (size_t i = 0; i < errors.size() && i < 3; ++i) {
      std::printf("%-22s   %s\n", "", errors[i].get<std::string>().c_str());
    }
  }
  std::printf("path rules (shoal rules):\n");
  for (const auto& j : doc["workers"]) {
    if (!j.contains("pinned_bytes")) continue;  // down: shown above
    std::string line = "  " + j["id"].get<std::string>() + ": pinned " + FormatSize(j["pinned_bytes"].get<uint64_t>());
    for (const auto& q : j["quotas"]) {
      line += "; quota " + q.value("rule", std::string("?")) + " " + FormatSize(q.value("used_bytes", uint64_t{0})) +
              " / " + FormatSize(q.value("limit_bytes", uint64_t{0}));
    }
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

void AddClientCommands(CLI::App& app, int* exit_code) {
  {
    struct Args {
      ClientOptions client;
      std::string path;
      bool longer = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("ls", "List a directory");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path or physical URI")->required();
    cmd->add_flag("-l,--long", a->longer, "Show size, time and version");
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      auto list = (*c)->List(a->path);
      if (!list) return void(*exit_code = Fail(list.error()));
      for (const auto& e : *list) {
        std::string name = e.path.substr(e.path.rfind('/') + 1) + (e.is_dir ? "/" : "");
        if (a->longer) {
          std::printf("%12s  %s  %s  %s\n", e.is_dir ? "-" : std::to_string(e.size).c_str(), Time(e.mtime_ns).c_str(),
                      name.c_str(), e.version.c_str());
        } else {
          std::printf("%s\n", name.c_str());
        }
      }
      *exit_code = 0;
    });
  }
  {
    struct Args {
      ClientOptions client;
      std::string path;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("stat", "Show a file's size, time and version");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path or physical URI")->required();
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      auto st = (*c)->Stat(a->path);
      if (!st) return void(*exit_code = Fail(st.error()));
      std::printf("path:    %s\ntype:    %s\nsize:    %llu (%s)\nmtime:   %s\nversion: %s\n", st->path.c_str(),
                  st->is_dir ? "directory" : "file", static_cast<unsigned long long>(st->size),
                  FormatSize(st->size).c_str(), Time(st->mtime_ns).c_str(), st->version.c_str());
      *exit_code = 0;
    });
  }
  {
    auto options = std::make_shared<ClientOptions>();
    auto* mount = app.add_subcommand("mount", "Show or publish the mount table");
    auto* list = mount->add_subcommand("list", "Print the mount table");
    mount->require_subcommand(1);
    AddClientOptions(list, options.get());
    list->callback([options, exit_code] {
      auto c = OpenClient(*options);
      if (!c) return void(*exit_code = Fail(c.error()));
      std::printf("%-20s %-45s %-14s %s\n", "PATH", "UFS", "CONSISTENCY", "MODE");
      for (const auto& m : (*c)->Mounts()) {
        std::printf("%-20s %-45s %-14s %s\n", m.path.c_str(), m.ufs.c_str(), m.consistency.c_str(),
                    m.read_only ? "ro" : "rw");
      }
      *exit_code = 0;
    });
    // Publishes a config's mounts in its etcd (meta/etcd_mounts.h): clients
    // with only cluster.etcd then see them, workers get their credentials.
    auto from = std::make_shared<std::string>();
    auto* publish = mount->add_subcommand("publish", "Publish the mounts of a config in its etcd (cluster.etcd)");
    publish->add_option("--from", *from, "Config file whose mounts (and cluster.etcd) to publish")->required();
    publish->callback([from, exit_code] {
      auto c = LoadConfig(*from);
      if (!c) return void(*exit_code = Fail(c.error()));
      if (c->cluster.etcd.endpoints.empty()) {
        return void(*exit_code = Fail(Status(Code::kInvalidArgument, *from + " names no etcd (cluster.etcd.endpoints): "
                                                                          "nowhere to publish its mounts")));
      }
      if (c->mounts.empty()) {
        return void(*exit_code = Fail(Status(Code::kInvalidArgument, *from + " has no mounts to publish")));
      }
      if (auto st = Validate(*c); !st.ok()) return void(*exit_code = Fail(st));
      if (auto st = ValidateMounts(*c); !st.ok()) return void(*exit_code = Fail(st.WithContext("config error in " + *from)));
      if (auto st = PublishEtcdMounts(c->cluster.etcd, c->mounts); !st.ok()) return void(*exit_code = Fail(st));
      for (const auto& m : c->mounts) std::printf("published: %s -> %s\n", m.path.c_str(), m.ufs.c_str());
      *exit_code = 0;
    });
  }
  {
    struct Args {
      ClientOptions client;
      std::string path;
      bool recursive = false, data = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("refresh", "Drop cached metadata (and with --data, pages) under a path now");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path or physical URI")->required();
    cmd->add_flag("-r,--recursive", a->recursive, "Everything under the path too");
    cmd->add_flag("--data", a->data, "Drop cached pages as well");
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      auto st = (*c)->Refresh(a->path, a->recursive, a->data);
      if (!st.ok()) return void(*exit_code = Fail(st));
      // Asked after the drop, so the answer is fresh from the under-store: a
      // path that exists nowhere is an error (a typo would otherwise pass).
      auto exists = (*c)->Stat(a->path);
      if (!exists) {
        Status why = exists.error();
        if (why.code() == Code::kNotFound) {
          why = Status(Code::kNotFound, "refresh " + a->path + ": " + why.message() +
                                            " (cached entries were dropped; check the path)");
        }
        return void(*exit_code = Fail(why));
      }
      std::printf("refreshed %s\n", a->path.c_str());
      *exit_code = 0;
    });
  }
  {
    struct Args {
      ClientOptions client;
      bool json = false;
      bool json_lines = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand(
        "status", "Show the ring (membership, version) and each worker: address, up/down, cache use, hit ratio, share");
    AddClientOptions(cmd, &a->client);
    cmd->add_flag("--json", a->json, "The whole status as one JSON document: ring, summary, workers");
    cmd->add_flag("--json-lines", a->json_lines, "One JSON object per worker per line (the workers of --json)");
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      const nlohmann::json doc = ClusterStatusDocument(**c);
      const int down = doc["summary"]["down"].get<int>();
      *exit_code = down == 0 ? 0 : 5;
      if (a->json) return void(std::printf("%s\n", doc.dump().c_str()));
      if (a->json_lines) {
        for (const auto& w : doc["workers"]) std::printf("%s\n", w.dump().c_str());
        return;
      }
      PrintStatus(doc);
    });
  }
}

}  // namespace shoal::cli
