// S3 under-store backend: s3://bucket/prefix on any S3-compatible endpoint
// (AWS, MinIO, Ceph, ...) and gs://bucket/prefix on Google Cloud Storage
// through its S3-interoperable XML API with HMAC keys. Both share one code path.
//
// Mount options (all optional; a mount with just `ufs: s3://bucket/prefix`
// uses the AWS environment and shared files like the AWS SDKs do):
//
//   endpoint              scheme://host[:port] of the store. Default for s3://:
//                         AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
//                         endpoint_url, else https://s3.<region>.amazonaws.com.
//                         Default for gs://: https://storage.googleapis.com.
//                         Without a scheme, https:// is assumed.
//   region                signing region. s3://: AWS_REGION, AWS_DEFAULT_REGION,
//                         the profile's region, else us-east-1. gs://: auto.
//   access_key_id         access key (GCS: HMAC key id). Needs secret_access_key.
//   secret_access_key     secret key (GCS: HMAC secret). Never logged.
//   session_token         temporary-credential token (STS).
//   profile               profile in ~/.aws/credentials and ~/.aws/config
//                         (or AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE).
//                         s3:// without keys or profile: AWS_ACCESS_KEY_ID /
//                         AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, then profile
//                         AWS_PROFILE or "default". gs:// never reads the AWS
//                         environment. No credentials at all: anonymous
//                         (unsigned) requests, fine for public buckets.
//   path_style            true: endpoint/bucket/key; false: bucket.endpoint/key.
//                         Default: false (virtual-hosted) for the AWS and GCS
//                         default endpoints, true when an endpoint is set. Bucket
//                         names that are not DNS labels always use path style.
//   ca_file               PEM CA bundle for HTTPS; default: the system's CAs.
//   verify_tls            true (default) | false (testing only).
//   payload_signing       unsigned (default: UNSIGNED-PAYLOAD plus Content-MD5 on
//                         uploads) | signed (SHA-256 of every body in the signature).
//   multipart_threshold   objects of at least this size upload in parts (64MiB).
//   multipart_part_size   part size, 5MiB..5GiB (16MiB).
//   multipart_concurrency parts uploaded in parallel per object (4).
//   request_timeout       deadline of one request including its retries (60s).
//   connect_timeout       TCP/TLS connect timeout per attempt (5s).
//   max_retries           retries after a 5xx, 429/SlowDown, connection error or
//                         truncated response (6), with exponential backoff and jitter.
//   retry_base_delay      first backoff delay (100ms); doubles up to 5s.
//
// Semantics: Version() is the ETag. Stat of a key with no object but with keys
// below "key/" is a directory. Delete of a missing key succeeds (S3 is
// idempotent). Rename is kNotSupported. Errors: 401/403 -> kPermissionDenied
// naming the URI and mount; NoSuchBucket -> kNotFound naming the bucket; an
// unreachable endpoint -> kUnavailable/kTimeout naming it, within request_timeout.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal {

Result<std::shared_ptr<UnderStore>> MakeS3Store(const UfsUri& uri, const MountConfig& mount);

namespace s3 {
// Deletes many keys (relative to the store's root) with DeleteObjects, 1000 per
// request. `store` must come from MakeS3Store; kInvalidArgument otherwise.
Status DeleteKeys(UnderStore& store, const std::vector<std::string>& keys);
}  // namespace s3

}  // namespace shoal
