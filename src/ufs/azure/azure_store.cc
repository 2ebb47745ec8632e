// AzureStore: the UnderStore over Azure Blob Storage (az://container/prefix/).
//
// Keys are blob names under the prefix. Directories are implied by names, as
// on S3: a directory stat is a one-entry listing of "<key>/". Reads are ranged
// Get Blob straight into the caller's buffer; writes are one Put Blob up to
// upload_threshold, else Put Block (upload_concurrency blocks in flight) and a
// Put Block List on Close. Uncommitted blocks are never visible, so an
// aborted writer leaves nothing behind (the service drops them in a week).
#include "ufs/azure/azure_store.h"

#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <optional>

#include "common/config.h"
#include "ufs/azure/azure_client.h"
#include "ufs/azure/azure_xml.h"
#include "ufs/http/call_deadline.h"
#include "ufs/posix_metadata.h"

namespace shoal {
namespace {

bool Is2xx(long s) { return s >= 200 && s < 300; }

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

// The headers that keep an object's metadata with the blob (Put Blob, Put
// Block List), and the metadata a HEAD answered (headers lower-cased).
// Azure takes metadata names that are C# identifiers: a '-' in a name is kept
// as "_2d_" and turned back on reading.
// Azure keeps Cache-Control, Content-Disposition, -Encoding and -Language as
// blob properties (x-ms-blob-*); it has no Expires, kept as the metadata
// "shoal_expires" (reserved: never a user entry).
constexpr std::string_view kExpiresMeta = "x-ms-meta-shoal_expires";

std::vector<std::pair<std::string, std::string>> AzureMetadataHeaders(const ObjectMetadata& m) {
  std::vector<std::pair<std::string, std::string>> h;
  if (!m.content_type.empty()) h.emplace_back("x-ms-blob-content-type", m.content_type);
  for (const auto& [k, v] : m.headers) h.emplace_back(k == "expires" ? std::string(kExpiresMeta) : "x-ms-blob-" + k, v);
  for (const auto& [k, v] : m.user) {
    std::string name;
    for (char c : k) name += c == '-' ? std::string("_2d_") : std::string(1, c);
    h.emplace_back("x-ms-meta-" + name, v);
  }
  return h;
}

ObjectMetadata AzureMetadataOf(const std::map<std::string, std::string>& lower_headers) {
  ObjectMetadata m;
  for (std::string_view name : kObjectHeaders) {
    auto it = lower_headers.find(name == "expires" ? std::string(kExpiresMeta) : std::string(name));
    if (it != lower_headers.end() && !it->second.empty()) m.headers.emplace_back(name, it->second);
  }
  for (const auto& [k, v] : lower_headers) {
    if (k == "content-type") m.content_type = v;
    if (!k.starts_with("x-ms-meta-") || k.size() <= 10 || k == kExpiresMeta) continue;
    std::string name = k.substr(10);
    for (size_t at = name.find("_2d_"); at != std::string::npos; at = name.find("_2d_", at + 1)) {
      name.replace(at, 4, "-");
    }
    m.user.emplace_back(std::move(name), v);
  }
  return m;
}

class AzureWriter final : public ObjectWriter {
 public:
  AzureWriter(std::shared_ptr<const AzureClient> client, std::string blob, const ObjectMetadata& metadata)
      : client_(std::move(client)), blob_(std::move(blob)), metadata_headers_(AzureMetadataHeaders(metadata)) {}
  ~AzureWriter() override { Abort(); }

  Status Append(std::span<const char> data) override {
    if (done_) return Status(Code::kInvalidArgument, "write to a finished writer for " + client_->Display(blob_));
    if (!error_.ok()) return error_;
    buffer_.append(data.data(), data.size());
    const auto& s = client_->settings();
    if (!blocks_mode_ && buffer_.size() > s.upload_threshold) blocks_mode_ = true;
    while (blocks_mode_ && buffer_.size() >= s.block_size) {
      std::string block = buffer_.substr(0, s.block_size);
      buffer_.erase(0, s.block_size);
      StartBlock(std::move(block));
      if (!error_.ok()) return error_;
    }
    return {};
  }

