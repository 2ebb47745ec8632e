// LocalReader: the client's end of short-circuit reads (common/local_wire.h).
//
// Per worker it remembers whether the worker is on this host (its /v1/status
// named a UNIX socket that answers to the worker's token) and pools
// connections to it. A read asks the worker for the page files holding a
// prefix of the range and preads them, checking every chunk it reads against
// the page's checksums (cache/page_format.h); whatever it cannot serve that
// way the caller reads over TCP. A chunk that fails its checksum ends the
// prefix before its page: the caller reads that page over TCP, where the
// worker checks the same chunk, drops the page and fetches it again from the
// under-store, so a corrupt byte is never returned and the page is replaced.
// Any failure of the channel switches a worker's short circuit off for a
// while and never fails a read.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/local_pages.h"
#include "common/local_wire.h"
#include "common/shared_epoch.h"

namespace shoal {

class LocalReader {
 public:
  // `verify` false skips the checksums: for benchmarks and diagnosis only
  // (client.verify_checksums).
  LocalReader(std::chrono::milliseconds timeout, std::chrono::milliseconds retry_after, bool verify = true);
  ~LocalReader();
  LocalReader(const LocalReader&) = delete;
  LocalReader& operator=(const LocalReader&) = delete;

  // The user this client names on the socket when no end user is set (its
  // token's, as an X-Shoal-On-Behalf-Of value), so that the workers authorize
  // it as they do over TCP. Call before the first read.
  void set_self(std::string on_behalf) { self_ = std::move(on_behalf); }

  // Whether `worker` needs discovering now; true claims the discovery for the
  // caller, who must then call Discovered().
  bool ClaimDiscovery(const std::string& worker);
  // What the worker's /v1/status said ("" socket: none). Connects to check.
  void Discovered(const std::string& worker, const std::string& socket, const std::string& token);
  // Waits, until `deadline` at most, while another caller discovers `worker`
  // (a first wave of parallel reads would otherwise all go over TCP).
  void AwaitDiscovery(const std::string& worker, std::chrono::steady_clock::time_point deadline);

  // Whether `worker` is on this host with its short circuit open.
  bool IsLocal(const std::string& worker);

  // Reads a prefix of [offset, offset + out.size()) of the file version from
  // the pages `worker` holds; returns its length (0: none cached, or the
  // worker has no short circuit to this client). One exchange covers up to
  // local_wire::kMaxSegments pages.
  //
  // Pages a read answer leased (its epoch and lease_ns, as for kOpenCached;
  // docs/protocol.md, "Held read pages") are held with
  // their fds, and serve later reads of the same pages of the same version
  // without asking the worker, under the rules of OpenCached's leases: while
  // the worker's epoch stands (a page removed or dropped moves it), the lease
  // lasts and the worker answered anything within kLeaseContact. Their bytes
  // are read only while trusted: while the page's file has the identity under
  // which the worker checked it whole (an fstat). A page that is not (its
  // file changed, or the worker checks every read: worker.verify always) is
  // let go and asked for again, so the worker checks it before any hand-off
  // and drops it if it is corrupt. They count against max_leased_fds().
  uint64_t Read(const std::string& worker, const std::string& ns_path, const std::string& version, uint64_t size,
                uint64_t offset, std::span<char> out);

  // The page files `worker` holds for a prefix of [offset, offset + length)
  // of the file version, for a caller that checks and sends them itself
  // (local_pages.h): only page files, each checked to be the page asked for
  // (its header's key); a block-file slot or a page whose header fails ends
  // the prefix (the caller reads those bytes through the client). Empty when
  // there are none or the worker has no short circuit to this client.
  std::vector<LocalPage> Pages(const std::string& worker, const std::string& ns_path, const std::string& version,
                               uint64_t size, uint64_t offset, uint64_t length);

  struct Opened {
    std::string stat_json;  // as /v1/stat answers it
    std::string prefix;     // the cached part of the first `length` bytes
  };
  // The path's stat and first bytes from `worker` (its metadata owner);
  // nullopt when there is no short circuit to it or it answered an error
  // (the caller asks over HTTP, which reports the error properly).
  std::optional<Opened> Open(const std::string& worker, const std::string& ns_path, uint64_t length);

