// shoal::Client — the native client library. The `shoal` CLI, the FUSE
// mount, the S3 endpoint and the Python SDK are built on it.
//
// A Client reads a Shoal config (cluster membership + mount table), resolves
// paths through the mount table, and routes every request itself over a
// consistent-hash ring of the workers; there is no master. A path's metadata
// and the first shard of its data go to the worker that owns the path (so a
// small file is one request to one worker); each later shard goes to the
// worker that owns (path, version, shard).
//
// Paths are namespace paths ("/data/train/x.jpg") or physical URIs inside a
// mount ("s3://bucket/prefix/train/x.jpg").
//
// Failure: every call (Stat, List, OpenFile, one Pread or Read) has one
// deadline, client.timeout, which covers failover too. A worker that cannot be
// reached, stays silent past client.response_timeout or is not the worker the
// config names is marked down and skipped by every call until a background
// health check sees it again; its reads go to the under-store directly
// (client.ufs_fallback, on by default). A worker that is alive but waiting on
// a slow under-store is not failed over: the call waits for it, within the
// deadline. So a dead or hung node never stops or hangs a reader.
//
// Thread safety: Client and File are safe for concurrent use from any number
// of threads without external synchronisation; a Writer is used by one thread
// at a time. REQUIRES: every File and Writer is destroyed before the Client
// that opened it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct FileStatus {
  std::string path;        // namespace path
  bool is_dir = false;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string version;     // ETag, or "<mtime_ns>-<size>"; empty for directories
  uint32_t mode = 0;       // permission bits (07777) where the store keeps them (file://), else 0
  int64_t ctime_ns = 0;    // last change of bytes or attributes where the store keeps it (file://), else 0
  int64_t uid = -1;        // owner and group where the store keeps them (file://, posix_attributes), else -1
  int64_t gid = -1;
};

// Who the workers take this client's requests to be (Client::WhoAmI).
struct CallerIdentity {
  std::string user;  // "" when anonymous
  std::vector<std::string> groups;
  std::string proof;                // "none", "token", "certificate", "cluster secret", ...
  std::string via;                  // the door acting for `user` (a FUSE mount's identity), or ""
  bool may_act_for_others = false;  // this credential may name other end users (security.proxy_users)
};

struct WorkerStatus {
  std::string address;     // host:port
  bool up = false;
  std::string error;       // why it is down
  uint64_t cache_used_bytes = 0;
  uint64_t cache_capacity_bytes = 0;            // configured
  uint64_t cache_effective_capacity_bytes = 0;  // what its disks can hold now (lower when full)
  uint64_t hit_bytes = 0;
  uint64_t miss_bytes = 0;
  uint64_t ufs_read_bytes = 0;
  // write-back writes held by this worker, not yet uploaded
  uint64_t write_back_pending_bytes = 0;
  uint64_t write_back_pending_files = 0;
  double write_back_oldest_pending_seconds = 0;
  // Its place on the ring this client routes over.
  std::string id;             // ring identity
  uint64_t ring_version = 0;  // the ring's version (1 for a static list, the etcd revision with etcd)
  uint64_t ring_weight = 0;   // its weight (cache capacity it registered; 0 = equal weights)
  double ring_share = 0;      // the fraction of keys it owns
  // Hot shards: the shards it finds hot now (read by many clients at once), as
  // "PATH shard N (R reads/s)", and the reads it served of other workers'
  // hot shards as their next owner on the ring.
  std::vector<std::string> hot_shards;
  uint64_t hot_spread_reads = 0;
  // Transport security: whether it serves TLS, and when its certificate
  // expires (Unix seconds; 0 without TLS).
  bool tls = false;
  int64_t tls_not_after = 0;
  // Each mount's store credentials as this worker holds them, one line per
  // mount: "/data: instance-metadata (http://..., role r), expires
  // 2026-12-07T01:02:03Z; 3 refreshes, 0 failures". Never a secret.
  std::vector<std::string> credentials;
  // Each cache dir: its use and what it may hold.
  struct CacheDir {
    std::string path;
    uint64_t used_bytes = 0;
    uint64_t capacity_bytes = 0;            // configured
    uint64_t effective_capacity_bytes = 0;  // what its disk can hold now
  };
  std::vector<CacheDir> cache_dirs;
  // Its latest errors (5xx answers, refusals, corrupt pages), newest first,
  // one line each with the client's request id: "2026-12-07T01:02:03Z server
  // error: GET /v1/read: HTTP 503 ... [request R]"; and how many ever.
  std::vector<std::string> recent_errors;
  uint64_t errors_total = 0;
  double hit_ratio() const {
    auto t = hit_bytes + miss_bytes;
    return t ? static_cast<double>(hit_bytes) / static_cast<double>(t) : 0.0;
  }
};

