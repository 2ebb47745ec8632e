// S3Settings: everything the S3 backend needs to talk to one bucket, resolved
// once when a mount opens, from the mount options first and then the AWS
// environment and shared files (see credentials.h). The options are the table
// S3Options() (kOptions in s3_settings.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "shoal/status.h"
#include "ufs/mount_options.h"
#include "ufs/s3/credentials.h"
#include "common/sigv4.h"
#include "ufs/uri.h"

namespace shoal::cloud {
class CredentialCache;
}

namespace shoal {
struct MountConfig;
}

namespace shoal::s3 {

struct S3Settings {
  std::string uri;         // "s3://bucket/prefix/", for messages
  std::string mount_path;  // "/data", for messages
  std::string bucket;
  std::string prefix;      // "" or "prefix/": prepended to every key

  std::string endpoint;    // "https://s3.us-east-1.amazonaws.com": scheme://host[:port], no path
  std::string region;
  bool path_style = true;  // https://endpoint/bucket/key, else https://bucket.endpoint/key
  // Where each request's credentials come from (refreshed before they
  // expire); when null, `creds` is used as is.
  std::shared_ptr<cloud::CredentialCache> credentials;
  Credentials creds;  // the first ones (source: the provider), for messages; anonymous when access_key_id is empty
  bool sign_payload = false;  // hash bodies into the signature, else UNSIGNED-PAYLOAD
  std::string ca_file;
  bool verify_tls = true;

  uint64_t multipart_threshold = 64ull << 20;
  uint64_t multipart_part_size = 16ull << 20;
  int multipart_concurrency = 4;
  std::chrono::milliseconds request_timeout{60'000};   // one request including its retries
  std::chrono::milliseconds connect_timeout{5'000};
  int max_retries = 6;
  std::chrono::milliseconds retry_base_delay{100};     // first backoff; doubles per retry, with jitter
  std::chrono::milliseconds retry_max_delay{5'000};
  // Modes, owners and times kept in user metadata (ufs/posix_metadata.h).
  bool posix_attributes = false;

  // "https://bucket.s3.amazonaws.com" or "https://s3.amazonaws.com/bucket"
  std::string BucketBaseUrl() const;
  // The Host header and path prefix that go with BucketBaseUrl().
  std::string Host() const;
  std::string BucketPath() const;  // "/bucket" (path style) or ""
};

// The options of s3:// and gs:// mounts.
OptionTable S3Options();

// kInvalidArgument naming the option for bad values or unknown option names,
// and for bucket names the provider does not allow (scheme "s3" or "gs").
Status ValidateBucketName(std::string_view scheme, std::string_view bucket);
// The settings without credentials: no network call, no program run (a
// config check). `creds` stays anonymous and `credentials` null.
Result<S3Settings> ResolveS3Settings(const UfsUri& uri, const MountConfig& mount, const EnvLookup& env);
// Finds the mount's credentials (the chain of credentials.h / the cloud
// providers: this may call instance metadata, STS or a token endpoint) and
// sets `credentials`, refreshed from then on while `s` or a copy lives.
Status AttachCredentials(S3Settings& s, const UfsUri& uri, const MountConfig& mount, const EnvLookup& env);

// Whether a bucket name can be a DNS label under TLS (no dots, upper case or '_').
bool IsDnsCompatibleBucket(std::string_view bucket);

}  // namespace shoal::s3
