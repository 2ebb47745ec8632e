// The records of the write-back journal (journal.log, docs/protocol.md
// "Write-back: the journal on disk"), apart from the files they live in, so
// that replay's parsing is a pure function of the bytes read back.
//
// journal.log is a sequence of records: u32 payload length (little endian),
// u64 XXH3-64 of the payload, the payload. A payload is JSON, a commit
// {"t":"commit","id","path","size","xxh3","mtime_ns","holders"} (and "attrs",
// the write's options as EncodeWriteOptions' text, when it has any) or a done
// {"t":"done","id"}; a put's commit also says "inline": N and carries the
// file's N bytes after the JSON and a NUL.
//
// Thread safety: the functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "worker/writeback_journal.h"

namespace shoal::writeback_records {

constexpr size_t kRecordHeader = 12;       // u32 payload length, u64 XXH3-64 of the payload
constexpr uint32_t kMaxRecord = 1u << 20;  // a record names a path and up to 16 holders (a put: its bytes too)

// Why a write of `path` to `holders` cannot be recorded (the journal is
// JSON: its strings must be UTF-8), or OK. Checked before a write begins.
Status Recordable(std::string_view path, const std::vector<WorkerEntry>& holders);
// The payload of a commit record; with `inline_bytes`, a put's (the bytes follow the JSON and a NUL).
// REQUIRES: Recordable(c.path, c.holders).
std::string CommitPayload(const WritebackCommit& c, std::optional<std::string_view> inline_bytes = std::nullopt);
// The payload of a done record.
std::string DonePayload(std::string_view id);
// The record (header and payload) as it goes into journal.log.
std::string EncodeRecord(std::string_view payload);

// What a journal's bytes say.
struct Replayed {
  std::vector<WritebackCommit> commits;            // committed and not done, in the order first committed
  std::map<std::string, std::string> inline_data;  // id -> a put's bytes, from its record
  size_t valid_bytes = 0;                          // the good records end here; the rest is a torn tail
  // Why the record at valid_bytes was refused although it passed its
  // checksum (empty when the journal ends there or the tail is torn).
  std::string malformed;
};
// Reads records until the first that is short or fails its checksum (a torn
// tail: the write that made it was never acknowledged) or is malformed.
Replayed Parse(std::string_view bytes);

}  // namespace shoal::writeback_records