// The ring a client routes over now (Client::Ring()).
struct RingMember {
  std::string id;
  std::string address;
  uint64_t weight = 0;  // 0 = equal weights (a static list)
  double share = 0;     // the fraction of keys it owns
};
struct RingInfo {
  std::string membership;  // "static" or "etcd"
  uint64_t version = 0;
  std::vector<RingMember> members;
};

struct MountInfo {
  std::string path;         // "/data"
  std::string ufs;          // "s3://bucket/prefix/"
  std::string consistency;  // "immutable", "ttl=60s" or "always"
  bool read_only = false;
  // Its listings lack the modes, owners and times a stat gives (an object
  // store with posix_attributes keeps them in each object's metadata, which a
  // listing does not return): a FUSE mount stats each listed file.
  bool stat_each_listed = false;
};

// Counters of one Client since it was opened (Client::stats()), for tests,
// benchmarks and monitoring; the Python SDK shows them too. Stable: fields are
// added, never renamed or given another meaning.
struct ClientStats {
  uint64_t worker_read_bytes = 0;    // bytes read from workers
  uint64_t fallback_read_bytes = 0;  // bytes read from the under-store directly (worker failed)
  uint64_t worker_failures = 0;      // requests to a worker that failed it (unreachable, silent, broken)
  uint64_t local_read_bytes = 0;     // of worker_read_bytes, read short-circuit from page files on this host
  uint64_t local_corrupt_reads = 0;  // short-circuit page reads that failed a checksum (and were read over TCP)
  uint64_t cache_pushed_bytes = 0;   // written bytes cached on workers by cache-through writers
  uint64_t cache_push_failures = 0;  // pages a cache-through writer could not cache (the write itself succeeded)
  uint64_t write_backs = 0;          // write-back writes acknowledged by their k workers
  // write-back writes that were written through instead (a holder busy, full or down)
  uint64_t write_back_fallbacks = 0;
  uint64_t fallback_throttled_waits = 0;  // direct store reads that waited for client.fallback_rate/_requests
  uint64_t fallback_rate_limited = 0;     // calls failed: the fallback limit would have taken past their deadline
  // reads of hot shards sent to a worker beyond the shard's holders (its next owner on the ring)
  uint64_t hot_spread_reads = 0;
  // bytes the short circuit read from page and block files: local_read_bytes plus
  // page headers and the rest of the chunks checked
  uint64_t local_file_bytes = 0;
};

class File;
class Writer;

struct OpenOptions {
  // Bytes from the start of the file brought with the open, in the same round
  // trip to its owner: the whole of a small file, so that reading it costs no
  // second request. 0 makes the open a version check only, for a caller that
  // expects to read nothing (a FUSE mount whose kernel still caches the file).
  // At most 4 MiB is taken (the bytes stay in memory while the File is open).
  uint64_t prefetch = 256 * 1024;
};

struct CreateOptions {
  // Replace a file that already exists under the path (false: kAlreadyExists).
  bool overwrite = true;
  // Kept with the file where its store keeps metadata (S3 and GCS user
  // metadata, Azure metadata, an extended attribute on file://); the S3
  // endpoint answers them as Content-Type and x-amz-meta-*. On a write-back
  // mount the holders keep them (and the ETag and mode below) with the bytes
  // until the upload. Values must not hold line breaks.
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> metadata;  // lower-case names, without x-amz-meta-
  // Standard headers kept the same way: cache-control, content-disposition,
  // content-encoding, content-language, expires (lower-case names, each once).
  std::vector<std::pair<std::string, std::string>> headers;
  // file://: the ETag to keep for the file instead of the MD5 of its bytes
  // (the S3 endpoint's multipart uploads: "<md5 of the part md5s>-<parts>").
  // Object stores make their own.
  std::string etag;
  // file://: the file's permission bits (07777); 0 keeps those of
  // the file it replaces, else the store's default. Others keep none.
  uint32_t mode = 0;
  // The file's owner and group where the store keeps owners (file://, when
  // this process may give files away; object stores with posix_attributes);
  // -1: those of the file it replaces on file://, else the writer's.
  int64_t uid = -1;
  int64_t gid = -1;
};

