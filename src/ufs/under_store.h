// UnderStore: the interface every under-store (UFS) backend implements.
//
// Keys are relative to the store's root (the URI a mount points at), use '/'
// as separator and never start with '/': for s3://bucket/prefix/ the key
// "train/x.jpg" is the object "prefix/train/x.jpg". The empty key is the root.
//
// The interface is shaped for object stores: ranged reads, whole-object or
// streamed writes, listing by prefix with pagination and a delimiter, and the
// namespace mutations (delete, mkdir, rmdir, rename) with one set of codes.
//
// Thread safety: every method may be called concurrently from many threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/status.h"
#include "ufs/mount_options.h"

namespace shoal {

struct MountConfig;

// (uid_t)-1: chown's "leave it as it is", never an owner. Ids from outside
// (a store's metadata, a worker's answer) are below it.
inline constexpr uint64_t kNoOwner = 0xffff'ffffu;

// Metadata of one file/object or directory/common prefix.
struct FileInfo {
  std::string key;        // relative key (for List: the entry's full key relative to the root)
  bool is_dir = false;    // a directory or a common prefix
  uint64_t size = 0;
  int64_t mtime_ns = 0;   // modification time, ns since the epoch (0 if unknown)
  uint32_t mode = 0;  // permission bits (07777) where the store keeps them (file://, hdfs://); 0 where it keeps none
  int64_t ctime_ns = 0;   // the last change of bytes or attributes (file://); 0 where the store keeps none
  // The owner where the store keeps one (file://; object stores with
  // posix_attributes); -1 where it keeps none.
  int64_t uid = -1;
  int64_t gid = -1;
  // The ETag without quotes: the object store's; on file:// the MD5 of a
  // file Shoal wrote (kept in an extended attribute while the file is
  // unchanged), else one made of its mtime, size, device, inode and ctime,
  // which no other file shares.
  std::string etag;

  // The version that keys cached pages: the ETag when the store has one, else
  // "<mtime_ns>-<size>". Two versions differ whenever the content may differ.
  std::string Version() const;
};

struct ListOptions {
  std::string delimiter = "/";   // "" lists every key under the prefix (recursive)
  std::string continuation;      // token from a previous ListPage; "" starts
  int max_keys = 1000;
};

struct ListPage {
  std::vector<FileInfo> entries;  // files and (with a delimiter) common prefixes, in key order
  std::string continuation;       // non-empty when more entries follow
};

struct ReadOptions {
  // When set, the read fails with kVersionMismatch unless the object's current
  // version equals this (If-Match on object stores, mtime+size on files).
  std::string if_version;
};

// What an object carries beside its bytes, kept where its store can keep it:
// S3 and GCS user metadata, Azure metadata, an extended attribute on file://.
struct ObjectMetadata {
  std::string content_type;  // "" when none was given
  // User metadata: lower-case names without a prefix ("k" for x-amz-meta-k), each once.
  std::vector<std::pair<std::string, std::string>> user;
  // The standard headers an object keeps (kObjectHeaders): lower-case
  // names, each once, in kObjectHeaders' order.
  std::vector<std::pair<std::string, std::string>> headers;
  // Of a pending write-back file only (Client metadata reads, never a
  // store's): the ETag its writer gave, which it keeps once uploaded.
  std::string etag;
  bool empty() const { return content_type.empty() && user.empty() && headers.empty(); }
};

// The headers S3 keeps with an object and answers on GET and HEAD, besides
// Content-Type: what a PutObject, CopyObject or CreateMultipartUpload sets.
inline constexpr std::string_view kObjectHeaders[] = {"cache-control", "content-disposition", "content-encoding",
                                                      "content-language", "expires"};

struct WriteOptions {
  ObjectMetadata metadata;
  // file://: the permission bits (07777) of the new file; 0 keeps those of
  // the file it replaces, else the store's default (0644 under the umask).
  // Stores that keep no modes ignore it.
  uint32_t mode = 0;
  // The owner and group of the new file where the store keeps owners
  // (file://, as root; object stores with posix_attributes); -1: file:// keeps
  // those of the file it replaces, else the writer's.
  int64_t uid = -1;
  int64_t gid = -1;
  // file://: the ETag to keep for the object instead of the MD5 of its bytes
  // (an S3 multipart upload's "<md5 of the part md5s>-<parts>"). Object
  // stores make their own and ignore it.
  std::string etag;
};

// A streamed write of one object. Nothing is visible under the key until
// Close() returns OK; Abort() (or destruction without Close) discards it.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  virtual Status Append(std::span<const char> data) = 0;
  // Appends `length` bytes of the file `fd` from `offset` (an S3 multipart
  // upload's staged part). The default reads them and Appends them; a
  // file:// writer copies them inside the kernel instead (copy_file_range:
  // no pass through this process, and a shared extent where the file system
  // can clone). kIo when the file holds fewer bytes.
  virtual Status AppendFile(int fd, uint64_t offset, uint64_t length);
  virtual Status Close() = 0;
  virtual void Abort() = 0;
};

class UnderStore {
 public:
  virtual ~UnderStore() = default;

  // The URI this store was opened with, for messages and metrics ("s3://bucket/prefix/").
  virtual const std::string& uri() const = 0;

  // kNotFound when the key is neither a file nor a directory/prefix.
  virtual Result<FileInfo> Stat(std::string_view key) = 0;

  // Lists entries whose key starts with `prefix` ("" for the root; a directory
  // prefix ends with '/'). With delimiter "/", deeper keys fold into
  // directory entries (is_dir, key ending without '/').
  virtual Result<ListPage> List(std::string_view prefix, const ListOptions& options) = 0;

