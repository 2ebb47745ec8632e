// PayloadReader: the payload of a request to the S3 endpoint, read in bounded
// pieces from the request body (whole, or streamed: net::BodyReader), so an
// upload of gigabytes never sits in memory.
//
// Everything the request promised about its bytes is checked, and Read()
// returns 0 (the end) only when all of it held:
//   - aws-chunked (STREAMING-AWS4-HMAC-SHA256-PAYLOAD): each chunk is read
//     whole (at most kMaxChunk bytes) and its signature checked, in the chain
//     from the request's signature, before any of its bytes is returned; the
//     final chunk must come, and x-amz-decoded-content-length must match;
//   - a signed payload hash (x-amz-content-sha256: hex): the SHA-256 of all
//     the bytes, checked at the end (XAmzContentSHA256Mismatch);
//   - Content-MD5: checked at the end (BadDigest);
//   - at most max_bytes in all (EntityTooLarge).
// A caller writes what it reads into a Writer and aborts it on any error, so
// nothing is stored from a body that fails a check, even at its last byte.
//
// The MD5 of large pieces runs on a second thread, over a copy, while the
// caller writes them (see kAsyncMd5Min in the .cc); Md5Hex and the checks
// wait for it.
//
// Thread safety: one thread at a time (it blocks on the body).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "net/http_server.h"
#include "s3/s3_auth.h"
#include "s3/s3_errors.h"

namespace shoal::s3 {

class PayloadReader {
 public:
  // The largest aws-chunked chunk accepted (SDKs send 64 KiB to 8 MiB).
  static constexpr uint64_t kMaxChunk = 16ull << 20;

  // Without `need_md5` the MD5 is computed only to check a Content-MD5.
  PayloadReader(const net::HttpRequest& http, const AuthInfo& auth, uint64_t max_bytes, bool need_md5 = true);
  ~PayloadReader();

  // Up to out.size() payload bytes; 0 at the end, once every check passed.
  S3Result<size_t> Read(std::span<char> out);
  // All of a small payload (at most max_bytes) as a string.
  S3Result<std::string> ReadAll();
  // Payload bytes returned so far.
  uint64_t total() const { return total_; }
  // The MD5 of the payload as hex (S3's ETag of a part), once Read returned 0
  // ("" when it was not computed: see the constructor).
  std::string Md5Hex() const;

  struct State;

 private:
  // Raw body bytes into `out`: from the stream, or from the whole body.
  S3Result<size_t> ReadRaw(std::span<char> out);
  S3Result<size_t> ReadPlain(std::span<char> out);
  S3Result<size_t> ReadChunked(std::span<char> out);
  // Reads the next aws-chunked chunk whole and checks its signature.
  S3Result<bool> NextChunk();
  S3Result<bool> Finish();

  const net::HttpRequest& http_;
  const AuthInfo& auth_;
  uint64_t max_bytes_;
  uint64_t total_ = 0;
  uint64_t whole_at_ = 0;  // position in http_.body when the body came whole
  bool finished_ = false;
  std::unique_ptr<State> state_;
};

}  // namespace shoal::s3
