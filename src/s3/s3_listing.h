// Object listings (ListObjectsV2 and ListObjects v1) over the namespace: the
// S3 view of a directory tree, where a key is a file's path under the bucket
// root and "directories" only exist as common prefixes.
//
// With delimiter "/" only the directory holding the prefix is listed; any
// other delimiter (or none) walks the tree below it, up to kMaxWalkEntries
// entries. Keys come out in byte order, as S3 sorts them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "s3/s3_errors.h"
#include "shoal/client.h"

namespace shoal::s3 {

inline constexpr size_t kMaxWalkEntries = 1'000'000;

struct ListRequest {
  std::string root;  // the bucket's namespace path: "/data"
  std::string prefix;
  std::string delimiter;
  std::string after;  // list keys (and common prefixes) after this one
  size_t max_keys = 1000;
};

struct ListResult {
  std::vector<FileStatus> objects;  // path holds the key
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string last;  // the last key or common prefix returned (the next marker)
};

S3Result<ListResult> ListObjects(Client& client, const ListRequest& request);

}  // namespace shoal::s3
