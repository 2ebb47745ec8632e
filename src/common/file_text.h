// Whole small files (configs, policy documents, state the processes keep):
// read at once, and replaced atomically (a temporary and a rename), so a
// reader never sees half of one.
#pragma once

#include <sys/types.h>

#include <string>

#include "shoal/status.h"

namespace shoal {

// The file's bytes; kNotFound or kIo naming the path when it cannot be read.
Result<std::string> ReadFileText(const std::string& path);

// Writes `text` to `path` through PATH.tmp and a rename, with `mode` (also
// when the file existed with another mode); kIo naming the path on failure,
// leaving no temporary behind.
Status WriteFileAtomic(const std::string& path, const std::string& text, mode_t mode);

}  // namespace shoal
