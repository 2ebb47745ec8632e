#include "s3/s3_writes.h"

#include <openssl/rand.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

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

// The payload into `path` (through a temp name), never whole in memory.
S3Result<bool> StreamToStagingFile(const std::string& path, PayloadReader& in) {
  std::string tmp = path + ".tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    auto buf = std::make_unique_for_overwrite<char[]>(kStreamChunk);
    for (;;) {
      auto n = in.Read(std::span<char>(buf.get(), kStreamChunk));
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
  fs::rename(tmp, path, ec);
  if (ec)
    return std::unexpected(FromStatus(Status(Code::kIo, "cannot rename staging file " + tmp + ": " + ec.message())));
  return true;
}

Status WriteStagingFile(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return Status(Code::kIo, "cannot write staging file " + tmp + " (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status(Code::kIo, "cannot rename staging file " + tmp + ": " + ec.message());
  return {};
}

// Streams the bytes of `file` (from `offset`) into the writer, 4 MiB at a time.
Status CopyInto(Writer& w, const std::function<Result<size_t>(std::span<char>)>& read) {
  auto buf = std::make_unique_for_overwrite<char[]>(kStreamChunk);
  for (;;) {
    auto n = read(std::span<char>(buf.get(), kStreamChunk));
    if (!n) return n.error();
    if (*n == 0) return {};
    SHOAL_RETURN_IF_ERROR(w.Write(std::span<const char>(buf.get(), *n)));
  }
}

net::HttpResponse WithETag(net::HttpResponse r, const FileStatus& st) {
  r.headers.emplace_back("ETag", ETagOf(st));
  return r;
}

}  // namespace

S3Result<std::string> Payload(const net::HttpRequest& http, const AuthInfo& auth) {
  PayloadReader in(http, auth, kMaxWholeBody);
  return in.ReadAll();
}

ObjectWrites::ObjectWrites(Client& client, std::string staging_dir)
    : client_(client), staging_(std::move(staging_dir)) {}

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
    if (!body->empty()) return S3Err(400, "InvalidArgument", "a key ending in '/' is a directory and takes no bytes");
    Status st = client_.Mkdir(r.path);
    if (!st.ok() && st.code() != Code::kAlreadyExists) return std::unexpected(FromStatus(st));
    net::HttpResponse res;
    res.headers.emplace_back("ETag", "\"d41d8cd98f00b204e9800998ecf8427e\"");
    return res;
  }
  if (auto big = DeclaredOverLimit(*r.http, kMaxSinglePut); !big) return std::unexpected(big.error());
  auto w = client_.Create(r.path);
  if (!w) return std::unexpected(FromStatus(w.error()));
  PayloadReader in(*r.http, *r.auth, kMaxSinglePut);
  auto buf = std::make_unique_for_overwrite<char[]>(kStreamChunk);
  for (;;) {
    auto n = in.Read(std::span<char>(buf.get(), kStreamChunk));
    if (!n) {
      (*w)->Abort();  // a failed check stores nothing
      return std::unexpected(n.error());
    }
    if (*n == 0) break;
    if (Status st = (*w)->Write(std::span<const char>(buf.get(), *n)); !st.ok()) {
      return std::unexpected(FromStatus(st));
    }
  }
  auto done = (*w)->Close();
  if (!done) return std::unexpected(FromStatus(done.error()));
  return WithETag(net::HttpResponse{}, *done);
}

S3Result<net::HttpResponse> ObjectWrites::Copy(const WriteRequest& r, const std::string& source) {
  auto src = client_.OpenFile(source);
  if (!src) return std::unexpected(FromStatus(src.error()));
  const FileStatus st = (*src)->status();
  if (const std::string* m = r.http->Header("x-amz-copy-source-if-match"); m && Unquote(*m) != Unquote(ETagOf(st))) {
    return S3Err(412, "PreconditionFailed", "x-amz-copy-source-if-match does not match the source's ETag");
  }
  auto w = client_.Create(r.path);
  if (!w) return std::unexpected(FromStatus(w.error()));
  uint64_t off = 0;
  Status cs = CopyInto(**w, [&](std::span<char> buf) -> Result<size_t> {
    auto n = (*src)->Pread(off, buf);
    if (n) off += *n;
    return n;
  });
  if (!cs.ok()) return std::unexpected(FromStatus(cs));
  auto done = (*w)->Close();
  if (!done) return std::unexpected(FromStatus(done.error()));
  return XmlResponse(200, "<CopyObjectResult" + std::string(kS3Xmlns) + ">" +
                              Tag("LastModified", IsoDate(done->mtime_ns)) + Tag("ETag", ETagOf(*done)) +
                              "</CopyObjectResult>");
}

S3Result<net::HttpResponse> ObjectWrites::Delete(const WriteRequest& r) {
  Status st = r.key.ends_with('/') ? client_.Rmdir(r.path) : client_.Delete(r.path);
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

S3Result<std::string> ObjectWrites::UploadDir(const WriteRequest& r) {
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
  return dir;
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
  std::string dir = staging_ + "/" + id;
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) return S3Err(500, "InternalError", "cannot create the staging dir of an upload: " + ec.message());
  if (Status st = WriteStagingFile(dir + "/target", r.bucket + "\n" + r.key + "\n"); !st.ok()) {
    return std::unexpected(FromStatus(st));
  }
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

S3Result<net::HttpResponse> ObjectWrites::CompleteUpload(const WriteRequest& r) {
  auto dir = UploadDir(r);
  if (!dir) return std::unexpected(dir.error());
  auto body = Payload(*r.http, *r.auth);
  if (!body) return std::unexpected(body.error());
  auto parts = ParseCompleteMultipart(*body);
  if (!parts) return std::unexpected(parts.error());
  std::vector<int> numbers;
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
  }
  auto w = client_.Create(r.path);
  if (!w) return std::unexpected(FromStatus(w.error()));
  for (int n : numbers) {
    std::string part = *dir + "/" + std::to_string(n) + ".part";
    std::ifstream in(part, std::ios::binary);
    Status cs = CopyInto(**w, [&](std::span<char> buf) -> Result<size_t> {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in.bad()) return Err(Code::kIo, "cannot read staged part " + part);
      return static_cast<size_t>(in.gcount());
    });
    if (!cs.ok()) return std::unexpected(FromStatus(cs));
  }
  auto done = (*w)->Close();
  if (!done) return std::unexpected(FromStatus(done.error()));
  std::error_code ec;
  fs::remove_all(*dir, ec);
  return WithETag(
      XmlResponse(200, "<CompleteMultipartUploadResult" + std::string(kS3Xmlns) + ">" + Tag("Bucket", r.bucket) +
                           Tag("Key", r.key) + Tag("ETag", ETagOf(*done)) + "</CompleteMultipartUploadResult>"),
      *done);
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
    if (const std::string* prefix = Param(q, "prefix"); prefix && !key.starts_with(*prefix)) continue;
    out += "<Upload>" + Tag("Key", key) + Tag("UploadId", e.path().filename().string()) + "</Upload>";
  }
  return XmlResponse(200, out + "</ListMultipartUploadsResult>");
}

}  // namespace shoal::s3
