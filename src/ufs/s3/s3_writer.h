// S3Writer: a streamed object upload. Small objects go up in one PUT on
// Close(); once more than multipart_threshold bytes are buffered, the writer
// starts a multipart upload and sends parts of multipart_part_size in
// parallel (at most multipart_concurrency in flight, so memory stays bounded)
// while the caller keeps appending. Any failure, Abort() or destruction
// without Close() aborts the multipart upload, so no parts are left behind
// and nothing becomes visible under the key.
//
// Thread safety: one writer is used by one thread at a time.
#pragma once

#include <deque>
#include <future>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ufs/s3/s3_client.h"
#include "ufs/under_store.h"

namespace shoal::s3 {

class S3Writer final : public ObjectWriter {
 public:
  // `object_headers` (Content-Type, x-amz-meta-*) go with the PUT or the
  // CreateMultipartUpload, so the store keeps them with the object.
  S3Writer(std::shared_ptr<const S3Client> client, std::string full_key, Headers object_headers = {});
  ~S3Writer() override;

  Status Append(std::span<const char> data) override;
  Status Close() override;
  void Abort() override;

 private:
  Status StartMultipart();
  Status SubmitPart(std::string data);
  // Waits for parts until at most `keep` are in flight; records the first failure.
  Status WaitParts(size_t keep);
  Status Complete();
  void AbortUpload();
  Status Fail(Status s);

  std::shared_ptr<const S3Client> client_;
  std::string key_;
  Headers object_headers_;
  std::string buffer_;
  std::string upload_id_;
  std::vector<std::string> etags_;  // etags_[i] belongs to part i + 1
  std::deque<std::future<Result<std::string>>> inflight_;  // in part order
  size_t done_parts_ = 0;
  int next_part_ = 1;
  Status failed_;
  enum class State { kOpen, kClosed, kAborted } state_ = State::kOpen;
};

// Headers for an upload body: Content-MD5 when the payload is not signed, so
// the store still verifies what it received.
Headers UploadHeaders(const S3Settings& s, std::span<const char> body);

// The headers that give an object its metadata (Content-Type, x-amz-meta-*),
// and the metadata a HEAD of it answered (headers lower-cased).
Headers MetadataHeaders(const ObjectMetadata& m);
ObjectMetadata MetadataOfHeaders(const std::map<std::string, std::string>& lower_headers);

}  // namespace shoal::s3