  Status Close() override {
    if (done_) return Status(Code::kInvalidArgument, "writer for " + client_->Display(blob_) + " already finished");
    Status st = blocks_mode_ ? CommitBlocks() : PutBlob();
    if (!st.ok()) {
      Abort();
      return st;
    }
    done_ = true;
    return {};
  }

  void Abort() override {
    if (done_) return;
    done_ = true;
    WaitAll();  // in-flight uploads cannot be cancelled; their blocks stay uncommitted
    buffer_.clear();
  }

 private:
  Status PutBlob() {
    HttpRequest req;
    req.method = "PUT";
    req.url = client_->BlobUrl(blob_);
    req.headers = {{"x-ms-blob-type", "BlockBlob"}};
    req.headers.insert(req.headers.end(), metadata_headers_.begin(), metadata_headers_.end());
    req.body = buffer_;
    auto r = client_->Send(std::move(req));
    if (!r) return r.error();
    if (!Is2xx(r->status)) return client_->ErrorFor(*r, "write", blob_);
    return {};
  }

  void StartBlock(std::string data) {
    // Block ids must all have the same length within a blob.
    char raw[32];
    std::snprintf(raw, sizeof raw, "shoal-block-%08zu", block_ids_.size());
    std::string id = Base64Encode(raw);
    block_ids_.push_back(id);
    while (static_cast<int>(in_flight_.size()) >= client_->settings().upload_concurrency) WaitOldest();
    in_flight_.push_back(std::async(std::launch::async, [client = client_, blob = blob_, id, data = std::move(data),
                                                         deadline = CallDeadline::Current()] {
      // The caller's call deadline (CallDeadline) is per thread: carried over to this one.
      std::optional<CallDeadline> bound;
      if (deadline) bound.emplace(*deadline);
      HttpRequest req;
      req.method = "PUT";
      req.url = client->BlobUrl(blob) + "?comp=block&blockid=" + PercentEncode(id, false);
      req.body = data;
      auto r = client->Send(std::move(req));
      if (!r) return r.error();
      if (!Is2xx(r->status)) return client->ErrorFor(*r, "upload a block of", blob);
      return Status();
    }));
  }

  void WaitOldest() {
    Status st = in_flight_.front().get();
    in_flight_.pop_front();
    if (error_.ok() && !st.ok()) error_ = st;
  }

  void WaitAll() {
    while (!in_flight_.empty()) WaitOldest();
  }

  Status CommitBlocks() {
    if (!buffer_.empty() && error_.ok()) StartBlock(std::move(buffer_));
    buffer_.clear();
    WaitAll();
    if (!error_.ok()) return error_;
    std::string xml = BlockListXml(block_ids_);
    HttpRequest req;
    req.method = "PUT";
    req.url = client_->BlobUrl(blob_) + "?comp=blocklist";
    req.headers = {{"Content-Type", "application/xml"}};
    req.headers.insert(req.headers.end(), metadata_headers_.begin(), metadata_headers_.end());
    req.body = xml;
    auto r = client_->Send(std::move(req));
    if (!r) return r.error();
    if (!Is2xx(r->status)) return client_->ErrorFor(*r, "commit the blocks of", blob_);
    return {};
  }

  std::shared_ptr<const AzureClient> client_;
  std::string blob_;
  std::vector<std::pair<std::string, std::string>> metadata_headers_;
  std::string buffer_;
  bool blocks_mode_ = false;
  bool done_ = false;
  Status error_;  // first failed block upload
  std::vector<std::string> block_ids_;
  std::deque<std::future<Status>> in_flight_;
};

class AzureStore final : public UnderStore {
 public:
  explicit AzureStore(std::shared_ptr<const AzureClient> client) : client_(std::move(client)) {}

  const std::string& uri() const override { return client_->settings().uri; }

