#include "client/local_reader.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "cache/page_format.h"
#include "common/end_user.h"

namespace shoal {

namespace {

constexpr size_t kMaxIdlePerWorker = 32;

void SetTimeouts(int fd, std::chrono::milliseconds t) {
  timeval tv{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>((t.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Closes the fds a reply passed; -1 marks one a caller kept.
void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

// A read request of [offset, offset + length) of one version of a file.
local_wire::Request ReadRequest(const std::string& ns_path, const std::string& version, uint64_t size, uint64_t offset,
                                uint64_t length) {
  local_wire::Request req;
  req.path = ns_path;
  req.version = version;
  req.size = size;
  req.offset = offset;
  req.length = length;
  return req;
}

// A passed fd that a LocalPage's owner closes once its last user is done.
struct ClosedWhenDone {
  explicit ClosedWhenDone(int f) : fd(f) {}
  ~ClosedWhenDone() { ::close(fd); }
  ClosedWhenDone(const ClosedWhenDone&) = delete;
  ClosedWhenDone& operator=(const ClosedWhenDone&) = delete;
  int fd;
};

// The end user the calling thread reads for (common/end_user.h), as the
// short circuit carries it: else the client's own user as its token names
// it (`self`), "" for this process's own user.
std::string EndUserOnWire(const std::string& self) {
  const auto& user = CurrentEndUser();
  return user ? OnBehalfValue(*user) : self;
}

// A held answer is served again only to the end user it was given for.
std::string LeaseKey(const std::string& ns_path, const std::string& self) {
  return ns_path + '\n' + EndUserOnWire(self);
}

// Held read pages are served again only for the version and end user they were given for.
std::string HeldKey(const std::string& ns_path, const std::string& version, const std::string& self) {
  return ns_path + '\n' + version + '\n' + EndUserOnWire(self);
}

// The fds of a held answer, closed with its last user.
struct HeldFds {
  std::vector<int> fds;
  ~HeldFds() { CloseAll(fds); }
};

// Leased fds held at once: an eighth of RLIMIT_NOFILE, at most 4096.
size_t MaxLeasedFds() {
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_cur == RLIM_INFINITY) return 4096;
  return std::min<size_t>(4096, nofile.rlim_cur / 8);
}

}  // namespace

struct LocalReader::Lease {
  std::shared_ptr<const SharedEpochView> epoch;  // the worker's, as the answer came
  uint64_t epoch_value = 0;
  std::chrono::steady_clock::time_point expires;
  uint64_t length = 0;  // the open's length
  std::string stat_json;
  local_wire::Reply reply;  // its segments
  HeldFds held;
};

struct LocalReader::HeldPage {
  std::shared_ptr<const SharedEpochView> epoch;  // the worker's, as the answer came
  uint64_t epoch_value = 0;
  std::chrono::steady_clock::time_point expires;
  uint64_t start = 0;       // the file offset of the page's first data byte
  local_wire::Segment seg;  // the whole page: its first data byte's data_offset, length page_len
  HeldFds held;             // its one fd
};

LocalReader::LocalReader(std::chrono::milliseconds timeout, std::chrono::milliseconds retry_after, bool verify)
    : timeout_(timeout), retry_after_(retry_after), verify_(verify), max_leased_fds_(MaxLeasedFds()) {}

LocalReader::~LocalReader() {
  ReportLeasedReads();
  for (auto& [w, ch] : channels_) {
    CloseAll(ch.idle);
    CloseAll(ch.quick_idle);
  }
}

bool LocalReader::IsLocal(const std::string& worker) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  return it != channels_.end() && it->second.available;
}

bool LocalReader::ClaimDiscovery(const std::string& worker) {
  std::lock_guard lock(mu_);
  auto& ch = channels_[worker];
  if (ch.available || ch.discovering || std::chrono::steady_clock::now() < ch.retry_at) return false;
  ch.discovering = true;
  return true;
}

void LocalReader::AwaitDiscovery(const std::string& worker, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  discovered_.wait_until(lock, deadline, [&] {
    auto it = channels_.find(worker);
    return it == channels_.end() || !it->second.discovering;
  });
}

void LocalReader::Discovered(const std::string& worker, const std::string& socket, const std::string& token) {
  std::shared_ptr<const SharedEpochView> epoch;
  int fd = socket.empty() ? -1 : Connect(socket, token, timeout_, &epoch);
  struct Notify {
    std::condition_variable& cv;
    ~Notify() { cv.notify_all(); }  // after the lock below is let go
  } notify{discovered_};
  std::lock_guard lock(mu_);
  auto& ch = channels_[worker];
  ch.discovering = false;
  ch.available = fd >= 0;
  ch.socket = socket;
  ch.token = token;
  DropLeasesLocked(ch);  // another worker's, or from before a restart
  ch.epoch = std::move(epoch);
  if (fd >= 0) {
    ch.idle.push_back(fd);
    spdlog::debug("short-circuit reads from worker {} through {}", worker, socket);
  } else {
    ch.retry_at = std::chrono::steady_clock::now() + retry_after_;
  }
}

int LocalReader::Connect(const std::string& socket, const std::string& token, std::chrono::milliseconds timeout,
                         std::shared_ptr<const SharedEpochView>* epoch) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (socket.size() >= sizeof a.sun_path) return -1;
  std::memcpy(a.sun_path, socket.data(), socket.size());
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  SetTimeouts(fd, timeout);
  // A socket path that does not exist here, or is not reachable, means the
  // worker is on another host (or in another mount namespace): not an error.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  local_wire::Request hello;
  hello.kind = local_wire::Kind::kHello;
  hello.path = token;
  hello.version = DoorName();  // the label of the worker's per-client metrics
  std::string bytes;
  std::vector<int> fds;
  Status st = local_wire::SendRecord(fd, local_wire::EncodeRequest(hello), {});
  if (st.ok()) st = local_wire::RecvRecord(fd, &bytes, &fds);
  auto reply = st.ok() ? local_wire::DecodeReply(bytes) : Result<local_wire::Reply>(Err(st));
  // The worker's epoch, if it passes one (local_wire.h): without it, or one
  // that is not sealed, nothing is held.
  if (epoch && reply && reply->code == 0 && reply->segments.size() == 1 && fds.size() == 1 &&
      reply->segments[0].length == sizeof(uint64_t)) {
    if (auto view = SharedEpochView::Map(fds[0])) {
      *epoch = std::move(*view);
    } else {
      spdlog::warn("short-circuit socket {}: {}; cached-only opens are not held", socket, view.error().message());
    }
  }
  CloseAll(fds);
  if (!reply || reply->code != 0) {
    spdlog::debug("short-circuit socket {} refused: {}", socket, reply ? reply->message : reply.error().message());
    ::close(fd);
    return -1;
  }
  return fd;
}

int LocalReader::Acquire(const std::string& worker, bool quick, bool* pooled, bool fresh) {
  if (pooled) *pooled = false;
  std::string socket, token;
  {
    std::lock_guard lock(mu_);
    auto it = channels_.find(worker);
    if (it == channels_.end() || !it->second.available) return -1;
    if (quick && std::chrono::steady_clock::now() < it->second.quick_retry_at) return -1;
    auto& idle = quick ? it->second.quick_idle : it->second.idle;
    if (!idle.empty() && !fresh) {
      int fd = idle.back();
      idle.pop_back();
      if (pooled) *pooled = true;
      return fd;
    }
    socket = it->second.socket;
    token = it->second.token;
  }
  int fd = Connect(socket, token, quick ? kCachedOpenTimeout : timeout_);
  if (fd < 0 && quick) {
    PauseCachedOpens(worker, "no greeting within " + std::to_string(kCachedOpenTimeout.count()) + " ms");
  } else if (fd < 0) {
    Disable(worker, "cannot connect to " + socket);
  }
  return fd;
}

void LocalReader::Release(const std::string& worker, int fd, bool quick) {
  std::lock_guard lock(mu_);
  auto& ch = channels_[worker];
  ch.contact = std::chrono::steady_clock::now();  // it answered
  auto& idle = quick ? ch.quick_idle : ch.idle;
  if (!ch.available || idle.size() >= kMaxIdlePerWorker) {
    ::close(fd);
    return;
  }
  idle.push_back(fd);
}

void LocalReader::Disable(const std::string& worker, const std::string& why) {
  std::vector<int> idle;
  {
    std::lock_guard lock(mu_);
    auto& ch = channels_[worker];
    if (!ch.available) return;
    ch.available = false;
    ch.retry_at = std::chrono::steady_clock::now() + retry_after_;
    idle.swap(ch.idle);
    idle.insert(idle.end(), ch.quick_idle.begin(), ch.quick_idle.end());
    ch.quick_idle.clear();
    DropLeasesLocked(ch);
  }
  CloseAll(idle);
  spdlog::warn("short-circuit reads from worker {} stopped ({}); reading over TCP, trying again in {} ms", worker, why,
               retry_after_.count());
}

void LocalReader::PauseCachedOpens(const std::string& worker, const std::string& why) {
  // A worker busy past kCachedOpenTimeout (or gone): callers open the usual way meanwhile.
  spdlog::debug("cached-only short-circuit opens from worker {} paused for {} ms: {}", worker,
                kCachedOpenPause.count(), why);
  std::lock_guard lock(mu_);
  auto& ch = channels_[worker];
  ch.quick_retry_at = std::chrono::steady_clock::now() + kCachedOpenPause;
  DropLeasesLocked(ch);  // the worker may be gone: nothing it leased stands
}

std::optional<local_wire::Reply> LocalReader::Exchange(const std::string& worker, const local_wire::Request& req,
                                                       std::vector<int>* fds, bool quick) {
  bool pooled = false;
  int fd = Acquire(worker, quick, &pooled);
  if (fd < 0) return std::nullopt;
  std::string bytes;
  local_wire::Request with_user = req;
  if (req.kind != local_wire::Kind::kHello) with_user.on_behalf = EndUserOnWire(self_);
  const std::string request = local_wire::EncodeRequest(with_user);
  Status st = local_wire::SendRecord(fd, request, {});
  if (st.ok()) st = local_wire::RecvRecord(fd, &bytes, fds);
  if (!st.ok() && pooled) {
    // A pooled connection the worker closed while it idled (to make room at
    // its connection cap, or it restarted): once more on a new one.
    CloseAll(*fds);
    fds->clear();
    ::close(fd);
    fd = Acquire(worker, quick, nullptr, /*fresh=*/true);
    if (fd < 0) return std::nullopt;
    st = local_wire::SendRecord(fd, request, {});
    if (st.ok()) st = local_wire::RecvRecord(fd, &bytes, fds);
  }
  auto reply = st.ok() ? local_wire::DecodeReply(bytes) : Result<local_wire::Reply>(Err(st));
  if (reply && reply->segments.size() != fds->size()) {
    reply = Err(Code::kIo, "short-circuit reply with " + std::to_string(reply->segments.size()) + " segments and " +
                               std::to_string(fds->size()) + " fds");
  }
  if (!reply) {
    CloseAll(*fds);
    fds->clear();
    ::close(fd);
    if (quick) {
      PauseCachedOpens(worker, reply.error().message());
    } else {
      Disable(worker, reply.error().message());
    }
    return std::nullopt;
  }
  Release(worker, fd, quick);
  return std::move(*reply);
}

namespace {

// Whether the worker checked the segment's page whole under the identity its
// file still has (local_wire.h).
bool Trusted(const local_wire::Segment& seg, int fd) {
  if (seg.verified_ino == 0) return false;
  const page_format::FileIdentity said{seg.verified_dev, seg.verified_ino, seg.verified_ctime_ns, seg.verified_size};
  return page_format::IdentityOf(fd) == said;
}

// Exactly out.size() bytes of `fd` from `offset`; false on an error or a short file.
bool PreadAll(int fd, uint64_t offset, std::span<char> out) {
  for (size_t got = 0; got < out.size();) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

uint64_t LocalReader::ReadSegments(const local_wire::Reply& reply, const std::vector<int>& fds,
                                   const std::string& ns_path, const std::string& version, uint64_t offset,
                                   std::span<char> out, bool trusted_only) {
  page_format::PageFileReader checking(verify_), trusting(false);
  uint64_t done = 0;
  for (size_t i = 0; i < fds.size(); ++i) {
    const auto& seg = reply.segments[i];
    if (seg.length > out.size() - done || seg.page_offset > UINT64_MAX - seg.header_len ||
        seg.data_offset < seg.page_offset + seg.header_len) {
      break;  // never write past `out`
    }
    if (seg.header_len == 0) {
      // A pending write-back's data file (local_wire.h): the file's own bytes
      // at their own offsets, no page header to check.
      if (seg.data_offset != offset + done || !PreadAll(fds[i], seg.data_offset, out.subspan(done, seg.length))) break;
      done += seg.length;
      continue;
    }
    const uint64_t skip = seg.data_offset - seg.page_offset - seg.header_len;  // into the page's data
    // The header and the first bytes in one read; none of them used before the checks below.
    const std::span<char> dest = out.subspan(done, seg.length);
    // A page the worker checked whole, in a file unchanged since, is read without checks.
    const bool trusted = Trusted(seg, fds[i]);
    if (trusted_only && !trusted) break;
    auto& reader = trusted ? trusting : checking;
    Status st = reader.Begin(fds[i], seg.header_len, seg.page_offset, seg.generation, skip, dest, seg.page_len);
    if (st.ok() && verify_ && !trusted) {
      // The page must be the one asked for: a worker handing out the wrong
      // page shows here, not as wrong bytes.
      const auto& h = reader.header();
      if (h.path() != ns_path || (!version.empty() && h.version() != version) || h.offset() + skip != offset + done ||
          skip + seg.length > h.data_len()) {
        st = Status(Code::kInternal, "the worker passed page " + std::string(h.path()) + " at offset " +
                                         std::to_string(h.offset()) + " for offset " + std::to_string(offset + done) +
                                         " (a bug)");
      }
    }
    if (st.ok()) st = reader.Read(skip, dest);
    if (st.ok() && trusted && seg.generation != 0 && !Trusted(seg, fds[i])) {
      // A block-file slot the worker reused while it was read: that write moved the file's ctime.
      st = Status(Code::kNotFound, "its block-file slot was reused");
    }
    if (!st.ok()) {
      if (st.code() == Code::kCorruption) corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("short-circuit read of {} at offset {} failed ({}); reading it over TCP, where the worker checks "
                   "the page again and replaces it if it is corrupt",
                   ns_path, offset + done, st.message());
      break;
    }
    done += seg.length;
  }
  file_bytes_.fetch_add(checking.bytes_read() + trusting.bytes_read(), std::memory_order_relaxed);
  return done;
}

uint64_t LocalReader::Read(const std::string& worker, const std::string& ns_path, const std::string& version,
                           uint64_t size, uint64_t offset, std::span<char> out) {
  uint64_t done = ReadHeld(worker, ns_path, version, offset, out);
  while (done < out.size()) {
    std::vector<int> fds;
    const auto asked = std::chrono::steady_clock::now();  // a lease counts from before the worker's answer
    auto reply = Exchange(worker, ReadRequest(ns_path, version, size, offset + done, out.size() - done), &fds);
    // An error answer (e.g. a path outside the worker's mounts): HTTP gives the caller the real error.
    if (!reply || reply->code != 0) break;
    const uint64_t n = ReadSegments(*reply, fds, ns_path, version, offset + done, out.subspan(done));
    HoldPages(worker, ns_path, version, asked, *reply, &fds, offset + done, n);
    CloseAll(fds);
    done += n;
    uint64_t answered = 0;
    for (const auto& seg : reply->segments) answered += seg.length;
    // The worker answers at most kMaxSegments pages at once: a full answer,
    // all of it read, may have more after it.
    if (n == 0 || n < answered || reply->segments.size() < local_wire::kMaxSegments) break;
  }
  return done;
}

std::vector<LocalPage> LocalReader::Pages(const std::string& worker, const std::string& ns_path,
                                          const std::string& version, uint64_t size, uint64_t offset,
                                          uint64_t length) {
  std::vector<int> fds;
  auto reply = Exchange(worker, ReadRequest(ns_path, version, size, offset, length), &fds);
  std::vector<LocalPage> out;
  if (reply && reply->code == 0) {
    uint64_t at = offset;
    for (size_t i = 0; i < fds.size(); ++i) {
      const auto& seg = reply->segments[i];
      // Page files only (local_pages.h): their header at byte 0, generation 0.
      if (seg.header_len == 0 || seg.page_offset != 0 || seg.generation != 0 || seg.length == 0 ||
          seg.length > offset + length - at || seg.data_offset < seg.header_len) {
        break;
      }
      LocalPage p;
      p.fd = fds[i];
      p.offset = at;
      p.length = seg.length;
      p.data_offset = seg.data_offset;
      p.header_len = seg.header_len;
      p.skip = seg.data_offset - seg.header_len;
      p.verify = verify_ && !Trusted(seg, fds[i]);
      if (p.verify) {
        // The page must be the one asked for (as in ReadSegments); a header
        // that fails its checksum is left to the read that follows, which
        // counts it and has the worker replace the page.
        page_format::PageFileReader reader;
        if (!reader.Begin(fds[i], seg.header_len).ok()) break;
        const auto& h = reader.header();
        if (h.path() != ns_path || h.version() != version || h.offset() + p.skip != at ||
            p.skip + seg.length > h.data_len()) {
          break;
        }
      }
      p.owner = std::make_shared<const ClosedWhenDone>(fds[i]);
      fds[i] = -1;
      out.push_back(std::move(p));
      at += seg.length;
    }
  }
  CloseAll(fds);
  return out;
}

std::optional<LocalReader::Opened> LocalReader::Open(const std::string& worker, const std::string& ns_path,
                                                     uint64_t length) {
  return OpenAs(local_wire::Kind::kOpen, worker, ns_path, length);
}

std::optional<LocalReader::Opened> LocalReader::OpenCached(const std::string& worker, const std::string& ns_path,
                                                           uint64_t length) {
  std::shared_ptr<const Lease> lease;
  auto found = FindLease(worker, ns_path, length, &lease);
  if (found == LeaseLookup::kNeedsContact) {
    ReportTouches(worker);  // a failure drops the worker's leases
    found = FindLease(worker, ns_path, length, &lease);
  }
  if (found == LeaseLookup::kFound) {
    uint64_t total = 0;
    for (const auto& seg : lease->reply.segments) total += seg.length;
    Opened out;
    out.stat_json = lease->stat_json;
    out.prefix.resize_and_overwrite(static_cast<size_t>(total), [&](char* p, size_t n) {
      return static_cast<size_t>(ReadSegments(lease->reply, lease->held.fds, ns_path, "", 0, std::span<char>(p, n)));
    });
    if (out.prefix.size() == total) {
      leased_opens_.fetch_add(1, std::memory_order_relaxed);
      NoteLeasedRead(worker, ns_path, length);
      return out;
    }
    DropLease(worker, ns_path, lease.get());  // a slot reused, a page gone bad: ask the worker
  }
  return OpenAs(local_wire::Kind::kOpenCached, worker, ns_path, length);
}

LocalReader::LeaseLookup LocalReader::FindLease(const std::string& worker, const std::string& ns_path,
                                                uint64_t length, std::shared_ptr<const Lease>* out) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  if (it == channels_.end() || !it->second.available) return LeaseLookup::kNone;
  Channel& ch = it->second;
  auto l = ch.leases.find(LeaseKey(ns_path, self_));
  if (l == ch.leases.end()) return LeaseLookup::kNone;
  const Lease& lease = *l->second;
  if (lease.length != length || lease.epoch != ch.epoch || now >= lease.expires ||
      lease.epoch->value() != lease.epoch_value) {
    leased_fds_ -= lease.held.fds.size();
    ch.leases.erase(l);
    return LeaseLookup::kNone;
  }
  if (now - ch.contact >= kLeaseContact) return LeaseLookup::kNeedsContact;
  *out = l->second;
  return LeaseLookup::kFound;
}

void LocalReader::HoldLease(const std::string& worker, const std::string& ns_path, uint64_t length,
                            std::chrono::steady_clock::time_point asked, local_wire::Reply reply,
                            std::vector<int>* fds) {
  if (reply.lease_ns == 0 || fds->size() > max_leased_fds_) return;
  for (const auto& seg : reply.segments) {
    if (seg.header_len == 0) return;  // a pending write's data file is never held
  }
  auto lease = std::make_shared<Lease>();
  lease->epoch_value = reply.epoch;
  lease->expires = asked + std::chrono::nanoseconds(std::min<uint64_t>(reply.lease_ns, local_wire::kMaxLeaseNs));
  lease->length = length;
  lease->stat_json = std::move(reply.message);
  reply.message.clear();
  lease->reply = std::move(reply);
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  if (it == channels_.end() || !it->second.available || !it->second.epoch) return;
  Channel& ch = it->second;
  if (ch.epoch->value() != lease->epoch_value) return;  // changed already
  lease->epoch = ch.epoch;
  const std::string key = LeaseKey(ns_path, self_);
  if (auto old = ch.leases.find(key); old != ch.leases.end()) {
    leased_fds_ -= old->second->held.fds.size();
    ch.leases.erase(old);
  }
  // Past the cap, this worker's other leases go (any of them: each is cheap to get again).
  while (leased_fds_ + fds->size() > max_leased_fds_ && !ch.leases.empty()) {
    leased_fds_ -= ch.leases.begin()->second->held.fds.size();
    ch.leases.erase(ch.leases.begin());
  }
  if (leased_fds_ + fds->size() > max_leased_fds_) return;
  leased_fds_ += fds->size();
  lease->held.fds = std::move(*fds);
  fds->clear();
  ch.leases.emplace(key, std::move(lease));
}

void LocalReader::DropLease(const std::string& worker, const std::string& ns_path, const Lease* lease) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  if (it == channels_.end()) return;
  auto l = it->second.leases.find(LeaseKey(ns_path, self_));
  if (l == it->second.leases.end() || l->second.get() != lease) return;  // replaced meanwhile
  leased_fds_ -= lease->held.fds.size();
  it->second.leases.erase(l);
}

void LocalReader::DropLeasesLocked(Channel& ch) {
  for (const auto& [path, lease] : ch.leases) leased_fds_ -= lease->held.fds.size();
  ch.leases.clear();
  for (const auto& [key, pages] : ch.held) leased_fds_ -= pages.size();
  ch.held.clear();
}

void LocalReader::DropStaleHeldLocked(Channel& ch, std::chrono::steady_clock::time_point now) {
  for (auto f = ch.held.begin(); f != ch.held.end();) {
    auto& pages = f->second;
    for (auto p = pages.begin(); p != pages.end();) {
      const HeldPage& page = *p->second;
      if (page.epoch == ch.epoch && now < page.expires && page.epoch->value() == page.epoch_value) {
        ++p;
        continue;
      }
      --leased_fds_;
      p = pages.erase(p);
    }
    f = pages.empty() ? ch.held.erase(f) : std::next(f);
  }
}

bool LocalReader::MakeRoomLocked(Channel& ch, size_t n) {
  // Any of them: each is one exchange to get again.
  while (leased_fds_ + n > max_leased_fds_ && !ch.held.empty()) {
    leased_fds_ -= ch.held.begin()->second.size();
    ch.held.erase(ch.held.begin());
  }
  while (leased_fds_ + n > max_leased_fds_ && !ch.leases.empty()) {
    leased_fds_ -= ch.leases.begin()->second->held.fds.size();
    ch.leases.erase(ch.leases.begin());
  }
  return leased_fds_ + n <= max_leased_fds_;
}

void LocalReader::HoldPages(const std::string& worker, const std::string& ns_path, const std::string& version,
                            std::chrono::steady_clock::time_point asked, const local_wire::Reply& reply,
                            std::vector<int>* fds, uint64_t offset, uint64_t read) {
  if (reply.lease_ns == 0 || read == 0) return;
  const auto expires = asked + std::chrono::nanoseconds(std::min(reply.lease_ns, local_wire::kMaxLeaseNs));
  // The segments read and checked, each cut back to its whole page; only
  // pages whose length the worker said (the reads of a held page stop at
  // its end) and pages with a header (no pending write's data file).
  std::vector<std::pair<size_t, std::shared_ptr<HeldPage>>> pages;
  for (uint64_t at = offset, i = 0; i < fds->size() && at < offset + read; ++i) {
    const auto& seg = reply.segments[i];
    if (seg.length > offset + read - at) break;
    const uint64_t skip = seg.data_offset - seg.page_offset - seg.header_len;  // ReadSegments checked the order
    // Only pages the worker checked whole (a verified identity): the others would never be read from.
    if (seg.header_len != 0 && seg.page_len != 0 && seg.verified_ino != 0 && skip <= at &&
        skip + seg.length <= seg.page_len) {
      auto p = std::make_shared<HeldPage>();
      p->epoch_value = reply.epoch;
      p->expires = expires;
      p->start = at - skip;
      p->seg = seg;
      p->seg.data_offset -= skip;
      p->seg.length = seg.page_len;
      pages.emplace_back(i, std::move(p));
    }
    at += seg.length;
  }
  if (pages.empty()) return;
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  if (it == channels_.end() || !it->second.available || !it->second.epoch) return;
  Channel& ch = it->second;
  if (ch.epoch->value() != reply.epoch) return;  // changed already
  DropStaleHeldLocked(ch, std::chrono::steady_clock::now());
  if (!MakeRoomLocked(ch, pages.size())) return;  // before `held`: it may let this version's pages go
  auto& held = ch.held[HeldKey(ns_path, version, self_)];
  for (auto& [i, p] : pages) {
    // A page held already stays (its fd is as good as this one).
    if (held.contains(p->start)) continue;
    p->epoch = ch.epoch;
    p->held.fds.push_back((*fds)[i]);
    (*fds)[i] = -1;
    ++leased_fds_;
    held.emplace(p->start, std::move(p));
  }
  if (held.empty()) ch.held.erase(HeldKey(ns_path, version, self_));
}

void LocalReader::DropHeldPage(const std::string& worker, const std::string& key, uint64_t offset) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  if (it == channels_.end()) return;
  auto f = it->second.held.find(key);
  if (f == it->second.held.end()) return;
  auto p = f->second.upper_bound(offset);
  if (p == f->second.begin()) return;
  --p;
  if (offset >= p->second->start + p->second->seg.length) return;
  --leased_fds_;
  f->second.erase(p);
  if (f->second.empty()) it->second.held.erase(f);
}

uint64_t LocalReader::ReadHeld(const std::string& worker, const std::string& ns_path, const std::string& version,
                               uint64_t offset, std::span<char> out) {
  const std::string key = HeldKey(ns_path, version, self_);
  const uint64_t end = offset + out.size();
  std::vector<std::shared_ptr<const HeldPage>> run;
  for (bool contacted = false;; contacted = true) {
    bool needs_contact = false;
    {
      std::lock_guard lock(mu_);
      auto it = channels_.find(worker);
      if (it == channels_.end() || !it->second.available) return 0;
      Channel& ch = it->second;
      auto f = ch.held.find(key);
      if (f == ch.held.end()) return 0;
      const auto now = std::chrono::steady_clock::now();
      auto p = f->second.upper_bound(offset);
      if (p == f->second.begin()) return 0;
      --p;  // the page holding `offset`, if any
      for (uint64_t at = offset; at < end && p != f->second.end(); ++p) {
        const HeldPage& page = *p->second;
        if (page.start > at || at >= page.start + page.seg.length) break;
        if (page.epoch != ch.epoch || now >= page.expires || page.epoch->value() != page.epoch_value) {
          run.clear();  // the epoch moved (or the lease ended): nothing held from before stands
          DropStaleHeldLocked(ch, now);
          return 0;
        }
        run.push_back(p->second);
        at = page.start + page.seg.length;
      }
      needs_contact = !run.empty() && now - ch.contact >= kLeaseContact;
    }
    if (!needs_contact) break;
    if (contacted) return 0;
    // A worker silent for kLeaseContact may be gone: one exchange shows it
    // is still the one that leased them (a failure drops them).
    run.clear();
    ReportTouches(worker);
  }
  if (run.empty()) return 0;
  local_wire::Reply reply;
  std::vector<int> fds;
  for (uint64_t at = offset; const auto& page : run) {
    local_wire::Segment seg = page->seg;
    const uint64_t skip = at - page->start;
    seg.data_offset += skip;
    seg.length = std::min(end, page->start + page->seg.length) - at;
    reply.segments.push_back(seg);
    fds.push_back(page->held.fds[0]);
    at += seg.length;
  }
  // Only trusted pages: a page whose file changed since the worker checked
  // it goes back to the worker, which checks it again before it hands it out.
  const uint64_t done = ReadSegments(reply, fds, ns_path, version, offset, out, /*trusted_only=*/true);
  uint64_t pages_read = 0;
  for (uint64_t sum = 0; pages_read < reply.segments.size() && sum + reply.segments[pages_read].length <= done;) {
    sum += reply.segments[pages_read++].length;
  }
  held_page_reads_.fetch_add(pages_read, std::memory_order_relaxed);
  // Reported as ranges of at most kMaxSegments pages: the most a worker counts in one entry.
  for (size_t i = 0, at = offset; i < pages_read;) {
    uint64_t len = 0;
    for (size_t n = 0; n < local_wire::kMaxSegments && i < pages_read; ++n) len += reply.segments[i++].length;
    NoteHeldRead(worker, ns_path, at, len);
    at += len;
  }
  // A page not trusted any more, or a block-file slot reused: asked for afresh.
  if (pages_read < run.size()) DropHeldPage(worker, key, offset + done);
  return done;
}

void LocalReader::NoteLeasedRead(const std::string& worker, const std::string& ns_path, uint64_t length) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  if (it == channels_.end()) return;
  AddTouchLocked(it->second, ns_path, local_wire::Touch{ns_path, length, 1});
}

