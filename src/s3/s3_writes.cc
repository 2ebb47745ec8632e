#include "s3/s3_writes.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "client/client_internal.h"
#include "common/sigv4.h"
#include "s3/s3_common.h"
#include "s3/s3_objects.h"
#include "s3/s3_payload.h"
#include "s3/s3_request_parse.h"
#include "ufs/http/xml.h"

namespace shoal::s3 {
namespace {

namespace fs = std::filesystem;

// S3's own limits: one PutObject or UploadPart takes at most 5 GiB.
constexpr uint64_t kMaxSinglePut = 5ull << 30;
// A body read whole (XML documents, a directory marker).
constexpr uint64_t kMaxWholeBody = 16ull << 20;
// S3's smallest part but the last.
constexpr uint64_t kMinPartSize = 5ull << 20;
// How long a completed upload answers a retried Complete (S3 answers one for
// a while too; SDKs retry Complete after a lost answer).
constexpr auto kCompletedKept = std::chrono::minutes(15);
// How long an upload may go without a part before it is aborted: a client
// that died mid-upload (or never sent Complete or Abort) would otherwise keep
// its staged parts on this disk forever.
constexpr auto kAbandonedAfter = std::chrono::hours(24 * 7);
// In an upload's staging dir: the answer of its Complete once it succeeded
// (the ETag on the first line, then the XML), and the metadata CreateMultipartUpload gave.
constexpr char kCompletedFile[] = "completed";
constexpr char kMetadataFile[] = "metadata.json";

bool IsUploadId(std::string_view id) {
  return id.size() == 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Refuses at once a body whose declared size is over `limit`
// (x-amz-decoded-content-length for aws-chunked, else Content-Length).
S3Result<bool> DeclaredOverLimit(const net::HttpRequest& http, uint64_t limit) {
  const std::string* len = http.Header("x-amz-decoded-content-length");
  if (!len) len = http.Header("Content-Length");
  if (!len || len->empty() || len->size() > 19 || len->find_first_not_of("0123456789") != std::string::npos) {
    return true;
  }
  if (std::stoull(*len) > limit) {
    return S3Err(400, "EntityTooLarge",
                 "the object is " + *len + " bytes, over the " + std::to_string(limit) +
                     " one PutObject or UploadPart takes: use a multipart upload");
  }
  return true;
}

// What an upload's body is read in: pieces of 1 MiB keep the payload's
// second-thread MD5 (a copy of the last piece, s3_payload.cc) and the reader's
// buffer small beside the body's read-ahead (S3ListenTest bounds the
// worker's memory per PUT), and are large enough that a syscall is nothing.
constexpr size_t kUploadPiece = 1 << 20;

// Makes a staged file's bytes durable (fdatasync), or with `directory` the
// names in a directory (fsync). A part answered 200 must survive a crash
// whole: Complete trusts its .etag, and a part renamed into place before its
// bytes reached the disk could come back empty or torn under a valid ETag.
Status SyncStaged(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return Status(Code::kIo, "cannot open " + path + " to sync it: " + std::strerror(errno));
  const int rc = directory ? ::fsync(fd) : ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status(Code::kIo, "cannot sync " + path + " to disk: " + std::strerror(err));
  return {};
}

// Renames a written staging file into place durably: its bytes first, then the name.
Status CommitStaged(const std::string& tmp, const std::string& path) {
  if (Status st = SyncStaged(tmp, false); !st.ok()) return st;
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status(Code::kIo, "cannot rename staging file " + tmp + ": " + ec.message());
  return SyncStaged(fs::path(path).parent_path().string(), true);
}

// The payload into `path` (through a temp name), never whole in memory.
S3Result<bool> StreamToStagingFile(const std::string& path, PayloadReader& in) {
  std::string tmp = path + ".tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    auto buf = std::make_unique_for_overwrite<char[]>(kUploadPiece);
    for (;;) {
      auto n = in.Read(std::span<char>(buf.get(), kUploadPiece));
      if (!n) {
        out.close();
        fs::remove(tmp, ec);
        return std::unexpected(n.error());
      }
      if (*n == 0) break;
      out.write(buf.get(), static_cast<std::streamsize>(*n));
      if (!out) {
        out.close();
        fs::remove(tmp, ec);
        return std::unexpected(FromStatus(Status(Code::kIo, "cannot write staging file " + tmp + " (disk full?)")));
      }
    }
  }
  if (Status st = CommitStaged(tmp, path); !st.ok()) {
    fs::remove(tmp, ec);
    return std::unexpected(FromStatus(st));
  }
  return true;
}

Status WriteStagingFile(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return Status(Code::kIo, "cannot write staging file " + tmp + " (disk full?)");
  }
  return CommitStaged(tmp, path);
}

// Streams what `read` gives (until it gives 0) into `write`, 4 MiB at a time.
Status CopyIntoStream(const std::function<Result<size_t>(std::span<char>)>& read,
                      const std::function<Status(std::span<const char>)>& write) {
  auto buf = std::make_unique_for_overwrite<char[]>(kStreamChunk);
  for (;;) {
    auto n = read(std::span<char>(buf.get(), kStreamChunk));
    if (!n) return n.error();
    if (*n == 0) return {};
    SHOAL_RETURN_IF_ERROR(write(std::span<const char>(buf.get(), *n)));
  }
}

// The same into a writer.
Status CopyInto(Writer& w, const std::function<Result<size_t>(std::span<char>)>& read) {
  return CopyIntoStream(read, [&](std::span<const char> piece) { return w.Write(piece); });
}

net::HttpResponse WithETag(net::HttpResponse r, std::string etag) {
  r.headers.emplace_back("ETag", std::move(etag));
  return r;
}

net::HttpResponse WithETag(net::HttpResponse r, const FileStatus& st) { return WithETag(std::move(r), ETagOf(st)); }

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string MetadataJson(const ObjectMetadata& m) {
  nlohmann::json j = {{"content_type", m.content_type}, {"user", m.user}, {"headers", m.headers}};
  return j.dump();
}

ObjectMetadata MetadataOfJson(const std::string& text) {
  ObjectMetadata m;
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return m;
  if (auto ct = j.find("content_type"); ct != j.end() && ct->is_string()) m.content_type = *ct;
  if (auto u = j.find("user"); u != j.end() && u->is_array()) {
    for (const auto& kv : *u) {
      if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_string()) m.user.emplace_back(kv[0], kv[1]);
    }
  }
  if (auto h = j.find("headers"); h != j.end() && h->is_array()) {
    for (const auto& kv : *h) {
      if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_string())
        m.headers.emplace_back(kv[0], kv[1]);
    }
  }
  return m;
}

