// shoal load / shoal free: preload a path on every worker, and drop it.
//
// `shoal load PATH` posts one load job (POST /v1/load, docs/protocol.md) to
// every worker of the ring, each of which fetches the shards it owns, then
// watches the job (GET /v1/load?id=) until every worker has finished it:
// a live progress line on a terminal, JSON lines otherwise. Ctrl-C stops the
// watching only; the job runs on. `--status` and `--stop` find jobs on the
// workers from any shell.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "client/client_internal.h"
#include "common/path_rules.h"
#include "common/units.h"
#include "ufs/uri.h"

namespace shoal::cli {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void OnInterrupt(int) { g_interrupted = 1; }

struct LoadArgs {
  ClientOptions client;
  std::string path;
  bool recursive = false;
  std::string bandwidth;
  bool verify = false;
  bool skip_if_exists = false;
  uint64_t concurrency = 0;
  std::string id;
  bool status = false;
  bool stop = false;
  bool json = false;
};

// One job's status summed over the workers that answered for it.
struct Aggregate {
  std::string id, path;
  size_t workers = 0, running = 0, done = 0, stopped = 0, failed = 0;
  uint64_t files_total = 0, files_done = 0, files_skipped = 0, files_failed = 0, dirs_skipped = 0;
  uint64_t files_not_admitted = 0;
  uint64_t bytes_total = 0, bytes_done = 0, bytes_fetched = 0, bytes_cached = 0;
  uint64_t mismatches = 0, pages_checked = 0, files_md5_checked = 0, files_checksums_only = 0;
  bool listing_done = true;
  double elapsed_s = 0;
  std::vector<std::string> errors;     // job-level errors, "worker: message"
  Json failures = Json::array();       // {"path", "error"}
  Json mismatch_list = Json::array();  // {"path", "what"}

  void Add(const Json& j) {
    ++workers;
    id = j.value("id", id);
    path = j.value("path", path);
    std::string st = j.value("state", "");
    running += st == "running";
    done += st == "done";
    stopped += st == "stopped";
    failed += st == "failed";
    if (!j.value("error", "").empty()) errors.push_back(j.value("error", ""));
    listing_done = listing_done && j.value("listing_done", false);
    auto u = [&](const char* k) { return j.value(k, uint64_t{0}); };
    files_total += u("files_total"), files_done += u("files_done"), files_skipped += u("files_skipped");
    files_failed += u("files_failed"), files_not_admitted += u("files_not_admitted");
    dirs_skipped = std::max(dirs_skipped, u("dirs_skipped"));  // every worker lists the same directories
    bytes_total += u("bytes_total"), bytes_done += u("bytes_done"), bytes_fetched += u("bytes_fetched");
    bytes_cached += u("bytes_cached");
    elapsed_s = std::max(elapsed_s, j.value("elapsed_s", 0.0));
    for (const auto& f : j.value("failures", Json::array())) failures.push_back(f);
    const Json v = j.value("verify", Json::object());
    mismatches += v.value("mismatches", uint64_t{0});
    pages_checked += v.value("pages_checked", uint64_t{0});
    files_md5_checked += v.value("files_md5_checked", uint64_t{0});
    files_checksums_only += v.value("files_checksums_only", uint64_t{0});
    for (const auto& m : v.value("mismatch_list", Json::array())) mismatch_list.push_back(m);
  }

  std::string State() const {
    if (running) return "running";
    if (failed) return "failed";
    if (stopped) return "stopped";
    return "done";
  }
  double Rate() const { return elapsed_s > 0 ? static_cast<double>(bytes_fetched) / elapsed_s : 0; }
  // Seconds left at the current rate, or -1 when unknown (still listing, no rate yet).
  double Eta() const {
    if (!listing_done || Rate() <= 0) return -1;
    return static_cast<double>(bytes_total - std::min(bytes_total, bytes_done)) / Rate();
  }

