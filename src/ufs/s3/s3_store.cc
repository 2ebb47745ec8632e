#include "ufs/s3/s3_store.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>

#include "common/config.h"
#include "ufs/posix_metadata.h"
#include "ufs/s3/s3_client.h"
#include "ufs/s3/s3_settings.h"
#include "ufs/s3/s3_writer.h"
#include "ufs/s3/s3_xml.h"
#include "ufs/uri.h"

namespace shoal {
namespace s3 {
namespace {

uint64_t ParseU64(std::string_view s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// "bytes 100-199/5000" -> {100, 199, 5000}; false if malformed.
// Last-Modified as ns since the epoch; 0 when absent or unparsable.
int64_t MtimeFrom(const HttpResponse& resp) {
  auto lm = resp.Header("last-modified");
  time_t t = lm.empty() ? 0 : curl_getdate(lm.c_str(), nullptr);
  return t > 0 ? static_cast<int64_t>(t) * 1'000'000'000 : 0;
}

bool ParseContentRange(std::string_view v, uint64_t& first, uint64_t& last, uint64_t& total) {
  if (!v.starts_with("bytes ")) return false;
  v.remove_prefix(6);
  auto dash = v.find('-'), slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) return false;
  auto num = [](std::string_view s, uint64_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
  };
  return num(v.substr(0, dash), first) && num(v.substr(dash + 1, slash - dash - 1), last) &&
         num(v.substr(slash + 1), total) && last >= first;
}

class S3Store final : public UnderStore {
 public:
  explicit S3Store(S3Settings s) : client_(std::make_shared<S3Client>(std::move(s))) {}

  const std::string& uri() const override { return client_->settings().uri; }

  Result<FileInfo> Stat(std::string_view key) override {
    std::string rel = Trimmed(key);
    if (rel.empty()) {
      // The root exists whenever the bucket does; listing proves that.
      auto page = ListRaw(Full(""), "/", "", 1);
      if (!page) return Err(page.error());
      FileInfo root;
      root.is_dir = true;
      return root;
    }
    S3Request r;
    auto resp = Head(rel, r);
    if (!resp) return Err(resp.error());
    if (resp->status / 100 == 2) {
      FileInfo info;
      info.key = rel;
      info.size = ParseU64(resp->Header("content-length"));
      info.etag = UnquoteEtag(resp->Header("etag"));
      info.mtime_ns = MtimeFrom(*resp);
      KeptAttributes(*resp, info);
      return info;
    }
    if (resp->status != 404) return Err(client_->ErrorFor(*resp, r));
    // No object: a directory is any key below "key/".
    auto page = ListRaw(Full(rel) + "/", "/", "", 1);
    if (!page) return Err(page.error());
    if (page->objects.empty() && page->common_prefixes.empty()) {
      return Err(Code::kNotFound, "no such file or directory: " + client_->UriOf(Full(rel)) + " (mount " +
                                      client_->settings().mount_path + ")");
    }
    FileInfo dir;
    dir.key = rel;
    dir.is_dir = true;
    return dir;
  }

