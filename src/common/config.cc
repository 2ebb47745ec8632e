#include "common/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "common/end_user.h"
#include "common/units.h"

namespace shoal {
namespace {

// Reads one YAML mapping, checking that every key is known.
class Reader {
 public:
  Reader(const std::string& source) : source_(source) {}

  Status Fail(const YAML::Node& n, const std::string& key, const std::string& what) const {
    std::string where = source_;
    if (n.IsDefined() && n.Mark().line >= 0) where += ":" + std::to_string(n.Mark().line + 1);
    return Status(Code::kInvalidArgument, "config error at " + where + ": key '" + key + "': " + what);
  }

  Status CheckKeys(const YAML::Node& map, const std::string& prefix, std::initializer_list<const char*> known) const {
    if (!map.IsDefined() || map.IsNull()) return {};
    if (!map.IsMap()) return Fail(map, prefix, "expected a mapping");
    std::set<std::string> ok(known.begin(), known.end());
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) return Fail(kv.first, prefix, "a key must be a plain name, not a list or mapping");
      auto k = kv.first.as<std::string>();
      if (!ok.contains(k)) {
        std::string list;
        for (auto* s : known) list += std::string(list.empty() ? "" : ", ") + s;
        return Fail(kv.first, prefix.empty() ? k : prefix + "." + k, "unknown key (known: " + list + ")");
      }
    }
    return {};
  }

  Status String(const YAML::Node& n, const std::string& key, std::string* out) const {
    if (!n.IsDefined() || n.IsNull()) return {};
    if (!n.IsScalar()) return Fail(n, key, "expected a string");
    *out = n.as<std::string>();
    return {};
  }
  Status Size(const YAML::Node& n, const std::string& key, uint64_t* out) const {
    if (!n.IsDefined() || n.IsNull()) return {};
    if (!n.IsScalar()) return Fail(n, key, "expected a size such as 64MiB");
    auto v = ParseSize(n.as<std::string>());
    if (!v) return Fail(n, key, v.error().message());
    *out = *v;
    return {};
  }
  Status Duration(const YAML::Node& n, const std::string& key, std::chrono::milliseconds* out) const {
    if (!n.IsDefined() || n.IsNull()) return {};
    if (!n.IsScalar()) return Fail(n, key, "expected a duration such as 60s");
    auto v = ParseDuration(n.as<std::string>());
    if (!v) return Fail(n, key, v.error().message());
    *out = *v;
    return {};
  }
  template <typename Int>
  Status Integer(const YAML::Node& n, const std::string& key, Int* out, long long min, long long max) const {
    if (!n.IsDefined() || n.IsNull()) return {};
    long long v = 0;
    try {
      v = n.as<long long>();
    } catch (const YAML::Exception&) {
      return Fail(n, key, "expected an integer");
    }
    if (v < min || v > max) {
      return Fail(n, key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    }
    *out = static_cast<Int>(v);
    return {};
  }
  Status Bool(const YAML::Node& n, const std::string& key, bool* out) const {
    if (!n.IsDefined() || n.IsNull()) return {};
    try {
      *out = n.as<bool>();
    } catch (const YAML::Exception&) {
      return Fail(n, key, "expected true or false");
    }
    return {};
  }

 private:
  const std::string& source_;
};

Status ParseS3(const Reader& r, const YAML::Node& n, S3Config* s3);
Status ParseTls(const Reader& r, const YAML::Node& n, const std::string& key, TlsConfig* out);
Status ParseSecurity(const Reader& r, const YAML::Node& n, SecurityConfig* out);
Status ParseAuthz(const Reader& r, const YAML::Node& n, AuthzConfig* out);
void EmitAuthz(YAML::Emitter& e, const AuthzConfig& a);
Status ParseRules(const Reader& r, const YAML::Node& n, std::vector<PathRule>* rules);

}  // namespace

Result<std::string> ExpandEnvReferences(const std::string& text) {
  std::string out;
  size_t i = 0;
  for (;;) {
    size_t start = text.find("${", i);
    if (start == std::string::npos) return out + text.substr(i);
    out += text.substr(i, start - i);
    size_t end = text.find('}', start + 2);
    std::string name = end == std::string::npos ? "" : text.substr(start + 2, end - start - 2);
    bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
              std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!ok) {
      return Err(Code::kInvalidArgument, "malformed environment reference at '" + text.substr(start, 20) +
                                             "': write ${NAME} with letters, digits and _");
    }
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) {
      return Err(Code::kInvalidArgument, "environment variable " + name + " (referred to as ${" + name +
                                             "}) is not set: export it, or write the value");
    }
    out += v;
    i = end + 1;
  }
}

