#include "s3/s3_listing.h"

#include <algorithm>

namespace shoal::s3 {
namespace {

struct Entry {
  std::string key;  // for a common prefix: the prefix
  bool is_prefix = false;
  FileStatus status;
};

// The key of a listed path under `root`, "" when it is not under it.
std::string KeyOf(const std::string& root, const std::string& path) {
  std::string base = root == "/" ? "/" : root + "/";
  return path.starts_with(base) ? path.substr(base.size()) : std::string();
}

std::string PathOf(const std::string& root, std::string_view dir_key) {
  std::string p = root == "/" ? "" : root;
  if (!dir_key.empty()) {
    p += '/';
    p.append(dir_key);
    if (p.back() == '/') p.pop_back();
  }
  return p.empty() ? "/" : p;
}

}  // namespace

S3Result<ListResult> ListObjects(Client& client, const ListRequest& req) {
  // The directory that holds every key starting with the prefix.
  auto slash = req.prefix.rfind('/');
  std::string start_dir = slash == std::string::npos ? "" : req.prefix.substr(0, slash + 1);
  // No key has an empty, "." or ".." segment (s3_endpoint.cc refuses them), so
  // such a prefix matches nothing, and is never turned into a path.
  for (size_t i = 0; i < start_dir.size();) {
    size_t j = start_dir.find('/', i);
    std::string_view seg(start_dir.data() + i, j - i);
    if (seg.empty() || seg == "." || seg == "..") return ListResult{};
    i = j + 1;
  }
  const bool shallow = req.delimiter == "/";

  std::vector<Entry> entries;
  std::vector<std::string> dirs{start_dir};  // keys with a trailing '/', or "" for the root
  size_t walked = 0;
  while (!dirs.empty()) {
    std::string dir = std::move(dirs.back());
    dirs.pop_back();
    auto listed = client.List(PathOf(req.root, dir));
    if (!listed) {
      if (listed.error().code() == Code::kNotFound || listed.error().code() == Code::kNotDirectory) continue;
      return std::unexpected(FromStatus(listed.error()));
    }
    walked += listed->size();
    if (walked > kMaxWalkEntries) {
      return S3Err(400, "InvalidArgument",
                   "listing '" + req.prefix + "' walks more than " + std::to_string(kMaxWalkEntries) +
                       " entries: give a longer prefix or delimiter '/'");
    }
    for (auto& st : *listed) {
      std::string key = KeyOf(req.root, st.path);
      if (key.empty()) continue;
      if (st.is_dir) {
        std::string dkey = key + "/";
        // Only directories that can hold keys with the prefix.
        if (!dkey.starts_with(req.prefix) && !req.prefix.starts_with(dkey)) continue;
        if (shallow && dkey.starts_with(req.prefix)) {
          entries.push_back({dkey, true, {}});
        } else {
          dirs.push_back(dkey);
        }
        continue;
      }
      if (!key.starts_with(req.prefix)) continue;
      st.path = key;
      entries.push_back({key, false, std::move(st)});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });

  ListResult out;
  if (req.max_keys == 0) return out;  // as S3: nothing, and not truncated
  size_t count = 0;
  for (auto& e : entries) {
    std::string key = e.key;
    bool is_prefix = e.is_prefix;
    if (!req.delimiter.empty() && !is_prefix) {
      auto d = key.find(req.delimiter, req.prefix.size());
      if (d != std::string::npos) {
        key = key.substr(0, d + req.delimiter.size());
        is_prefix = true;
      }
    }
    if (!req.after.empty() && key <= req.after) continue;
    if (is_prefix && !out.common_prefixes.empty() && out.common_prefixes.back() == key) continue;
    if (count == req.max_keys) {
      out.truncated = true;
      break;
    }
    ++count;
    out.last = key;
    if (is_prefix) {
      out.common_prefixes.push_back(std::move(key));
    } else {
      out.objects.push_back(std::move(e.status));
    }
  }
  return out;
}

}  // namespace shoal::s3