  Result<ListPage> List(std::string_view prefix, const ListOptions& options) override {
    auto raw = ListRaw(Full(prefix), options.delimiter, options.continuation, options.max_keys);
    if (!raw) return Err(raw.error());
    const std::string& root = client_->settings().prefix;
    ListPage page;
    for (auto& o : raw->objects) {
      // Keys ending in '/' are folder markers made by consoles, not files.
      if (!o.key.starts_with(root) || o.key.size() == root.size() || o.key.back() == '/') continue;
      FileInfo f;
      f.key = o.key.substr(root.size());
      f.size = o.size;
      f.etag = std::move(o.etag);
      f.mtime_ns = o.mtime_ns;
      page.entries.push_back(std::move(f));
    }
    for (auto& p : raw->common_prefixes) {
      if (!p.starts_with(root) || p.size() <= root.size()) continue;
      FileInfo d;
      d.key = p.substr(root.size());
      while (!d.key.empty() && d.key.back() == '/') d.key.pop_back();
      if (d.key.empty()) continue;
      d.is_dir = true;
      page.entries.push_back(std::move(d));
    }
    std::sort(page.entries.begin(), page.entries.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    if (raw->truncated) {
      if (raw->next_token.empty()) {
        return Err(Code::kIo, "listing " + client_->UriOf(Full(prefix)) +
                                  " was truncated without a continuation token: the store's ListObjectsV2 is broken");
      }
      page.continuation = std::move(raw->next_token);
    }
    return page;
  }

  Result<size_t> Read(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& options) override {
    return ReadImpl(key, offset, out, options, nullptr);
  }

  // One ranged GET: its ETag, Content-Range total and Last-Modified are the stat.
  Result<ReadWithInfoResult> ReadWithInfo(std::string_view key, uint64_t offset, std::span<char> out) override {
    if (out.empty() || Trimmed(key).empty()) return UnderStore::ReadWithInfo(key, offset, out);
    ReadWithInfoResult r;
    auto n = ReadImpl(key, offset, out, {}, &r.info);
    if (!n) return Err(n.error());
    if (r.info.etag.empty()) return UnderStore::ReadWithInfo(key, offset, out);  // a 416: past the end, or empty
    r.bytes = *n;
    return r;
  }

  Result<size_t> ReadImpl(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& options,
                          FileInfo* info) {
    std::string rel = Trimmed(key);
    if (out.empty()) {
      auto st = Stat(rel);
      if (!st) return Err(st.error());
      return size_t{0};
    }
    S3Request r;
    r.key = Full(rel);
    r.body_out = out;
    r.accept_partial = true;  // judged by `validate` below
    r.headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + out.size() - 1));
    // The bytes as stored: GCS decompresses an object kept with
    // Content-Encoding: gzip for a reader that does not accept gzip (and then
    // ignores the range); S3 never encodes in transit.
    r.headers.emplace_back("Accept-Encoding", "gzip");
    if (!options.if_version.empty()) r.headers.emplace_back("If-Match", "\"" + options.if_version + "\"");
    auto uri = [&] { return client_->UriOf(r.key); };  // for messages only
    // A body shorter than asked is only valid at the end of the object; anything
    // else is a truncated response and must never be returned as data.
    auto validate = [&](const HttpResponse& h) -> Status {
      if (h.body_out_overflow) {
        return Status(Code::kIo, "GET " + uri() + " returned more bytes than the range asked for (Range ignored?)");
      }
      uint64_t first = 0, last = 0, total = 0;
      if (h.status == 206) {
        // Some S3 clones answer a range on an empty object with "bytes 0-0/0"
        // and a body they never send: the object is empty, whatever the length says.
        if (ParseContentRange(h.Header("content-range"), first, last, total) && total == 0) return {};
        if (h.truncated) {
          return Status(Code::kIo, "truncated response for " + uri() + ": the connection ended after " +
                                       std::to_string(h.body_out_size) + " bytes");
        }
        if (!ParseContentRange(h.Header("content-range"), first, last, total) || first != offset) {
          return Status(Code::kIo,
                        "GET " + uri() + " returned a bad Content-Range '" + h.Header("content-range") + "'");
        }
        uint64_t want = std::min<uint64_t>(out.size(), total - offset);
        if (h.body_out_size != want || last - first + 1 != want) {
          return Status(Code::kIo, "truncated response for " + uri() + ": got " + std::to_string(h.body_out_size) +
                                       " of " + std::to_string(want) + " bytes at offset " + std::to_string(offset));
        }
        return {};
      }
      // 200: the whole object, which is only right when reading from 0.
      uint64_t len = ParseU64(h.Header("content-length"));
      if (h.truncated) {
        return Status(Code::kIo, "truncated response for " + uri() + ": got " + std::to_string(h.body_out_size) +
                                     " of " + std::to_string(len) + " bytes");
      }
      if (offset != 0) return Status(Code::kIo, "GET " + uri() + " ignored the Range header");
      if (h.body_out_size != len) {
        return Status(Code::kIo, "truncated response for " + uri() + ": got " + std::to_string(h.body_out_size) +
                                     " of " + std::to_string(len) + " bytes");
      }
      return {};
    };
    auto resp = client_->Send(r, validate);
    if (!resp) return Err(resp.error());
    if (resp->status == 416) return size_t{0};  // offset at or past the end
    if (resp->status / 100 != 2) return Err(client_->ErrorFor(*resp, r));
    if (info) {
      info->key = rel;
      info->etag = UnquoteEtag(resp->Header("etag"));
      uint64_t first = 0, last = 0, total = 0;
      info->size = resp->status == 206 && ParseContentRange(resp->Header("content-range"), first, last, total)
                       ? total
                       : ParseU64(resp->Header("content-length"));
      info->mtime_ns = MtimeFrom(*resp);
      KeptAttributes(*resp, *info);  // a GET answers the metadata a HEAD does
    }
    // Stores that ignore If-Match (some S3 clones) are caught here.
    if (!options.if_version.empty()) {
      auto etag = UnquoteEtag(resp->Header("etag"));
      if (!etag.empty() && etag != options.if_version) {
        return Err(Code::kVersionMismatch,
                   uri() + " changed since it was opened (ETag " + etag + ", expected " + options.if_version + ")");
      }
    }
    return resp->body_out_size;
  }

  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key, const WriteOptions& options = {}) override {
    std::string rel = Trimmed(key);
    if (rel.empty()) return Err(Code::kInvalidArgument, "cannot write the root of " + uri());
    if (posix_attributes() && (options.mode != 0 || options.uid >= 0 || options.gid >= 0)) {
      ObjectMetadata m = options.metadata;
      SetPosixMetadata(PosixChangeOf(options), 0, m.user);
      return std::make_unique<S3Writer>(client_, Full(rel), MetadataHeaders(m));
    }
    return std::make_unique<S3Writer>(client_, Full(rel), MetadataHeaders(options.metadata));
  }