// The MD5 a well-formed Content-MD5 header names, as hex; "" without one
// (a malformed one is refused by the payload's check).
std::string ContentMd5Hex(const net::HttpRequest& http) {
  const std::string* h = http.Header("Content-MD5");
  if (!h || h->size() != 24) return "";
  unsigned char raw[18];
  if (EVP_DecodeBlock(raw, reinterpret_cast<const unsigned char*>(h->data()), 24) != 18) return "";
  const std::string md5(reinterpret_cast<const char*>(raw), 16);
  if (Base64Of(md5) != *h) return "";  // only the one spelling of these 16 bytes
  return HexOf(md5);
}

// S3's ETag of a multipart upload: the MD5 of the parts' MD5s, "-", their count.
std::string MultipartEtag(const std::vector<std::string>& part_md5_hex) {
  std::string raw;
  for (const auto& hex : part_md5_hex) {
    for (size_t i = 0; i + 1 < hex.size(); i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return Md5Hex(raw) + "-" + std::to_string(part_md5_hex.size());
}

// The x-amz-copy-source-if-* conditions on the source `st`. S3's rules: a
// matching if-match overrides if-unmodified-since, and a failing
// if-none-match overrides if-modified-since.
S3Result<bool> CheckCopySource(const net::HttpRequest& http, const FileStatus& st, MetadataCache& metadata,
                               Client& client) {
  // A pending write-back source answers the ETag its writer gave, as HEAD does.
  const bool conditional = http.Header("x-amz-copy-source-if-match") || http.Header("x-amz-copy-source-if-none-match");
  const std::string etag =
      conditional && st.version.starts_with("wb-") ? ETagOf(st, metadata.Get(client, st)) : ETagOf(st);
  const int64_t mtime_s = st.mtime_ns / 1'000'000'000;
  auto header_time = [&](const char* name) -> std::optional<int64_t> {
    const std::string* h = http.Header(name);
    return h ? ParseHttpDate(*h) : std::nullopt;
  };
  const std::string* if_match = http.Header("x-amz-copy-source-if-match");
  const std::string* if_none_match = http.Header("x-amz-copy-source-if-none-match");
  if (if_match && !EtagListMatches(*if_match, etag)) {
    return S3Err(412, "PreconditionFailed", "x-amz-copy-source-if-match does not match the source's ETag " + etag);
  }
  if (auto t = header_time("x-amz-copy-source-if-unmodified-since"); !if_match && t && mtime_s > *t) {
    return S3Err(412, "PreconditionFailed", "the source was modified after x-amz-copy-source-if-unmodified-since");
  }
  if (if_none_match && EtagListMatches(*if_none_match, etag)) {
    return S3Err(412, "PreconditionFailed", "x-amz-copy-source-if-none-match matches the source's ETag " + etag);
  }
  if (auto t = header_time("x-amz-copy-source-if-modified-since"); !if_none_match && t && mtime_s <= *t) {
    return S3Err(412, "PreconditionFailed", "the source was not modified after x-amz-copy-source-if-modified-since");
  }
  return true;
}

// x-amz-copy-source-range "bytes=a-b" of a source of `size` bytes: [a, b+1);
// the whole source without the header.
S3Result<std::pair<uint64_t, uint64_t>> CopySourceRange(const net::HttpRequest& http, uint64_t size) {
  const std::string* h = http.Header("x-amz-copy-source-range");
  if (!h) return std::pair<uint64_t, uint64_t>{0, size};
  unsigned long long a = 0, b = 0;
  char tail = 0;
  if (std::sscanf(h->c_str(), "bytes=%llu-%llu%c", &a, &b, &tail) != 2 || b < a) {
    return S3Err(400, "InvalidArgument", "x-amz-copy-source-range '" + *h + "' is not bytes=FIRST-LAST");
  }
  if (b >= size) {  // well formed, past the source's end: what S3 calls an invalid range
    return S3Err(416, "InvalidRange",
                 "x-amz-copy-source-range '" + *h + "' ends past the source's " + std::to_string(size) + " bytes");
  }
  return std::pair<uint64_t, uint64_t>{a, b + 1};
}

}  // namespace

S3Result<std::string> Payload(const net::HttpRequest& http, const AuthInfo& auth) {
  PayloadReader in(http, auth, kMaxWholeBody);
  return in.ReadAll();
}

ObjectWrites::ObjectWrites(Client& client, std::string staging_dir, MetadataCache& metadata)
    : client_(client), staging_(std::move(staging_dir)), metadata_(metadata) {}

S3Error ObjectWrites::CreateError(const WriteRequest& r, const Status& st) {
  // On a file store a key cannot be both an object and a prefix of others.
  if (st.code() == Code::kIsDirectory) {
    return {409, "OperationAborted",
            "cannot write '" + r.key + "': the store is a file system and '" + r.key +
                "/' holds other keys (a directory); a key there cannot also be an object"};
  }
  if (st.code() == Code::kNotDirectory) {
    std::string conflict;
    for (auto slash = r.key.find('/'); slash != std::string::npos && conflict.empty();
         slash = r.key.find('/', slash + 1)) {
      auto above = client_.Stat(r.path.substr(0, r.path.size() - r.key.size() + slash));
      if (above && !above->is_dir) conflict = r.key.substr(0, slash);
    }
    return {409, "OperationAborted",
            "cannot write '" + r.key + "': the store is a file system and the key '" +
                (conflict.empty() ? std::string("above it") : conflict) +
                "' is an object, which cannot also hold keys under it; delete it first, or use another key"};
  }
  return FromStatus(st);
}

S3Result<bool> ObjectWrites::CheckTargetConditions(const WriteRequest& r) {
  const std::string* if_match = r.http->Header("If-Match");
  const std::string* if_none_match = r.http->Header("If-None-Match");
  if (!if_match && !if_none_match) return true;
  auto st = client_.Stat(r.path);
  if (!st && st.error().code() != Code::kNotFound) return std::unexpected(FromStatus(st.error()));
  const bool exists = st && !st->is_dir;
  // A pending write-back object answers the ETag its writer gave, as HEAD does.
  const std::string etag = !exists                          ? std::string()
                           : st->version.starts_with("wb-") ? ETagOf(*st, metadata_.Get(client_, *st))
                                                            : ETagOf(*st);
  if (if_match) {
    if (!exists) return S3Err(404, "NoSuchKey", "If-Match: there is no object " + r.key + " to match");
    if (!EtagListMatches(*if_match, etag)) {
      return S3Err(412, "PreconditionFailed", "If-Match " + *if_match + " does not match the ETag " + etag);
    }
  }
  if (if_none_match && exists && EtagListMatches(*if_none_match, etag)) {
    return S3Err(412, "PreconditionFailed", "If-None-Match " + *if_none_match + ": the object " + r.key + " exists");
  }
  return true;
}

Status ObjectWrites::PrepareStaging() {
  std::lock_guard lock(mu_);
  if (staging_ready_) return {};
  std::error_code ec;
  fs::create_directories(staging_, ec);
  if (ec) return Status(Code::kIo, "cannot create the multipart staging dir " + staging_ + ": " + ec.message());
  if (::chmod(staging_.c_str(), 0700) != 0) {
    return Status(Code::kIo, "cannot make the staging dir " + staging_ + " private: " + std::strerror(errno));
  }
  staging_ready_ = true;
  return {};
}

S3Result<net::HttpResponse> ObjectWrites::Put(const WriteRequest& r) {
  if (r.key.ends_with('/')) {
    auto body = Payload(*r.http, *r.auth);
    if (!body) return std::unexpected(body.error());
    if (!body->empty())
      return S3Err(400, "InvalidArgument",
                   "the key '" + r.key +
                       "' ends in '/': Shoal makes it a directory, which holds no bytes; send it with an empty body, "
                       "or drop the trailing '/'");
    Status st = client_.Mkdir(r.path);
    if (!st.ok() && st.code() != Code::kAlreadyExists) return std::unexpected(FromStatus(st));
    net::HttpResponse res;
    res.headers.emplace_back("ETag", "\"d41d8cd98f00b204e9800998ecf8427e\"");
    return res;
  }
  if (auto big = DeclaredOverLimit(*r.http, kMaxSinglePut); !big) return std::unexpected(big.error());
  auto meta = MetadataFromHeaders(*r.http);
  if (!meta) return std::unexpected(meta.error());
  if (auto ok = CheckTargetConditions(r); !ok) return std::unexpected(ok.error());
  CreateOptions options;
  SetCreateMetadata(*meta, &options);
  // With a Content-MD5 the body's MD5 is computed here to check it, and a
  // body that fails the check is never stored: the ETag is known, and the
  // store need not hash the bytes a second time.
  options.etag = ContentMd5Hex(*r.http);
  auto w = client_.Create(r.path, options);
  if (!w) return std::unexpected(CreateError(r, w.error()));
  FillCacheAfterClose(**w);
  // Else the store makes the ETag; a write-back file has the holders'
  // version until its upload, so its answer is the MD5 the store will give.
  const bool written_back = options.etag.empty() && WrittenBack(client_, r.path);
  PayloadReader in(*r.http, *r.auth, kMaxSinglePut, /*need_md5=*/written_back);
  auto buf = std::make_unique_for_overwrite<char[]>(kUploadPiece);
  for (;;) {
    auto n = in.Read(std::span<char>(buf.get(), kUploadPiece));
    if (!n) {
      (*w)->Abort();  // a failed check stores nothing
      return std::unexpected(n.error());
    }
    if (*n == 0) break;
    if (Status st = (*w)->Write(std::span<const char>(buf.get(), *n)); !st.ok()) {
      return std::unexpected(FromStatus(st));
    }
  }
  if (written_back) SetETagBeforeClose(**w, in.Md5Hex());  // the holders keep it
  auto done = (*w)->Close();
  metadata_.Forget(r.path);
  if (!done) return std::unexpected(FromStatus(done.error()));
  const bool pending = done->version.starts_with("wb-");
  if (pending && !options.etag.empty()) return WithETag(net::HttpResponse{}, "\"" + options.etag + "\"");
  if (pending && written_back) return WithETag(net::HttpResponse{}, "\"" + in.Md5Hex() + "\"");
  return WithETag(net::HttpResponse{}, *done);
}

S3Result<net::HttpResponse> ObjectWrites::Copy(const WriteRequest& r, const std::string& source) {
  const std::string* directive = r.http->Header("x-amz-metadata-directive");
  const bool replace = directive && *directive == "REPLACE";
  if (directive && !replace && *directive != "COPY") {
    return S3Err(400, "InvalidArgument", "x-amz-metadata-directive is '" + *directive + "': give COPY or REPLACE");
  }
  if (source == r.path && !replace) {
    return S3Err(400, "InvalidRequest",
                 "This copy request is illegal because it is trying to copy an object to itself without changing the "
                 "object's metadata (send x-amz-metadata-directive: REPLACE with the new metadata)");
  }
  auto src = client_.OpenFile(source);
  if (!src) return std::unexpected(FromStatus(src.error()));
  const FileStatus st = (*src)->status();
  if (auto ok = CheckCopySource(*r.http, st, metadata_, client_); !ok) return std::unexpected(ok.error());
  ObjectMetadata meta;
  if (replace) {
    auto given = MetadataFromHeaders(*r.http);
    if (!given) return std::unexpected(given.error());
    meta = std::move(*given);
  } else {
    meta = metadata_.Get(client_, st);
  }
  CreateOptions options;
  SetCreateMetadata(meta, &options);
  auto w = client_.Create(r.path, options);
  if (!w) return std::unexpected(CreateError(r, w.error()));
  // A write-back copy has the holders' version until its upload: its answer
  // is the MD5 of the bytes, the ETag S3 gives a copy and the holders keep.
  std::optional<StreamDigest> md5;
  if (WrittenBack(client_, r.path)) md5.emplace(StreamDigest::Kind::kMd5);
  uint64_t off = 0;
  Status cs = CopyInto(**w, [&](std::span<char> buf) -> Result<size_t> {
    auto n = (*src)->Pread(off, buf);
    if (n) off += *n;
    if (n && md5) md5->Update(buf.first(*n));
    return n;
  });
  if (!cs.ok()) return std::unexpected(FromStatus(cs));
  const std::string md5_hex = md5 ? HexOf(md5->Bytes()) : std::string();
  if (md5) SetETagBeforeClose(**w, md5_hex);
  auto done = (*w)->Close();
  metadata_.Forget(r.path);
  if (!done) return std::unexpected(FromStatus(done.error()));
  const std::string etag = md5 && done->version.starts_with("wb-") ? "\"" + md5_hex + "\"" : ETagOf(*done);
  return XmlResponse(200, "<CopyObjectResult" + std::string(kS3Xmlns) + ">" +
                              Tag("LastModified", IsoDate(done->mtime_ns)) + Tag("ETag", etag) + "</CopyObjectResult>");
}

S3Result<net::HttpResponse> ObjectWrites::Delete(const WriteRequest& r) {
  Status st = r.key.ends_with('/') ? client_.Rmdir(r.path) : client_.Delete(r.path);
  metadata_.Forget(r.path);
  // Deleting what is not there succeeds, as on S3.
  if (!st.ok() && st.code() != Code::kNotFound) return std::unexpected(FromStatus(st));
  net::HttpResponse res;
  res.status = 204;
  return res;
}

S3Result<net::HttpResponse> ObjectWrites::DeleteObjects(const WriteRequest& r, const std::string& root) {
  auto body = Payload(*r.http, *r.auth);
  if (!body) return std::unexpected(body.error());
  auto doc = ParseDeleteObjects(*body);
  if (!doc) return std::unexpected(doc.error());
  const bool quiet = doc->quiet;
  std::string out = "<DeleteResult" + std::string(kS3Xmlns) + ">";
  for (const std::string& k : doc->keys) {
    const std::string* key = &k;
    WriteRequest one = r;
    one.key = *key;
    one.path = (root == "/" ? "" : root) + "/" + *key;
    bool bad_key = key->find("//") != std::string::npos || key->starts_with('/') || *key == "." || *key == ".." ||
                   key->starts_with("./") || key->starts_with("../") || key->find("/./") != std::string::npos ||
                   key->find("/../") != std::string::npos || key->ends_with("/..") || key->ends_with("/.");
    auto res = bad_key ? S3Err(400, "InvalidArgument", "Shoal maps keys to paths: no empty, '.' or '..' segments")
                       : Delete(one);
    if (res) {
      if (!quiet) out += "<Deleted>" + Tag("Key", *key) + "</Deleted>";
    } else {
      out += "<Error>" + Tag("Key", *key) + Tag("Code", res.error().code) + Tag("Message", res.error().message) +
             "</Error>";
    }
  }
  return XmlResponse(200, out + "</DeleteResult>");
}

S3Result<std::string> ObjectWrites::UploadDir(const WriteRequest& r, bool completed_too) {
  const std::string* id = Param(*r.query, "uploadId");
  if (!id || !IsUploadId(*id))
    return S3Err(404, "NoSuchUpload", "no such upload: the uploadId is not one this endpoint gave out");
  std::string dir = staging_ + "/" + *id;
  std::ifstream in(dir + "/target");
  std::string bucket, key;
  if (!in || !std::getline(in, bucket) || !std::getline(in, key) || bucket != r.bucket || key != r.key) {
    return S3Err(404, "NoSuchUpload",
                 "no upload " + *id + " of " + r.bucket + "/" + r.key + " (completed, aborted, or never created)");
  }
  if (!completed_too && fs::exists(dir + "/" + kCompletedFile)) {
    return S3Err(404, "NoSuchUpload", "the upload " + *id + " of " + r.bucket + "/" + r.key + " was completed");
  }
  return dir;
}

StagingSwept SweepStaging(const std::string& staging, fs::file_time_type now, std::chrono::seconds completed_kept,
                          std::chrono::seconds abandoned_after, const std::set<std::string>& busy, size_t limit) {
  StagingSwept swept;
  std::error_code ec;
  size_t seen = 0;
  for (const auto& e : fs::directory_iterator(staging, ec)) {
    if (++seen > limit) break;
    const std::string id = e.path().filename().string();
    std::error_code e2;
    if (!IsUploadId(id) || busy.count(id) || !e.is_directory(e2)) continue;
    auto completed = fs::last_write_time(e.path() / kCompletedFile, e2);
    if (!e2) {
      if (completed < now - completed_kept && fs::remove_all(e.path(), e2) > 0) ++swept.completed;
      continue;
    }
    auto active = fs::last_write_time(e.path(), e2);
    if (!e2 && active < now - abandoned_after && fs::remove_all(e.path(), e2) > 0) ++swept.abandoned;
  }
  return swept;
}

void ObjectWrites::SweepCompleted() {
  std::set<std::string> busy;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_sweep_ < std::chrono::minutes(1)) return;
    last_sweep_ = now;
    busy = completing_;
  }
  auto swept = SweepStaging(staging_, fs::file_time_type::clock::now(), kCompletedKept, kAbandonedAfter, busy);
  if (swept.abandoned > 0) {
    spdlog::info("s3: aborted {} multipart upload(s) with no part for {} days (their staged parts removed from {})",
                 swept.abandoned, std::chrono::duration_cast<std::chrono::hours>(kAbandonedAfter).count() / 24,
                 staging_);
  }
}

