#include "ufs/s3/s3_settings.h"

#include <cctype>
#include <set>

#include "common/config.h"
#include "common/units.h"

namespace shoal::s3 {
namespace {

const std::set<std::string> kOptionNames = {
    "endpoint",          "region",         "access_key_id",       "secret_access_key",     "session_token",
    "profile",           "path_style",     "ca_file",             "verify_tls",            "payload_signing",
    "multipart_threshold", "multipart_part_size", "multipart_concurrency", "request_timeout", "connect_timeout",
    "max_retries",       "retry_base_delay"};

constexpr uint64_t kMinPartSize = 5ull << 20;  // S3's minimum for every part but the last

Result<bool> ParseBool(const std::string& name, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  return Err(Code::kInvalidArgument, "mount option " + name + ": expected true or false, got '" + v + "'");
}

Result<int> ParseInt(const std::string& name, const std::string& v, int lo, int hi) {
  int n = 0;
  size_t used = 0;
  try {
    n = std::stoi(v, &used);
  } catch (...) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < lo || n > hi) {
    return Err(Code::kInvalidArgument, "mount option " + name + ": expected a whole number from " +
                                           std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + v + "'");
  }
  return n;
}

// "host:9000" -> "https://host:9000"; drops a trailing '/'; rejects a path.
Result<std::string> NormaliseEndpoint(std::string e, const std::string& where) {
  if (e.find("://") == std::string::npos) e = "https://" + e;
  while (!e.empty() && e.back() == '/') e.pop_back();
  auto scheme_end = e.find("://");
  std::string scheme = e.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Err(Code::kInvalidArgument, where + ": endpoint '" + e + "' must start with http:// or https://");
  }
  if (e.find('/', scheme_end + 3) != std::string::npos || e.size() == scheme_end + 3) {
    return Err(Code::kInvalidArgument, where + ": endpoint '" + e + "' must be scheme://host[:port] without a path");
  }
  return e;
}

}  // namespace

bool IsDnsCompatibleBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
      return false;
    }
  }
  return b.front() != '-' && b.back() != '-';
}

std::string S3Settings::Host() const {
  std::string host = endpoint.substr(endpoint.find("://") + 3);
  // libcurl sends no port for the scheme's default, and the signature must match.
  if (endpoint.starts_with("https://") && host.ends_with(":443")) host.resize(host.size() - 4);
  if (endpoint.starts_with("http://") && host.ends_with(":80")) host.resize(host.size() - 3);
  return path_style ? host : bucket + "." + host;
}

std::string S3Settings::BucketPath() const { return path_style ? "/" + PercentEncode(bucket, false) : ""; }

std::string S3Settings::BucketBaseUrl() const {
  auto scheme_end = endpoint.find("://");
  return endpoint.substr(0, scheme_end + 3) + Host() + BucketPath();
}