void LocalReader::NoteHeldRead(const std::string& worker, const std::string& ns_path, uint64_t offset,
                               uint64_t length) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(worker);
  if (it == channels_.end()) return;
  it->second.held_reads_unreported = true;
  // Keyed apart from opens' entries (a path holds no NUL).
  std::string key = ns_path + '\0' + std::to_string(offset) + '\0' + std::to_string(length);
  AddTouchLocked(it->second, key, local_wire::Touch{ns_path, length, 1, offset});
}

void LocalReader::AddTouchLocked(Channel& ch, const std::string& key, local_wire::Touch touch) {
  auto t = ch.touches.find(key);
  if (t != ch.touches.end()) {
    if (t->second.count < UINT32_MAX) ++t->second.count;
    return;
  }
  // A full batch is sent at the next lease use; a read past it goes unreported.
  if (ch.touches.size() >= local_wire::kMaxTouches) {
    ch.contact = {};
    return;
  }
  ch.touches.emplace(key, std::move(touch));
}

void LocalReader::ReportTouches(const std::string& worker) {
  std::vector<local_wire::Touch> batch;
  {
    std::lock_guard lock(mu_);
    auto it = channels_.find(worker);
    if (it == channels_.end()) return;
    auto& touches = it->second.touches;
    size_t bytes = 0;
    constexpr size_t kBudget = local_wire::kMaxMessage - 256;  // room for the request's head
    for (auto t = touches.begin(); t != touches.end() && batch.size() < local_wire::kMaxTouches;) {
      const size_t entry = local_wire::EncodedTouchBytes(t->second);
      if (entry > kBudget) {  // no record holds it (a path near the record's size): it only counted hits
        t = touches.erase(t);
        continue;
      }
      if (bytes + entry > kBudget) break;
      bytes += entry;
      batch.push_back(std::move(t->second));
      t = touches.erase(t);
    }
  }
  local_wire::Request req;
  req.kind = local_wire::Kind::kTouch;
  req.path = local_wire::EncodeTouches(batch);
  std::vector<int> fds;
  // A failed exchange pauses cached-only opens to the worker and drops its
  // leases; the batch is lost with them (it only counted hits).
  Exchange(worker, req, &fds, /*quick=*/true);
  CloseAll(fds);
}