namespace {

// Every under-store option is a plain name from its scheme's table; anything
// else (control bytes, quotes, non-ASCII) would not read back equal through
// ToYaml, and can only be a typo or a damaged file.
bool IsPlainOptionName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

// A name as an error message can show it: at most 64 bytes, others as '?'.
std::string Printable(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return name.size() > 64 ? out + "..." : out;
}

std::string NormaliseMountPath(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

Status ParseMount(const Reader& r, const YAML::Node& m, size_t i, MountConfig* out) {
  std::string key = "mounts[" + std::to_string(i) + "]";
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(m, key,
                                    {"path", "ufs", "consistency", "ttl", "stale_if_error", "read_only", "write_mode",
                                     "write_back_replicas", "egress_price_per_gb", "options"}));
  SHOAL_RETURN_IF_ERROR(r.String(m["path"], key + ".path", &out->path));
  SHOAL_RETURN_IF_ERROR(r.String(m["ufs"], key + ".ufs", &out->ufs));
  if (out->path.empty() || out->path[0] != '/') return r.Fail(m, key + ".path", "must be an absolute path such as /data");
  if (out->ufs.empty()) return r.Fail(m, key + ".ufs", "missing: give the under-store URI, e.g. file:///srv/datasets/");
  out->path = NormaliseMountPath(out->path);
  std::string mode;
  SHOAL_RETURN_IF_ERROR(r.String(m["consistency"], key + ".consistency", &mode));
  if (!mode.empty()) {
    // "ttl=30s" is accepted as a shorthand for consistency: ttl + ttl: 30s.
    std::string ttl_text;
    if (mode.starts_with("ttl=")) {
      ttl_text = mode.substr(4);
      mode = "ttl";
    }
    if (mode == "immutable") out->consistency = Consistency::kImmutable;
    else if (mode == "ttl") out->consistency = Consistency::kTtl;
    else if (mode == "always") out->consistency = Consistency::kAlways;
    else return r.Fail(m["consistency"], key + ".consistency", "must be immutable, ttl or always, not '" + mode + "'");
    if (!ttl_text.empty()) {
      auto d = ParseDuration(ttl_text);
      if (!d) return r.Fail(m["consistency"], key + ".consistency", d.error().message());
      out->ttl = *d;
    }
  }
  SHOAL_RETURN_IF_ERROR(r.Duration(m["ttl"], key + ".ttl", &out->ttl));
  SHOAL_RETURN_IF_ERROR(r.Duration(m["stale_if_error"], key + ".stale_if_error", &out->stale_if_error));
  SHOAL_RETURN_IF_ERROR(r.Bool(m["read_only"], key + ".read_only", &out->read_only));
  std::string write_mode;
  SHOAL_RETURN_IF_ERROR(r.String(m["write_mode"], key + ".write_mode", &write_mode));
  if (!write_mode.empty()) {
    auto wm = ParseWriteMode(write_mode);
    if (!wm) return r.Fail(m["write_mode"], key + ".write_mode", wm.error().message());
    out->write_mode = *wm;
  }
  SHOAL_RETURN_IF_ERROR(
      r.Integer(m["write_back_replicas"], key + ".write_back_replicas", &out->write_back_replicas, 1, 16));
  std::string price;
  SHOAL_RETURN_IF_ERROR(r.String(m["egress_price_per_gb"], key + ".egress_price_per_gb", &price));
  if (!price.empty()) {
    char* end = nullptr;
    const double v = std::strtod(price.c_str(), &end);
    if (end == price.c_str() || *end != '\0' || !(v >= 0 && v <= 1000)) {
      return r.Fail(m["egress_price_per_gb"], key + ".egress_price_per_gb",
                    "expected a price in USD per GB between 0 and 1000 (e.g. 0.09), not '" + price + "'");
    }
    out->egress_price_per_gb = v;
  }
  const auto& opts = m["options"];
  if (opts.IsDefined() && !opts.IsNull()) {
    if (!opts.IsMap()) return r.Fail(opts, key + ".options", "expected a mapping of option: value");
    for (const auto& kv : opts) {
      if (!kv.first.IsScalar())
        return r.Fail(kv.first, key + ".options", "a key must be a plain name, not a list or mapping");
      const std::string name = kv.first.as<std::string>();
      if (!IsPlainOptionName(name)) {
        return r.Fail(kv.first, key + ".options",
                      "an option name is letters, digits, '_', '-' and '.', not '" + Printable(name) + "'");
      }
      if (!kv.second.IsScalar()) return r.Fail(kv.second, key + ".options." + name, "expected a string");
      const std::string written = kv.second.as<std::string>();
      auto value = ExpandEnvReferences(written);
      if (!value) return r.Fail(kv.second, key + ".options." + name, value.error().message());
      if (*value != written) out->written_options[name] = written;
      out->options[name] = std::move(*value);
    }
  }
  return {};
}

Status ParseEtcd(Reader& r, const YAML::Node& n, EtcdConfig* out) {
  if (!n.IsDefined() || n.IsNull()) return {};
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(
      n, "cluster.etcd", {"endpoints", "prefix", "lease_ttl", "timeout", "ca_file", "cert_file", "key_file"}));
  const auto& eps = n["endpoints"];
  if (eps.IsDefined() && !eps.IsNull()) {
    if (!eps.IsSequence()) return r.Fail(eps, "cluster.etcd.endpoints", "expected a list of URLs like http://127.0.0.1:2379");
    for (const auto& e : eps) {
      std::string url = e.IsScalar() ? e.as<std::string>() : "";
      if (!url.starts_with("http://") && !url.starts_with("https://")) {
        return r.Fail(e, "cluster.etcd.endpoints", "expected a URL like http://127.0.0.1:2379, not '" + url + "'");
      }
      while (url.ends_with("/")) url.pop_back();
      out->endpoints.push_back(std::move(url));
    }
  }
  SHOAL_RETURN_IF_ERROR(r.String(n["prefix"], "cluster.etcd.prefix", &out->prefix));
  while (out->prefix.size() > 1 && out->prefix.ends_with("/")) out->prefix.pop_back();
  if (!out->prefix.starts_with("/")) return r.Fail(n["prefix"], "cluster.etcd.prefix", "must start with '/', e.g. /shoal/prod");
  SHOAL_RETURN_IF_ERROR(r.Duration(n["lease_ttl"], "cluster.etcd.lease_ttl", &out->lease_ttl));
  if (out->lease_ttl < std::chrono::seconds(1)) {
    return r.Fail(n["lease_ttl"], "cluster.etcd.lease_ttl", "must be at least 1s (etcd leases count whole seconds)");
  }
  SHOAL_RETURN_IF_ERROR(r.Duration(n["timeout"], "cluster.etcd.timeout", &out->timeout));
  if (out->timeout.count() <= 0) return r.Fail(n["timeout"], "cluster.etcd.timeout", "must be more than 0, e.g. 5s");
  SHOAL_RETURN_IF_ERROR(r.String(n["ca_file"], "cluster.etcd.ca_file", &out->ca_file));
  SHOAL_RETURN_IF_ERROR(r.String(n["cert_file"], "cluster.etcd.cert_file", &out->cert_file));
  SHOAL_RETURN_IF_ERROR(r.String(n["key_file"], "cluster.etcd.key_file", &out->key_file));
  if (out->cert_file.empty() != out->key_file.empty()) {
    return r.Fail(n, "cluster.etcd",
                  "give both cert_file and key_file (the client certificate etcd asks for), or neither");
  }
  return {};
}

}  // namespace

Result<WorkerEntry> ParseWorkerEntry(std::string_view text) {
  WorkerEntry w;
  auto at = text.find('@');
  std::string_view addr = at == std::string_view::npos ? text : text.substr(at + 1);
  auto colon = addr.rfind(':');
  if (addr.empty() || colon == std::string_view::npos || colon == 0 || colon + 1 == addr.size()) {
    return Err(Code::kInvalidArgument, "'" + std::string(text) + "' is not host:port or id@host:port");
  }
  w.address = std::string(addr);
  w.id = at == std::string_view::npos ? w.address : std::string(text.substr(0, at));
  if (w.id.empty() || w.id.size() > 128) {
    return Err(Code::kInvalidArgument, "worker id in '" + std::string(text) + "' must be 1 to 128 characters");
  }
  for (char ch : w.id) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' || ch == ':' ||
              ch == '[' || ch == ']';
    if (!ok) {
      return Err(Code::kInvalidArgument, "worker id '" + w.id + "' may hold only letters, digits and - _ . : [ ]");
    }
  }
  return w;
}

std::string FormatWorkerEntry(const WorkerEntry& w) { return w.id == w.address ? w.address : w.id + "@" + w.address; }

double EgressPricePerGb(const MountConfig& m) {
  if (m.egress_price_per_gb >= 0) return m.egress_price_per_gb;
  // Reading the store from elsewhere costs egress; a local directory costs nothing.
  return m.ufs.starts_with("file:") ? 0.0 : kDefaultEgressPricePerGb;
}

std::string ListeningLine(const WorkerEntry& w) { return "listening: " + w.address + " id=" + w.id; }

Result<WorkerEntry> ParseListeningLine(std::string_view line) {
  constexpr std::string_view kPrefix = "listening: ";
  auto bad = [&] { return Err(Code::kInternal, "unexpected worker output '" + std::string(line) + "'"); };
  if (!line.starts_with(kPrefix)) return bad();
  line.remove_prefix(kPrefix.size());
  auto sp = line.find(" id=");
  if (sp == std::string_view::npos) return bad();
  return ParseWorkerEntry(std::string(line.substr(sp + 4)) + "@" + std::string(line.substr(0, sp)));
}

std::string_view ConsistencyName(Consistency c) {
  switch (c) {
    case Consistency::kImmutable: return "immutable";
    case Consistency::kTtl: return "ttl";
    case Consistency::kAlways: return "always";
  }
  return "?";
}

Result<WriteMode> ParseWriteMode(std::string_view text) {
  if (text == "through") return WriteMode::kThrough;
  if (text == "cache-through") return WriteMode::kCacheThrough;
  if (text == "write-back") return WriteMode::kWriteBack;
  return Err(Code::kInvalidArgument,
             "must be through, cache-through or write-back, not '" + std::string(text) + "'");
}

std::string_view PriorityName(Priority p) {
  switch (p) {
    case Priority::kLow: return "low";
    case Priority::kMedium: return "medium";
    case Priority::kHigh: return "high";
  }
  return "medium";
}

const std::vector<std::string>& RuleFieldNames() {
  static const std::vector<std::string> names = {"pin",       "priority", "ttl",       "quota",
                                                 "cluster_quota", "admission", "write_mode", "replicas"};
  return names;
}

