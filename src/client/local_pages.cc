#include "client/local_pages.h"

#include <algorithm>
#include <span>

#include "cache/page_format.h"

namespace shoal {

Result<uint64_t> LocalPage::Check(uint64_t from, uint64_t want) const {
  if (from >= length) return Err(Code::kInternal, "check of a page past its end (a bug)");
  if (!verify) return std::min(length, from + std::max<uint64_t>(want, 1));
  // Up to a chunk boundary (so that the next batch never reads a chunk again)
  // of the page store's chunk size: the header that names it is read together
  // with the batch when the batch starts in the page's first chunk
  // (PageFileReader's two-range Begin). Another chunk size only costs a
  // chunk read twice; every byte is still checked.
  const uint64_t c = page_format::kChunkSize, begin = skip + from;
  const uint64_t stop = std::min(std::max((begin + std::max<uint64_t>(want, c)) / c * c, begin + 1), skip + length);
  // The bytes are read only to be checked: one buffer per thread, which stays in the CPU cache.
  thread_local std::vector<char> scratch;
  if (scratch.size() < stop - begin) scratch.resize(stop - begin);
  const std::span<char> out(scratch.data(), stop - begin);
  page_format::PageFileReader reader;
  SHOAL_RETURN_IF_ERROR(reader.Begin(fd, header_len, 0, 0, begin, out));
  SHOAL_RETURN_IF_ERROR(reader.Read(begin, out));
  return stop - skip;
}

}  // namespace shoal
