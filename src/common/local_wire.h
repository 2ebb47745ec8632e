// The short-circuit protocol between a client and a worker on the same host.
//
// A client that finds its worker on the same host (the worker's /v1/status
// names a UNIX socket and an instance token, and the socket answers to that
// token) asks over the socket for byte ranges of a file version. The worker
// answers with the open page files that hold the cached prefix of the range,
// passed as file descriptors (SCM_RIGHTS), and the client reads them with
// pread(2): a warm read costs a memory copy instead of a trip through TCP.
// The client checks what it reads against the page's chunk checksums
// (cache/page_format.h), so each segment also names where the page's header
// is and its length, and the generation the header must carry. A page file
// is immutable once named, and an evicted page stays readable through an fd
// already passed; a block-file slot (worker.page_store: blocks) can be reused
// once the worker has sent its fd, which the client sees as another
// generation in the header and reads over TCP instead: a descriptor never
// yields bytes of another page.
//
// Messages are SOCK_SEQPACKET records in host byte order (both ends are on
// one host):
//   request: LocalRequestHead, then path_len bytes of path, version_len bytes of version, behalf_len bytes
//            of the end user it is made for
//   reply:   LocalReplyHead, then segments x LocalSegment, then message_len bytes of message;
//            one fd per segment rides along as SCM_RIGHTS.
// A hello request (kind kHello, the token in `path`) must come first on every
// connection; the worker answers code 0 only to its own token, with its epoch
// (common/shared_epoch.h) as the fd of one segment of length 8 when it has one.
// A hello's `version` names the client's door (common/end_user.h, "fuse",
// "python", ...; "" from older clients): the label of the worker's per-client
// metrics for everything asked on that connection.
//
// Leases. A kOpenCached answer carries the worker's epoch, read before the
// lookup, and lease_ns: how long the answer stays true unless the epoch moves
// (at most kMaxLease, and never past the stat's freshness under the mount's
// rule; 0: not to be held). A client may serve the same answer again, from
// the same fds and checking the same headers and checksums, while the epoch
// still reads `epoch` and the lease lasts, and reports those reads later in
// a kTouch batch, so that the worker's eviction policy and hit counts see
// them.
// A kRead answer may be leased too (epoch and lease_ns on the reply): its
// pages belong to the version the request named, whose bytes never change, so
// the client may read the same pages again from the same fds, checked as from
// a fresh answer, under the same rules, and reports those reads in kTouch
// batches as ranges (docs/protocol.md, "Held read pages").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"

namespace shoal::local_wire {

constexpr uint32_t kMagic = 0x5348'4c37;  // "SHL7": a touch names the range it read
constexpr size_t kMaxOnBehalf = 4096;
constexpr size_t kMaxMessage = 64 * 1024;
constexpr uint32_t kMaxSegments = 32;

// kRead: the cached prefix of [offset, offset + length) of a version.
// kOpen: the path's current stat (as JSON in the reply's message) and the
// cached prefix of its first `length` bytes; size, offset and version unused.
// kOpenCached: as kOpen, answered only from what the worker holds at that
// moment: its fresh cached stat (under the mount's consistency mode) and the
// cached pages covering all of the first `length` bytes (at most the file's
// size). It never asks the under-store and never waits on a fetch, so it is
// answered at once; anything else (no fresh stat, a page not cached, a
// pending write-back, a directory) answers code kUnavailable, "not cached",
// and the client opens the usual way (the S3 endpoint's I/O threads).
// kTouch: reads a client served from held answers (leases): `path` holds a
// batch (EncodeTouches); the reply carries nothing but the code.
enum class Kind : uint32_t { kHello = 1, kRead = 2, kOpen = 3, kOpenCached = 4, kTouch = 5 };

// The longest a kOpenCached answer may be held.
constexpr uint64_t kMaxLeaseNs = 10'000'000'000;

struct Request {
  Kind kind = Kind::kRead;
  std::string path;     // namespace path; the token for a hello
  std::string version;
  uint64_t size = 0;    // file size, as the client saw it at open
  uint64_t offset = 0;
  uint64_t length = 0;
  // The end user the request is made for, as X-Shoal-On-Behalf-Of carries
  // it ("USER;groups=A,B"); "" for the connecting process's own user. At
  // most kMaxOnBehalf bytes.
  std::string on_behalf;
  // Not on the wire: the door its connection's hello named, which the
  // worker's socket server sets before the request is served.
  std::string door;
};

// Bytes [offset, offset + length) of the file are bytes
// [data_offset, data_offset + length) of the segment's fd, a page file (or
// block file) whose page header starts at page_offset and is header_len
// bytes (its data follows, so the bytes are [data_offset - page_offset -
// header_len, ...) of the page's data) and carries `generation`.
// header_len 0 marks a raw segment: the fd is a pending write-back's data
// file (version "wb-<id>"), whose byte data_offset is the file's byte
// data_offset (so data_offset equals the range's offset); no header to check.
// page_len is the page's data bytes (0: not said): the reader then reads
// nothing past the page, which in a block file is another slot's.
// verified_*: the identity (cache/page_format.h, FileIdentity) the fd's file
// had when the worker checked the whole page (ino 0: never checked). A
// client whose fstat of the fd gives that identity reads without checking;
// otherwise it checks what it reads.
struct Segment {
  uint64_t data_offset = 0;
  uint64_t length = 0;
  uint32_t header_len = 0;
  uint32_t page_len = 0;
  uint64_t page_offset = 0;
  uint64_t generation = 0;
  uint64_t verified_dev = 0;
  uint64_t verified_ino = 0;
  int64_t verified_ctime_ns = 0;
  uint64_t verified_size = 0;
};

struct Reply {
  int32_t code = 0;  // a shoal::Code; 0 = OK
  uint64_t epoch = 0;     // kOpenCached, kRead: the worker's epoch before the lookup
  uint64_t lease_ns = 0;  // kOpenCached, kRead: how long the answer may be held (0: not at all)
  std::vector<Segment> segments;
  std::string message;  // why, when code != 0; the stat, for an open
};

std::string EncodeRequest(const Request& r);
Result<Request> DecodeRequest(std::string_view bytes);
std::string EncodeReply(const Reply& r);

// One entry of a kTouch batch: `count` reads of bytes [offset, offset +
// length) of `path` served from a held answer (an open's: offset 0).
struct Touch {
  std::string path;
  uint64_t length = 0;
  uint32_t count = 0;
  uint64_t offset = 0;
};
constexpr size_t kMaxTouches = 1024;  // entries per batch
// The batch, for Request::path; the caller keeps it under kMaxMessage (below
// EncodedTouchBytes each).
std::string EncodeTouches(const std::vector<Touch>& touches);
size_t EncodedTouchBytes(const Touch& t);
// Refuses a batch longer than kMaxTouches, an entry with an empty path or no
// count, and bytes left over.
Result<std::vector<Touch>> DecodeTouches(std::string_view bytes);
Result<Reply> DecodeReply(std::string_view bytes);

// One record with `fds` attached. Blocking; retries EINTR. The fds stay open.
Status SendRecord(int sock, std::string_view bytes, std::span<const int> fds);
// One record into `bytes`; received fds are appended to `fds` (the caller
// closes them). A peer that closed gives kUnavailable; a timeout (SO_RCVTIMEO)
// gives kTimeout.
Status RecvRecord(int sock, std::string* bytes, std::vector<int>* fds);

}  // namespace shoal::local_wire