Status SetRuleField(PathRule* rule, std::string_view field, std::string_view value) {
  const bool unset = value.empty();
  auto bad = [&](const std::string& what) {
    return Status(Code::kInvalidArgument, "rule field '" + std::string(field) + "': " + what + ", not '" +
                                              std::string(value) + "'");
  };
  if (field == "pin") {
    if (unset) rule->pin.reset();
    else if (value == "true" || value == "yes" || value == "on") rule->pin = true;
    else if (value == "false" || value == "no" || value == "off") rule->pin = false;
    else return bad("expected true or false");
  } else if (field == "priority") {
    if (unset) rule->priority.reset();
    else if (value == "low") rule->priority = Priority::kLow;
    else if (value == "medium") rule->priority = Priority::kMedium;
    else if (value == "high") rule->priority = Priority::kHigh;
    else return bad("expected high, medium or low");
  } else if (field == "ttl") {
    if (unset) { rule->ttl.reset(); return {}; }
    auto d = ParseDuration(value);
    if (!d) return Status(Code::kInvalidArgument, "rule field 'ttl': " + d.error().message());  // it names the value
    if (d->count() <= 0) return bad("must be more than 0, e.g. 24h");
    rule->ttl = *d;
  } else if (field == "quota" || field == "cluster_quota") {
    auto& out = field == "quota" ? rule->quota : rule->cluster_quota;
    if (unset) { out.reset(); return {}; }
    auto v = ParseSize(value);
    if (!v) return Status(Code::kInvalidArgument, "rule field '" + std::string(field) + "': " + v.error().message());
    if (*v == 0) return bad("must be more than 0 (use admission: skip to cache nothing)");
    out = *v;
  } else if (field == "admission") {
    if (unset) rule->admit.reset();
    else if (value == "skip") rule->admit = false;
    else if (value == "cache") rule->admit = true;
    else return bad("expected skip (never cache) or cache");
  } else if (field == "write_mode") {
    if (unset) { rule->write_mode.reset(); return {}; }
    auto wm = ParseWriteMode(value);
    if (!wm) return Status(Code::kInvalidArgument, "rule field 'write_mode': " + wm.error().message());
    rule->write_mode = *wm;
  } else if (field == "replicas") {
    if (unset) { rule->replicas.reset(); return {}; }
    int n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 16) return bad("expected 1 to 16");
    rule->replicas = n;
  } else {
    std::string list;
    for (const auto& f : RuleFieldNames()) list += (list.empty() ? "" : ", ") + f;
    return Status(Code::kInvalidArgument, "unknown rule field '" + std::string(field) + "' (known: path, " + list + ")");
  }
  return {};
}

namespace {
// A size that ParseSize reads back exactly: "10GiB", "1536KiB", "1000".
std::string ExactSize(uint64_t bytes) {
  static const char* kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    const uint64_t unit = 1ull << (10 * (4 - i));
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[i];
  }
  return std::to_string(bytes);
}
}  // namespace

std::vector<std::string> FormatRuleFields(const PathRule& r) {
  std::vector<std::string> out;
  if (r.pin) out.push_back(std::string("pin=") + (*r.pin ? "true" : "false"));
  if (r.priority) out.push_back("priority=" + std::string(PriorityName(*r.priority)));
  if (r.ttl) out.push_back("ttl=" + FormatDuration(*r.ttl));
  if (r.quota) out.push_back("quota=" + ExactSize(*r.quota));
  if (r.cluster_quota) out.push_back("cluster_quota=" + ExactSize(*r.cluster_quota));
  if (r.admit) out.push_back(std::string("admission=") + (*r.admit ? "cache" : "skip"));
  if (r.write_mode) out.push_back("write_mode=" + std::string(WriteModeName(*r.write_mode)));
  if (r.replicas) out.push_back("replicas=" + std::to_string(*r.replicas));
  return out;
}

std::string_view WriteModeName(WriteMode m) {
  switch (m) {
    case WriteMode::kThrough: return "through";
    case WriteMode::kCacheThrough: return "cache-through";
    case WriteMode::kWriteBack: return "write-back";
  }
  return "?";
}