  // The most a cached-only open waits for the worker's answer, and how long
  // cached-only opens to a worker pause after one got none.
  static constexpr std::chrono::milliseconds kCachedOpenTimeout{250};
  static constexpr std::chrono::milliseconds kCachedOpenPause{1'000};
  // The same answered only from what `worker` holds now (local_wire.h,
  // kOpenCached): its fresh cached stat and all of the first `length` bytes
  // (at most the file's size), or nullopt at once: not cached, no short
  // circuit to the worker known yet (this never discovers one), or no answer
  // within kCachedOpenTimeout. It runs on its own connections, whose
  // receives time out after kCachedOpenTimeout; a timeout or a broken
  // connection pauses cached-only opens to the worker for kCachedOpenPause,
  // and never switches off its other short-circuit reads.
  //
  // An answer the worker leased (local_wire.h, "Leases") is held, with its
  // fds, and answers the same open again without asking the worker while the
  // worker's epoch stands, the lease lasts and the worker answered anything
  // within kLeaseContact (past it, one exchange reports the reads served from
  // leases and shows the worker is still the one that leased them; a worker
  // that is gone or restarted takes its leases with it). The bytes are read
  // from the fds and checked every time, as from a fresh answer. At most
  // max_leased_fds() fds are held; past it, other leases of the worker go.
  std::optional<Opened> OpenCached(const std::string& worker, const std::string& ns_path, uint64_t length);

  static constexpr std::chrono::milliseconds kLeaseContact{100};
  size_t max_leased_fds() const { return max_leased_fds_; }
  // Cached-only opens answered from a held lease.
  uint64_t leased_opens() const { return leased_opens_.load(std::memory_order_relaxed); }
  // Sends the reads served from leases to every worker now (they go at least
  // every kLeaseContact while leases are used, and at destruction).
  void ReportLeasedReads();
  // The same, to the workers that served reads from held pages since the
  // last report: a File sends them when it closes, so that a worker's hit
  // counts show a file's reads once it is closed.
  void ReportHeldReads();

  // Page reads served from held pages (Read), without asking the worker;
  // they reach it in kTouch batches as ranges, as a lease's reads do.
  uint64_t held_page_reads() const { return held_page_reads_.load(std::memory_order_relaxed); }

  // Page reads that found a chunk failing its checksum (and went over TCP instead).
  uint64_t corrupt_reads() const { return corrupt_reads_.load(std::memory_order_relaxed); }
  // Bytes read from page and block files for the reads served here: headers
  // and whole chunks included (what the checks cost in reads).
  uint64_t file_bytes() const { return file_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Lease;     // an OpenCached answer held (local_reader.cc)
  struct HeldPage;  // a page of a Read answer held (local_reader.cc)
  // A version's held pages by the file offset of their first byte.
  using HeldPages = std::map<uint64_t, std::shared_ptr<const HeldPage>>;
  struct Channel {
    bool available = false;
    bool discovering = false;
    std::chrono::steady_clock::time_point retry_at{};
    std::string socket, token;
    std::vector<int> idle;  // connected and greeted
    // Connections for cached-only opens (receives time out after
    // kCachedOpenTimeout), and when those may be tried again after one failed.
    std::vector<int> quick_idle;
    std::chrono::steady_clock::time_point quick_retry_at{};
    // Leases (OpenCached): the worker's epoch as its hello passed it (null:
    // none, so nothing is held), when it last answered, the answers held by
    // path, and the reads served from them that it has not been told of.
    std::shared_ptr<const SharedEpochView> epoch;
    std::chrono::steady_clock::time_point contact{};
    std::unordered_map<std::string, std::shared_ptr<const Lease>> leases;  // by path and end user (LeaseKey)
    std::unordered_map<std::string, local_wire::Touch> touches;
    std::unordered_map<std::string, HeldPages> held;  // by path, version and end user (HeldKey)
    bool held_reads_unreported = false;               // touches holds reads from held pages
  };
  enum class LeaseLookup { kNone, kFound, kNeedsContact };
  LeaseLookup FindLease(const std::string& worker, const std::string& ns_path, uint64_t length,
                        std::shared_ptr<const Lease>* out);
  // Holds a leased answer (takes its fds: *fds is emptied) unless it is not
  // to be held; any answer held for the path is replaced.
  // `asked`: when the request went out (the lease counts from then).
  void HoldLease(const std::string& worker, const std::string& ns_path, uint64_t length,
                 std::chrono::steady_clock::time_point asked, local_wire::Reply reply, std::vector<int>* fds);
  void DropLease(const std::string& worker, const std::string& ns_path, const Lease* lease);
  void NoteLeasedRead(const std::string& worker, const std::string& ns_path, uint64_t length);
  // A read of [offset, offset + length) served from held pages.
  void NoteHeldRead(const std::string& worker, const std::string& ns_path, uint64_t offset, uint64_t length);
  // Counts a touch under `key`. REQUIRES: mu_ held.
  void AddTouchLocked(Channel& ch, const std::string& key, local_wire::Touch touch);
  // Drops every lease and held page of the channel. REQUIRES: mu_ held.
  void DropLeasesLocked(Channel& ch);
  // Reads the prefix of [offset, offset + out.size()) that held pages cover
  // (usable ones, one after another); returns its length.
  uint64_t ReadHeld(const std::string& worker, const std::string& ns_path, const std::string& version, uint64_t offset,
                    std::span<char> out);
  // Holds the pages of a leased Read answer whose segments are in the first
  // `read` bytes read and checked from `offset` (takes their fds: -1 in *fds).
  // `asked`: when the request went out (the lease counts from then).
  void HoldPages(const std::string& worker, const std::string& ns_path, const std::string& version,
                 std::chrono::steady_clock::time_point asked, const local_wire::Reply& reply, std::vector<int>* fds,
                 uint64_t offset, uint64_t read);
  // Lets go of the held page of the version that holds byte `offset`.
  void DropHeldPage(const std::string& worker, const std::string& key, uint64_t offset);
  // Lets go of the channel's held pages whose epoch moved or lease ended. REQUIRES: mu_ held.
  void DropStaleHeldLocked(Channel& ch, std::chrono::steady_clock::time_point now);
  // Room for `n` more held fds: other leases and held pages of `ch` go. REQUIRES: mu_ held.
  bool MakeRoomLocked(Channel& ch, size_t n);
  // One kTouch exchange with `worker`: the reads not yet reported (as many
  // as one record holds). Its success is the contact that keeps leases usable.
  void ReportTouches(const std::string& worker);
  // `epoch` non-null: maps the epoch the worker's hello passes into it.
  int Connect(const std::string& socket, const std::string& token, std::chrono::milliseconds timeout,
              std::shared_ptr<const SharedEpochView>* epoch = nullptr);
  // Takes a pooled connection (*pooled set), or makes one (always, with
  // `fresh`); -1 if the worker has no short circuit (or, `quick`, if
  // cached-only opens to it are paused).
  int Acquire(const std::string& worker, bool quick, bool* pooled = nullptr, bool fresh = false);
  void Release(const std::string& worker, int fd, bool quick);
  void Disable(const std::string& worker, const std::string& why);
  void PauseCachedOpens(const std::string& worker, const std::string& why);
  // One request and its reply, with the reply's fds (the caller closes them);
  // nullopt when the worker has no short circuit or it just failed. `quick`:
  // on the cached-only connections, whose failure only pauses them.
  std::optional<local_wire::Reply> Exchange(const std::string& worker, const local_wire::Request& req,
                                            std::vector<int>* fds, bool quick = false);
  // An open of `kind` (kOpen, or kOpenCached on the quick connections): its
  // reply's stat and prefix.
  std::optional<Opened> OpenAs(local_wire::Kind kind, const std::string& worker, const std::string& ns_path,
                               uint64_t length);
  // Preads the reply's segments into `out`, in order, checking them; returns
  // the bytes read and checked (a prefix of `out`). `offset` is the file
  // offset of out[0]. `trusted_only`: stops at the first segment not
  // trusted (its file's identity is not the one the worker verified).
  uint64_t ReadSegments(const local_wire::Reply& reply, const std::vector<int>& fds, const std::string& ns_path,
                        const std::string& version, uint64_t offset, std::span<char> out, bool trusted_only = false);

  std::chrono::milliseconds timeout_, retry_after_;
  bool verify_;
  std::string self_;  // set_self
  std::atomic<uint64_t> corrupt_reads_{0};
  std::atomic<uint64_t> file_bytes_{0};
  std::atomic<uint64_t> leased_opens_{0};
  std::atomic<uint64_t> held_page_reads_{0};
  size_t max_leased_fds_;
  size_t leased_fds_ = 0;  // under mu_: held by leases and held pages
  std::mutex mu_;
  std::condition_variable discovered_;  // a discovery ended
  std::map<std::string, Channel> channels_;
};

}  // namespace shoal