  // posix_attributes: the object rewritten onto itself (CopyObject, no byte
  // through Shoal) with its metadata and the change. Directories (prefixes)
  // keep none.
  Status SetAttributes(std::string_view key, const AttributeChange& change) override {
    if (!posix_attributes()) return UnderStore::SetAttributes(key, change);
    std::string rel = Trimmed(key);
    if (rel.empty()) return Status(Code::kNotSupported, "the root of " + uri() + " keeps no mode, owner or time");
    S3Request head;
    auto resp = Head(rel, head);
    if (!resp) return resp.error();
    if (resp->status == 404) {
      auto st = Stat(rel);
      if (!st) return st.error();
      return Status(Code::kNotSupported, client_->UriOf(Full(rel)) +
                                             " is a directory (a prefix): an object store keeps no mode, owner or "
                                             "time for it");
    }
    if (resp->status / 100 != 2) return client_->ErrorFor(*resp, head);
    const uint64_t size = ParseU64(resp->Header("content-length"));
    const std::string etag = UnquoteEtag(resp->Header("etag"));
    if (size > kMaxCopy) {
      return Status(Code::kNotSupported, "cannot keep the mode, owner or time of " + client_->UriOf(Full(rel)) +
                                             ": objects over 5 GiB cannot be copied onto themselves in one request");
    }
    ObjectMetadata meta = MetadataOfHeaders(resp->headers);
    SetPosixMetadata(change, MtimeFrom(*resp), meta.user);
    S3Request r;
    r.method = "PUT";
    r.key = Full(rel);
    r.headers = MetadataHeaders(meta);
    r.headers.emplace_back("x-amz-copy-source", CopySource(rel));
    r.headers.emplace_back("x-amz-metadata-directive", "REPLACE");
    if (!etag.empty()) r.headers.emplace_back("x-amz-copy-source-if-match", "\"" + etag + "\"");
    auto copied = client_->Send(r, CopyAnswer);
    if (!copied) return copied.error();
    if (copied->status == 412) {
      return Status(Code::kVersionMismatch,
                    client_->UriOf(Full(rel)) + " changed while its mode, owner or time was being set; try again");
    }
    if (copied->status / 100 != 2) return client_->ErrorFor(*copied, r);
    return {};
  }