namespace detail {
class ClientImpl;     // the implementation, not installed
struct ClientAccess;  // how Shoal's own front ends reach past this API; not installed
}  // namespace detail

class Client {
 public:
  // From a config file; "" uses $SHOAL_CONFIG.
  static Result<std::unique_ptr<Client>> Open(const std::string& config_path);
  // With a bearer token (`shoal token issue`) sent instead of SHOAL_TOKEN's
  // or client.token_file's; "" uses those.
  static Result<std::unique_ptr<Client>> Open(const std::string& config_path, const std::string& token);
  // From YAML text (tests, embedding).
  static Result<std::unique_ptr<Client>> FromYaml(const std::string& yaml, const std::string& source = "<yaml>");
  ~Client();

  // Reads. Each of Stat, List and OpenFile fails with its own codes below
  // and with these "read errors":
  //   kInvalidArgument  a malformed path (relative, with "..", a bad URI);
  //   kNotFound         a path outside every mount (the message lists them);
  //   kPermissionDenied the under-store refused the mount's credentials;
  //   kUnavailable      no worker answered, and the under-store did not
  //                     either (or client.ufs_fallback is off, or its rate
  //                     limit would have taken the call past its deadline);
  //   kTimeout          client.timeout passed;
  //   kIo               a malformed answer, or an under-store error.

  // A file's or directory's status: size, mtime and version. kNotFound when
  // nothing is at the path; otherwise the read errors.
  Result<FileStatus> Stat(std::string_view path);
  // Entries of a directory (or prefix), sorted by path. A file lists as
  // itself. kNotFound when the under-store has no such directory (an object
  // store may list a prefix that holds nothing as empty instead); otherwise
  // the read errors.
  Result<std::vector<FileStatus>> List(std::string_view path);
  // Opens a file at its current version (File::status() holds it).
  // kNotFound when nothing is at the path, kIsDirectory for a directory (a
  // mount's root included); otherwise the read errors.
  Result<std::unique_ptr<File>> OpenFile(std::string_view path, const OpenOptions& options = {});

  // Writes. Every one goes from this client through to the mount's
  // under-store (write-through) and then drops the cached metadata of the
  // path and of the directories above it (their listings, negative lookups
  // included, on every consistency mode) on the workers, so the next Stat,
  // List or OpenFile from any client sees the change. A mount with
  // read_only: true answers kReadOnly naming the mount. Each under-store call
  // a write makes is bounded by client.timeout.
  //
  // A new file written sequentially; nothing is visible under the path until
  // Writer::Close() returns OK. Missing parent directories are implied (object
  // stores) or created (file://). kIsDirectory when the path is a directory.
  Result<std::unique_ptr<Writer>> Create(std::string_view path, const CreateOptions& options = {});
  // Removes a file (kNotFound when absent, kIsDirectory for a directory).
  Status Delete(std::string_view path);
  // Creates a directory and any missing parents (kAlreadyExists when the
  // path exists). On object stores a directory is an empty "dir/" marker
  // object; one without a marker exists only while it holds something.
  Status Mkdir(std::string_view path);
  // Removes an empty directory (kNotEmpty when it has entries, kNotDirectory
  // for a file).
  Status Rmdir(std::string_view path);
  // Renames a file within one mount, replacing the target file (kIsDirectory
  // when the target is a directory). file:// and hdfs:// rename directories
  // too. S3/GCS rename one object by a server-side copy and a delete (up to
  // 5 GiB; kNotSupported for directories); Azure answers kNotSupported, as
  // does a rename across mounts.
  Status Rename(std::string_view from, std::string_view to);
  // Sets the permission bits (07777), the modification time and/or the owner
  // of a file or directory where its store keeps them (file://; an object
  // store's files with the mount option posix_attributes), as chmod, touch and
  // chown do; FileStatus shows them after. kNotSupported where the store keeps
  // none; kNotFound when absent. On a write-back mount it first waits for the
  // file's pending upload. A file's version (its ETag) stays while its bytes
  // do on file://; an object store may give the rewritten object a new one.
  Status SetAttributes(std::string_view path, std::optional<uint32_t> mode, std::optional<int64_t> mtime_ns,
                       std::optional<uint32_t> uid = std::nullopt, std::optional<uint32_t> gid = std::nullopt);