  Json ToJson(bool final) const {
    Json j{{"id", id},
           {"path", path},
           {"state", State()},
           {"workers", workers},
           {"listing_done", listing_done},
           {"files_total", files_total},
           {"files_done", files_done},
           {"files_skipped", files_skipped},
           {"files_failed", files_failed},
           {"bytes_total", bytes_total},
           {"bytes_done", bytes_done},
           {"bytes_fetched", bytes_fetched},
           {"bytes_cached", bytes_cached},
           {"bytes_per_s", Rate()},
           {"eta_s", Eta() < 0 ? Json(nullptr) : Json(Eta())},
           {"elapsed_s", elapsed_s},
           {"final", final}};
    if (dirs_skipped) j["dirs_skipped"] = dirs_skipped;
    if (files_not_admitted) j["files_not_admitted"] = files_not_admitted;
    if (final) {
      j["failures"] = failures;
      j["errors"] = errors;
      j["verify"] = Json{{"mismatches", mismatches},
                         {"pages_checked", pages_checked},
                         {"files_md5_checked", files_md5_checked},
                         {"files_checksums_only", files_checksums_only},
                         {"mismatch_list", mismatch_list}};
    }
    return j;
  }

  std::string Line() const {
    std::string eta = Eta() < 0 ? "-" : FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(Eta() * 1000)));
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s %s: files %llu/%llu%s, %s/%s%s, %s/s, ETA %s", id.c_str(), State().c_str(),
                  static_cast<unsigned long long>(files_done), static_cast<unsigned long long>(files_total),
                  listing_done ? "" : "+", FormatSize(bytes_done).c_str(), FormatSize(bytes_total).c_str(),
                  listing_done ? "" : "+", FormatSize(static_cast<uint64_t>(Rate())).c_str(), eta.c_str());
    return buf;
  }
};

std::string Enc(const std::string& s) { return PercentEncode(s, true); }

std::string NewJobId() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "load-%08x", rd());
  return buf;
}

// GET /v1/load on every worker, grouped by job. Unreachable workers and
// workers that do not know `id` are listed in `problems`. `per_member`, when
// given, gets each member's bytes done (fetched or found cached) for the jobs.
std::map<std::string, Aggregate> Collect(Client& c, const std::string& id, std::vector<std::string>* problems,
                                         size_t* not_found = nullptr,
                                         std::map<std::string, uint64_t>* per_member = nullptr) {
  std::map<std::string, Aggregate> jobs;
  std::string target = "/v1/load" + (id.empty() ? std::string() : "?id=" + Enc(id));
  for (const auto& a : CallWorkers(c, "GET", [&](const std::string&) { return target; })) {
    if (!a.status.ok()) {
      if (a.status.code() == Code::kNotFound && not_found) ++*not_found;
      problems->push_back("worker " + a.member + ": " + a.status.message());
      continue;
    }
    try {
      const Json body = Json::parse(a.body);  // kept: a loop over a temporary's member would dangle
      for (const auto& j : body.at("jobs")) {
        jobs[j.at("id").get<std::string>()].Add(j);
        if (per_member) (*per_member)[a.member] += j.value("bytes_done", uint64_t{0});
      }
    } catch (const std::exception& e) {
      problems->push_back("worker " + a.member + ": malformed load status: " + e.what());
    }
  }
  return jobs;
}

bool Interactive(const LoadArgs& a) { return !a.json && ::isatty(STDOUT_FILENO); }

int ShowStatus(Client& c, const LoadArgs& a) {
  std::vector<std::string> problems;
  size_t not_found = 0;
  auto jobs = Collect(c, a.id, &problems, &not_found);
  for (const auto& p : problems) std::fprintf(stderr, "shoal: warning: %s\n", p.c_str());
  if (!a.id.empty() && jobs.empty()) {
    return Fail(Status(Code::kNotFound, "no load job " + a.id +
                                            " on any worker reached (jobs live in the workers' "
                                            "memory; a restart loses them)"));
  }
  if (jobs.empty() && Interactive(a)) std::printf("no load jobs\n");
  for (const auto& [id, j] : jobs) {
    if (Interactive(a)) {
      std::printf("%s  %s  (%zu workers)\n", j.Line().c_str(), j.path.c_str(), j.workers);
    } else {
      std::printf("%s\n", j.ToJson(true).dump().c_str());
    }
  }
  return 0;
}