Result<Config> ParseConfig(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return Err(Code::kInvalidArgument,
               "config error at " + source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  Config c;
  c.source = source;
  if (!root.IsDefined() || root.IsNull()) return c;
  Reader r(source);
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(
      root, "", {"cluster", "mounts", "worker", "client", "s3", "rules", "tls", "security", "authz", "log"}));

  const auto& cl = root["cluster"];
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(cl, "cluster", {"workers", "shard_size", "etcd", "secret"}));
  if (cl.IsDefined() && cl["workers"].IsDefined() && !cl["workers"].IsNull()) {
    if (!cl["workers"].IsSequence()) {
      return Err(r.Fail(cl["workers"], "cluster.workers", "expected a list of host:port or id@host:port"));
    }
    for (const auto& w : cl["workers"]) {
      if (!w.IsScalar()) return Err(r.Fail(w, "cluster.workers", "expected host:port or id@host:port"));
      auto e = ParseWorkerEntry(w.as<std::string>());
      if (!e) return Err(r.Fail(w, "cluster.workers", e.error().message()));
      for (const auto& prev : c.cluster.workers) {
        if (prev.id == e->id) return Err(r.Fail(w, "cluster.workers", "worker id '" + e->id + "' is listed twice"));
      }
      c.cluster.workers.push_back(std::move(*e));
    }
  }
  if (cl.IsDefined()) SHOAL_RETURN_IF_ERROR(r.Size(cl["shard_size"], "cluster.shard_size", &c.cluster.shard_size));
  if (cl.IsDefined()) SHOAL_RETURN_IF_ERROR(ParseEtcd(r, cl["etcd"], &c.cluster.etcd));
  if (cl.IsDefined()) {
    SHOAL_RETURN_IF_ERROR(r.String(cl["secret"], "cluster.secret", &c.cluster.secret_written));
    auto expanded = ExpandEnvReferences(c.cluster.secret_written);
    if (!expanded) return Err(r.Fail(cl["secret"], "cluster.secret", expanded.error().message()));
    c.cluster.secret = std::move(*expanded);
    if (!c.cluster.secret.empty() && c.cluster.secret.size() < 16) {
      return Err(r.Fail(cl["secret"], "cluster.secret", "too short: give at least 16 characters (e.g. openssl rand -hex 16)"));
    }
    for (unsigned char ch : c.cluster.secret) {
      if (ch <= ' ' || ch >= 0x7f) {
        return Err(r.Fail(cl["secret"], "cluster.secret", "may hold only printable ASCII without spaces"));
      }
    }
  }

  const auto& ms = root["mounts"];
  if (ms.IsDefined() && !ms.IsNull()) {
    if (!ms.IsSequence()) return Err(r.Fail(ms, "mounts", "expected a list of {path, ufs}"));
    for (size_t i = 0; i < ms.size(); ++i) {
      MountConfig m;
      SHOAL_RETURN_IF_ERROR(ParseMount(r, ms[i], i, &m));
      c.mounts.push_back(std::move(m));
    }
  }

  const auto& w = root["worker"];
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(w, "worker",
                                    {"listen",
                                     "id",
                                     "page_size",
                                     "cache_dirs",
                                     "io_threads",
                                     "ufs_threads",
                                     "ufs_max_concurrency",
                                     "readahead",
                                     "metadata_entries",
                                     "local_socket",
                                     "header_timeout",
                                     "idle_timeout",
                                     "write_timeout",
                                     "heartbeat_interval",
                                     "max_connections",
                                     "verify_checksums",
                                     "verify",
                                     "scrub_rate",
                                     "scrub_interval",
                                     "eviction",
                                     "s3_listen",
                                     "body_read_timeout",
                                     "write_back_max_pending",
                                     "write_back_takeover",
                                     "peer_fetch",
                                     "advertise",
                                     "page_store",
                                     "hot_shard_rps",
                                     "hot_shard_window",
                                     "eviction_high_watermark",
                                     "eviction_low_watermark",
                                     "metrics_listen"}));
  if (w.IsDefined() && !w.IsNull()) {
    SHOAL_RETURN_IF_ERROR(r.String(w["listen"], "worker.listen", &c.worker.listen));
    SHOAL_RETURN_IF_ERROR(r.String(w["id"], "worker.id", &c.worker.id));
    if (!c.worker.id.empty()) {
      if (auto e = ParseWorkerEntry(c.worker.id + "@127.0.0.1:1"); !e) return Err(r.Fail(w["id"], "worker.id", e.error().message()));
    }
    SHOAL_RETURN_IF_ERROR(r.Size(w["page_size"], "worker.page_size", &c.worker.page_size));
    SHOAL_RETURN_IF_ERROR(r.Integer(w["io_threads"], "worker.io_threads", &c.worker.io_threads, 1, 256));
    SHOAL_RETURN_IF_ERROR(r.Integer(w["ufs_threads"], "worker.ufs_threads", &c.worker.ufs_threads, 1, 1024));
    SHOAL_RETURN_IF_ERROR(
        r.Integer(w["ufs_max_concurrency"], "worker.ufs_max_concurrency", &c.worker.ufs_max_concurrency, 1, 4096));
    SHOAL_RETURN_IF_ERROR(r.Size(w["readahead"], "worker.readahead", &c.worker.readahead));
    SHOAL_RETURN_IF_ERROR(r.String(w["local_socket"], "worker.local_socket", &c.worker.local_socket));
    bool verify_checksums = true;
    SHOAL_RETURN_IF_ERROR(r.Bool(w["verify_checksums"], "worker.verify_checksums", &verify_checksums));
    if (!verify_checksums) c.worker.verify = "off";
    SHOAL_RETURN_IF_ERROR(r.String(w["verify"], "worker.verify", &c.worker.verify));
    if (c.worker.verify != "once" && c.worker.verify != "always" && c.worker.verify != "off") {
      return Err(r.Fail(w["verify"], "worker.verify", "must be once, always or off"));
    }
    SHOAL_RETURN_IF_ERROR(r.Size(w["scrub_rate"], "worker.scrub_rate", &c.worker.scrub_rate));
    SHOAL_RETURN_IF_ERROR(r.Duration(w["scrub_interval"], "worker.scrub_interval", &c.worker.scrub_interval));
    SHOAL_RETURN_IF_ERROR(r.Bool(w["peer_fetch"], "worker.peer_fetch", &c.worker.peer_fetch));
    SHOAL_RETURN_IF_ERROR(r.String(w["advertise"], "worker.advertise", &c.worker.advertise));
    SHOAL_RETURN_IF_ERROR(
        r.Integer(w["hot_shard_rps"], "worker.hot_shard_rps", &c.worker.hot_shard_rps, 0, 1'000'000'000));
    SHOAL_RETURN_IF_ERROR(r.Duration(w["hot_shard_window"], "worker.hot_shard_window", &c.worker.hot_shard_window));
    if (c.worker.hot_shard_window.count() <= 0) {
      return Err(r.Fail(w["hot_shard_window"], "worker.hot_shard_window", "must be more than 0, e.g. 1s"));
    }
    SHOAL_RETURN_IF_ERROR(r.String(w["eviction"], "worker.eviction", &c.worker.eviction));
    SHOAL_RETURN_IF_ERROR(r.Integer(w["eviction_high_watermark"], "worker.eviction_high_watermark",
                                    &c.worker.eviction_high_watermark, 0, 100));
    SHOAL_RETURN_IF_ERROR(r.Integer(w["eviction_low_watermark"], "worker.eviction_low_watermark",
                                    &c.worker.eviction_low_watermark, 0, 99));
    if (c.worker.eviction_high_watermark > 0 && c.worker.eviction_low_watermark >= c.worker.eviction_high_watermark) {
      return Err(r.Fail(w["eviction_low_watermark"], "worker.eviction_low_watermark",
                        "must be below worker.eviction_high_watermark (" +
                            std::to_string(c.worker.eviction_high_watermark) + "), e.g. 90 against 95"));
    }
    SHOAL_RETURN_IF_ERROR(r.String(w["s3_listen"], "worker.s3_listen", &c.worker.s3_listen));
    SHOAL_RETURN_IF_ERROR(r.String(w["metrics_listen"], "worker.metrics_listen", &c.worker.metrics_listen));
    SHOAL_RETURN_IF_ERROR(r.String(w["page_store"], "worker.page_store", &c.worker.page_store));
    if (c.worker.page_store != "files" && c.worker.page_store != "blocks") {
      return Err(r.Fail(w["page_store"], "worker.page_store", "must be files or blocks"));
    }
    SHOAL_RETURN_IF_ERROR(
        r.Size(w["write_back_max_pending"], "worker.write_back_max_pending", &c.worker.write_back_max_pending));
    SHOAL_RETURN_IF_ERROR(
        r.Duration(w["write_back_takeover"], "worker.write_back_takeover", &c.worker.write_back_takeover));
    SHOAL_RETURN_IF_ERROR(
        r.Integer(w["metadata_entries"], "worker.metadata_entries", &c.worker.metadata_entries, 16, 1'000'000'000));
    for (auto [key, out] : {std::pair{"header_timeout", &c.worker.header_timeout},
                            std::pair{"idle_timeout", &c.worker.idle_timeout},
                            std::pair{"write_timeout", &c.worker.write_timeout},
                            std::pair{"body_read_timeout", &c.worker.body_read_timeout},
                            std::pair{"heartbeat_interval", &c.worker.heartbeat_interval}}) {
      std::string name = std::string("worker.") + key;
      SHOAL_RETURN_IF_ERROR(r.Duration(w[key], name, out));
      if (out->count() <= 0) return Err(r.Fail(w[key], name, "must be more than 0, e.g. 10s"));
    }
    SHOAL_RETURN_IF_ERROR(
        r.Integer(w["max_connections"], "worker.max_connections", &c.worker.max_connections, 0, 100'000'000));
    const auto& dirs = w["cache_dirs"];
    if (dirs.IsDefined() && !dirs.IsNull()) {
      if (!dirs.IsSequence()) return Err(r.Fail(dirs, "worker.cache_dirs", "expected a list of {path, capacity}"));
      for (size_t i = 0; i < dirs.size(); ++i) {
        std::string key = "worker.cache_dirs[" + std::to_string(i) + "]";
        SHOAL_RETURN_IF_ERROR(r.CheckKeys(dirs[i], key, {"path", "capacity"}));
        CacheDirConfig d;
        SHOAL_RETURN_IF_ERROR(r.String(dirs[i]["path"], key + ".path", &d.path));
        SHOAL_RETURN_IF_ERROR(r.Size(dirs[i]["capacity"], key + ".capacity", &d.capacity));
        if (d.path.empty()) return Err(r.Fail(dirs[i], key + ".path", "missing"));
        if (d.capacity == 0) return Err(r.Fail(dirs[i], key + ".capacity", "missing or zero: give a size such as 10GiB"));
        c.worker.cache_dirs.push_back(std::move(d));
      }
    }
  }

  const auto& cc = root["client"];
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(
      cc, "client",
      {"timeout", "connect_timeout", "response_timeout", "ufs_fallback", "readahead", "max_parallel", "down_backoff",
       "short_circuit", "verify_checksums", "fallback_rate", "fallback_requests", "tls", "token_file"}));
  if (cc.IsDefined() && !cc.IsNull()) {
    SHOAL_RETURN_IF_ERROR(r.Duration(cc["timeout"], "client.timeout", &c.client.timeout));
    SHOAL_RETURN_IF_ERROR(r.Duration(cc["connect_timeout"], "client.connect_timeout", &c.client.connect_timeout));
    SHOAL_RETURN_IF_ERROR(r.Duration(cc["response_timeout"], "client.response_timeout", &c.client.response_timeout));
    SHOAL_RETURN_IF_ERROR(r.Bool(cc["ufs_fallback"], "client.ufs_fallback", &c.client.ufs_fallback));
    SHOAL_RETURN_IF_ERROR(r.Size(cc["readahead"], "client.readahead", &c.client.readahead));
    SHOAL_RETURN_IF_ERROR(r.Integer(cc["max_parallel"], "client.max_parallel", &c.client.max_parallel, 1, 256));
    SHOAL_RETURN_IF_ERROR(r.Duration(cc["down_backoff"], "client.down_backoff", &c.client.down_backoff));
    SHOAL_RETURN_IF_ERROR(r.Bool(cc["short_circuit"], "client.short_circuit", &c.client.short_circuit));
    SHOAL_RETURN_IF_ERROR(r.Bool(cc["verify_checksums"], "client.verify_checksums", &c.client.verify_checksums));
    SHOAL_RETURN_IF_ERROR(r.Size(cc["fallback_rate"], "client.fallback_rate", &c.client.fallback_rate));
    SHOAL_RETURN_IF_ERROR(
        r.Integer(cc["fallback_requests"], "client.fallback_requests", &c.client.fallback_requests, 0, 1'000'000));
    SHOAL_RETURN_IF_ERROR(ParseTls(r, cc["tls"], "client.tls", &c.client.tls));
    SHOAL_RETURN_IF_ERROR(r.String(cc["token_file"], "client.token_file", &c.client.token_file));
  }
  SHOAL_RETURN_IF_ERROR(ParseTls(r, root["tls"], "tls", &c.tls));
  SHOAL_RETURN_IF_ERROR(ParseSecurity(r, root["security"], &c.security));
  SHOAL_RETURN_IF_ERROR(ParseAuthz(r, root["authz"], &c.authz));
  if (const YAML::Node log = root["log"]; log.IsDefined() && !log.IsNull()) {
    SHOAL_RETURN_IF_ERROR(r.CheckKeys(log, "log", {"format"}));
    SHOAL_RETURN_IF_ERROR(r.String(log["format"], "log.format", &c.log.format));
    if (c.log.format != "text" && c.log.format != "json") {
      SHOAL_RETURN_IF_ERROR(r.Fail(log["format"], "log.format", "expected text or json, got '" + c.log.format + "'"));
    }
  }
  SHOAL_RETURN_IF_ERROR(ParseS3(r, root["s3"], &c.s3));
  SHOAL_RETURN_IF_ERROR(ParseRules(r, root["rules"], &c.rules));
  SHOAL_RETURN_IF_ERROR(Validate(c));
  return c;
}

namespace {

Status StringMap(const Reader& r, const YAML::Node& n, const std::string& key, bool expand,
                 std::map<std::string, std::string>* out) {
  if (!n.IsDefined() || n.IsNull()) return {};
  if (!n.IsMap()) return r.Fail(n, key, "expected a mapping of name: value");
  for (const auto& kv : n) {
    if (!kv.second.IsScalar()) return r.Fail(kv.second, key, "expected a string value");
    std::string v = kv.second.as<std::string>();
    if (expand) {
      auto e = ExpandEnvReferences(v);
      if (!e) return r.Fail(kv.second, key, e.error().message());
      v = *e;
    }
    if (!kv.first.IsScalar()) return r.Fail(kv.first, key, "a key must be a plain name, not a list or mapping");
    (*out)[kv.first.as<std::string>()] = v;
  }
  return {};
}

Status StringList(const Reader& r, const YAML::Node& n, const std::string& key, std::vector<std::string>* out) {
  if (!n.IsDefined() || n.IsNull()) return {};
  if (!n.IsSequence()) return r.Fail(n, key, "expected a list of strings");
  for (const auto& v : n) {
    if (!v.IsScalar()) return r.Fail(v, key, "expected a string");
    out->push_back(v.as<std::string>());
  }
  return {};
}

Status ParseTls(const Reader& r, const YAML::Node& n, const std::string& key, TlsConfig* out) {
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(n, key, {"cert_file", "key_file", "ca_file", "client_auth", "enabled"}));
  if (!n.IsDefined() || n.IsNull()) return {};
  SHOAL_RETURN_IF_ERROR(r.String(n["cert_file"], key + ".cert_file", &out->cert_file));
  SHOAL_RETURN_IF_ERROR(r.String(n["key_file"], key + ".key_file", &out->key_file));
  SHOAL_RETURN_IF_ERROR(r.String(n["ca_file"], key + ".ca_file", &out->ca_file));
  SHOAL_RETURN_IF_ERROR(r.String(n["client_auth"], key + ".client_auth", &out->client_auth));
  SHOAL_RETURN_IF_ERROR(r.Bool(n["enabled"], key + ".enabled", &out->enabled));
  if (out->client_auth != "none" && out->client_auth != "optional" && out->client_auth != "required") {
    return r.Fail(n["client_auth"], key + ".client_auth",
                  "expected none, optional or required, not '" + out->client_auth + "'");
  }
  if (out->cert_file.empty() != out->key_file.empty()) {
    return r.Fail(n, key, "give cert_file and key_file together");
  }
  return {};
}

Status ParseSecurity(const Reader& r, const YAML::Node& n, SecurityConfig* out) {
  SHOAL_RETURN_IF_ERROR(
      r.CheckKeys(n, "security", {"required", "token_key_file", "previous_token_key_files", "proxy_users"}));
  if (!n.IsDefined() || n.IsNull()) return {};
  SHOAL_RETURN_IF_ERROR(r.Bool(n["required"], "security.required", &out->required));
  SHOAL_RETURN_IF_ERROR(r.String(n["token_key_file"], "security.token_key_file", &out->token_key_file));
  SHOAL_RETURN_IF_ERROR(StringList(r, n["previous_token_key_files"], "security.previous_token_key_files",
                                   &out->previous_token_key_files));
  SHOAL_RETURN_IF_ERROR(StringList(r, n["proxy_users"], "security.proxy_users", &out->proxy_users));
  return {};
}

Status ParseAuthz(const Reader& r, const YAML::Node& n, AuthzConfig* out) {
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(n, "authz",
                                    {"policy_file", "ranger_url", "ranger_service", "ranger_user", "ranger_password",
                                     "policy_cache", "poll_interval", "fallback", "audit", "audit_failure",
                                     "audit_file", "audit_max_bytes", "audit_keep", "admin_groups", "status_open"}));
  if (!n.IsDefined() || n.IsNull()) return {};
  for (auto [k, v] :
       {std::pair{"policy_file", &out->policy_file}, std::pair{"ranger_url", &out->ranger_url},
        std::pair{"ranger_service", &out->ranger_service}, std::pair{"ranger_user", &out->ranger_user},
        std::pair{"ranger_password", &out->ranger_password}, std::pair{"policy_cache", &out->policy_cache},
        std::pair{"fallback", &out->fallback}, std::pair{"audit", &out->audit},
        std::pair{"audit_failure", &out->audit_failure}, std::pair{"audit_file", &out->audit_file}}) {
    SHOAL_RETURN_IF_ERROR(r.String(n[k], std::string("authz.") + k, v));
  }
  auto password = ExpandEnvReferences(out->ranger_password);
  if (!password) return r.Fail(n["ranger_password"], "authz.ranger_password", password.error().message());
  out->ranger_password = *password;
  SHOAL_RETURN_IF_ERROR(r.Duration(n["poll_interval"], "authz.poll_interval", &out->poll_interval));
  SHOAL_RETURN_IF_ERROR(r.Size(n["audit_max_bytes"], "authz.audit_max_bytes", &out->audit_max_bytes));
  SHOAL_RETURN_IF_ERROR(r.Integer(n["audit_keep"], "authz.audit_keep", &out->audit_keep, 1, 1000));
  SHOAL_RETURN_IF_ERROR(StringList(r, n["admin_groups"], "authz.admin_groups", &out->admin_groups));
  SHOAL_RETURN_IF_ERROR(r.Bool(n["status_open"], "authz.status_open", &out->status_open));
  auto one_of = [&](const char* key, const std::string& v, std::initializer_list<const char*> allowed) -> Status {
    for (const char* a : allowed) {
      if (v == a) return {};
    }
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : " | ") + std::string(a);
    return r.Fail(n[key], std::string("authz.") + key, "expected " + list + ", not '" + v + "'");
  };
  SHOAL_RETURN_IF_ERROR(one_of("fallback", out->fallback, {"deny", "allow"}));
  SHOAL_RETURN_IF_ERROR(one_of("audit", out->audit, {"all", "deny", "off"}));
  SHOAL_RETURN_IF_ERROR(one_of("audit_failure", out->audit_failure, {"deny", "allow"}));
  if (!out->ranger_url.empty() && out->ranger_service.empty()) {
    return r.Fail(n, "authz", "ranger_url needs ranger_service (the service whose policies to download)");
  }
  if (out->poll_interval < std::chrono::seconds(1)) {
    return r.Fail(n["poll_interval"], "authz.poll_interval", "at least 1s");
  }
  return {};
}

