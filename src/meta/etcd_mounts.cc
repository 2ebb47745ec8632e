#include "meta/etcd_mounts.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "cluster/etcd_client.h"
#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {
namespace {

std::string Base(const EtcdConfig& config) { return config.prefix == "/" ? std::string() : config.prefix; }

// The value of a key: a config that holds `m` alone ("mounts: [...]"), its
// options as they are (expanded), so a process elsewhere needs no environment.
std::string MountYaml(MountConfig m) {
  m.written_options.clear();
  Config c;
  c.mounts = {std::move(m)};
  YAML::Node out;
  out["mounts"] = YAML::Load(ToYaml(c))["mounts"];
  YAML::Emitter e;
  e << out;
  return e.c_str();
}

// The mounts of one key's value (a config holding mounts only).
Result<std::vector<MountConfig>> ParseMountYaml(const std::string& value, const std::string& key) {
  auto c = ParseConfig(value, "etcd key " + key);
  if (!c) return Err(c.error());
  return c->mounts;
}

}  // namespace

std::string EtcdMountsPrefix(const EtcdConfig& config) { return Base(config) + "/mounts/"; }
std::string EtcdMountSecretsPrefix(const EtcdConfig& config) { return Base(config) + "/mount-secrets/"; }

bool IsSecretMountOption(const MountConfig& m, const std::string& option) {
  auto uri = ParseUfsUri(m.ufs);
  if (!uri) return true;
  auto table = MountOptionTable(uri->scheme);
  if (!table) return true;
  for (const auto& spec : *table) {
    if (spec.name == option) return spec.kind == OptionKind::kSecret;
  }
  return true;  // not an option of the backend: keep it from clients
}

Status PublishEtcdMounts(const EtcdConfig& config, const std::vector<MountConfig>& mounts) {
  EtcdClient etcd(config);
  for (const auto& m : mounts) {
    MountConfig open = m, secret = m;
    open.options.clear();
    secret.options.clear();
    for (const auto& [k, v] : m.options) (IsSecretMountOption(m, k) ? secret : open).options[k] = v;
    const std::string path = m.path == "/" ? "" : m.path.substr(1);
    const std::string secret_key = EtcdMountSecretsPrefix(config) + path;
    // Secrets first: a worker that sees the mount finds its credentials.
    Status st = secret.options.empty() ? etcd.Delete(secret_key) : etcd.Put(secret_key, MountYaml(secret), 0);
    if (st.ok()) st = etcd.Put(EtcdMountsPrefix(config) + path, MountYaml(open), 0);
    if (!st.ok()) return st.WithContext("publishing mount " + m.path + " in etcd");
  }
  return {};
}

Result<std::vector<MountConfig>> ReadEtcdMounts(const EtcdConfig& config, bool with_secrets, size_t max_mounts) {
  EtcdClient etcd(config);
  auto open = etcd.RangePrefix(EtcdMountsPrefix(config));
  if (!open) return Err(open.error().WithContext("reading the mount table from etcd"));
  std::map<std::string, std::map<std::string, std::string>> secrets;  // mount path -> secret options
  if (with_secrets) {
    auto s = etcd.RangePrefix(EtcdMountSecretsPrefix(config));
    if (!s) return Err(s.error().WithContext("reading the mounts' credentials from etcd"));
    for (const auto& kv : s->kvs) {
      auto ms = ParseMountYaml(kv.value, kv.key);
      if (!ms) {
        spdlog::warn("{} (skipped)", ms.error().ToString());
        continue;
      }
      for (const auto& m : *ms) secrets[m.path].insert(m.options.begin(), m.options.end());
    }
  }
  std::vector<MountConfig> out;
  for (const auto& kv : open->kvs) {
    auto ms = ParseMountYaml(kv.value, kv.key);
    if (!ms || ms->size() != 1) {
      spdlog::warn("etcd key {} is not one mount{} (skipped; write it with `shoal mount publish`)", kv.key,
                   ms ? std::string() : ": " + ms.error().ToString());
      continue;
    }
    MountConfig m = std::move(ms->front());
    if (auto s = secrets.find(m.path); s != secrets.end()) {
      for (const auto& [k, v] : s->second) m.options.emplace(k, v);
    }
    if (out.size() >= max_mounts) {
      spdlog::warn("etcd holds more than {} mounts under {}: the rest are left out", max_mounts,
                   EtcdMountsPrefix(config));
      break;
    }
    out.push_back(std::move(m));
  }
  return out;
}

LiveMountTable::Loader EtcdMountLoader(const EtcdConfig& config, bool with_secrets) {
  if (config.endpoints.empty()) return {};
  return [config, with_secrets] { return ReadEtcdMounts(config, with_secrets); };
}

}  // namespace shoal