S3Result<net::HttpResponse> ObjectWrites::CreateUpload(const WriteRequest& r) {
  if (Status st = PrepareStaging(); !st.ok()) return std::unexpected(FromStatus(st));
  if (r.key.ends_with('/')) return S3Err(400, "InvalidArgument", "a key ending in '/' is a directory, not an object");
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof raw) != 1) return S3Err(500, "InternalError", "no randomness for an upload id");
  static const char* kHex = "0123456789abcdef";
  std::string id;
  for (unsigned char c : raw) {
    id += kHex[c >> 4];
    id += kHex[c & 15];
  }
  auto meta = MetadataFromHeaders(*r.http);  // before anything is staged: a refusal leaves nothing
  if (!meta) return std::unexpected(meta.error());
  std::string dir = staging_ + "/" + id;
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) return S3Err(500, "InternalError", "cannot create the staging dir of an upload: " + ec.message());
  if (Status st = WriteStagingFile(dir + "/" + kMetadataFile, MetadataJson(*meta)); !st.ok()) {
    return std::unexpected(FromStatus(st));
  }
  if (Status st = WriteStagingFile(dir + "/target", r.bucket + "\n" + r.key + "\n"); !st.ok()) {
    return std::unexpected(FromStatus(st));
  }
  SweepCompleted();
  return XmlResponse(200, "<InitiateMultipartUploadResult" + std::string(kS3Xmlns) + ">" + Tag("Bucket", r.bucket) +
                              Tag("Key", r.key) + Tag("UploadId", id) + "</InitiateMultipartUploadResult>");
}