void EmitAuthz(YAML::Emitter& e, const AuthzConfig& a) {
  if (a == AuthzConfig{}) return;
  const AuthzConfig d;
  e << YAML::Key << "authz" << YAML::Value << YAML::BeginMap;
  for (auto [k, v, dv] :
       {std::tuple{"policy_file", &a.policy_file, &d.policy_file},
        std::tuple{"ranger_url", &a.ranger_url, &d.ranger_url},
        std::tuple{"ranger_service", &a.ranger_service, &d.ranger_service},
        std::tuple{"ranger_user", &a.ranger_user, &d.ranger_user},
        std::tuple{"ranger_password", &a.ranger_password, &d.ranger_password},
        std::tuple{"policy_cache", &a.policy_cache, &d.policy_cache}, std::tuple{"fallback", &a.fallback, &d.fallback},
        std::tuple{"audit", &a.audit, &d.audit}, std::tuple{"audit_failure", &a.audit_failure, &d.audit_failure},
        std::tuple{"audit_file", &a.audit_file, &d.audit_file}}) {
    if (*v != *dv) e << YAML::Key << k << YAML::Value << *v;
  }
  if (a.poll_interval != d.poll_interval) {
    e << YAML::Key << "poll_interval" << YAML::Value << (std::to_string(a.poll_interval.count()) + "ms");
  }
  if (a.audit_max_bytes != d.audit_max_bytes) e << YAML::Key << "audit_max_bytes" << YAML::Value << a.audit_max_bytes;
  if (a.audit_keep != d.audit_keep) e << YAML::Key << "audit_keep" << YAML::Value << a.audit_keep;
  if (!a.admin_groups.empty()) {
    e << YAML::Key << "admin_groups" << YAML::Value << YAML::BeginSeq;
    for (const auto& g : a.admin_groups) e << g;
    e << YAML::EndSeq;
  }
  if (a.status_open != d.status_open) e << YAML::Key << "status_open" << YAML::Value << a.status_open;
  e << YAML::EndMap;
}

