// What Shoal's own front ends use of a Client beyond the public API
// (include/shoal/client.h): the admin fan-out to every worker (the CLI's
// load, free, pin and rules; the S3 endpoint's redirect mode) and cached-only
// opens (the S3 endpoint's I/O threads). Not installed, so these may change
// with any release without breaking a program built on the public API.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/client.h"
#include "ufs/under_store.h"

namespace shoal {

// One worker's answer to CallWorkers.
struct WorkerAnswer {
  std::string member;   // its name on the ring (the worker id; the address when the config gives none)
  std::string address;  // host:port
  Status status;        // OK: a 2xx answer; else the worker's error, or why it was not reached
  std::string body;     // the answer's body (JSON) when status is OK
};

// Sends `method` with the target `target_for(member)` (a route of the
// worker's admin API and its query, docs/protocol.md) to every worker on the
// ring, in parallel, within client.timeout. Answers in ring order.
std::vector<WorkerAnswer> CallWorkers(Client& client, std::string_view method,
                                      const std::function<std::string(const std::string& member)>& target_for);
// Client::ClusterStatus, and each worker's /v1/status body in the same order
// ("" for a worker that did not answer): one request per worker.
std::vector<WorkerStatus> ClusterStatusWithBodies(Client& client, std::vector<std::string>* bodies);
// The ring's member names in ring order (what CallWorkers passes to target_for).
std::vector<std::string> RingMembers(const Client& client);

// Client::OpenFile from only what a worker on this host holds now, at once:
// the path's fresh cached metadata (under the mount's consistency mode) and
// all of the first `options.prefetch` bytes (at most the file's size),
// through the short circuit; never the under-store, never a wait beyond a
// short deadline (250 ms). For callers that must not block, such as the S3
// endpoint's I/O threads. Anything else answers kUnavailable at once: open
// the usual way then.
Result<std::unique_ptr<File>> OpenCachedOnly(Client& client, std::string_view path, const OpenOptions& options = {});

// The metadata the writer of the file at `path` gave it (CreateOptions'
// content_type and metadata), from its mount's under-store within
// client.timeout: an extended attribute on file://, a HEAD on object stores.
// Of a pending write-back `version` ("wb-..."), from its holders, which
// keep it until the upload (then from the store).
// kNotFound when no file is there.
Result<ObjectMetadata> ReadObjectMetadata(Client& client, std::string_view path, std::string_view version = {});

// True when a file created at `path` is written back (its mount's or rule's
// write_mode): its holders keep its bytes and options until the upload.
bool WrittenBack(Client& client, std::string_view path);

// Writer::Write of `length` bytes of the file `fd` from `offset` (the S3
// endpoint's staged parts at CompleteMultipartUpload). Written through to a
// file:// store, the bytes are copied inside the kernel (copy_file_range),
// never through this process; otherwise they are read and written. After
// an error the writer is aborted, as after a failed Write.
Status WriteFromFile(Writer& w, int fd, uint64_t offset, uint64_t length);

// On a cache-through mount, the writer's Close returns once the file is
// durable in the under-store, and its pages are pushed to the cache after
// that, from a background thread (ClientImpl::QueueCacheFill), instead of
// before Close returns. For a front end whose answer waits on Close (the S3
// endpoint: a client's upload is done when the object is durable, and the
// push would double the time it waits). A fill that finds too much queued
// is dropped and counted (ClientStats::cache_push_failures); a read then
// fetches those pages from the store. No effect on other writers.
void FillCacheAfterClose(Writer& w);

// The ETag `w`'s file keeps (CreateOptions::etag), known only once its bytes
// are written (the S3 endpoint's MD5 of a PutObject body), given before
// Close. A write-back file's holders keep it for its upload (file:// keeps
// it; object stores make their own, the same MD5 for a whole put). No
// effect on a file written through, whose store makes its own.
void SetETagBeforeClose(Writer& w, std::string etag);

namespace detail {
// The one door from a Client to its implementation (a friend of Client).
struct ClientAccess {
  static ClientImpl& Impl(const Client& client) { return *client.impl_; }
};
}  // namespace detail

}  // namespace shoal
