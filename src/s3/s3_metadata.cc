#include "s3/s3_metadata.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "client/client_internal.h"
#include "common/utf8.h"

namespace shoal::s3 {
namespace {

constexpr std::string_view kMetaPrefix = "x-amz-meta-";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

S3Result<ObjectMetadata> MetadataFromHeaders(const net::HttpRequest& http) {
  // What is kept is shown again in HEAD, listings and the pending-write JSON:
  // bytes that are not UTF-8 could not be, so they are refused up front.
  auto not_utf8 = [](std::string_view header) {
    return S3Err(400, "InvalidArgument",
                 "the header " + std::string(header.substr(0, 128)) +
                     " is not UTF-8: send US-ASCII (S3 keeps metadata as text; encode other characters as RFC 2047 "
                     "does)");
  };
  ObjectMetadata m;
  if (const std::string* ct = http.Header("Content-Type")) {
    if (!IsValidUtf8(*ct)) return not_utf8("Content-Type");
    m.content_type = *ct;
  }
  for (std::string_view name : kObjectHeaders) {
    if (const std::string* v = http.Header(name); v && !v->empty()) {
      if (v->find_first_of("\r\n") != std::string::npos) {
        return S3Err(400, "InvalidArgument", "the header " + std::string(name) + " holds a line break");
      }
      if (!IsValidUtf8(*v)) return not_utf8(name);
      m.headers.emplace_back(name, *v);
    }
  }
  size_t total = 0;
  for (const auto& [name, value] : http.headers) {
    std::string lower = Lower(name);
    if (!lower.starts_with(kMetaPrefix) || lower.size() == kMetaPrefix.size()) continue;
    std::string key = lower.substr(kMetaPrefix.size());
    if (key == kPartSizesName) {
      return S3Err(400, "InvalidArgument", "the metadata name " + name + " is reserved by Shoal (part sizes)");
    }
    if (key.find('=') != std::string::npos || value.find_first_of("\r\n") != std::string::npos) {
      return S3Err(400, "InvalidArgument", "the metadata header " + name + " holds an '=' in its name or a line break");
    }
    if (!IsValidUtf8(name) || !IsValidUtf8(value)) return not_utf8(IsValidUtf8(name) ? name : "x-amz-meta-*");
    total += key.size() + value.size();
    auto same = std::find_if(m.user.begin(), m.user.end(), [&](const auto& kv) { return kv.first == key; });
    if (same != m.user.end()) {
      same->second += "," + value;  // a repeated header, as HTTP joins them
    } else {
      m.user.emplace_back(std::move(key), value);
    }
  }
  if (total > kMaxUserMetadata) {
    return S3Err(400, "MetadataTooLarge",
                 "the x-amz-meta-* headers hold " + std::to_string(total) + " bytes, over the " +
                     std::to_string(kMaxUserMetadata) + " S3 allows");
  }
  std::sort(m.user.begin(), m.user.end());
  return m;
}

std::string EncodePartSizes(const std::vector<uint64_t>& sizes) {
  std::string out;
  for (size_t i = 0; i < sizes.size();) {
    size_t run = 1;
    while (i + run < sizes.size() && sizes[i + run] == sizes[i]) ++run;
    if (!out.empty()) out += ',';
    out += std::to_string(sizes[i]);
    if (run > 1) out += '*' + std::to_string(run);
    i += run;
  }
  return out.size() <= kMaxPartSizesText ? out : std::string();
}

std::optional<std::vector<uint64_t>> PartSizesOf(const ObjectMetadata& m, size_t parts, uint64_t object_size) {
  const bool any_count = parts == 0;
  if (any_count) parts = kMaxPartsKept;
  auto kept = std::find_if(m.user.begin(), m.user.end(), [](const auto& kv) { return kv.first == kPartSizesName; });
  if (kept == m.user.end() || kept->second.empty() || kept->second.size() > kMaxPartSizesText) return std::nullopt;
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  std::string_view text = kept->second;
  // Digits only, each number bounded: a store's bytes are untrusted too.
  auto number = [](std::string_view s, uint64_t limit) -> std::optional<uint64_t> {
    if (s.empty() || s.size() > 12) return std::nullopt;
    uint64_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v <= limit ? std::optional<uint64_t>(v) : std::nullopt;
  };
  while (!text.empty()) {
    std::string_view item = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), item.size() + 1));
    const size_t star = item.find('*');
    auto size = number(item.substr(0, star), 5ull << 30);
    auto run = star == std::string_view::npos ? std::optional<uint64_t>(1) : number(item.substr(star + 1), parts);
    if (!size || !run || *run == 0 || sizes.size() + *run > parts) return std::nullopt;
    sizes.insert(sizes.end(), *run, *size);
    total += *size * *run;
  }
  if ((!any_count && sizes.size() != parts) || total != object_size) return std::nullopt;
  return sizes;
}

void SetCreateMetadata(const ObjectMetadata& m, CreateOptions* options) {
  options->content_type = m.content_type;
  options->headers = m.headers;
  options->metadata.clear();
  for (const auto& kv : m.user) {
    if (kv.first != kPartSizesName) options->metadata.push_back(kv);
  }
}

void AddMetadataHeaders(const ObjectMetadata& m, net::HttpResponse* response) {
  for (const auto& [k, v] : m.user) {
    if (k != kPartSizesName) response->headers.emplace_back(std::string(kMetaPrefix) + k, v);
  }
  for (const auto& [k, v] : m.headers) response->headers.emplace_back(CanonicalHeaderName(k), v);
}

std::string CanonicalHeaderName(std::string_view lower) {
  std::string out(lower);
  bool up = true;
  for (char& c : out) {
    if (up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    up = c == '-';
  }
  return out;
}

std::string MetadataCache::Key(const FileStatus& st) {
  return st.path + '\0' + st.version + '\0' + std::to_string(st.mtime_ns);
}

ObjectMetadata MetadataCache::Get(Client& client, const FileStatus& st) {
  if (auto kept = Peek(st)) return std::move(*kept);
  auto read = ReadObjectMetadata(client, st.path, st.version);
  if (!read) {
    // The bytes may well be served from the cache while the store is down.
    spdlog::warn("s3: {}: answered without its Content-Type and x-amz-meta-* headers: {}", st.path,
                 read.error().message());
    return {};
  }
  Put(Key(st), st.path, *read);
  return std::move(*read);
}

std::optional<ObjectMetadata> MetadataCache::Peek(const FileStatus& st) {
  std::lock_guard lock(mu_);
  auto it = index_.find(Key(st));
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->metadata;
}

void MetadataCache::Put(const std::string& key, const std::string& path, ObjectMetadata m) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.erase(it->second);
    index_.erase(it);
  }
  lru_.push_front(Entry{key, path, std::move(m)});
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void MetadataCache::Forget(const std::string& path) {
  std::lock_guard lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->path == path) {
      index_.erase(it->key);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace shoal::s3
