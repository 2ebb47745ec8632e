#include "ufs/s3/s3_settings.h"

#include <cctype>

#include "common/config.h"
#include "common/units.h"
#include "ufs/cloud/aws_credentials.h"
#include "ufs/cloud/gcp_credentials.h"

namespace shoal::s3 {
namespace {

// The options of s3:// and gs:// mounts. Bounds: S3 parts are 5MiB..5GiB.
constexpr OptionSpec kOptions[] = {
    option::Text("endpoint",
                 "scheme://host[:port] of the store; https:// when no scheme is given. Default: "
                 "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url, else "
                 "https://s3.REGION.amazonaws.com (gs://: https://storage.googleapis.com)"),
    option::Text("region",
                 "signing region. Default: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else "
                 "us-east-1 (gs://: auto)"),
    option::Text("access_key_id", "access key (GCS: HMAC key id); set together with secret_access_key"),
    option::Secret("secret_access_key", "secret key (GCS: HMAC secret)"),
    option::Secret("session_token", "temporary-credential (STS) token; needs the two keys"),
    option::Text("profile",
                 "profile in ~/.aws/credentials and ~/.aws/config (or AWS_SHARED_CREDENTIALS_FILE, "
                 "AWS_CONFIG_FILE), instead of keys"),
    option::Text("credentials",
                 "where the credentials come from: auto (the SDKs' default chain), or one provider. "
                 "s3://: keys, environment, assume-role, web-identity, profile, container, "
                 "instance-metadata, anonymous; gs://: hmac, service-account, authorized-user, metadata, "
                 "anonymous (auto)"),
    option::Text("sts_endpoint",
                 "STS for assume-role and web-identity. Default: AWS_ENDPOINT_URL_STS, "
                 "AWS_ENDPOINT_URL, the profile's sts endpoint_url, else https://sts.REGION.amazonaws.com"),
    option::Bool("imdsv1", "let instance metadata fall back to IMDSv1 when IMDSv2 is refused (false)"),
    option::File("credentials_file",
                 "gs://: a service-account or authorized-user JSON key file (default: "
                 "GOOGLE_APPLICATION_CREDENTIALS, else gcloud's application default credentials)"),
    option::Text("scopes",
                 "gs://: OAuth scope of the tokens a service account asks for "
                 "(https://www.googleapis.com/auth/devstorage.read_write)"),
    option::Bool("path_style",
                 "endpoint/bucket/key rather than bucket.endpoint/key. Default: false for the AWS and "
                 "GCS endpoints, true for others"),
    option::File("ca_file", "PEM CA bundle for HTTPS (default: the system's CAs)"),
    option::Bool("verify_tls", "check the server's certificate (true; false for testing only)"),
    option::Choice("payload_signing", "unsigned|signed",
                   "unsigned: UNSIGNED-PAYLOAD plus Content-MD5 on uploads (default); signed: SHA-256 of every body"),
    option::Size("multipart_threshold", 1, option::kNoMax, "objects of this size or more upload in parts (64MiB)"),
    option::Size("multipart_part_size", 5ll << 20, 5ll << 30, "part size (16MiB)"),
    option::Int("multipart_concurrency", 1, 64, "parts uploaded in parallel per object (4)"),
    option::Duration("request_timeout", 1, "deadline of one request including its retries (60s)"),
    option::Duration("connect_timeout", 1, "TCP/TLS connect timeout per attempt (5s)"),
    option::Int("max_retries", 0, 100,
                "retries after a 5xx, 429/SlowDown, connection error or truncated response, with exponential backoff "
                "and jitter (6)"),
    option::Duration("retry_base_delay", 0, "first backoff delay; doubles up to 5s (100ms)"),
    option::Bool("posix_attributes",
                 "keep files' modes, owners and modification times (chmod, chown, touch through the FUSE mount) in "
                 "user metadata, as s3fs does; a FUSE listing then stats each file (false)"),
};

bool IsIpAddress(std::string_view b) {
  int dots = 0;
  for (char c : b) {
    if (c == '.') ++dots;
    else if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return dots == 3;
}

// Letters, digits and `extra`, starting and ending with a letter or digit,
// `lo`..`hi` characters, no "..".
bool NameShapeOk(std::string_view b, size_t lo, size_t hi, std::string_view extra, bool upper) {
  if (b.size() < lo || b.size() > hi) return false;
  auto alnum = [&](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
           (upper && std::isupper(static_cast<unsigned char>(c)));
  };
  for (char c : b) {
    if (!alnum(c) && extra.find(c) == std::string_view::npos) return false;
  }
  return alnum(b.front()) && alnum(b.back()) && b.find("..") == std::string_view::npos;
}

// "host:9000" -> "https://host:9000"; drops a trailing '/'; rejects a path.
Result<std::string> NormaliseEndpoint(std::string e, const std::string& where) {
  if (e.find("://") == std::string::npos) e = "https://" + e;
  while (!e.empty() && e.back() == '/') e.pop_back();
  auto scheme_end = e.find("://");
  std::string scheme = e.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Err(Code::kInvalidArgument, where + " '" + e + "' must start with http:// or https://");
  }
  if (e.find('/', scheme_end + 3) != std::string::npos || e.size() == scheme_end + 3) {
    return Err(Code::kInvalidArgument, where + " '" + e + "' must be scheme://host[:port] without a path");
  }
  return e;
}

// A gs:// mount with HMAC keys signs like S3; without, it gets OAuth tokens.
Result<cloud::Chosen> ResolveMountCredentials(const std::string& scheme,
                                              const std::map<std::string, std::string>& options,
                                              const std::string& region, const EnvLookup& env) {
  if (scheme != "gs") return cloud::ResolveAwsCredentials({options, region}, env);
  auto key = options.find("access_key_id");
  auto which = options.find("credentials");
  if (key != options.end() && (which == options.end() || which->second == "auto" || which->second == "hmac")) {
    cloud::Secret hmac;
    hmac.access_key_id = key->second;
    if (auto secret = options.find("secret_access_key"); secret != options.end())
      hmac.secret_access_key = secret->second;
    if (hmac.secret_access_key.empty()) {
      return Err(Code::kInvalidArgument,
                 "mount options set only one of access_key_id and secret_access_key: set both, or neither");
    }
    return cloud::Chosen{cloud::MakeStaticProvider("hmac", "HMAC key " + hmac.access_key_id, hmac), hmac};
  }
  return cloud::ResolveGoogleCredentials(options, env);
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

OptionTable S3Options() { return kOptions; }

Status ValidateBucketName(std::string_view scheme, std::string_view b) {
  if (scheme == "gs") {
    // Google's rules: 3-63 characters (up to 222 with dots, 63 per dot-separated
    // part) of lowercase letters, digits, '-', '_' and '.'; no "goog" prefix.
    bool ok = NameShapeOk(b, 3, 222, "-_.", false) && !IsIpAddress(b) && !b.starts_with("goog") &&
              b.find("google") == std::string_view::npos;
    for (size_t i = 0, j; ok && i <= b.size(); i = j + 1) {
      j = b.find('.', i);
      if (j == std::string_view::npos) j = b.size();
      ok = j - i <= 63;
    }
    if (!ok) {
      return Status(Code::kInvalidArgument,
                    "invalid GCS bucket name '" + std::string(b) +
                        "': names are 3 to 63 lowercase letters, digits, '-', '_' and '.', starting and ending with a "
                        "letter or digit, not starting with 'goog'; fix the gs:// URI");
    }
    return {};
  }
  // AWS's rules for bucket names: 3-63 characters of lowercase letters, digits,
  // '.' and '-', starting and ending with a letter or digit, no "..", not an
  // IP address. Buckets made in us-east-1 before March 2018 may also hold
  // capitals and '_' and run to 255 characters; they are accepted.
  bool current = NameShapeOk(b, 3, 63, ".-", false) && !IsIpAddress(b) && !b.starts_with("xn--") &&
                 !b.ends_with("-s3alias") && !b.ends_with("--ol-s3");
  bool legacy = NameShapeOk(b, 3, 255, ".-_", true) && !IsIpAddress(b);
  if (!current && !legacy) {
    return Status(Code::kInvalidArgument,
                  "invalid S3 bucket name '" + std::string(b) +
                      "': names are 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter "
                      "or digit; fix the s3:// URI");
  }
  return {};
}

Result<S3Settings> ResolveS3Settings(const UfsUri& uri, const MountConfig& mount, const EnvLookup& env) {
  auto o = MountOptions::Parse(uri.scheme, kOptions, mount.options);
  if (!o) return Err(o.error());
  SHOAL_RETURN_IF_ERROR(ValidateBucketName(uri.scheme, uri.authority));
  if (o->has("profile") && (o->has("access_key_id") || o->has("secret_access_key"))) {
    return Err(Code::kInvalidArgument,
               "options profile and access_key_id/secret_access_key are both set: use the keys or the profile");
  }
  if (o->has("access_key_id") != o->has("secret_access_key")) {
    return Err(Code::kInvalidArgument,
               "mount options set only one of access_key_id and secret_access_key: set both, or neither");
  }
  if (o->has("session_token") && !o->has("access_key_id")) {
    return Err(Code::kInvalidArgument,
               "option session_token needs access_key_id and secret_access_key (the token belongs to those keys)");
  }
  for (const char* k : {"access_key_id", "secret_access_key", "session_token"}) {
    if (o->String(k).find_first_of(" \t") != std::string::npos) {
      return Err(Code::kInvalidArgument, std::string("option ") + k + " contains a space: copy the key again");
    }
  }
  const bool gcs = uri.scheme == "gs";

  S3Settings s;
  s.bucket = uri.authority;
  s.prefix = uri.path;
  s.uri = uri.scheme + "://" + uri.authority + "/" + uri.path;
  s.mount_path = mount.path;

  // Region and endpoint may also come from the profile (AWS_PROFILE or "default").
  Profile profile;
  if (!gcs) profile = LoadProfile(o->has("profile") ? o->String("profile") : env("AWS_PROFILE").value_or("default"), env);

  if (o->has("region")) s.region = o->String("region");
  else if (gcs) s.region = "auto";
  else if (auto r = env("AWS_REGION")) s.region = *r;
  else if (auto r2 = env("AWS_DEFAULT_REGION")) s.region = *r2;
  else if (!profile.region.empty()) s.region = profile.region;
  else s.region = "us-east-1";

  std::string endpoint, where = "option endpoint";
  if (o->has("endpoint")) endpoint = o->String("endpoint");
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
  s.path_style = o->Bool("path_style").value_or(!(default_endpoint || (gcs && !o->has("endpoint"))));
  // A bucket name with dots or capitals cannot be a (TLS-valid) host name.
  if (!s.path_style && !IsDnsCompatibleBucket(s.bucket)) s.path_style = true;

  if (o->has("credentials")) {
    std::string_view names =
        gcs ? "auto, hmac, service-account, authorized-user, metadata, anonymous" : cloud::kAwsProviderNames;
    const std::string which = o->String("credentials");
    bool known = false;
    for (size_t pos = 0; pos < names.size();) {
      size_t comma = names.find(',', pos);
      if (comma == std::string_view::npos) comma = names.size();
      known |= names.substr(pos, comma - pos) == which;
      pos = comma + 2;
    }
    if (!known) {
      return Err(Code::kInvalidArgument, "option credentials: '" + which + "' is not a provider of " + uri.scheme +
                                             ":// mounts; use one of " + std::string(names));
    }
  }

  s.ca_file = o->String("ca_file");
  s.verify_tls = o->Bool("verify_tls").value_or(s.verify_tls);
  s.sign_payload = o->String("payload_signing") == "signed";
  s.multipart_threshold = o->Size("multipart_threshold").value_or(s.multipart_threshold);
  s.multipart_part_size = o->Size("multipart_part_size").value_or(s.multipart_part_size);
  s.multipart_concurrency = static_cast<int>(o->Int("multipart_concurrency").value_or(s.multipart_concurrency));
  s.max_retries = static_cast<int>(o->Int("max_retries").value_or(s.max_retries));
  s.request_timeout = o->Duration("request_timeout").value_or(s.request_timeout);
  s.connect_timeout = o->Duration("connect_timeout").value_or(s.connect_timeout);
  s.retry_base_delay = o->Duration("retry_base_delay").value_or(s.retry_base_delay);
  s.posix_attributes = o->Bool("posix_attributes").value_or(false);
  return s;
}

Status AttachCredentials(S3Settings& s, const UfsUri& uri, const MountConfig& mount, const EnvLookup& env) {
  auto chosen = ResolveMountCredentials(uri.scheme, mount.options, s.region, env);
  if (!chosen) return chosen.error().WithContext("mount " + mount.path + " (" + s.uri + ")");
  auto cache =
      cloud::CredentialCache::Start(std::move(chosen->provider), {.mount = mount.path}, std::move(chosen->first));
  if (!cache) return cache.error().WithContext("mount " + mount.path + " (" + s.uri + ")");
  s.credentials = std::move(*cache);
  if (auto first = s.credentials->Current()) {
    s.creds = {(*first)->access_key_id, (*first)->secret_access_key, (*first)->session_token,
               s.credentials->Describe()};
  }
  return Status::Ok();
}

}  // namespace shoal::s3