void EmitTls(YAML::Emitter& e, const char* key, const TlsConfig& t) {
  if (t == TlsConfig{}) return;
  e << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (auto [k, v] :
       {std::pair{"cert_file", &t.cert_file}, std::pair{"key_file", &t.key_file}, std::pair{"ca_file", &t.ca_file}}) {
    if (!v->empty()) e << YAML::Key << k << YAML::Value << *v;
  }
  if (t.client_auth != "none") e << YAML::Key << "client_auth" << YAML::Value << t.client_auth;
  if (t.enabled) e << YAML::Key << "enabled" << YAML::Value << true;
  e << YAML::EndMap;
}

void EmitSecurity(YAML::Emitter& e, const SecurityConfig& s) {
  if (s == SecurityConfig{}) return;
  e << YAML::Key << "security" << YAML::Value << YAML::BeginMap;
  if (s.required) e << YAML::Key << "required" << YAML::Value << true;
  if (!s.token_key_file.empty()) e << YAML::Key << "token_key_file" << YAML::Value << s.token_key_file;
  for (auto [k, list] :
       {std::pair{"previous_token_key_files", &s.previous_token_key_files}, std::pair{"proxy_users", &s.proxy_users}}) {
    if (list->empty()) continue;
    e << YAML::Key << k << YAML::Value << YAML::BeginSeq;
    for (const auto& v : *list) e << v;
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
}

Status ParseS3Users(const Reader& r, const YAML::Node& n, std::map<std::string, S3User>* users) {
  if (!n.IsDefined() || n.IsNull()) return {};
  if (!n.IsMap()) return r.Fail(n, "s3.users", "expected a mapping of user: {access_key, secret_key, groups}");
  std::set<std::string> keys;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) return r.Fail(kv.first, "s3.users", "a key must be a plain name, not a list or mapping");
    const std::string name = kv.first.as<std::string>();
    const std::string key = "s3.users." + name;
    if (!IsHeaderSafeName(name)) return r.Fail(kv.first, key, "a user name is 1-256 letters, digits or ._@-+=$\\");
    SHOAL_RETURN_IF_ERROR(r.CheckKeys(kv.second, key, {"access_key", "secret_key", "groups"}));
    if (!kv.second.IsMap()) return r.Fail(kv.second, key, "expected {access_key, secret_key, groups}");
    S3User u;
    SHOAL_RETURN_IF_ERROR(r.String(kv.second["access_key"], key + ".access_key", &u.access_key));
    SHOAL_RETURN_IF_ERROR(r.String(kv.second["secret_key"], key + ".secret_key", &u.secret_key));
    auto secret = ExpandEnvReferences(u.secret_key);
    if (!secret) return r.Fail(kv.second["secret_key"], key + ".secret_key", secret.error().message());
    u.secret_key = *secret;
    if (u.access_key.empty() || u.secret_key.empty()) {
      return r.Fail(kv.second, key, "needs both access_key and secret_key");
    }
    if (!keys.insert(u.access_key).second) {
      return r.Fail(kv.second["access_key"], key + ".access_key",
                    "the access key " + u.access_key + " belongs to another user too");
    }
    SHOAL_RETURN_IF_ERROR(StringList(r, kv.second["groups"], key + ".groups", &u.groups));
    for (const auto& g : u.groups) {
      if (!IsHeaderSafeName(g)) return r.Fail(kv.second["groups"], key + ".groups", "'" + g + "' is not a group name");
    }
    (*users)[name] = std::move(u);
  }
  return {};
}

Status ParseS3(const Reader& r, const YAML::Node& n, S3Config* s3) {
  SHOAL_RETURN_IF_ERROR(r.CheckKeys(n, "s3",
                                    {"listen", "region", "credentials", "credentials_file", "buckets", "public_buckets",
                                     "max_clock_skew", "staging_dir", "mode", "client_config", "users"}));
  if (!n.IsDefined() || n.IsNull()) return {};
  SHOAL_RETURN_IF_ERROR(ParseS3Users(r, n["users"], &s3->users));
  SHOAL_RETURN_IF_ERROR(r.String(n["listen"], "s3.listen", &s3->listen));
  SHOAL_RETURN_IF_ERROR(r.String(n["region"], "s3.region", &s3->region));
  SHOAL_RETURN_IF_ERROR(StringMap(r, n["credentials"], "s3.credentials", true, &s3->credentials));
  SHOAL_RETURN_IF_ERROR(r.String(n["credentials_file"], "s3.credentials_file", &s3->credentials_file));
  SHOAL_RETURN_IF_ERROR(r.String(n["staging_dir"], "s3.staging_dir", &s3->staging_dir));
  SHOAL_RETURN_IF_ERROR(r.String(n["mode"], "s3.mode", &s3->mode));
  if (s3->mode != "proxy" && s3->mode != "redirect") {
    return r.Fail(n["mode"], "s3.mode", "expected proxy (the default) or redirect, not '" + s3->mode + "'");
  }
  SHOAL_RETURN_IF_ERROR(r.String(n["client_config"], "s3.client_config", &s3->client_config));
  SHOAL_RETURN_IF_ERROR(StringMap(r, n["buckets"], "s3.buckets", false, &s3->buckets));
  const auto& pb = n["public_buckets"];
  if (pb.IsDefined() && !pb.IsNull()) {
    if (!pb.IsSequence()) return r.Fail(pb, "s3.public_buckets", "expected a list of bucket names");
    for (const auto& b : pb) {
      if (!b.IsScalar()) return r.Fail(b, "s3.public_buckets", "expected a bucket name");
      s3->public_buckets.push_back(b.as<std::string>());
    }
  }
  return r.Duration(n["max_clock_skew"], "s3.max_clock_skew", &s3->max_clock_skew);
}

