// Whole-file helpers for tests that write and read back through a Client or
// straight from an under-store. Errors come back as "<error: ...>" strings
// (or a failed Result), so a comparison with the expected bytes fails and
// says why.
#pragma once

#include <string>

#include "shoal/client.h"
#include "ufs/under_store.h"

namespace shoal::testing {

// Create, Write in pieces of `chunk` bytes, Close.
Result<FileStatus> WriteFileVia(Client& c, const std::string& path, const std::string& data, size_t chunk);
// OpenFile, then one Pread of the whole file.
std::string ReadFileVia(Client& c, const std::string& path);
// The same, with the error as an error.
Result<std::string> ReadWholeFile(Client& client, const std::string& path);
// The whole object as the under-store holds it.
std::string ReadStoreObject(UnderStore& s, const std::string& key);

}  // namespace shoal::testing