Result<S3Settings> ResolveS3Settings(const UfsUri& uri, const MountConfig& mount, const EnvLookup& env) {
  const auto& opts = mount.options;
  for (const auto& [k, v] : opts) {
    if (!kOptionNames.contains(k)) {
      return Err(Code::kInvalidArgument, "mount " + mount.path + ": unknown " + uri.scheme + ":// option '" + k +
                                             "' (see src/ufs/s3/s3_store.h for the option list)");
    }
  }
  auto opt = [&](const char* k) {
    auto it = opts.find(k);
    return it == opts.end() ? std::string() : it->second;
  };
  const bool gcs = uri.scheme == "gs";

  S3Settings s;
  s.bucket = uri.authority;
  s.prefix = uri.path;
  s.uri = uri.scheme + "://" + uri.authority + "/" + uri.path;
  s.mount_path = mount.path;

  auto creds = ResolveCredentials(opts, /*aws_environment=*/!gcs, env);
  if (!creds) return Err(creds.error().WithContext("mount " + mount.path));
  s.creds = std::move(*creds);

  // Region and endpoint may also come from the profile (AWS_PROFILE or "default").
  Profile profile;
  if (!gcs) profile = LoadProfile(!opt("profile").empty() ? opt("profile") : env("AWS_PROFILE").value_or("default"), env);

  if (!opt("region").empty()) s.region = opt("region");
  else if (gcs) s.region = "auto";
  else if (auto r = env("AWS_REGION")) s.region = *r;
  else if (auto r2 = env("AWS_DEFAULT_REGION")) s.region = *r2;
  else if (!profile.region.empty()) s.region = profile.region;
  else s.region = "us-east-1";

  std::string endpoint, where = "mount " + mount.path;
  if (!opt("endpoint").empty()) endpoint = opt("endpoint");
  else if (gcs) endpoint = "https://storage.googleapis.com";
  else if (auto e = env("AWS_ENDPOINT_URL_S3")) endpoint = *e, where = "AWS_ENDPOINT_URL_S3";
  else if (auto e2 = env("AWS_ENDPOINT_URL")) endpoint = *e2, where = "AWS_ENDPOINT_URL";
  else if (!profile.endpoint_url.empty()) endpoint = profile.endpoint_url, where = "AWS profile endpoint_url";
  const bool default_endpoint = endpoint.empty();
  if (default_endpoint) endpoint = "https://s3." + s.region + ".amazonaws.com";
  auto e = NormaliseEndpoint(endpoint, where);
  if (!e) return Err(e.error());
  s.endpoint = *e;

  // Virtual-hosted addressing is what AWS and GCS prefer; custom endpoints
  // (MinIO, Ceph, s3rver) mostly only route path-style requests.
  if (!opt("path_style").empty()) {
    auto b = ParseBool("path_style", opt("path_style"));
    if (!b) return Err(b.error());
    s.path_style = *b;
  } else {
    s.path_style = !(default_endpoint || (gcs && opt("endpoint").empty()));
  }
  // A bucket name with dots or capitals cannot be a (TLS-valid) host name.
  if (!s.path_style && !IsDnsCompatibleBucket(s.bucket)) s.path_style = true;

  s.ca_file = opt("ca_file");
  if (!opt("verify_tls").empty()) {
    auto b = ParseBool("verify_tls", opt("verify_tls"));
    if (!b) return Err(b.error());
    s.verify_tls = *b;
  }
  if (auto p = opt("payload_signing"); !p.empty()) {
    if (p != "signed" && p != "unsigned") {
      return Err(Code::kInvalidArgument, "mount option payload_signing: expected signed or unsigned, got '" + p + "'");
    }
    s.sign_payload = p == "signed";
  }
  for (auto [name, field] : {std::pair{"multipart_threshold", &s.multipart_threshold},
                             std::pair{"multipart_part_size", &s.multipart_part_size}}) {
    if (opt(name).empty()) continue;
    auto v = ParseSize(opt(name));
    if (!v) return Err(v.error().WithContext(std::string("mount option ") + name));
    *field = *v;
  }
  if (s.multipart_part_size < kMinPartSize || s.multipart_part_size > (5ull << 30)) {
    return Err(Code::kInvalidArgument, "mount option multipart_part_size: must be from 5MiB to 5GiB (S3's part limits)");
  }
  if (!opt("multipart_concurrency").empty()) {
    auto n = ParseInt("multipart_concurrency", opt("multipart_concurrency"), 1, 64);
    if (!n) return Err(n.error());
    s.multipart_concurrency = *n;
  }
  if (!opt("max_retries").empty()) {
    auto n = ParseInt("max_retries", opt("max_retries"), 0, 100);
    if (!n) return Err(n.error());
    s.max_retries = *n;
  }
  for (auto [name, field] : {std::pair{"request_timeout", &s.request_timeout},
                             std::pair{"connect_timeout", &s.connect_timeout},
                             std::pair{"retry_base_delay", &s.retry_base_delay}}) {
    if (opt(name).empty()) continue;
    auto d = ParseDuration(opt(name));
    if (!d) return Err(d.error().WithContext(std::string("mount option ") + name));
    *field = *d;
  }
  if (s.request_timeout.count() <= 0) {
    return Err(Code::kInvalidArgument, "mount option request_timeout: must be positive");
  }
  return s;
}

}  // namespace shoal::s3