  Result<FileInfo> Stat(std::string_view key) override {
    std::string k = Trimmed(key);
    if (!k.empty()) {
      auto r = Head(k);
      if (!r) return Err(r.error());
      if (Is2xx(r->status)) {
        FileInfo fi;
        fi.key = k;
        fi.size = std::strtoull(r->Header("content-length").c_str(), nullptr, 10);
        fi.etag = Unquote(r->Header("etag"));
        fi.mtime_ns = ParseHttpDate(r->Header("last-modified"));
        if (client_->settings().posix_attributes) ApplyPosixMetadata(AzureMetadataOf(r->headers).user, fi);
        return fi;
      }
      if (r->status != 404 || r->Header("x-ms-error-code") == "ContainerNotFound") {
        return Err(client_->ErrorFor(*r, "stat", Blob(k)));
      }
    }
    // Not a blob: a directory when some blob name continues with "<key>/".
    auto page = ListRaw(k.empty() ? "" : k + "/", "/", "", 1);
    if (!page) return Err(page.error());
    if (page->items.empty() && !k.empty()) return Err(Code::kNotFound, "no such file or directory: " + client_->Display(Blob(k)));
    FileInfo fi;
    fi.key = k;
    fi.is_dir = true;
    return fi;
  }

  Result<ListPage> List(std::string_view prefix, const ListOptions& options) override {
    int max = options.max_keys > 0 ? std::min(options.max_keys, 5000) : 1000;
    auto listing = ListRaw(std::string(prefix), options.delimiter, options.continuation, max);
    if (!listing) return Err(listing.error());
    ListPage page;
    const std::string& root = client_->settings().prefix;
    for (auto& item : listing->items) {
      if (!item.name.starts_with(root)) continue;
      if (!item.is_prefix && item.name.ends_with('/')) continue;  // a directory marker (Mkdir), not a file
      FileInfo fi;
      fi.key = item.name.substr(root.size());
      fi.is_dir = item.is_prefix;
      if (fi.is_dir && !options.delimiter.empty() && fi.key.ends_with(options.delimiter)) {
        fi.key.resize(fi.key.size() - options.delimiter.size());
      }
      fi.size = item.size;
      fi.etag = std::move(item.etag);
      fi.mtime_ns = item.mtime_ns;
      page.entries.push_back(std::move(fi));
    }
    page.continuation = std::move(listing->next_marker);
    return page;
  }

  Result<size_t> Read(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& options) override {
    std::string blob = Blob(Trimmed(key));
    if (out.empty()) {
      auto st = Stat(key);  // keeps NotFound and version checks meaningful for empty reads
      if (!st) return Err(st.error());
      if (!options.if_version.empty() && st->Version() != options.if_version) {
        return Err(Code::kVersionMismatch, client_->Display(blob) + " changed since it was opened");
      }
      return size_t{0};
    }
    HttpRequest req;
    req.url = client_->BlobUrl(blob);
    req.headers.emplace_back("x-ms-range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + out.size() - 1));
    if (!options.if_version.empty()) req.headers.emplace_back("If-Match", "\"" + options.if_version + "\"");
    req.body_out = out;
    auto r = client_->Send(std::move(req));
    if (!r) return Err(r.error());
    if (r->status == 416) return size_t{0};  // the range starts at or past the end
    if (!Is2xx(r->status)) return Err(client_->ErrorFor(*r, "read", blob));
    if (r->body_out_overflow) {
      return Err(Code::kIo, "read " + client_->Display(blob) + ": the service sent more than the " +
                                std::to_string(out.size()) + " bytes asked for; refusing the data");
    }
    // The answer must hold exactly the range it claims: a short body is an error, never data.
    uint64_t first = 0, last = 0, total = 0;
    std::string cr = r->Header("content-range");
    if (r->status == 206 && std::sscanf(cr.c_str(), "bytes %lu-%lu/%lu", &first, &last, &total) == 3) {
      if (first != offset || last < first || r->body_out_size != last - first + 1) {
        return Err(Code::kIo, "read " + client_->Display(blob) + ": got " + std::to_string(r->body_out_size) +
                                  " bytes for range '" + cr + "' at offset " + std::to_string(offset) +
                                  " (truncated answer); retry the read");
      }
    } else if (offset != 0 || r->body_out_size != std::strtoull(r->Header("content-length").c_str(), nullptr, 10)) {
      return Err(Code::kIo, "read " + client_->Display(blob) + ": the service ignored the range or cut the body short; retry the read");
    }
    return r->body_out_size;
  }

  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key, const WriteOptions& options = {}) override {
    std::string k = Trimmed(key);
    if (k.empty()) return Err(Code::kInvalidArgument, "cannot write the root of " + uri() + ": name a file");
    if (client_->settings().posix_attributes && (options.mode != 0 || options.uid >= 0 || options.gid >= 0)) {
      ObjectMetadata m = options.metadata;
      SetPosixMetadata(PosixChangeOf(options), 0, m.user);
      return std::unique_ptr<ObjectWriter>(new AzureWriter(client_, Blob(k), m));
    }
    return std::unique_ptr<ObjectWriter>(new AzureWriter(client_, Blob(k), options.metadata));
  }