S3Result<net::HttpResponse> ObjectWrites::UploadPart(const WriteRequest& r) {
  auto n = ParsePartNumber(Param(*r.query, "partNumber"));
  if (!n) return std::unexpected(n.error());
  auto dir = UploadDir(r);
  if (!dir) return std::unexpected(dir.error());
  if (auto big = DeclaredOverLimit(*r.http, kMaxSinglePut); !big) return std::unexpected(big.error());
  // Streamed into the staging file; renamed into place only once every check passed.
  std::string base = *dir + "/" + std::to_string(*n);
  PayloadReader in(*r.http, *r.auth, kMaxSinglePut);
  auto copied = StreamToStagingFile(base + ".part", in);
  if (!copied) return std::unexpected(copied.error());
  std::string etag = in.Md5Hex();
  if (Status st = WriteStagingFile(base + ".etag", etag); !st.ok()) return std::unexpected(FromStatus(st));
  net::HttpResponse res;
  res.headers.emplace_back("ETag", "\"" + etag + "\"");
  return res;
}

S3Result<net::HttpResponse> ObjectWrites::UploadPartCopy(const WriteRequest& r, const std::string& source) {
  auto n = ParsePartNumber(Param(*r.query, "partNumber"));
  if (!n) return std::unexpected(n.error());
  auto dir = UploadDir(r);
  if (!dir) return std::unexpected(dir.error());
  auto src = client_.OpenFile(source);
  if (!src) return std::unexpected(FromStatus(src.error()));
  const FileStatus st = (*src)->status();
  if (auto ok = CheckCopySource(*r.http, st, metadata_, client_); !ok) return std::unexpected(ok.error());
  auto range = CopySourceRange(*r.http, st.size);
  if (!range) return std::unexpected(range.error());
  auto [off, end] = *range;
  if (end - off > kMaxSinglePut) {
    return S3Err(400, "InvalidRequest", "a copied part is at most 5 GiB: give x-amz-copy-source-range");
  }
  // The bytes into the part's staging file, their MD5 on the way.
  const std::string base = *dir + "/" + std::to_string(*n);
  const std::string tmp = base + ".part.tmp";
  StreamDigest md5(StreamDigest::Kind::kMd5);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    Status cs = CopyIntoStream(
        [&](std::span<char> buf) -> Result<size_t> {
          if (off == end) return 0;
          auto got = (*src)->Pread(off, buf.first(std::min<uint64_t>(buf.size(), end - off)));
          if (got && *got == 0) return Err(Code::kVersionMismatch, source + " ended before its size: it changed");
          if (got) off += *got;
          return got;
        },
        [&](std::span<const char> piece) -> Status {
          md5.Update(piece);
          out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
          return out ? Status() : Status(Code::kIo, "cannot write staging file " + tmp + " (disk full?)");
        });
    if (!cs.ok()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return std::unexpected(FromStatus(cs));
    }
  }
  if (Status st = CommitStaged(tmp, base + ".part"); !st.ok()) return std::unexpected(FromStatus(st));
  const std::string etag = HexOf(md5.Bytes());
  if (Status s = WriteStagingFile(base + ".etag", etag); !s.ok()) return std::unexpected(FromStatus(s));
  const auto now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return XmlResponse(200, "<CopyPartResult" + std::string(kS3Xmlns) + ">" + Tag("LastModified", IsoDate(now)) +
                              Tag("ETag", "\"" + etag + "\"") + "</CopyPartResult>");
}