void LocalReader::ReportHeldReads() {
  std::vector<std::string> workers;
  {
    std::lock_guard lock(mu_);
    for (auto& [w, ch] : channels_) {
      if (!ch.held_reads_unreported) continue;
      ch.held_reads_unreported = false;
      if (!ch.touches.empty()) workers.push_back(w);
    }
  }
  for (const auto& w : workers) ReportTouches(w);
}

void LocalReader::ReportLeasedReads() {
  std::vector<std::string> workers;
  {
    std::lock_guard lock(mu_);
    for (const auto& [w, ch] : channels_) {
      if (!ch.touches.empty()) workers.push_back(w);
    }
  }
  for (const auto& w : workers) ReportTouches(w);
}

std::optional<LocalReader::Opened> LocalReader::OpenAs(local_wire::Kind kind, const std::string& worker,
                                                       const std::string& ns_path, uint64_t length) {
  local_wire::Request req;
  req.kind = kind;
  req.path = ns_path;
  req.length = length;
  std::vector<int> fds;
  const auto asked = std::chrono::steady_clock::now();  // a lease counts from before the worker's answer
  auto reply = Exchange(worker, req, &fds, /*quick=*/kind == local_wire::Kind::kOpenCached);
  std::optional<Opened> out;
  if (reply && reply->code == 0) {
    uint64_t total = 0;
    for (const auto& seg : reply->segments) total += seg.length;
    out.emplace();
    out->stat_json = reply->message;
    // The version is in the stat JSON, which the caller parses: the page's path and offset are checked.
    // (resize_and_overwrite: the bytes are read straight in, not zeroed first.)
    out->prefix.resize_and_overwrite(static_cast<size_t>(std::min(total, length)), [&](char* p, size_t n) {
      return static_cast<size_t>(ReadSegments(*reply, fds, ns_path, "", 0, std::span<char>(p, n)));
    });
    // Held only when every byte came and checked, as OpenCached's callers need.
    if (kind == local_wire::Kind::kOpenCached && out->prefix.size() == total) {
      HoldLease(worker, ns_path, length, asked, std::move(*reply), &fds);
    }
  }
  CloseAll(fds);
  return out;
}

}  // namespace shoal