int StopJobs(Client& c, const LoadArgs& a) {
  std::string which = a.id.empty() ? "all" : a.id;
  size_t stopped = 0, not_found = 0;
  std::vector<std::string> problems;
  for (const auto& r : CallWorkers(c, "POST", [&](const std::string&) { return "/v1/load/stop?id=" + Enc(which); })) {
    if (!r.status.ok()) {
      if (r.status.code() == Code::kNotFound) {
        ++not_found;
        continue;
      }
      problems.push_back("worker " + r.member + ": " + r.status.message());
      continue;
    }
    try {
      stopped += Json::parse(r.body).at("stopped").get<size_t>();
    } catch (const std::exception& e) {
      problems.push_back("worker " + r.member + ": malformed answer: " + e.what());
    }
  }
  if (!problems.empty()) {
    std::string list;
    for (const auto& p : problems) list += (list.empty() ? "" : "; ") + p;
    return Fail(Status(Code::kUnavailable, "could not stop load job " + which + " everywhere: " + list +
                                               "; run `shoal load --stop` again once they answer"));
  }
  if (!a.id.empty() && not_found == RingMembers(c).size()) {
    return Fail(Status(Code::kNotFound, "no load job " + a.id + " on any worker; `shoal load --status` lists them"));
  }
  // Wait (bounded) until the jobs have let their fetches in flight finish.
  auto until = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::vector<std::string> ignored;
    auto jobs = Collect(c, a.id, &ignored);
    bool running = std::any_of(jobs.begin(), jobs.end(), [](const auto& j) { return j.second.running > 0; });
    if (!running || Clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a poll, not a synchronisation
  }
  std::printf("stopped %zu load job run%s (%s); resume with the same `shoal load PATH`\n", stopped,
              stopped == 1 ? "" : "s", which.c_str());
  return 0;
}

std::string FirstOf(const Json& list, const char* what, size_t n = 10) {
  std::string out;
  size_t i = 0;
  for (const auto& e : list) {
    if (i++ == n) {
      out += "; ...";
      break;
    }
    out += (out.empty() ? "" : "; ") + e.value("path", "?") + ": " + e.value(what, "?");
  }
  return out;
}

// After a load: what it brought beyond a worker's cache, or beyond a quota
// that covers the path, was evicted again as it came. "done" alone would
// suggest that it all stays; this says where it did not.
void NoteWhatDidNotStay(Client& c, const std::string& path, const std::map<std::string, uint64_t>& loaded) {
  std::vector<std::string> notes;
  for (const auto& r : CallWorkers(c, "GET", [](const std::string&) { return "/v1/status"; })) {
    auto it = loaded.find(r.member);
    if (!r.status.ok() || it == loaded.end()) continue;
    const uint64_t mine = it->second;
    try {
      const Json j = Json::parse(r.body);
      const uint64_t capacity = j.value("cache_capacity_bytes", uint64_t{0});
      if (capacity && mine > capacity) {
        notes.push_back("worker " + r.member + " holds " + FormatSize(capacity) + " and this load brought it " +
                        FormatSize(mine));
      }
      for (const auto& q : j.value("quotas", Json::array())) {
        const std::string rule = q.value("rule", "");
        const uint64_t limit = q.value("limit_bytes", uint64_t{0});
        if (PathRules::Covers(rule, path) && limit && mine > limit) {
          notes.push_back("worker " + r.member + " keeps " + FormatSize(limit) + " under " + rule +
                          " (its quota) and this load brought it " + FormatSize(mine));
        }
      }
    } catch (const std::exception&) {
      // a status that does not parse says nothing here; the load itself is done
    }
  }
  if (notes.empty()) return;
  std::string list;
  for (const auto& n : notes) list += (list.empty() ? "" : "; ") + n;
  std::fprintf(stderr,
               "shoal: note: not all of the load stays cached: %s. The pages beyond were evicted as they came "
               "(`shoal rules` shows the quotas; a larger cache or quota keeps more)\n",
               list.c_str());
}

