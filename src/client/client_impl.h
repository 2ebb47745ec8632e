// Internals of shoal::Client shared by client.cc and file.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "client/local_reader.h"
#include "client/worker_connection.h"
#include "cluster/hash_ring.h"
#include "common/config.h"
#include "common/task_pool.h"
#include "meta/mount_table.h"
#include "shoal/client.h"
#include "ufs/under_store.h"

namespace shoal {

// A worker's answer or the reason there was none.
struct WorkerReply {
  Status status;                // OK for a 2xx answer; the worker's error otherwise
  bool transport_failed = false;  // the worker could not be reached or broke off: try elsewhere
  std::string body;
  std::string shoal_stat;         // X-Shoal-Stat of a /v1/open answer
};

// What Open() learns: the file's status and its first bytes (possibly none).
struct OpenedFile {
  ResolvedPath resolved;
  FileStatus status;
  std::string prefix;
};

class Client::Impl {
 public:
  explicit Impl(Config config);

  const Config& config() const { return config_; }
  const MountTable& mounts() const { return mounts_; }

  Result<FileStatus> Stat(std::string_view path);
  // Stat plus the first bytes, in one round trip to the path's owner.
  Result<OpenedFile> Open(std::string_view path);
  Result<std::vector<FileStatus>> List(std::string_view path);
  Status Refresh(std::string_view path, bool recursive, bool data);
  std::vector<WorkerStatus> ClusterStatus();
  ClientStats stats() const;

  // Reads [offset, offset + out.size()) of one file version, which the caller
  // has clamped to the file size. `parallel` fans pieces out over the pool.
  Status ReadRange(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out, bool parallel);

  TaskPool& readahead_pool() { return readahead_pool_; }

 private:
  WorkerReply Call(const std::string& worker, std::string_view method, const std::string& target,
                   std::span<char> body_out = {});
  bool IsDown(const std::string& worker);
  void MarkDown(const std::string& worker, const Status& why);
  Result<std::shared_ptr<UnderStore>> FallbackStore(const ResolvedPath& rp);
  Status ReadPiece(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out);
  // Drops the metadata owner's cached stat of a path seen to have changed.
  void ForgetMetadata(const std::string& ns_path);
  Status ReadFromUfs(const ResolvedPath& rp, const FileStatus& st, uint64_t offset, std::span<char> out);
  // Learns once (per retry interval) whether `worker` is on this host.
  void DiscoverLocal(const std::string& worker);
  // Reads a prefix of the range from the pages of `worker` when it is on this
  // host (short circuit); returns the prefix's length.
  uint64_t ReadLocal(const std::string& worker, const ResolvedPath& rp, const FileStatus& st, uint64_t offset,
                     std::span<char> out);
  Deadline NewDeadline() const { return std::chrono::steady_clock::now() + config_.client.timeout; }

  // The address of ring member i.
  const std::string& Address(size_t i) const { return config_.cluster.workers[i].address; }

  Config config_;
  MountTable mounts_;
  HashRing ring_;  // keyed by worker id; member i is config_.cluster.workers[i]
  ConnectionPool pool_;
  TaskPool fanout_pool_;
  TaskPool readahead_pool_;
  LocalReader local_;

  std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> down_until_;
  std::vector<std::shared_ptr<UnderStore>> fallback_stores_;

  std::atomic<uint64_t> worker_read_bytes_{0};
  std::atomic<uint64_t> fallback_read_bytes_{0};
  std::atomic<uint64_t> local_read_bytes_{0};
  std::atomic<uint64_t> worker_failures_{0};
};

FileStatus ToFileStatus(const FileInfo& f, std::string ns_path);

}  // namespace shoal