S3Result<net::HttpResponse> ObjectWrites::CompleteUpload(const WriteRequest& r) {
  auto dir = UploadDir(r, /*completed_too=*/true);
  if (!dir) return std::unexpected(dir.error());
  auto body = Payload(*r.http, *r.auth);
  if (!body) return std::unexpected(body.error());
  // One Complete at a time per upload; a retried one (its answer was lost)
  // gets the first one's answer.
  const std::string id = *Param(*r.query, "uploadId");
  const std::string completed = *dir + "/" + kCompletedFile;
  {
    std::unique_lock lock(mu_);
    completed_cv_.wait(lock, [&] { return !completing_.contains(id); });
    completing_.insert(id);
  }
  struct Release {
    ObjectWrites* self;
    const std::string& id;
    ~Release() {
      std::lock_guard lock(self->mu_);
      self->completing_.erase(id);
      self->completed_cv_.notify_all();
    }
  } release{this, id};
  if (fs::exists(completed)) {
    std::string answer = ReadSmallFile(completed);
    auto nl = answer.find('\n');
    if (nl == std::string::npos) return S3Err(500, "InternalError", "the completed upload " + id + " has a bad record");
    net::HttpResponse res = net::HttpResponse::Text(200, answer.substr(nl + 1), "application/xml");
    res.headers.emplace_back("ETag", answer.substr(0, nl));
    return res;
  }
  auto parts = ParseCompleteMultipart(*body);
  if (!parts) return std::unexpected(parts.error());
  std::vector<int> numbers;
  std::vector<std::string> md5s;
  for (const CompletedPart& p : *parts) {
    std::string base = *dir + "/" + std::to_string(p.number);
    std::ifstream et(base + ".etag");
    std::string have;
    std::getline(et, have);
    if (!et || p.etag != have) {
      return S3Err(400, "InvalidPart",
                   "part " + std::to_string(p.number) + " was not uploaded, or its ETag does not match");
    }
    numbers.push_back(p.number);
    md5s.push_back(have);
  }
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < numbers.size(); ++i) {
    std::error_code ec;
    const uint64_t size = fs::file_size(*dir + "/" + std::to_string(numbers[i]) + ".part", ec);
    if (!ec && size < kMinPartSize && i + 1 < numbers.size()) {
      return S3Err(400, "EntityTooSmall",
                   "part " + std::to_string(numbers[i]) + " is " + std::to_string(size) +
                       " bytes: every part but the last must be at least 5 MiB");
    }
    sizes.push_back(ec ? 0 : size);
  }
  CreateOptions options;
  SetCreateMetadata(MetadataOfJson(ReadSmallFile(*dir + "/" + kMetadataFile)), &options);
  options.etag = MultipartEtag(md5s);
  // Where each part lies, for GET ?partNumber=N (a store's own multipart
  // parts, on an object store, need not be these). A write-back file's
  // holders keep them with its bytes until the upload.
  if (std::string kept = EncodePartSizes(sizes); !kept.empty()) {
    options.metadata.emplace_back(std::string(kPartSizesName), std::move(kept));
  }
  auto w = client_.Create(r.path, options);
  if (!w) return std::unexpected(CreateError(r, w.error()));
  FillCacheAfterClose(**w);
  // The parts go in as files: a file:// store copies them inside the kernel.
  for (int n : numbers) {
    const std::string part = *dir + "/" + std::to_string(n) + ".part";
    const int fd = ::open(part.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      const int e = errno;
      if (fd >= 0) ::close(fd);
      (*w)->Abort();
      return std::unexpected(FromStatus(
          Status(Code::kIo, "cannot open staged part " + part + ": " + std::strerror(e) + " (nothing was stored)")));
    }
    Status cs = WriteFromFile(**w, fd, 0, static_cast<uint64_t>(st.st_size));
    ::close(fd);
    if (!cs.ok()) return std::unexpected(FromStatus(cs));
  }
  auto done = (*w)->Close();
  metadata_.Forget(r.path);
  if (!done) return std::unexpected(FromStatus(done.error()));
  // A write-back file has the holders' version until its upload: its answer
  // is the multipart ETag (which file:// keeps; an object store makes its own).
  const std::string etag = done->version.starts_with("wb-") ? "\"" + options.etag + "\"" : ETagOf(*done);
  const std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult" +
                          std::string(kS3Xmlns) + ">" + Tag("Bucket", r.bucket) + Tag("Key", r.key) +
                          Tag("ETag", etag) + "</CompleteMultipartUploadResult>";
  // Kept for a retried Complete; the parts go now.
  if (Status st = WriteStagingFile(completed, etag + "\n" + xml); !st.ok()) {
    spdlog::warn("s3: upload {} of {}: a retried Complete will answer NoSuchUpload: {}", id, r.path, st.message());
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(*dir, ec)) {
    if (e.path().filename() != kCompletedFile && e.path().filename() != "target") fs::remove(e.path(), ec);
  }
  net::HttpResponse res = net::HttpResponse::Text(200, xml, "application/xml");
  res.headers.emplace_back("ETag", etag);
  return res;
}