  // Reads up to out.size() bytes at `offset`. Returns the count read, which is
  // smaller only at the end of the object; a short read anywhere else is an
  // error (kIo), so truncated responses are never mistaken for data.
  virtual Result<size_t> Read(std::string_view key, uint64_t offset, std::span<char> out,
                              const ReadOptions& options = {}) = 0;

  // Read() and Stat() in one: the bytes at `offset` and the object's metadata,
  // from a single request where the store allows it (a ranged GET carries the
  // ETag and the total size). The default makes the two calls. kNotFound when
  // there is no object under the key (a directory is not an object).
  struct ReadWithInfoResult {
    size_t bytes = 0;
    FileInfo info;
  };
  virtual Result<ReadWithInfoResult> ReadWithInfo(std::string_view key, uint64_t offset, std::span<char> out);

  // A new object under `key`, with `options.metadata` kept with it where the
  // store can keep metadata (others drop it: Metadata() then answers none).
  virtual Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key, const WriteOptions& options = {}) = 0;

  // The metadata a writer gave the object under `key` (OpenWriter's
  // options.metadata): empty when it gave none or the store keeps none.
  // kNotFound when there is no object. The default keeps none.
  virtual Result<ObjectMetadata> Metadata(std::string_view key) { return ObjectMetadata{}; }

  // What SetAttributes changes; an empty field is left as it is.
  struct AttributeChange {
    std::optional<uint32_t> mode = std::nullopt;     // permission bits, 07777
    std::optional<int64_t> mtime_ns = std::nullopt;  // modification time, ns since the epoch
    std::optional<uint32_t> uid = std::nullopt;      // owner
    std::optional<uint32_t> gid = std::nullopt;      // group
    bool empty() const { return !mode && !mtime_ns && !uid && !gid; }
  };
  // Keeps the mode, modification time and owner of the file or directory
  // `key`, where the store can keep them (file://, hdfs:// modes and times;
  // object stores with posix_attributes, in each object's user metadata):
  // what `chmod`, `touch -d` and `chown` through the FUSE mount ask.
  // A store keeps the fields it can and ignores the others (hdfs:// keeps no
  // owner ids); kNotSupported when it keeps none of those asked, kNotFound
  // when `key` is absent.
  // On file:// a file's ETag stays while its bytes do.
  virtual Status SetAttributes(std::string_view key, const AttributeChange& change) {
    return Status(Code::kNotSupported, "modes, times and owners are not kept by " + uri() +
                                           " (on an object store the mount option posix_attributes keeps them)");
  }

  // Whole-object write; the default streams through OpenWriter.
  virtual Status Write(std::string_view key, std::span<const char> data);

  // Namespace mutations. Every backend gives the same codes (the conformance
  // suite checks them): kNotFound when the key is absent, kIsDirectory for a
  // file operation on a directory, kNotDirectory for a directory operation on
  // a file, kAlreadyExists, kNotEmpty.

  // Removes the file under `key`: kNotFound when there is none, kIsDirectory
  // when `key` is a directory (object stores: a prefix with keys under it).
  virtual Status Delete(std::string_view key) = 0;

  // Creates directory `key`, and any missing parents (object stores imply
  // them): kAlreadyExists when a file or directory is already there. Object
  // stores write an empty "key/" marker object, which listings hide and which
  // makes the (otherwise empty) directory visible to Stat and to its parent's
  // listing.
  virtual Status Mkdir(std::string_view key) {
    return Status(Code::kNotSupported, "mkdir is not supported by " + uri());
  }

  // Removes the empty directory `key` (on object stores its marker, if any):
  // kNotEmpty when anything is under it, kNotFound when it does not exist,
  // kNotDirectory when it is a file.
  virtual Status Rmdir(std::string_view key) {
    return Status(Code::kNotSupported, "rmdir is not supported by " + uri());
  }

  // Renames `from` to `to`, replacing a file there, creating `to`'s missing
  // parents: kNotFound when `from` is absent, kIsDirectory when `to` is a
  // directory and `from` a file. kNotSupported where the store cannot (object
  // stores rename single objects only, by server-side copy and delete).
  virtual Status Rename(std::string_view from, std::string_view to) {
    return Status(Code::kNotSupported, "rename is not supported by " + uri());
  }
};

// Every entry of a directory (key "" for the root), following continuation
// tokens: what both the worker and the client's fallback list.
Result<std::vector<FileInfo>> ListDirectory(UnderStore& store, std::string_view key);

// Opens the store for `mount.ufs` with the mount's options. Schemes: file://,
// s3://, gs://, az://, hdfs:// (WebHDFS). Unknown schemes and malformed URIs
// return kInvalidArgument naming the URI. Messages do not name the mount: the
// caller adds "mount /path: ".
Result<std::shared_ptr<UnderStore>> OpenUnderStore(const MountConfig& mount);

// The options the mounts of a scheme accept (none for file://).
Result<OptionTable> MountOptionTable(std::string_view scheme);

// Checks a mount without contacting its store: the URI, every option's name
// and value, the shape of the credentials, the bucket or container name.
// Credentials the options leave out are looked up (environment, AWS files) as
// opening the store would. kInvalidArgument with a one-line message.
Status ValidateMount(const MountConfig& mount);

// One cheap request to the mount's root (a listing of one entry) within
// `deadline`, retries included: kUnavailable or kTimeout when the store
// cannot be reached, kNotFound when the bucket, container or directory does
// not exist, kPermissionDenied when the store refuses the credentials.
Status ProbeMount(const MountConfig& mount, std::chrono::milliseconds deadline);

}  // namespace shoal
