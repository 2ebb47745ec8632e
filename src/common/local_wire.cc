#include "common/local_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shoal::local_wire {

namespace {

struct RequestHead {
  uint32_t magic;
  uint32_t kind;
  uint32_t path_len;
  uint32_t version_len;
  uint32_t behalf_len;
  uint32_t reserved;
  uint64_t size, offset, length;
};

struct ReplyHead {
  uint32_t magic;
  int32_t code;
  uint32_t segments;
  uint32_t message_len;
  uint64_t epoch;
  uint64_t lease_ns;
};

struct TouchHead {
  uint32_t path_len;
  uint32_t count;
  uint64_t length;
  uint64_t offset;
};

template <typename T>
void Append(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
bool Take(std::string_view* in, T* v) {
  if (in->size() < sizeof *v) return false;
  std::memcpy(v, in->data(), sizeof *v);
  in->remove_prefix(sizeof *v);
  return true;
}

Status Malformed(std::string_view what) {
  return Status(Code::kIo, "malformed short-circuit " + std::string(what) +
                               " (client and worker of different Shoal versions?)");
}

}  // namespace

std::string EncodeRequest(const Request& r) {
  std::string out;
  RequestHead h{kMagic,
                static_cast<uint32_t>(r.kind),
                static_cast<uint32_t>(r.path.size()),
                static_cast<uint32_t>(r.version.size()),
                static_cast<uint32_t>(r.on_behalf.size()),
                0,
                r.size,
                r.offset,
                r.length};
  Append(&out, h);
  out += r.path;
  out += r.version;
  out += r.on_behalf;
  return out;
}

Result<Request> DecodeRequest(std::string_view in) {
  RequestHead h;
  if (!Take(&in, &h) || h.magic != kMagic) return Err(Malformed("request"));
  // Reserved: zero in every request this version sends. A set one is a
  // request this worker does not understand, never one read as if it were 0.
  if (h.reserved != 0) return Err(Malformed("request (reserved field set)"));
  if (h.kind < static_cast<uint32_t>(Kind::kHello) || h.kind > static_cast<uint32_t>(Kind::kTouch)) {
    return Err(Malformed("request kind"));
  }
  if (h.behalf_len > kMaxOnBehalf) return Err(Malformed("request on-behalf length"));
  if (static_cast<uint64_t>(h.path_len) + h.version_len + h.behalf_len != in.size()) {
    return Err(Malformed("request length"));
  }
  Request r;
  r.kind = static_cast<Kind>(h.kind);
  r.path.assign(in.substr(0, h.path_len));
  r.version.assign(in.substr(h.path_len, h.version_len));
  r.on_behalf.assign(in.substr(h.path_len + h.version_len));
  r.size = h.size;
  r.offset = h.offset;
  r.length = h.length;
  return r;
}

std::string EncodeReply(const Reply& r) {
  std::string out;
  ReplyHead h{kMagic, r.code, static_cast<uint32_t>(r.segments.size()), static_cast<uint32_t>(r.message.size()),
              r.epoch, r.lease_ns};
  Append(&out, h);
  for (const auto& s : r.segments) Append(&out, s);
  out += r.message;
  return out;
}

Result<Reply> DecodeReply(std::string_view in) {
  ReplyHead h;
  if (!Take(&in, &h) || h.magic != kMagic || h.segments > kMaxSegments) return Err(Malformed("reply"));
  Reply r;
  r.code = h.code;
  r.epoch = h.epoch;
  r.lease_ns = h.lease_ns;
  r.segments.resize(h.segments);
  for (auto& s : r.segments) {
    if (!Take(&in, &s)) return Err(Malformed("reply segments"));
  }
  if (in.size() != h.message_len) return Err(Malformed("reply length"));
  r.message.assign(in);
  return r;
}

size_t EncodedTouchBytes(const Touch& t) { return sizeof(TouchHead) + t.path.size(); }

std::string EncodeTouches(const std::vector<Touch>& touches) {
  std::string out;
  for (const auto& t : touches) {
    Append(&out, TouchHead{static_cast<uint32_t>(t.path.size()), t.count, t.length, t.offset});
    out += t.path;
  }
  return out;
}

Result<std::vector<Touch>> DecodeTouches(std::string_view in) {
  std::vector<Touch> out;
  while (!in.empty()) {
    if (out.size() == kMaxTouches) return Err(Malformed("touch batch (too many entries)"));
    TouchHead h;
    if (!Take(&in, &h) || h.path_len == 0 || h.path_len > in.size() || h.count == 0) {
      return Err(Malformed("touch entry"));
    }
    out.push_back(Touch{std::string(in.substr(0, h.path_len)), h.length, h.count, h.offset});
    in.remove_prefix(h.path_len);
  }
  return out;
}

Status SendRecord(int sock, std::string_view bytes, std::span<const int> fds) {
  if (fds.size() > kMaxSegments) return Status(Code::kInternal, "too many fds for one short-circuit record");
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxSegments)];
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes.size())) return {};
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status(Code::kTimeout, "short-circuit send timed out");
    return Status(Code::kUnavailable, std::string("short-circuit send failed: ") +
                                          (n < 0 ? std::strerror(errno) : "short write"));
  }
}

Status RecvRecord(int sock, std::string* bytes, std::vector<int>* fds) {
  // Room for the largest record, not zero-filled first (the record overwrites it).
  bytes->resize_and_overwrite(kMaxMessage, [](char*, size_t n) { return n; });
  iovec iov{bytes->data(), bytes->size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxSegments)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status(Code::kTimeout, "short-circuit reply timed out");
  if (n < 0) return Status(Code::kUnavailable, std::string("short-circuit receive failed: ") + std::strerror(errno));
  // Collect every fd that arrived, even from a record we then reject, so none leaks.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->push_back(fd);
    }
  }
  if (n == 0) return Status(Code::kUnavailable, "short-circuit peer closed the connection");
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return Malformed("record (truncated)");
  bytes->resize(static_cast<size_t>(n));
  return {};
}

}  // namespace shoal::local_wire
