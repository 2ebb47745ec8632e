// Pages pushed by a writer (write_mode: cache-through): POST /v1/page.
//
// After a cache-through writer's Close, the client pushes each page it wrote
// to the page's owner, keyed by the version the under-store returned, so the
// first read after the write is served from the cache. Every field of a push
// is the client's claim and is checked before anything is stored
// (CheckPagePush): the version against this worker's own stat of the path
// (asked of the store when the cached stat does not match), the size against
// that stat, the offset against the page size, and the body's length against
// what a page at that offset must hold. A push is a cache fill, never a
// write: a refused or failed one costs the writer nothing but the cache hit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

// What a push claims, as parsed from the request.
struct PagePush {
  std::string version;
  uint64_t size = 0;    // of the file version
  uint64_t offset = 0;  // of the page in the file
};

// The length a page at `offset` of a `size`-byte file holds with pages of
// `page_size`, or an error naming what is wrong with the claim (offset not a
// multiple of the page size, at or past the end).
Result<uint64_t> ExpectedPageLength(const PagePush& push, uint64_t page_size, std::string_view path);

}  // namespace shoal