Status ParseRules(const Reader& r, const YAML::Node& n, std::vector<PathRule>* rules) {
  if (!n.IsDefined() || n.IsNull()) return {};
  if (!n.IsSequence()) return r.Fail(n, "rules", "expected a list of {path, pin, priority, ttl, quota, ...}");
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string key = "rules[" + std::to_string(i) + "]";
    const auto& item = n[i];
    if (!item.IsMap()) return r.Fail(item, key, "expected a mapping such as {path: /data/val, pin: true}");
    PathRule rule;
    for (const auto& kv : item) {
      if (!kv.first.IsScalar()) return r.Fail(kv.first, key, "a key must be a plain name, not a list or mapping");
      const auto field = kv.first.as<std::string>();
      if (!kv.second.IsScalar()) return r.Fail(kv.second, key + "." + field, "expected a single value");
      const auto value = kv.second.as<std::string>();
      if (field == "path") {
        if (value.empty() || value[0] != '/') return r.Fail(kv.second, key + ".path", "must be an absolute path such as /data/val");
        rule.path = NormaliseMountPath(value);
        continue;
      }
      if (auto st = SetRuleField(&rule, field, value); !st.ok()) return r.Fail(kv.second, key + "." + field, st.message());
    }
    if (rule.path.empty()) return r.Fail(item, key + ".path", "missing: give the namespace prefix, e.g. /data/val");
    if (rule == EmptyRule(rule.path)) return r.Fail(item, key, "sets nothing: give at least one of the rule fields");
    for (const auto& prev : *rules) {
      if (prev.path == rule.path) return r.Fail(item, key + ".path", "'" + rule.path + "' has two rules: merge them into one");
    }
    rules->push_back(std::move(rule));
  }
  std::sort(rules->begin(), rules->end(), [](const PathRule& a, const PathRule& b) { return a.path < b.path; });
  return {};
}

}  // namespace

Status Validate(const Config& c) {
  const std::string where = "config error in " + (c.source.empty() ? std::string("config") : c.source) + ": ";
  auto& p = c.worker.page_size;
  if (p < 4096 || p > (64ull << 20) || (p & (p - 1)) != 0) {
    return Status(Code::kInvalidArgument, where + "key 'worker.page_size': must be a power of two between 4KiB and 64MiB");
  }
  if (c.cluster.shard_size < p || c.cluster.shard_size % p != 0) {
    return Status(Code::kInvalidArgument,
                  where + "key 'cluster.shard_size': must be a multiple of worker.page_size (" + FormatSize(p) + ")");
  }
  for (size_t i = 0; i < c.mounts.size(); ++i) {
    for (size_t j = 0; j < c.mounts.size(); ++j) {
      if (i == j) continue;
      const auto& a = c.mounts[i].path;
      const auto& b = c.mounts[j].path;
      bool nested = a == b || a == "/" || (b.starts_with(a) && b.size() > a.size() && b[a.size()] == '/');
      if (nested) {
        return Status(Code::kInvalidArgument, where + "key 'mounts': mount '" + b + "' is " +
                                                  (a == b ? "listed twice" : "nested inside mount '" + a + "'") +
                                                  "; mounts cannot nest");
      }
    }
  }
  return {};
}

Result<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Err(Code::kInvalidArgument, "cannot read config file '" + path + "': " + std::strerror(errno) +
                                           " (give --config FILE or set SHOAL_CONFIG)");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

