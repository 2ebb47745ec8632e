// The few Azure Blob XML documents Shoal reads and writes: List Blobs
// results, error bodies, and the Put Block List body, on the tag scanner of
// ufs/http/xml.h, enough for these fixed, service-generated shapes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct BlobItem {
  std::string name;        // full blob name, or the BlobPrefix name (ending in the delimiter)
  bool is_prefix = false;
  uint64_t size = 0;
  std::string etag;        // without quotes
  int64_t mtime_ns = 0;
};

struct BlobListing {
  std::vector<BlobItem> items;  // in the service's (lexicographic) order
  std::string next_marker;      // "" on the last page
};

Result<BlobListing> ParseListBlobs(std::string_view xml);

// <Error><Code>..</Code><Message>..</Message></Error>; empty fields when absent.
struct AzureErrorBody {
  std::string code;
  std::string message;
};
AzureErrorBody ParseAzureError(std::string_view xml);

// The Put Block List body committing `block_ids` (base64) in order.
std::string BlockListXml(const std::vector<std::string>& block_ids);

}  // namespace shoal