  // posix_attributes: Set Blob Metadata with the blob's metadata and the
  // change (its bytes and properties stay). Directories keep none.
  Status SetAttributes(std::string_view key, const AttributeChange& change) override {
    if (!client_->settings().posix_attributes) return UnderStore::SetAttributes(key, change);
    std::string k = Trimmed(key);
    if (k.empty()) return Status(Code::kNotSupported, "the root of " + uri() + " keeps no mode, owner or time");
    auto r = Head(k);
    if (!r) return r.error();
    if (r->status == 404 && r->Header("x-ms-error-code") != "ContainerNotFound") {
      auto st = Stat(k);
      if (!st) return st.error();
      return Status(Code::kNotSupported,
                    client_->Display(Blob(k)) + " is a directory: Azure keeps no mode, owner or time for it");
    }
    if (!Is2xx(r->status)) return client_->ErrorFor(*r, "read the metadata of", Blob(k));
    ObjectMetadata meta = AzureMetadataOf(r->headers);
    SetPosixMetadata(change, ParseHttpDate(r->Header("last-modified")), meta.user);
    HttpRequest set;
    set.method = "PUT";
    set.url = client_->BlobUrl(Blob(k)) + "?comp=metadata";
    for (auto& [name, value] : AzureMetadataHeaders(meta)) {
      // Set Blob Metadata replaces the metadata only (Expires is kept as one).
      if (name.starts_with("x-ms-meta-")) set.headers.emplace_back(std::move(name), std::move(value));
    }
    if (auto etag = r->Header("etag"); !etag.empty()) set.headers.emplace_back("If-Match", etag);
    auto done = client_->Send(std::move(set));
    if (!done) return done.error();
    if (done->status == 412) {
      return Status(Code::kVersionMismatch,
                    client_->Display(Blob(k)) + " changed while its mode, owner or time was being set; try again");
    }
    if (!Is2xx(done->status)) return client_->ErrorFor(*done, "set the metadata of", Blob(k));
    return {};
  }

  Result<ObjectMetadata> Metadata(std::string_view key) override {
    std::string k = Trimmed(key);
    if (k.empty()) return Err(Code::kNotFound, "the root of " + uri() + " is not a blob");
    auto r = Head(k);
    if (!r) return Err(r.error());
    if (r->status == 404) return Err(Code::kNotFound, "no such blob: " + client_->Display(Blob(k)));
    if (!Is2xx(r->status)) return Err(client_->ErrorFor(*r, "read the metadata of", Blob(k)));
    return AzureMetadataOf(r->headers);
  }

  Status Delete(std::string_view key) override {
    std::string k = Trimmed(key);
    if (k.empty()) return Status(Code::kIsDirectory, "cannot delete the root of " + uri());
    auto st = Stat(k);
    if (!st) return st.error();
    if (st->is_dir) {
      return Status(Code::kIsDirectory, "cannot delete " + client_->Display(Blob(k)) +
                                            ": it is a directory (blobs under it); rmdir removes an empty one");
    }
    return DeleteBlob(Blob(k));
  }