  Result<ObjectMetadata> Metadata(std::string_view key) override {
    std::string rel = Trimmed(key);
    if (rel.empty()) return Err(Code::kNotFound, "the root of " + uri() + " is not an object");
    S3Request r;
    auto resp = Head(rel, r);
    if (!resp) return Err(resp.error());
    if (resp->status == 404) return Err(Code::kNotFound, "no such object: " + client_->UriOf(Full(rel)));
    if (resp->status / 100 != 2) return Err(client_->ErrorFor(*resp, r));
    return MetadataOfHeaders(resp->headers);
  }

  Status Write(std::string_view key, std::span<const char> data) override {
    std::string rel = Trimmed(key);
    if (rel.empty()) return Status(Code::kInvalidArgument, "cannot write the root of " + uri());
    if (data.size() >= client_->settings().multipart_threshold) return UnderStore::Write(rel, data);
    S3Request r;
    r.method = "PUT";
    r.key = Full(rel);
    r.body = data;  // no copy: the caller's buffer outlives the call
    r.headers = UploadHeaders(client_->settings(), data);
    auto resp = client_->Send(r);
    if (!resp) return resp.error();
    if (resp->status / 100 != 2) return client_->ErrorFor(*resp, r);
    return {};
  }

  Status Delete(std::string_view key) override {
    std::string rel = Trimmed(key);
    if (rel.empty()) return Status(Code::kIsDirectory, "cannot delete the root of " + uri());
    // S3 answers a DELETE of a missing key with success: ask first, so a
    // missing file and a directory get the codes every store gives.
    auto st = Stat(rel);
    if (!st) return st.error();
    if (st->is_dir) {
      return Status(Code::kIsDirectory,
                    "cannot delete " + client_->UriOf(Full(rel)) +
                        ": it is a directory (a prefix with keys under it); rmdir removes an empty one");
    }
    return DeleteObject(Full(rel));
  }