int Load(Client& c, const LoadArgs& a) {
  if (a.path.empty()) return Fail(Status(Code::kInvalidArgument, "shoal load needs a PATH (or --status / --stop)"));
  uint64_t bandwidth = 0;
  if (!a.bandwidth.empty()) {
    std::string b = a.bandwidth;
    if (b.ends_with("/s")) b.resize(b.size() - 2);
    auto n = ParseSize(b);
    if (!n || *n == 0) {
      return Fail(
          Status(Code::kInvalidArgument,
                 "--bandwidth " + a.bandwidth + " is not a rate such as 100MB/s, 1GiB/s or 50M (bytes per second)"));
    }
    bandwidth = *n;
  }
  if (a.concurrency > 256) return Fail(Status(Code::kInvalidArgument, "--concurrency must be 1 to 256"));
  const RingInfo ring_info = c.Ring();
  std::vector<std::string> members;
  std::string weights;  // only when some member has a weight (etcd: its cache bytes)
  bool weighted = false;
  std::string addresses;  // so that each directory is listed at the store once (load_job.h)
  bool addressed = true;
  for (const auto& m : ring_info.members) {
    addresses += (addresses.empty() ? "" : ",") + m.address;
    addressed = addressed && !m.address.empty();
    members.push_back(m.id);
    weights += (weights.empty() ? "" : ",") + std::to_string(m.weight);
    weighted = weighted || m.weight != 0;
  }
  if (members.empty()) {
    return Fail(Status(Code::kInvalidArgument,
                       "the config names no workers (cluster.workers): `shoal load` loads "
                       "the workers' caches; start a cluster (shoal up) first"));
  }
  auto st = c.Stat(a.path);
  if (!st) return Fail(st.error());
  std::string id = a.id.empty() ? NewJobId() : a.id;
  std::string ring;
  for (const auto& m : members) ring += (ring.empty() ? "" : ",") + m;
  uint64_t per_worker = bandwidth ? (bandwidth + members.size() - 1) / members.size() : 0;
  std::string base = "/v1/load?id=" + Enc(id) + "&path=" + Enc(st->path) + "&members=" + Enc(ring);
  if (weighted) base += "&weights=" + Enc(weights);
  if (addressed) base += "&addresses=" + Enc(addresses);
  if (a.recursive) base += "&recursive=1";
  if (a.verify) base += "&verify=1";
  if (a.skip_if_exists) base += "&skip_if_exists=1";
  if (per_worker) base += "&bandwidth=" + std::to_string(per_worker);
  if (a.concurrency) base += "&concurrency=" + std::to_string(a.concurrency);
  if (!st->is_dir) base += "&version=" + Enc(st->version) + "&size=" + std::to_string(st->size);

  std::string failed;
  size_t started = 0;
  for (const auto& r : CallWorkers(c, "POST", [&](const std::string& m) { return base + "&self=" + Enc(m); })) {
    if (r.status.ok()) {
      ++started;
    } else {
      failed += (failed.empty() ? "" : "; ") + ("worker " + r.member + ": " + r.status.message());
    }
  }
  if (!failed.empty()) {
    if (started) {
      CallWorkers(c, "POST", [&](const std::string&) { return "/v1/load/stop?id=" + Enc(id); });
    }
    return Fail(Status(started ? Code::kUnavailable : Code::kInvalidArgument,
                       "load of " + st->path + " could not start on every worker (" + failed + ")" +
                           (started ? "; stopped it on the others. Fix that and run it again" : "")));
  }
  std::fprintf(stderr, "load job %s of %s started on %zu workers; Ctrl-C stops watching, not the job\n", id.c_str(),
               st->path.c_str(), started);

  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  const bool tty = Interactive(a);
  auto next_line = Clock::now();
  Aggregate last;
  std::vector<std::string> problems;
  std::map<std::string, uint64_t> member_bytes;
  for (;;) {
    problems.clear();
    member_bytes.clear();
    auto jobs = Collect(c, id, &problems, nullptr, &member_bytes);
    last = jobs.count(id) ? jobs[id] : Aggregate{};
    last.id = id;
    bool finished = problems.empty() && last.workers == members.size() && last.running == 0;
    bool lost = !problems.empty();
    if (finished || lost) break;
    if (Clock::now() >= next_line) {
      if (tty) {
        std::printf("\r\033[K%s", last.Line().c_str());
      } else {
        std::printf("%s\n", last.ToJson(false).dump().c_str());
      }
      std::fflush(stdout);
      next_line = Clock::now() + std::chrono::seconds(1);
    }
    // The next look in 60 ms (a small GET per worker): the command ends
    // at most that long after the last fetch (it was 200 ms, a fifth of a
    // one-second load). Sliced so Ctrl-C is seen at once.
    for (int i = 0; i < 3 && !g_interrupted; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (g_interrupted) {
      if (tty) std::printf("\n");
      std::fprintf(stderr,
                   "shoal: stopped watching; load job %s keeps running on the workers. See it with "
                   "`shoal load --status --id %s`, stop it with `shoal load --stop --id %s`\n",
                   id.c_str(), id.c_str(), id.c_str());
      return 130;
    }
  }
  if (tty) {
    std::printf("\r\033[K%s\n", last.Line().c_str());
  } else {
    std::printf("%s\n", last.ToJson(true).dump().c_str());
  }
  std::fflush(stdout);
  if (!problems.empty()) {
    std::string list;
    for (const auto& p : problems) list += (list.empty() ? "" : "; ") + p;
    return Fail(Status(Code::kUnavailable, "lost track of load job " + id + " (" + list +
                                               "); a restarted worker forgets its jobs: run `shoal load " + a.path +
                                               (a.recursive ? " -r" : "") + "` again to resume"));
  }
  if (last.failed) {
    std::string list;
    for (const auto& e : last.errors) list += (list.empty() ? "" : "; ") + e;
    return Fail(Status(Code::kIo, "load job " + id + " failed: " + list));
  }
  if (last.stopped) {
    return Fail(Status(Code::kUnavailable, "load job " + id + " was stopped (shoal load --stop); run `shoal load " +
                                               a.path + (a.recursive ? " -r" : "") + "` again to resume"));
  }
  if (last.files_failed) {
    return Fail(Status(Code::kIo, std::to_string(last.files_failed) + " files could not be loaded: " +
                                      FirstOf(last.failures, "error") + "; run the load again to retry them"));
  }
  if (last.mismatches) {
    return Fail(Status(Code::kCorruption, "verify found " + std::to_string(last.mismatches) +
                                              " mismatches, dropped and loaded again from the under-store: " +
                                              FirstOf(last.mismatch_list, "what")));
  }
  if (last.State() == "done") NoteWhatDidNotStay(c, st->path, member_bytes);
  if (last.files_not_admitted) {
    std::fprintf(stderr,
                 "shoal: note: %llu file%s not loaded: a path rule says admission: skip for %s, so %s never "
                 "cached (`shoal rules` lists the rules; `shoal rules set PREFIX admission=` clears it)\n",
                 static_cast<unsigned long long>(last.files_not_admitted),
                 last.files_not_admitted == 1 ? " was" : "s were", last.files_not_admitted == 1 ? "it" : "them",
                 last.files_not_admitted == 1 ? "it is" : "they are");
  }
  if (last.dirs_skipped && !a.recursive) {
    std::fprintf(stderr, "shoal: note: %llu %s not loaded; add -r to load %s\n",
                 static_cast<unsigned long long>(last.dirs_skipped),
                 last.dirs_skipped == 1 ? "subdirectory was" : "subdirectories were",
                 last.dirs_skipped == 1 ? "it" : "them");
  }
  return 0;
}

int Free(Client& c, const std::string& path, bool recursive) {
  auto st = c.Stat(path);
  std::string ns = st ? st->path : path;
  if (st && st->is_dir && !recursive) {
    return Fail(Status(Code::kInvalidArgument, ns + " is a directory: add -r to free everything under it"));
  }
  if (!st && st.error().code() != Code::kNotFound)
    return Fail(st.error());  // a path gone from the store may still be cached
  uint64_t pages = 0, bytes = 0;
  std::string failed;
  std::string target = "/v1/free?path=" + Enc(ns) + (recursive ? "&recursive=1" : "");
  Status refused;  // a refusal (authorization) is the same on every worker: said once, not retried
  for (const auto& r : CallWorkers(c, "POST", [&](const std::string&) { return target; })) {
    if (r.status.code() == Code::kPermissionDenied || r.status.code() == Code::kNotFound) {
      if (refused.ok()) refused = r.status;
      continue;
    }
    if (!r.status.ok()) {
      failed += (failed.empty() ? "" : "; ") + ("worker " + r.member + ": " + r.status.message());
      continue;
    }
    try {
      auto j = Json::parse(r.body);
      pages += j.at("pages").get<uint64_t>();
      bytes += j.at("bytes").get<uint64_t>();
    } catch (const std::exception& e) {
      failed += (failed.empty() ? "" : "; ") + ("worker " + r.member + ": malformed answer: " + e.what());
    }
  }
  if (!refused.ok() && pages == 0) return Fail(refused);
  std::printf("freed %s (%llu bytes, %llu pages) of %s\n", FormatSize(bytes).c_str(),
              static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(pages), ns.c_str());
  if (!failed.empty()) {
    return Fail(Status(Code::kUnavailable, "could not free " + ns + " on every worker: " + failed +
                                               "; run `shoal free` again once they answer"));
  }
  return 0;
}

}  // namespace

