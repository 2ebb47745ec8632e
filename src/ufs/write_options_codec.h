// A write's WriteOptions (content type, user metadata, standard headers,
// ETag, mode) as a JSON object, for what keeps them apart from the store they
// are for: the write-back journal carries them from the writer to the upload
// (docs/protocol.md "Write-back").
//
// Thread safety: the functions are pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "shoal/status.h"
#include "ufs/under_store.h"

namespace shoal {

// At most this much text (S3 allows 2 KB of user metadata; the rest is headers).
inline constexpr size_t kMaxWriteOptionsText = 16 << 10;

// The JSON text of `o`: "" when it keeps nothing (no metadata, ETag or mode).
// kInvalidArgument when a name or value is not UTF-8, or the text would be
// longer than kMaxWriteOptionsText.
Result<std::string> EncodeWriteOptions(const WriteOptions& o);

// `text` read back, checked as untrusted input: a JSON object of the keys
// EncodeWriteOptions writes, with the same rules Client::Create applies
// (no line breaks, known header names, each once; mode at most 07777).
// "" is the empty WriteOptions.
Result<WriteOptions> DecodeWriteOptions(std::string_view text);

}  // namespace shoal