  Status Mkdir(std::string_view key) override {
    std::string rel = Trimmed(key);
    if (rel.empty()) return Status(Code::kAlreadyExists, "the root of " + uri() + " already exists");
    auto st = Stat(rel);
    if (st) {
      return Status(Code::kAlreadyExists, "cannot create directory " + client_->UriOf(Full(rel)) + ": a " +
                                              (st->is_dir ? "directory" : "file") + " is already there");
    }
    if (st.error().code() != Code::kNotFound) return st.error();
    // Missing parents get markers too, as file:// creates them: each
    // directory then exists on its own (it outlives its children, as on a
    // file system), and listings of every ancestor show it.
    std::vector<std::string> missing{rel};
    for (size_t slash = rel.rfind('/'); slash != std::string::npos && slash > 0; slash = rel.rfind('/', slash - 1)) {
      auto parent = Stat(rel.substr(0, slash));
      if (parent) {
        if (!parent->is_dir) {
          return Status(Code::kNotDirectory, "cannot create directory " + client_->UriOf(Full(rel)) + ": " +
                                                 client_->UriOf(Full(rel.substr(0, slash))) + " is a file");
        }
        break;
      }
      if (parent.error().code() != Code::kNotFound) return parent.error();
      missing.push_back(rel.substr(0, slash));
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {  // parents first
      S3Request r;
      r.method = "PUT";
      r.key = Full(*it) + "/";  // the marker: an empty object whose key ends in '/'
      auto resp = client_->Send(r);
      if (!resp) return resp.error();
      if (resp->status / 100 != 2) return client_->ErrorFor(*resp, r);
    }
    return {};
  }

  Status Rmdir(std::string_view key) override {
    std::string rel = Trimmed(key);
    if (rel.empty()) return Status(Code::kInvalidArgument, "cannot remove the root of " + uri());
    const std::string marker = Full(rel) + "/";
    auto page = ListRaw(marker, "", "", 2);  // the marker sorts first; anything else means not empty
    if (!page) return page.error();
    bool has_marker = false;
    for (const auto& o : page->objects) {
      if (o.key != marker) {
        return Status(Code::kNotEmpty, "cannot remove directory " + client_->UriOf(Full(rel)) + ": it is not empty");
      }
      has_marker = true;
    }
    if (!has_marker) {
      auto st = Stat(rel);
      if (!st) return st.error();
      if (!st->is_dir) {
        return Status(Code::kNotDirectory, "cannot remove directory " + client_->UriOf(Full(rel)) + ": it is a file");
      }
      return {};  // a prefix that emptied meanwhile
    }
    return DeleteObject(marker);
  }

  // A server-side copy and a delete: no byte passes through Shoal. One
  // object at a time: a directory (a prefix) cannot be renamed this way.
  Status Rename(std::string_view from, std::string_view to) override {
    std::string a = Trimmed(from), b = Trimmed(to);
    if (a.empty() || b.empty()) return Status(Code::kInvalidArgument, "cannot rename the root of " + uri());
    auto src = Stat(a);
    if (!src) return src.error();
    if (src->is_dir) {
      return Status(Code::kNotSupported, "cannot rename " + client_->UriOf(Full(a)) +
                                             ": object stores rename single objects, not directories (prefixes)");
    }
    if (src->size > kMaxCopy) {
      return Status(Code::kNotSupported,
                    "cannot rename " + client_->UriOf(Full(a)) +
                        ": objects over 5 GiB cannot be copied in one request; copy it and delete the original");
    }
    auto dst = Stat(b);
    if (dst && dst->is_dir) {
      return Status(Code::kIsDirectory, "cannot rename to " + client_->UriOf(Full(b)) + ": it is a directory");
    }
    if (!dst && dst.error().code() != Code::kNotFound) return dst.error();
    if (a == b) return {};
    S3Request r;
    r.method = "PUT";
    r.key = Full(b);
    r.headers.emplace_back("x-amz-copy-source", CopySource(a));
    if (!src->etag.empty()) r.headers.emplace_back("x-amz-copy-source-if-match", "\"" + src->etag + "\"");
    auto resp = client_->Send(r, CopyAnswer);
    if (!resp) return resp.error();
    if (resp->status == 412) {
      return Status(Code::kVersionMismatch, client_->UriOf(Full(a)) + " changed while being renamed; try again");
    }
    if (resp->status / 100 != 2) return client_->ErrorFor(*resp, r);
    Status del = DeleteObject(Full(a));
    if (!del.ok()) {
      return del.WithContext("renamed by copying to " + client_->UriOf(Full(b)) + ", but the original remains");
    }
    return {};
  }

  Status DeleteMany(const std::vector<std::string>& keys) {
    // GCS's XML API has no multi-object delete: one request per key there.
    if (uri().starts_with("gs://")) {
      for (const auto& k : keys) SHOAL_RETURN_IF_ERROR(DeleteObject(Full(Trimmed(k))));
      return {};
    }
    for (size_t i = 0; i < keys.size(); i += 1000) {
      std::vector<std::string> batch;
      for (size_t j = i; j < std::min(keys.size(), i + 1000); ++j) batch.push_back(Full(Trimmed(keys[j])));
      std::string xml = DeleteObjectsXml(batch);
      S3Request r;
      r.method = "POST";
      r.query = {{"delete", ""}};
      r.body = std::span<const char>(xml.data(), xml.size());
      r.headers.emplace_back("Content-MD5", Md5Base64(r.body));  // DeleteObjects requires it
      auto resp = client_->Send(r);
      if (!resp) return resp.error();
      if (resp->status / 100 != 2) return client_->ErrorFor(*resp, r);
      auto errors = XmlElements(resp->body, "Error");
      if (!errors.empty()) {
        auto key = XmlText(errors.front(), "Key").value_or("?");
        return Status(Code::kIo, "DeleteObjects could not delete " + client_->UriOf(key) + " (and " +
                                     std::to_string(errors.size() - 1) + " more): " +
                                     XmlText(errors.front(), "Code").value_or("") + ": " +
                                     XmlText(errors.front(), "Message").value_or(""));
      }
    }
    return {};
  }

 private:
  static constexpr uint64_t kMaxCopy = 5ull << 30;  // CopyObject's limit

  static std::string Trimmed(std::string_view key) { return TrimSlashes(key); }
  bool posix_attributes() const { return client_->settings().posix_attributes; }
  // A HEAD of the object `rel` (`r`, for ErrorFor): any status is an answer.
  Result<HttpResponse> Head(const std::string& rel, S3Request& r) {
    r.method = "HEAD";
    r.key = Full(rel);
    return client_->Send(r);
  }
  std::string CopySource(const std::string& rel) const {
    return "/" + client_->settings().bucket + "/" + PercentEncode(Full(rel), true);
  }
  // CopyObject may answer 200 and report its failure in the body.
  static Status CopyAnswer(const HttpResponse& h) {
    auto e = ParseError(h.body);
    if (e.code.empty()) return Status::Ok();
    return Status(Code::kUnavailable, "CopyObject: " + e.code + ": " + e.message);
  }
  // posix_attributes: the mode, owner and time the object's metadata keeps.
  void KeptAttributes(const HttpResponse& resp, FileInfo& info) const {
    if (posix_attributes()) ApplyPosixMetadata(MetadataOfHeaders(resp.headers).user, info);
  }

  Status DeleteObject(const std::string& full_key) {
    S3Request r;
    r.method = "DELETE";
    r.key = full_key;
    auto resp = client_->Send(r);
    if (!resp) return resp.error();
    if (resp->status / 100 == 2) return {};
    return client_->ErrorFor(*resp, r);
  }
  std::string Full(std::string_view rel) const { return client_->settings().prefix + std::string(rel); }

  Result<ListResult> ListRaw(const std::string& full_prefix, const std::string& delimiter,
                             const std::string& continuation, int max_keys) {
    S3Request r;
    r.query = {{"list-type", "2"}, {"prefix", full_prefix},
               {"max-keys", std::to_string(max_keys > 0 ? std::min(max_keys, 1000) : 1000)}};
    if (!delimiter.empty()) r.query.emplace_back("delimiter", delimiter);
    if (!continuation.empty()) r.query.emplace_back("continuation-token", continuation);
    auto resp = client_->Send(r);
    if (!resp) return Err(resp.error());
    if (resp->status / 100 != 2) return Err(client_->ErrorFor(*resp, r));
    return ParseListV2(resp->body);
  }

  std::shared_ptr<S3Client> client_;
};

}  // namespace

Status DeleteKeys(UnderStore& store, const std::vector<std::string>& keys) {
  auto* s3 = dynamic_cast<S3Store*>(&store);
  if (!s3) return Status(Code::kInvalidArgument, "DeleteKeys needs an s3:// or gs:// store, got " + store.uri());
  return s3->DeleteMany(keys);
}

}  // namespace s3

Result<std::shared_ptr<UnderStore>> MakeS3Store(const UfsUri& uri, const MountConfig& mount) {
  auto settings = s3::ResolveS3Settings(uri, mount, s3::ProcessEnv());
  if (!settings) return Err(settings.error());
  if (auto st = s3::AttachCredentials(*settings, uri, mount, s3::ProcessEnv()); !st.ok()) return Err(st);
  return std::shared_ptr<UnderStore>(std::make_shared<s3::S3Store>(std::move(*settings)));
}

}  // namespace shoal
