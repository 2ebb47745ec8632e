#include "client/local_reader.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "cache/page_format.h"

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

}  // namespace

LocalReader::LocalReader(std::chrono::milliseconds timeout, std::chrono::milliseconds retry_after, bool verify)
    : timeout_(timeout), retry_after_(retry_after), verify_(verify) {}

LocalReader::~LocalReader() {
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

void LocalReader::Discovered(const std::string& worker, const std::string& socket, const std::string& token) {
  int fd = socket.empty() ? -1 : Connect(socket, token, timeout_);
  std::lock_guard lock(mu_);
  auto& ch = channels_[worker];
  ch.discovering = false;
  ch.available = fd >= 0;
  ch.socket = socket;
  ch.token = token;
  if (fd >= 0) {
    ch.idle.push_back(fd);
    spdlog::debug("short-circuit reads from worker {} through {}", worker, socket);
  } else {
    ch.retry_at = std::chrono::steady_clock::now() + retry_after_;
  }
}

int LocalReader::Connect(const std::string& socket, const std::string& token, std::chrono::milliseconds timeout) {
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
  std::string bytes;
  std::vector<int> fds;
  Status st = local_wire::SendRecord(fd, local_wire::EncodeRequest(hello), {});
  if (st.ok()) st = local_wire::RecvRecord(fd, &bytes, &fds);
  CloseAll(fds);
  auto reply = st.ok() ? local_wire::DecodeReply(bytes) : Result<local_wire::Reply>(Err(st));
  if (!reply || reply->code != 0) {
    spdlog::debug("short-circuit socket {} refused: {}", socket, reply ? reply->message : reply.error().message());
    ::close(fd);
    return -1;
  }
  return fd;
}

int LocalReader::Acquire(const std::string& worker, bool quick) {
  std::string socket, token;
  {
    std::lock_guard lock(mu_);
    auto it = channels_.find(worker);
    if (it == channels_.end() || !it->second.available) return -1;
    if (quick && std::chrono::steady_clock::now() < it->second.quick_retry_at) return -1;
    auto& idle = quick ? it->second.quick_idle : it->second.idle;
    if (!idle.empty()) {
      int fd = idle.back();
      idle.pop_back();
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
  channels_[worker].quick_retry_at = std::chrono::steady_clock::now() + kCachedOpenPause;
}

std::optional<local_wire::Reply> LocalReader::Exchange(const std::string& worker, const local_wire::Request& req,
                                                       std::vector<int>* fds, bool quick) {
  int fd = Acquire(worker, quick);
  if (fd < 0) return std::nullopt;
  std::string bytes;
  Status st = local_wire::SendRecord(fd, local_wire::EncodeRequest(req), {});
  if (st.ok()) st = local_wire::RecvRecord(fd, &bytes, fds);
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
                                   std::span<char> out) {
  page_format::PageFileReader reader(verify_);
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
    Status st = reader.Begin(fds[i], seg.header_len, seg.page_offset, seg.generation, skip, dest);
    if (st.ok() && verify_) {
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
    if (!st.ok()) {
      if (st.code() == Code::kCorruption) corrupt_reads_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("short-circuit read of {} at offset {} failed ({}); reading it over TCP, where the worker checks "
                   "the page again and replaces it if it is corrupt",
                   ns_path, offset + done, st.message());
      break;
    }
    done += seg.length;
  }
  return done;
}

uint64_t LocalReader::Read(const std::string& worker, const std::string& ns_path, const std::string& version,
                           uint64_t size, uint64_t offset, std::span<char> out) {
  std::vector<int> fds;
  auto reply = Exchange(worker, ReadRequest(ns_path, version, size, offset, out.size()), &fds);
  // An error answer (e.g. a path outside the worker's mounts): HTTP gives the caller the real error.
  uint64_t done = reply && reply->code == 0 ? ReadSegments(*reply, fds, ns_path, version, offset, out) : 0;
  CloseAll(fds);
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
      p.verify = verify_;
      if (verify_) {
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
  return OpenAs(local_wire::Kind::kOpenCached, worker, ns_path, length);
}

std::optional<LocalReader::Opened> LocalReader::OpenAs(local_wire::Kind kind, const std::string& worker,
                                                       const std::string& ns_path, uint64_t length) {
  local_wire::Request req;
  req.kind = kind;
  req.path = ns_path;
  req.length = length;
  std::vector<int> fds;
  auto reply = Exchange(worker, req, &fds, /*quick=*/kind == local_wire::Kind::kOpenCached);
  std::optional<Opened> out;
  if (reply && reply->code == 0) {
    uint64_t total = 0;
    for (const auto& seg : reply->segments) total += seg.length;
    out.emplace();
    out->stat_json = std::move(reply->message);
    // The version is in the stat JSON, which the caller parses: the page's path and offset are checked.
    // (resize_and_overwrite: the bytes are read straight in, not zeroed first.)
    out->prefix.resize_and_overwrite(static_cast<size_t>(std::min(total, length)), [&](char* p, size_t n) {
      return static_cast<size_t>(ReadSegments(*reply, fds, ns_path, "", 0, std::span<char>(p, n)));
    });
  }
  CloseAll(fds);
  return out;
}

}  // namespace shoal
