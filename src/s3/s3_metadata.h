// Object metadata through the S3 endpoint: Content-Type and x-amz-meta-*
// taken from PutObject, CopyObject (REPLACE) and CreateMultipartUpload,
// kept by the under-store (CreateOptions, ReadObjectMetadata), and answered
// on GET and HEAD. A MetadataCache keeps what was read per object version, so
// a warm GET asks the store nothing.
//
// Thread safety: MetadataCache is safe from any thread.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "net/http_server.h"
#include "s3/s3_errors.h"
#include "shoal/client.h"
#include "ufs/under_store.h"

namespace shoal::s3 {

// S3's limit on user metadata: names and values together.
inline constexpr size_t kMaxUserMetadata = 2048;

// The metadata a request gives: Content-Type and every x-amz-meta-* header
// (names lower-cased, the prefix dropped, in name order). InvalidArgument
// when a value holds a line break; MetadataTooLarge past kMaxUserMetadata.
S3Result<ObjectMetadata> MetadataFromHeaders(const net::HttpRequest& http);

// The part sizes of an object completed through the endpoint, kept with its
// metadata under this name (x-amz-meta-shoal-part-sizes on an object store),
// so GET and HEAD ?partNumber=N know where part N lies. Reserved: a request
// that sets it is refused, and answers never show it.
inline constexpr std::string_view kPartSizesName = "shoal-part-sizes";
// Run-length text of part sizes ("8388608*12,1048576"): at most kMaxPartSizesText
// bytes, else "" (such an object answers partNumber with NotImplemented).
inline constexpr size_t kMaxPartSizesText = 512;
std::string EncodePartSizes(const std::vector<uint64_t>& sizes);
// The sizes kept in `m`, if they are there, well formed, `parts` of them
// (0: any number up to S3's 10,000, for a write-back file whose version is
// not yet its ETag) and adding up to `object_size`; nullopt otherwise.
inline constexpr size_t kMaxPartsKept = 10000;
std::optional<std::vector<uint64_t>> PartSizesOf(const ObjectMetadata& m, size_t parts, uint64_t object_size);

// Into the options of Client::Create (never the part sizes: only a Complete
// knows them).
void SetCreateMetadata(const ObjectMetadata& m, CreateOptions* options);

// x-amz-meta-* headers of `m` and the standard ones it keeps (Cache-Control,
// Content-Disposition, ...). Content-Type is the caller's: a
// response-content-type override wins over it.
void AddMetadataHeaders(const ObjectMetadata& m, net::HttpResponse* response);

// "cache-control" -> "Cache-Control".
std::string CanonicalHeaderName(std::string_view lower);

// The metadata of object versions read recently, at most `capacity`, the
// least recently used dropped first. Keyed by path, version and mtime, so a
// file rewritten with the same bytes (same MD5 ETag) and other metadata is
// read again.
class MetadataCache {
 public:
  explicit MetadataCache(size_t capacity = 16384) : capacity_(capacity) {}

  // The metadata of `st`: kept, or read from its under-store (blocks). A
  // store that cannot answer gives none (logged): the bytes are still served.
  ObjectMetadata Get(Client& client, const FileStatus& st);
  // What is kept for `st`, never blocking; nullopt when nothing is.
  std::optional<ObjectMetadata> Peek(const FileStatus& st);
  // Drops what is kept for `path` (the endpoint wrote it).
  void Forget(const std::string& path);

 private:
  static std::string Key(const FileStatus& st);
  void Put(const std::string& key, const std::string& path, ObjectMetadata m);

  struct Entry {
    std::string key;
    std::string path;
    ObjectMetadata metadata;
  };
  const size_t capacity_;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace shoal::s3
