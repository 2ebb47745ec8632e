// GetObject and HeadObject: conditional requests (If-Match, If-None-Match,
// If-Modified-Since, If-Unmodified-Since), byte ranges (a-b, a-, -n),
// response-content-* overrides, ETag = the object's Shoal version; the body
// streamed from the client library in chunks, one chunk read ahead, never
// the whole object in memory.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/task_pool.h"
#include "net/http_server.h"
#include "s3/s3_auth.h"
#include "s3/s3_errors.h"
#include "s3/s3_metadata.h"
#include "shoal/client.h"

namespace shoal::s3 {

// Bytes read from the client library per step of a streamed body.
inline constexpr uint64_t kStreamChunk = 4ull << 20;

// This process's own cached bytes of [offset, end) of the file `status`, as
// zero-copy body parts (sendfile from page files) covering a prefix of the
// range; empty when it holds none at `offset`.
using LocalPages = std::function<std::vector<net::BodyPart>(const FileStatus& status, uint64_t offset, uint64_t end)>;

struct ObjectRequest {
  const net::HttpRequest* http = nullptr;
  const QueryParams* query = nullptr;
  std::string path;  // the namespace path of the key
  const LocalPages* local = nullptr;  // optional
  MetadataCache* metadata = nullptr;  // optional: without it, no Content-Type or x-amz-meta-* of the object
};

// The answer to a GET or HEAD of an object (an error is returned for the
// caller to render). Bytes held by this process (request.local) go out
// zero-copy; the rest is read through the client.
S3Result<net::HttpResponse> GetObject(Client& client, TaskPool& pool, const ObjectRequest& request);

// The same for a GET on a server I/O thread, without blocking: answered only
// when a worker on this host holds the object's fresh metadata and all of the
// requested bytes (OpenCachedOnly, at most its
// default prefetch), which then go out from memory; nullopt otherwise (the
// caller answers with GetObject on its own threads).
std::optional<S3Result<net::HttpResponse>> GetCachedObject(Client& client, TaskPool& pool,
                                                           const ObjectRequest& request);

// Whether an If-Match / If-None-Match list names the quoted `etag` ("*" names any).
bool EtagListMatches(std::string_view list, const std::string& etag);
// Seconds since the epoch of an HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT").
std::optional<int64_t> ParseHttpDate(const std::string& s);

// "Wed, 21 Oct 2015 07:28:00 GMT"
std::string HttpDate(int64_t unix_ns);
// ISO 8601 with milliseconds, as listings show times: "2015-10-21T07:28:00.000Z"
std::string IsoDate(int64_t unix_ns);
// The quoted ETag of a version.
std::string ETagOf(const FileStatus& status);
// The same, or for a pending write-back version the ETag its writer gave
// (`meta`, read for that version), which the file keeps once uploaded.
std::string ETagOf(const FileStatus& status, const ObjectMetadata& meta);

}  // namespace shoal::s3