  Status Mkdir(std::string_view key) override {
    std::string k = Trimmed(key);
    if (k.empty()) return Status(Code::kAlreadyExists, "the root of " + uri() + " already exists");
    auto st = Stat(k);
    if (st) {
      return Status(Code::kAlreadyExists, "cannot create directory " + client_->Display(Blob(k)) + ": a " +
                                              (st->is_dir ? "directory" : "file") + " is already there");
    }
    if (st.error().code() != Code::kNotFound) return st.error();
    HttpRequest req;  // the marker: an empty blob whose name ends in '/'
    req.method = "PUT";
    req.url = client_->BlobUrl(Blob(k) + "/");
    req.headers = {{"x-ms-blob-type", "BlockBlob"}};
    auto r = client_->Send(std::move(req));
    if (!r) return r.error();
    if (!Is2xx(r->status)) return client_->ErrorFor(*r, "create directory", Blob(k));
    return {};
  }

  Status Rmdir(std::string_view key) override {
    std::string k = Trimmed(key);
    if (k.empty()) return Status(Code::kInvalidArgument, "cannot remove the root of " + uri());
    const std::string marker = Blob(k) + "/";
    auto page = ListRaw(k + "/", "", "", 2);  // the marker sorts first; anything else means not empty
    if (!page) return page.error();
    bool has_marker = false;
    for (const auto& item : page->items) {
      if (item.name != marker) {
        return Status(Code::kNotEmpty, "cannot remove directory " + client_->Display(Blob(k)) + ": it is not empty");
      }
      has_marker = true;
    }
    if (!has_marker) {
      auto st = Stat(k);
      if (!st) return st.error();
      if (!st->is_dir)
        return Status(Code::kNotDirectory, "cannot remove directory " + client_->Display(Blob(k)) + ": it is a file");
      return {};  // a prefix that emptied meanwhile
    }
    return DeleteBlob(marker);
  }

 private:
  // A HEAD of the blob of `key` (trimmed): any status is an answer.
  Result<HttpResponse> Head(const std::string& k) const {
    HttpRequest req;
    req.method = "HEAD";
    req.url = client_->BlobUrl(Blob(k));
    return client_->Send(std::move(req));
  }
  static std::string Trimmed(std::string_view key) { return TrimSlashes(key); }

  Status DeleteBlob(const std::string& blob) {
    HttpRequest req;
    req.method = "DELETE";
    req.url = client_->BlobUrl(blob);
    auto r = client_->Send(std::move(req));
    if (!r) return r.error();
    if (!Is2xx(r->status)) return client_->ErrorFor(*r, "delete", blob);
    return {};
  }
  std::string Blob(const std::string& key) const { return client_->settings().prefix + key; }

  // One List Blobs page for names starting with root prefix + `prefix`.
  Result<BlobListing> ListRaw(const std::string& prefix, const std::string& delimiter, const std::string& marker, int max) {
    std::string url = client_->ContainerUrl() + "?restype=container&comp=list&maxresults=" + std::to_string(max) +
                      "&prefix=" + PercentEncode(Blob(prefix), false);
    if (!delimiter.empty()) url += "&delimiter=" + PercentEncode(delimiter, false);
    if (!marker.empty()) url += "&marker=" + PercentEncode(marker, false);
    HttpRequest req;
    req.url = std::move(url);
    auto r = client_->Send(std::move(req));
    if (!r) return Err(r.error());
    if (!Is2xx(r->status)) return Err(client_->ErrorFor(*r, "list", Blob(prefix)));
    auto listing = ParseListBlobs(r->body);
    if (!listing) return Err(listing.error().WithContext("list " + client_->Display(Blob(prefix))));
    return listing;
  }

  std::shared_ptr<const AzureClient> client_;
};

}  // namespace

Result<std::shared_ptr<UnderStore>> MakeAzureStore(const UfsUri& uri, const MountConfig& mount) {
  auto settings = ParseAzureSettings(uri, mount, ProcessEnv());
  if (!settings) return Err(settings.error());
  return std::make_shared<AzureStore>(std::make_shared<const AzureClient>(std::move(*settings)));
}

}  // namespace shoal
