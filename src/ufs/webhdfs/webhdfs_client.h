// WebHdfsClient: the WebHDFS REST protocol under WebHdfsStore.
//
// It builds namenode URLs (scheme://host:port/webhdfs/v1/<path>?op=..&user.name=..),
// follows the two-step datanode redirects itself (OPEN, CREATE, APPEND answer
// 307 and the data goes to the Location), retries transient failures with
// backoff and jitter, and turns RemoteException answers into Status codes with
// a message that names the path and what to do.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ufs/http/http_transport.h"
#include "ufs/mount_options.h"

namespace shoal {

struct MountConfig;

struct WebHdfsSettings {
  std::string scheme = "http";  // of the namenode's HTTP endpoint
  std::string authority;        // namenode host:port
  std::string user;             // user.name for simple authentication
  std::chrono::milliseconds request_timeout{60'000};  // one call, retries included
  int max_retries = 3;
  uint64_t write_buffer = 8ull << 20;  // a writer sends CREATE/APPEND in chunks of this size
  std::string ca_file;
  std::string mount_path;  // for messages
  std::string uri;         // hdfs://host:port/root/, for messages
};

// The options of hdfs:// mounts.
OptionTable WebHdfsOptions();

// Checks the namenode authority and parses the mount options
// (WebHdfsOptions()); kInvalidArgument naming what is wrong.
Result<WebHdfsSettings> ParseWebHdfsSettings(const std::string& authority, const MountConfig& mount);

// One entry of a FileStatus answer.
struct HdfsStatus {
  std::string name;  // pathSuffix; "" when the status is of the path itself
  bool is_dir = false;
  uint64_t length = 0;
  int64_t mtime_ms = 0;
  uint32_t permission = 0;  // the octal "permission" (01777 at most); 0 when the answer has none
  uint64_t file_id = 0;     // the namenode's inode id ("fileId"); 0 when the answer has none
};

struct HdfsBatch {
  std::vector<HdfsStatus> entries;
  bool more = false;  // remainingEntries > 0
};

// The namenode's JSON answers, read as untrusted (exposed for tests and
// fuzz/webhdfs_json.cc). A field of the wrong type reads as absent; an entry
// no namenode sends (a name holding '/' or NUL, "." or "..", a negative
// length) is kIo naming it, since a listing of it would recurse or escape.
// GETFILESTATUS: {"FileStatus": {...}}.
Result<HdfsStatus> ParseFileStatusAnswer(std::string_view body);
// LISTSTATUS_BATCH ({"DirectoryListing": ...}, `batch`) or LISTSTATUS
// ({"FileStatuses": ...}, whose entries are kept after `start_after` only).
// A batch that says more follow must end past `start_after`.
Result<HdfsBatch> ParseListingAnswer(std::string_view body, bool batch, std::string_view start_after);
// A {"RemoteException": {"exception", "message"}} error body; "" for what it lacks.
struct RemoteException {
  std::string exception;
  std::string message;
};
RemoteException ParseRemoteException(std::string_view body);
// The boolean of a {"boolean": b} answer; true for a body without one (rename2 answers nothing).
bool ParseBooleanAnswer(std::string_view body);

class WebHdfsClient {
 public:
  explicit WebHdfsClient(WebHdfsSettings settings) : s_(std::move(settings)) {}
  const WebHdfsSettings& settings() const { return s_; }

  Result<HdfsStatus> GetFileStatus(const std::string& path);
  // One LISTSTATUS_BATCH page after `start_after` (a child name, "" for the
  // first). Falls back to LISTSTATUS on servers older than the batch op.
  Result<HdfsBatch> ListBatch(const std::string& path, const std::string& start_after);
  // OPEN via the datanode, into `out`. Returns the bytes received; fewer than
  // out.size() only when the file ends first.
  Result<size_t> Open(const std::string& path, uint64_t offset, std::span<char> out);
  // CREATE (overwrite) with `data` as the whole content, creating parents;
  // with `permission` (0: the namenode's default, 0644 under its umask).
  Status Create(const std::string& path, std::span<const char> data, uint32_t permission = 0);
  Status Append(const std::string& path, std::span<const char> data);
  Status Mkdirs(const std::string& path);
  // Renames, replacing an existing destination file.
  Status Rename(const std::string& from, const std::string& to);
  // SETPERMISSION: the permission bits, 01777 at most (HDFS keeps no setuid or setgid).
  Status SetPermission(const std::string& path, uint32_t permission);
  // SETTIMES: the modification time, the access time left as it is.
  Status SetModificationTime(const std::string& path, int64_t mtime_ms);
  // Returns false when nothing was there to delete.
  Result<bool> Delete(const std::string& path, bool recursive);

 private:
  struct Call {
    Call(std::string m, std::string p, std::string o) : method(std::move(m)), path(std::move(p)), op(std::move(o)) {}
    std::string method;
    std::string path;
    std::string op;
    std::vector<std::pair<std::string, std::string>> params;
    std::span<const char> body;
    std::span<char> body_out;
    bool idempotent = true;  // may be re-sent after a failure
  };
  std::string Url(const std::string& path, const std::string& op,
                  const std::vector<std::pair<std::string, std::string>>& params) const;
  // Sends one request with retries on transport errors and 5xx.
  Result<HttpResponse> Send(HttpRequest req, bool idempotent, std::chrono::steady_clock::time_point deadline);
  // Namenode request; for redirecting ops, the datanode request that follows.
  Result<HttpResponse> Perform(const Call& call, bool follow_datanode);
  // A Status for a non-2xx answer: RemoteException mapped to a code.
  Status ErrorFor(const HttpResponse& resp, const std::string& what, const std::string& path) const;
  std::string Display(const std::string& path) const;

  WebHdfsSettings s_;
  std::atomic<bool> batch_unsupported_{false};  // the server predates LISTSTATUS_BATCH
};

}  // namespace shoal
