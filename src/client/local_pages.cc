#include "client/local_pages.h"

#include <algorithm>
#include <span>

#include "cache/page_format.h"

namespace shoal {

Result<uint64_t> LocalPage::Check(uint64_t from, uint64_t want) const {
  if (from >= length) return Err(Code::kInternal, "check of a page past its end (a bug)");
  if (!verify) return std::min(length, from + std::max<uint64_t>(want, 1));
  page_format::PageFileReader reader;
  SHOAL_RETURN_IF_ERROR(reader.Begin(fd, header_len));
  const uint64_t stop =
      reader.NextStop(skip + from, std::max<uint64_t>(want, reader.header().chunk_size()), skip + length);
  // The bytes are read only to be checked: one buffer per thread, which stays in the CPU cache.
  thread_local std::vector<char> scratch;
  if (scratch.size() < stop - skip - from) scratch.resize(stop - skip - from);
  SHOAL_RETURN_IF_ERROR(reader.Read(skip + from, std::span<char>(scratch.data(), stop - skip - from)));
  return stop - skip;
}

}  // namespace shoal
