// LocalPage: a page file that a worker on this host passed over the short
// circuit (local_reader.h), for a caller that sends its bytes itself with
// sendfile(2) instead of reading them into memory and writing them out: the
// S3 endpoint of `shoal s3` (s3/s3_objects.cc).
//
// The caller checks every byte before it sends it, batch by batch right
// before each send (Check, then sendfile of the range it checked), as a
// worker does with its own pages (worker.cc, "Checked sending of cached
// pages", which gives the reasons and the price). A chunk that fails is never
// sent: the caller reads those bytes through the client instead, whose short
// circuit sees the same chunk fail and reads the page over TCP, where the
// worker drops it and fetches it again.
//
// Only page files (worker.page_store: files) are handed out this way: they
// are never written once named, so the bytes checked are the bytes sendfile
// reads. A block-file slot may be reused as soon as the worker has passed it
// (only the generation in its header tells), so those pages are read into
// memory and checked there, as before.
//
// Thread safety: a LocalPage is immutable; Check is safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "shoal/client.h"
#include "shoal/status.h"

namespace shoal {

struct LocalPage {
  std::shared_ptr<const void> owner;  // keeps `fd` open
  int fd = -1;
  uint64_t offset = 0;       // the file offset of the first byte
  uint64_t length = 0;       // bytes
  uint64_t data_offset = 0;  // where the first byte is in `fd`
  uint32_t header_len = 0;   // the page header, at byte 0 of `fd`
  uint64_t skip = 0;         // the first byte's offset in the page's data
  bool verify = true;        // client.verify_checksums

  // Reads and checks the chunks holding bytes [from, about from + want) of
  // this span (whole chunks, at most up to `length`); returns where the
  // checked bytes end, in (from, length], or why they cannot be sent
  // (kCorruption: a chunk or the header failed its checksum).
  // REQUIRES: from < length.
  Result<uint64_t> Check(uint64_t from, uint64_t want) const;
};

// The page files a worker on this host holds for a prefix of
// [offset, offset + length) of `file`, in order and contiguous from
// `offset`, one short-circuit exchange at most (it blocks). Empty when there
// are none to send this way: the range's worker is not on this host or holds
// no page at `offset`, the short circuit is off, the bytes came with the open
// (File keeps them in memory), or `file` is not the client library's own.
// Never fails: the caller reads what is not covered through the File.
std::vector<LocalPage> LocalPagesOf(File& file, uint64_t offset, uint64_t length);

// The file's first bytes that the open brought (checked as every read is),
// valid while `file` lives: a caller can send them without copying them.
// Empty when there are none or `file` is not the client library's own.
std::string_view OpenedBytesOf(const File& file);

}  // namespace shoal