void AddLoadCommands(CLI::App& app, int* exit_code) {
  {
    auto a = std::make_shared<LoadArgs>();
    auto* cmd =
        app.add_subcommand("load", "Preload a path into the workers' caches (each worker fetches what it owns)");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path or physical URI (a file or a directory)");
    cmd->add_flag("-r,--recursive", a->recursive, "Load subdirectories too");
    cmd->add_option("--bandwidth", a->bandwidth,
                    "Cap on the whole cluster's fetching, e.g. 200MB/s (split across workers)");
    cmd->add_flag("--verify", a->verify,
                  "Check cached bytes against the under-store (page checksums; MD5 against single-part S3 ETags); "
                  "drop and reload what differs");
    cmd->add_flag("--skip-if-exists", a->skip_if_exists,
                  "Skip a file a worker holds any page of, without checking it further (no under-store request)");
    cmd->add_option("--concurrency", a->concurrency, "Fetches in flight per worker (default: worker.ufs_threads)");
    cmd->add_option("--id", a->id, "Job id (default: a new one); with --status / --stop: that job only");
    cmd->add_flag("--status", a->status, "Show load jobs on the workers (all, or --id)");
    cmd->add_flag("--stop", a->stop, "Stop load jobs on the workers (all, or --id)");
    cmd->add_flag("--json", a->json, "JSON lines even on a terminal");
    cmd->callback([a, exit_code] {
      if (a->status && a->stop)
        return void(*exit_code = Fail(Status(Code::kInvalidArgument,
                                             "--status and --stop "
                                             "exclude each other")));
      if (!a->id.empty()) {
        bool ok = a->id.size() <= 64 && std::all_of(a->id.begin(), a->id.end(), [](char ch) {
                    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
                  });
        if (!ok) {
          return void(*exit_code = Fail(Status(Code::kInvalidArgument, "--id '" + a->id +
                                                                           "' must be 1 to 64 letters, digits, '-', "
                                                                           "'_' or '.'")));
        }
      }
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      if (a->status) return void(*exit_code = ShowStatus(**c, *a));
      if (a->stop) return void(*exit_code = StopJobs(**c, *a));
      *exit_code = Load(**c, *a);
    });
  }
  {
    struct Args {
      ClientOptions client;
      std::string path;
      bool recursive = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("free", "Drop a path's cached pages on every worker");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path or physical URI")->required();
    cmd->add_flag("-r,--recursive", a->recursive, "Everything under a directory");
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      *exit_code = Free(**c, a->path, a->recursive);
    });
  }
}

}  // namespace shoal::cli
