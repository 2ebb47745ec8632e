// Writes through the S3 endpoint, all through the client's writer
// (Client::Create -> Writer, Delete, Mkdir, Rmdir), so a written object is
// readable at once through every front end:
//   PutObject (a key ending in '/' makes a directory), CopyObject,
//   DeleteObject (a key ending in '/' removes an empty directory),
//   DeleteObjects, and multipart uploads (Create, UploadPart, Complete,
//   Abort, ListParts, ListMultipartUploads).
//
// A request body arrives whole (up to the server's body limit, 16 MiB: one
// part of a multipart upload); an aws-chunked body has every chunk signature
// checked before anything is written, so a tampered chunk stores nothing.
// Multipart parts are staged as files in a private staging directory and
// streamed into one writer by CompleteMultipartUpload, never held whole in
// memory.
//
// Thread safety: safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>

#include "net/http_server.h"
#include "s3/s3_auth.h"
#include "s3/s3_errors.h"
#include "s3/s3_metadata.h"
#include "shoal/client.h"

namespace shoal::s3 {

struct WriteRequest {
  const net::HttpRequest* http = nullptr;
  const QueryParams* query = nullptr;
  const AuthInfo* auth = nullptr;
  std::string bucket, key;
  std::string path;  // the namespace path of the key
};

class ObjectWrites {
 public:
  // Staging files go under staging_dir (made private, 0700). Writes drop
  // what `metadata` keeps of their path.
  ObjectWrites(Client& client, std::string staging_dir, MetadataCache& metadata);

  S3Result<net::HttpResponse> Put(const WriteRequest& r);
  // source: the namespace path of the x-amz-copy-source object.
  S3Result<net::HttpResponse> Copy(const WriteRequest& r, const std::string& source);
  S3Result<net::HttpResponse> Delete(const WriteRequest& r);
  // keys: bucket-relative key -> namespace path (nullopt for a key Shoal cannot map).
  S3Result<net::HttpResponse> DeleteObjects(const WriteRequest& r, const std::string& root);

  S3Result<net::HttpResponse> CreateUpload(const WriteRequest& r);
  S3Result<net::HttpResponse> UploadPart(const WriteRequest& r);
  // source: the namespace path of the x-amz-copy-source object (x-amz-copy-source-range: a part of it).
  S3Result<net::HttpResponse> UploadPartCopy(const WriteRequest& r, const std::string& source);
  S3Result<net::HttpResponse> CompleteUpload(const WriteRequest& r);
  S3Result<net::HttpResponse> AbortUpload(const WriteRequest& r);
  S3Result<net::HttpResponse> ListParts(const WriteRequest& r);
  S3Result<net::HttpResponse> ListUploads(const std::string& bucket, const QueryParams& q);

 private:
  // The staging dir of an upload of this bucket and key; NoSuchUpload for
  // one completed unless `completed_too`.
  S3Result<std::string> UploadDir(const WriteRequest& r, bool completed_too = false);
  Status PrepareStaging();

  // The error for a Create of r.path that failed: a key that conflicts with
  // another on a file store is named.
  S3Error CreateError(const WriteRequest& r, const Status& st);
  // Put's and Copy's preconditions on the object already under the key
  // (If-Match, If-None-Match).
  S3Result<bool> CheckTargetConditions(const WriteRequest& r);
  // At most once a minute: SweepStaging with kCompletedKept and
  // kAbandonedAfter.
  void SweepCompleted();

  Client& client_;
  std::string staging_;
  MetadataCache& metadata_;
  std::mutex mu_;  // guards creating the staging dir, completing_ and last_sweep_
  bool staging_ready_ = false;
  std::condition_variable completed_cv_;
  std::set<std::string> completing_;  // upload ids a Complete is writing now
  std::chrono::steady_clock::time_point last_sweep_{};
};

// What SweepStaging removed.
struct StagingSwept {
  size_t completed = 0;  // uploads completed more than completed_kept ago
  size_t abandoned = 0;  // uploads neither completed nor given a part for abandoned_after
};
// Sweeps the staging dir `staging` at time `now`: removes the uploads
// completed more than `completed_kept` ago (until then they answer a retried
// Complete), and those neither completed nor given a part for
// `abandoned_after`, staged parts and all, as S3's
// AbortIncompleteMultipartUpload lifecycle rule does. An upload's last
// activity is its directory's mtime (each part is renamed into it). Ids in
// `busy` (a Complete running) and entries that are not upload ids stay. Looks
// at `limit` entries at most.
StagingSwept SweepStaging(const std::string& staging, std::filesystem::file_time_type now,
                          std::chrono::seconds completed_kept, std::chrono::seconds abandoned_after,
                          const std::set<std::string>& busy, size_t limit = 100000);

// The payload of a request: its body, or the decoded aws-chunked body; the
// Content-MD5 header, when given, is checked.
S3Result<std::string> Payload(const net::HttpRequest& http, const AuthInfo& auth);

}  // namespace shoal::s3