S3Result<net::HttpResponse> ObjectWrites::AbortUpload(const WriteRequest& r) {
  auto dir = UploadDir(r);
  if (!dir) return std::unexpected(dir.error());
  std::error_code ec;
  fs::remove_all(*dir, ec);
  net::HttpResponse res;
  res.status = 204;
  return res;
}

S3Result<net::HttpResponse> ObjectWrites::ListParts(const WriteRequest& r) {
  auto dir = UploadDir(r);
  if (!dir) return std::unexpected(dir.error());
  std::vector<int> numbers;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(*dir, ec)) {
    auto name = e.path().filename().string();
    if (name.ends_with(".etag")) numbers.push_back(std::atoi(name.c_str()));
  }
  std::sort(numbers.begin(), numbers.end());
  std::string out = "<ListPartsResult" + std::string(kS3Xmlns) + ">" + Tag("Bucket", r.bucket) + Tag("Key", r.key) +
                    Tag("UploadId", *Param(*r.query, "uploadId")) + Tag("IsTruncated", "false");
  for (int n : numbers) {
    std::string base = *dir + "/" + std::to_string(n);
    std::ifstream et(base + ".etag");
    std::string etag;
    std::getline(et, etag);
    out += "<Part>" + Tag("PartNumber", std::to_string(n)) + Tag("ETag", "\"" + etag + "\"") +
           Tag("Size", std::to_string(fs::file_size(base + ".part", ec))) + "</Part>";
  }
  return XmlResponse(200, out + "</ListPartsResult>");
}

S3Result<net::HttpResponse> ObjectWrites::ListUploads(const std::string& bucket, const QueryParams& q) {
  std::string out =
      "<ListMultipartUploadsResult" + std::string(kS3Xmlns) + ">" + Tag("Bucket", bucket) + Tag("IsTruncated", "false");
  std::error_code ec;
  size_t count = 0;
  for (const auto& e : fs::directory_iterator(staging_, ec)) {
    if (++count > 1000) break;
    std::ifstream in(e.path() / "target");
    std::string b, key;
    if (!std::getline(in, b) || !std::getline(in, key) || b != bucket) continue;
    if (fs::exists(e.path() / kCompletedFile)) continue;
    if (const std::string* prefix = Param(q, "prefix"); prefix && !key.starts_with(*prefix)) continue;
    out += "<Upload>" + Tag("Key", key) + Tag("UploadId", e.path().filename().string()) + "</Upload>";
  }
  return XmlResponse(200, out + "</ListMultipartUploadsResult>");
}

}  // namespace shoal::s3