std::string ToYaml(const Config& c) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "shard_size" << YAML::Value << std::to_string(c.cluster.shard_size);
  e << YAML::Key << "workers" << YAML::Value << YAML::BeginSeq;
  for (const auto& w : c.cluster.workers) e << FormatWorkerEntry(w);
  e << YAML::EndSeq;
  if (!c.cluster.etcd.endpoints.empty()) {
    e << YAML::Key << "etcd" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "endpoints" << YAML::Value << YAML::BeginSeq;
    for (const auto& u : c.cluster.etcd.endpoints) e << u;
    e << YAML::EndSeq;
    e << YAML::Key << "prefix" << YAML::Value << c.cluster.etcd.prefix;
    e << YAML::Key << "lease_ttl" << YAML::Value << FormatDuration(c.cluster.etcd.lease_ttl);
    e << YAML::Key << "timeout" << YAML::Value << FormatDuration(c.cluster.etcd.timeout);
    for (auto [k, v] :
         {std::pair{"ca_file", &c.cluster.etcd.ca_file}, std::pair{"cert_file", &c.cluster.etcd.cert_file},
          std::pair{"key_file", &c.cluster.etcd.key_file}}) {
      if (!v->empty()) e << YAML::Key << k << YAML::Value << *v;
    }
    e << YAML::EndMap;
  }
  if (!c.cluster.secret.empty()) {
    e << YAML::Key << "secret" << YAML::Value
      << (c.cluster.secret_written.empty() ? c.cluster.secret : c.cluster.secret_written);
  }
  e << YAML::EndMap;
  e << YAML::Key << "mounts" << YAML::Value << YAML::BeginSeq;
  for (const auto& m : c.mounts) {
    e << YAML::BeginMap;
    e << YAML::Key << "path" << YAML::Value << m.path;
    e << YAML::Key << "ufs" << YAML::Value << m.ufs;
    e << YAML::Key << "consistency" << YAML::Value << std::string(ConsistencyName(m.consistency));
    e << YAML::Key << "ttl" << YAML::Value << FormatDuration(m.ttl);
    e << YAML::Key << "stale_if_error" << YAML::Value << FormatDuration(m.stale_if_error);
    e << YAML::Key << "read_only" << YAML::Value << m.read_only;
    e << YAML::Key << "write_mode" << YAML::Value << std::string(WriteModeName(m.write_mode));
    if (m.write_back_replicas != MountConfig{}.write_back_replicas)
      e << YAML::Key << "write_back_replicas" << YAML::Value << m.write_back_replicas;
    if (m.egress_price_per_gb >= 0) e << YAML::Key << "egress_price_per_gb" << YAML::Value << m.egress_price_per_gb;
    if (!m.options.empty()) {
      e << YAML::Key << "options" << YAML::Value << YAML::BeginMap;
      for (const auto& [k, v] : m.options) {
        auto written = m.written_options.find(k);
        e << YAML::Key << k << YAML::Value << (written != m.written_options.end() ? written->second : v);
      }
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "worker" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "listen" << YAML::Value << c.worker.listen;
  if (!c.worker.id.empty()) e << YAML::Key << "id" << YAML::Value << c.worker.id;
  e << YAML::Key << "page_size" << YAML::Value << std::to_string(c.worker.page_size);
  e << YAML::Key << "io_threads" << YAML::Value << c.worker.io_threads;
  e << YAML::Key << "ufs_threads" << YAML::Value << c.worker.ufs_threads;
  e << YAML::Key << "ufs_max_concurrency" << YAML::Value << c.worker.ufs_max_concurrency;
  e << YAML::Key << "readahead" << YAML::Value << std::to_string(c.worker.readahead);
  e << YAML::Key << "metadata_entries" << YAML::Value << c.worker.metadata_entries;
  e << YAML::Key << "local_socket" << YAML::Value << c.worker.local_socket;
  // The connection limits are written only when set, so that a config written
  // here still loads in a worker that predates them.
  const WorkerConfig defaults;
  for (auto [key, value, fallback] : {std::tuple{"header_timeout", c.worker.header_timeout, defaults.header_timeout},
                                      std::tuple{"idle_timeout", c.worker.idle_timeout, defaults.idle_timeout},
                                      std::tuple{"write_timeout", c.worker.write_timeout, defaults.write_timeout},
                                      std::tuple{"body_read_timeout", c.worker.body_read_timeout,
                                                 defaults.body_read_timeout},
                                      std::tuple{"heartbeat_interval", c.worker.heartbeat_interval,
                                                 defaults.heartbeat_interval}}) {
    if (value != fallback) e << YAML::Key << key << YAML::Value << FormatDuration(value);
  }
  if (c.worker.max_connections != 0) e << YAML::Key << "max_connections" << YAML::Value << c.worker.max_connections;
  e << YAML::Key << "verify" << YAML::Value << c.worker.verify;
  e << YAML::Key << "scrub_rate" << YAML::Value << std::to_string(c.worker.scrub_rate);
  e << YAML::Key << "scrub_interval" << YAML::Value << FormatDuration(c.worker.scrub_interval);
  e << YAML::Key << "peer_fetch" << YAML::Value << c.worker.peer_fetch;
  if (!c.worker.advertise.empty()) e << YAML::Key << "advertise" << YAML::Value << c.worker.advertise;
  if (c.worker.hot_shard_rps != defaults.hot_shard_rps)
    e << YAML::Key << "hot_shard_rps" << YAML::Value << c.worker.hot_shard_rps;
  if (c.worker.hot_shard_window != defaults.hot_shard_window)
    e << YAML::Key << "hot_shard_window" << YAML::Value << FormatDuration(c.worker.hot_shard_window);
  if (!c.worker.eviction.empty()) e << YAML::Key << "eviction" << YAML::Value << c.worker.eviction;
  if (c.worker.eviction_high_watermark != defaults.eviction_high_watermark)
    e << YAML::Key << "eviction_high_watermark" << YAML::Value << c.worker.eviction_high_watermark;
  if (c.worker.eviction_low_watermark != defaults.eviction_low_watermark)
    e << YAML::Key << "eviction_low_watermark" << YAML::Value << c.worker.eviction_low_watermark;
  if (!c.worker.metrics_listen.empty()) e << YAML::Key << "metrics_listen" << YAML::Value << c.worker.metrics_listen;
  if (!c.worker.s3_listen.empty()) e << YAML::Key << "s3_listen" << YAML::Value << c.worker.s3_listen;
  if (c.worker.write_back_max_pending != 0)
    e << YAML::Key << "write_back_max_pending" << YAML::Value << std::to_string(c.worker.write_back_max_pending);
  if (c.worker.write_back_takeover != defaults.write_back_takeover)
    e << YAML::Key << "write_back_takeover" << YAML::Value << FormatDuration(c.worker.write_back_takeover);
  if (c.worker.page_store != defaults.page_store) e << YAML::Key << "page_store" << YAML::Value << c.worker.page_store;
  e << YAML::Key << "cache_dirs" << YAML::Value << YAML::BeginSeq;
  for (const auto& d : c.worker.cache_dirs) {
    e << YAML::BeginMap << YAML::Key << "path" << YAML::Value << d.path << YAML::Key << "capacity" << YAML::Value
      << std::to_string(d.capacity) << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  e << YAML::Key << "client" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "timeout" << YAML::Value << FormatDuration(c.client.timeout);
  e << YAML::Key << "connect_timeout" << YAML::Value << FormatDuration(c.client.connect_timeout);
  e << YAML::Key << "response_timeout" << YAML::Value << FormatDuration(c.client.response_timeout);
  e << YAML::Key << "ufs_fallback" << YAML::Value << c.client.ufs_fallback;
  e << YAML::Key << "readahead" << YAML::Value << std::to_string(c.client.readahead);
  e << YAML::Key << "max_parallel" << YAML::Value << c.client.max_parallel;
  e << YAML::Key << "down_backoff" << YAML::Value << FormatDuration(c.client.down_backoff);
  e << YAML::Key << "short_circuit" << YAML::Value << c.client.short_circuit;
  e << YAML::Key << "verify_checksums" << YAML::Value << c.client.verify_checksums;
  e << YAML::Key << "fallback_rate" << YAML::Value << std::to_string(c.client.fallback_rate);
  e << YAML::Key << "fallback_requests" << YAML::Value << c.client.fallback_requests;
  EmitTls(e, "tls", c.client.tls);
  if (!c.client.token_file.empty()) e << YAML::Key << "token_file" << YAML::Value << c.client.token_file;
  e << YAML::EndMap;
  EmitTls(e, "tls", c.tls);
  EmitSecurity(e, c.security);
  EmitAuthz(e, c.authz);
  if (c.log != LogConfig{}) {
    e << YAML::Key << "log" << YAML::Value << YAML::BeginMap << YAML::Key << "format" << YAML::Value << c.log.format
      << YAML::EndMap;
  }
  // Written only when set, so that a config written here still loads in a
  // process that predates the S3 endpoint.
  if (c.s3 != S3Config{}) {
    e << YAML::Key << "s3" << YAML::Value << YAML::BeginMap;
    if (!c.s3.listen.empty()) e << YAML::Key << "listen" << YAML::Value << c.s3.listen;
    e << YAML::Key << "region" << YAML::Value << c.s3.region;
    e << YAML::Key << "max_clock_skew" << YAML::Value << FormatDuration(c.s3.max_clock_skew);
    if (!c.s3.credentials_file.empty()) {
      e << YAML::Key << "credentials_file" << YAML::Value << c.s3.credentials_file;
    }
    if (!c.s3.staging_dir.empty()) e << YAML::Key << "staging_dir" << YAML::Value << c.s3.staging_dir;
    if (c.s3.mode != "proxy") e << YAML::Key << "mode" << YAML::Value << c.s3.mode;
    if (!c.s3.client_config.empty()) e << YAML::Key << "client_config" << YAML::Value << c.s3.client_config;
    for (auto [key, map] : {std::pair{"credentials", &c.s3.credentials}, std::pair{"buckets", &c.s3.buckets}}) {
      if (map->empty()) continue;
      e << YAML::Key << key << YAML::Value << YAML::BeginMap;
      for (const auto& [k, v] : *map) e << YAML::Key << k << YAML::Value << v;
      e << YAML::EndMap;
    }
    if (!c.s3.users.empty()) {
      e << YAML::Key << "users" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, u] : c.s3.users) {
        e << YAML::Key << name << YAML::Value << YAML::BeginMap;
        e << YAML::Key << "access_key" << YAML::Value << u.access_key;
        e << YAML::Key << "secret_key" << YAML::Value << u.secret_key;
        if (!u.groups.empty()) e << YAML::Key << "groups" << YAML::Value << YAML::Flow << u.groups;
        e << YAML::EndMap;
      }
      e << YAML::EndMap;
    }
    if (!c.s3.public_buckets.empty()) {
      e << YAML::Key << "public_buckets" << YAML::Value << YAML::BeginSeq;
      for (const auto& b : c.s3.public_buckets) e << b;
      e << YAML::EndSeq;
    }
    e << YAML::EndMap;
  }
  if (!c.rules.empty()) {
    e << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
    for (const auto& rule : c.rules) {
      e << YAML::BeginMap << YAML::Key << "path" << YAML::Value << rule.path;
      for (const auto& f : FormatRuleFields(rule)) {
        auto eq = f.find('=');
        e << YAML::Key << f.substr(0, eq) << YAML::Value << f.substr(eq + 1);
      }
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace shoal
