// S3 under-store backend: s3://bucket/prefix on any S3-compatible endpoint
// (AWS, MinIO, Ceph, ...) and gs://bucket/prefix on Google Cloud Storage
// through its S3-interoperable XML API with HMAC keys. Both share one code path.
//
// Mount options (all optional; a mount with just `ufs: s3://bucket/prefix`
// uses the AWS environment and shared files like the AWS SDKs do): the table
// S3Options() in s3_settings.cc, listed in README.md. s3:// without keys or
// profile reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN,
// then profile AWS_PROFILE or "default". gs:// never reads the AWS
// environment. No credentials at all: anonymous (unsigned) requests, fine for
// public buckets. Bucket names that are not DNS labels always use path style.
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