  // Drops cached metadata under `path` on every worker (and cached pages too with `data`).
  Status Refresh(std::string_view path, bool recursive, bool data);

  std::vector<WorkerStatus> ClusterStatus();
  // The identity a live worker finds in this client's requests (its token,
  // client certificate or cluster secret), for the calling thread's end user
  // when a door acts for one. kPermissionDenied when the credential is refused
  // (the message says why); kUnavailable when no worker answers.
  Result<CallerIdentity> WhoAmI();
  // The decision a live worker's authorization policies make for `user` (in
  // `groups`) doing `access` (read, write, execute) on `path`, without an
  // audit line (`shoal policy check`): the worker's JSON answer, {"result":
  // "ALLOWED"|"DENIED", "policy_id", "policy_name", "version", ...}. Needs the
  // cluster secret or an admin group; kNotSupported when no policies are set.
  Result<std::string> PolicyCheck(std::string_view user, const std::vector<std::string>& groups, std::string_view path,
                                  std::string_view access);
  // Whether this client's requests carry a credential of its own (a token, a
  // client certificate, the cluster secret); without one it is anonymous.
  bool presents_credential() const;
  // The live members, their weights and shares, and the ring's version. With
  // etcd it changes as workers join and leave.
  RingInfo Ring() const;
  std::vector<MountInfo> Mounts() const;
  // The live worker that serves the bytes at `offset` of the file `status`
  // (from Stat or OpenFile): its shard's first live candidate on the ring
  // (id and address). kUnavailable when none is live. For front ends that
  // send a reader to the owner (the S3 endpoint's redirect mode, or a
  // scheduler placing readers near their data). Stable.
  Result<RingMember> OwnerOf(const FileStatus& status, uint64_t offset) const;

  ClientStats stats() const;

 private:
  friend struct detail::ClientAccess;
  explicit Client(std::unique_ptr<detail::ClientImpl> impl);
  std::unique_ptr<detail::ClientImpl> impl_;
};

// An open file at the version seen when it was opened: every byte read comes
// from that version, or the read fails with kVersionMismatch.
class File {
 public:
  virtual ~File() = default;
  virtual const FileStatus& status() const = 0;

  // Reads up to out.size() bytes at `offset`; returns the count (0 at or past
  // the end). A read spanning shards fetches them in parallel.
  virtual Result<size_t> Pread(uint64_t offset, std::span<char> out) = 0;

  // Reads from the file position and advances it. Sequential readers get
  // read-ahead (client.readahead bytes are fetched in the background).
  virtual Result<size_t> Read(std::span<char> out) = 0;
};

// A new file being written: sequential appends, then Close. Not safe for
// concurrent use; one writer per file. Destroying a Writer without Close
// aborts it (nothing becomes visible).
class Writer {
 public:
  virtual ~Writer() = default;
  // Appends `data`. Bytes may be buffered until Close (a bounded amount: the
  // store's upload part). After an error the writer is aborted.
  virtual Status Write(std::span<const char> data) = 0;
  // Bytes written so far.
  virtual uint64_t size() const = 0;
  // The durability point: returns once the whole file is in the under-store,
  // with its new status (size, version). On a write-back mount it returns once
  // the file is fsync'd and journaled on write_back_replicas workers instead,
  // with the pending version "wb-<id>" (every client reads the new bytes from
  // then on; the upload follows in the background); when they cannot all take
  // it, the file is written through (counted in ClientStats). On a cache-through mount (the
  // default write_mode) the written pages are then cached on their workers
  // under that version before it returns; a page that cannot be cached is
  // logged and counted (ClientStats), never an error. After an error nothing is visible,
  // with one exception: when the store timed out or went away after the
  // final request reached it (kTimeout, kUnavailable), it may still commit
  // that request, as with any object-store PUT; Stat tells. The file is then
  // whole, never partial.
  virtual Result<FileStatus> Close() = 0;
  // Discards what was written.
  virtual void Abort() = 0;
};

}  // namespace shoal
