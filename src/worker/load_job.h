// LoadJobs: the preload jobs of one worker (`shoal load`, docs/protocol.md
// "Load jobs").
//
// A load job names a path (a file, or a directory, walked recursively on
// request), the ring as the client sees it (member names in ring order) and
// this worker's name on it. The worker lists the path itself and, for every
// file, fetches only the shards it owns on that ring (HashRing::DataKey, the
// routing every client uses), so the workers of a cluster load a dataset in
// parallel and no byte is fetched twice. A directory is listed at the
// under-store once for the whole load: the other workers take its listing from
// the worker that owns its metadata (Params::addresses, called only when this
// worker's membership has that member there, or it knows no members and a
// cluster secret guards the routes). Pages already cached are skipped, so
// running a load again resumes one that was stopped or lost. Fetches go
// through WorkerService::PlanRead: they share the read path's single-flight
// and page writes. At most `concurrency` fetches of a job are in flight, and
// an optional bandwidth (bytes/s of this worker) paces them.
//
// Jobs live in memory only: a worker restart loses them (the pages they
// cached stay). Finished jobs are kept for their status until kKeptJobs newer
// ones finish.
//
// --verify (Params::verify) first drops this worker's cached metadata under
// the path, so the listing is the under-store's word, then, per owned file:
// drops (and reports) pages of any other version (the object changed), reads
// every cached page of the current version through its chunk checksums
// (dropping a page that fails), and for a file held whole here whose version
// is a single-part S3 ETag (an MD5), compares the MD5 of the cached bytes with
// it (dropping the file's pages on a mismatch). Pages dropped are fetched
// again by the load. What was checked is counted in the status.
//
// Every parameter of the route is the client's claim: bounded and checked in
// ParseParams before anything starts.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

class WorkerService;
class Membership;
class WorkerCaller;

class LoadJobs {
 public:
  struct Params {
    std::string id;    // 1..64 of [A-Za-z0-9._-]
    std::string path;  // namespace path, inside a mount
    bool recursive = false;
    bool verify = false;
    bool skip_if_exists = false;       // skip a file with any page cached here, unchecked
    uint64_t bandwidth = 0;            // bytes/s for this worker's fetches; 0: no cap
    uint64_t concurrency = 0;          // fetches in flight; 0: worker.ufs_threads
    std::vector<std::string> members;  // the ring: member names (worker ids) in order
    std::vector<uint64_t> weights;     // parallel to members (etcd: cache bytes); empty = equal
    std::string self;                  // this worker's name among them
    // Parallel to members when given: each member's address (host:port). The
    // walk then takes a directory's listing from the member that owns its
    // metadata (GET /v1/list there), so the workers of a load list each
    // directory at the under-store once between them, not once each.
    std::vector<std::string> addresses;
    // For a file: its version and size as the client's stat gave them (the
    // worker then needs no stat of a file whose first shard it may not own).
    std::string file_version;
    uint64_t file_size = 0;
  };

  // Limits on what a request may ask (checked by ParseParams).
  static constexpr size_t kMaxIdLen = 64;
  static constexpr size_t kMaxMembers = 256;
  static constexpr size_t kMaxVersionLen = 1024;
  static constexpr uint64_t kMaxConcurrency = 256;
  // Per job: files walked and directory depth.
  static constexpr uint64_t kMaxFiles = 10'000'000;
  static constexpr size_t kMaxDepth = 64;
  // Jobs running at once, and finished ones kept for their status.
  static constexpr size_t kMaxRunning = 8;
  static constexpr size_t kKeptJobs = 32;

  // `self_names`: the names this worker answers to on a ring (its id and address).
  LoadJobs(WorkerService* svc, std::vector<std::string> self_names);
  ~LoadJobs();  // stops every job and waits for them

  // The query parameters of POST /v1/load, checked: kInvalidArgument naming
  // the parameter and what is wrong otherwise.
  Result<Params> ParseParams(const std::map<std::string, std::string>& query) const;

  // Starts a job; kAlreadyExists when a job with the id is running here,
  // kUnavailable when kMaxRunning are. Returns the job's status (JSON text).
  Result<std::string> Start(Params params);

  // {"jobs": [status, ...]}: one job by id (kNotFound when unknown here), or
  // every job this worker knows ("" or "all").
  Result<std::string> StatusJson(const std::string& id) const;

  // Asks a job (or every running job: "all") to stop; returns how many were
  // running. A stopped job lets its fetches in flight finish (their pages are
  // cached) and then reports state "stopped".
  Result<size_t> Stop(const std::string& id);

  // A job id as the routes accept it.
  static Status CheckId(const std::string& id);

  // The cluster as this worker sees it. A load's listing is taken from
  // another worker only at an address this membership gives for it, or, when
  // the membership lists nobody, only for a request that carried the cluster
  // secret: the addresses in a request are the client's word, and the call
  // carries the secret.
  void SetMembership(std::shared_ptr<const Membership> membership);

  struct Job;

 private:
  void Run(std::shared_ptr<Job> job);
  void Forget();  // drops the oldest finished jobs past kKeptJobs. REQUIRES: mu_ held.

  WorkerService* svc_;
  std::vector<std::string> self_names_;
  std::unique_ptr<WorkerCaller> caller_;  // to the owners of directories' listings
  mutable std::mutex mu_;
  std::shared_ptr<const Membership> membership_;  // GUARDED_BY(mu_)
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  uint64_t started_ = 0;  // jobs started, for ordering
};

// POST /v1/free?path=P[&recursive=1]: drops the cached pages of P (with
// recursive, of every path under it too) on this worker. Blocking (disk).
// Returns {"path", "pages", "bytes"}: pages dropped and the bytes of cache
// (page headers included) that freed, measured as the fall of the cache's use,
// so a concurrent write elsewhere can hide some of it.
Result<std::string> FreePath(WorkerService& svc, const std::map<std::string, std::string>& query);

}  // namespace shoal
