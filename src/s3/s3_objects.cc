#include "s3/s3_objects.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "client/client_internal.h"
#include "client/local_pages.h"
#include "common/end_user.h"
#include "s3/s3_request_parse.h"

namespace shoal::s3 {
namespace {

struct Range {
  uint64_t begin = 0, end = 0;  // [begin, end)
};

// The byte range of a Range header for an object of `size` bytes: nullopt for
// the whole object (no header, or one S3 ignores: not "bytes=", several
// ranges, malformed), or InvalidRange when it lies past the end.
S3Result<std::optional<Range>> ParseRange(const std::string* header, uint64_t size) {
  if (!header) return std::nullopt;
  std::string_view h(*header);
  if (!h.starts_with("bytes=") || h.find(',') != std::string_view::npos) return std::nullopt;
  h.remove_prefix(6);
  auto dash = h.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto num = [](std::string_view s) -> std::optional<uint64_t> {
    if (s.empty() || s.size() > 19) return std::nullopt;
    uint64_t v = 0;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
  };
  auto first = h.substr(0, dash), last = h.substr(dash + 1);
  auto unsatisfiable = [&] {
    return S3Err(416, "InvalidRange",
                 "the range " + *header + " is not satisfiable: the object has " + std::to_string(size) + " bytes");
  };
  if (first.empty()) {  // the last n bytes
    auto n = num(last);
    if (!n) return std::nullopt;
    if (*n == 0 || size == 0) return unsatisfiable();
    return Range{size - std::min(*n, size), size};
  }
  auto a = num(first);
  if (!a) return std::nullopt;
  std::optional<uint64_t> b;
  if (!last.empty()) {
    b = num(last);
    if (!b || *b < *a) return std::nullopt;
  }
  if (*a >= size) return unsatisfiable();
  return Range{*a, b ? std::min(*b + 1, size) : size};
}

// Fills `out` from `offset`; a file that ends early changed since it was opened.
Status ReadFully(File& file, uint64_t offset, std::span<char> out) {
  size_t got = 0;
  while (got < out.size()) {
    auto n = file.Pread(offset + got, out.subspan(got));
    if (!n) return n.error();
    if (*n == 0) {
      return Status(Code::kVersionMismatch, file.status().path + " ended at byte " + std::to_string(offset + got) +
                                                ", before the size it was opened with");
    }
    got += *n;
  }
  return {};
}

// Bytes read for a body, not zero-filled first (they are overwritten).
struct Buffer {
  explicit Buffer(size_t n) : data(std::make_unique_for_overwrite<char[]>(n)), size(n) {}
  std::span<char> span() { return {data.get(), size}; }
  // A body part that keeps the buffer until it is sent.
  static net::BodyPart Part(std::shared_ptr<Buffer> b) {
    std::string_view bytes(b->data.get(), b->size);
    return net::BodyPart::Bytes(bytes, std::move(b));
  }
  std::unique_ptr<char[]> data;
  size_t size;
};

// One step of a streamed body: its parts, or a chunk read on the pool.
struct Fetch {
  std::mutex mu;
  bool done = false;
  uint64_t length = 0;
  Result<std::vector<net::BodyPart>> parts;
  net::BodyPart::Ready ready;
};

// A page file is checked and sent in batches of this size: each batch is
// checked when the server reaches it and sent at once (sendfile), so the
// window between the check and the send stays short (as in the worker).
constexpr uint64_t kSendBatch = 256 * 1024;

// Streams [begin, end) of an open file as a chain of deferred body parts:
// when the server takes one step, the next starts on the pool. A step is the
// bytes this process holds itself from there (a worker's own pages), else
// the page files a worker on this host passes for them (local_pages.h; both
// zero-copy), else one chunk read through the client.
class ObjectStream : public std::enable_shared_from_this<ObjectStream> {
 public:
  ObjectStream(std::unique_ptr<File> file, TaskPool& pool, const LocalPages* local)
      : file_(std::move(file)), pool_(pool), local_(local ? *local : LocalPages()), user_(CurrentEndUser()) {}

  // The whole body: the first step here, on the caller's thread (a small
  // object is then one step and no hand-off), the rest deferred.
  Result<std::vector<net::BodyPart>> Body(uint64_t begin, uint64_t end) {
    auto parts = Step(begin, end, /*zero_copy=*/true);
    if (!parts) return parts;
    uint64_t got = 0;
    for (const auto& p : *parts) got += p.length();
    if (begin + got < end) parts->push_back(Part(begin + got, end, true, Start(begin + got, end, true)));
    return parts;
  }

 private:
  // The parts of [off, at most off + kStreamChunk): the bytes the open
  // brought, else zero-copy ones when `zero_copy` and there are some at
  // `off`, else one chunk read through the client. Blocks.
  Result<std::vector<net::BodyPart>> Step(uint64_t off, uint64_t end, bool zero_copy) {
    const uint64_t stop = std::min(end, off + kStreamChunk);
    std::vector<net::BodyPart> parts;
    if (std::string_view opened = OpenedBytesOf(*file_); off < opened.size()) {
      // The bytes the open brought are in memory already (a small object is whole in them).
      const uint64_t n = std::min<uint64_t>(stop, opened.size()) - off;
      parts.push_back(net::BodyPart::Bytes(opened.substr(static_cast<size_t>(off), static_cast<size_t>(n)),
                                           shared_from_this()));
      return parts;
    }
    if (zero_copy && local_) parts = local_(file_->status(), off, stop);
    if (zero_copy && parts.empty()) {
      for (auto& page : LocalPagesOf(*file_, off, stop - off)) {
        const uint64_t length = page.length;
        parts.push_back(CheckedPart(std::make_shared<const LocalPage>(std::move(page)), 0, length));
      }
    }
    if (!parts.empty()) return parts;
    auto buf = std::make_shared<Buffer>(static_cast<size_t>(stop - off));
    if (Status st = ReadFully(*file_, off, buf->span()); !st.ok()) return Err(st);
    parts.push_back(Buffer::Part(std::move(buf)));
    return parts;
  }

  // The next step, on the pool.
  std::shared_ptr<Fetch> Start(uint64_t off, uint64_t end, bool zero_copy) {
    auto f = std::make_shared<Fetch>();
    pool_.Submit([self = shared_from_this(), f, off, end, zero_copy] {
      // Started from the server's thread too, where no request's user is set: the object's reader's.
      ActingFor acting(self->user_);
      auto parts = self->Step(off, end, zero_copy);
      net::BodyPart::Ready ready;
      {
        std::lock_guard lock(f->mu);
        if (parts) {
          for (const auto& p : *parts) f->length += p.length();
        }
        f->parts = std::move(parts);
        f->done = true;
        ready = std::move(f->ready);
      }
      if (ready) ready();
    });
    return f;
  }

  // [off, end) from the step `f` on.
  net::BodyPart Part(uint64_t off, uint64_t end, bool zero_copy, std::shared_ptr<Fetch> f) {
    return net::BodyPart::Deferred(
        end - off,
        [f](net::BodyPart::Ready ready) {
          std::unique_lock lock(f->mu);
          if (!f->done) {
            f->ready = std::move(ready);
            return;
          }
          lock.unlock();
          ready();
        },
        [self = shared_from_this(), f, off, end, zero_copy]() -> Result<std::vector<net::BodyPart>> {
          if (!f->parts) return Err(f->parts.error());
          std::vector<net::BodyPart> parts = std::move(*f->parts);
          uint64_t next = off + f->length;
          if (next < end) parts.push_back(self->Part(next, end, zero_copy, self->Start(next, end, zero_copy)));
          return parts;
        });
  }

  // Bytes [from, to) of a page file a worker on this host passed, checked
  // batch by batch as the server reaches them, each batch then sent with
  // sendfile. A batch that fails its check is not sent: the rest of the page
  // is read through the client, whose short circuit sees the same bad chunk
  // and reads it over TCP, where the worker drops the page and fetches it
  // again; the response keeps its length and its bytes are right.
  net::BodyPart CheckedPart(std::shared_ptr<const LocalPage> page, uint64_t from, uint64_t to) {
    return net::BodyPart::Deferred(
        to - from, [](net::BodyPart::Ready ready) { ready(); },
        [self = shared_from_this(), page, from, to]() -> Result<std::vector<net::BodyPart>> {
          std::vector<net::BodyPart> parts;
          auto stop = page->Check(from, kSendBatch);
          if (stop) {
            parts.push_back(net::BodyPart::File(page->fd, page->data_offset + from, *stop - from, page));
            if (*stop < to) parts.push_back(self->CheckedPart(page, *stop, to));
            return parts;
          }
          spdlog::warn("s3: not sending a cached page of {}: {}; reading its bytes through the client instead, "
                       "which has the worker replace the page",
                       self->file_->status().path, stop.error().message());
          const uint64_t off = page->offset + from, end = page->offset + to;
          parts.push_back(self->Part(off, end, false, self->Start(off, end, false)));
          return parts;
        });
  }

  std::unique_ptr<File> file_;
  TaskPool& pool_;
  LocalPages local_;
  std::shared_ptr<const EndUser> user_;  // the request's (common/end_user.h)
};

}  // namespace

namespace {
std::string FormatUtc(int64_t unix_ns, const char* format) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}
}  // namespace

std::optional<int64_t> ParseHttpDate(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

bool EtagListMatches(std::string_view list, const std::string& etag) {
  std::string_view bare(etag);
  bare = bare.substr(1, bare.size() - 2);
  for (int i = 0; i < 100 && !list.empty(); ++i) {
    auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.starts_with("W/")) item.remove_prefix(2);
    if (item.size() >= 2 && item.front() == '"' && item.back() == '"') item = item.substr(1, item.size() - 2);
    if (item == "*" || item == bare) return true;
  }
  return false;
}

std::string HttpDate(int64_t unix_ns) { return FormatUtc(unix_ns, "%a, %d %b %Y %H:%M:%S GMT"); }

std::string IsoDate(int64_t unix_ns) {
  std::string buf = FormatUtc(unix_ns, "%Y-%m-%dT%H:%M:%S");
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>((unix_ns / 1'000'000) % 1000));
  return std::string(buf) + ms;
}

std::string ETagOf(const FileStatus& st, const ObjectMetadata& meta) {
  // A write-back file has its holders' version until the upload; its writer's ETag is kept with it.
  if (!meta.etag.empty() && st.version.starts_with("wb-")) return '"' + meta.etag + '"';
  return ETagOf(st);
}

std::string ETagOf(const FileStatus& st) {
  std::string v = st.version;
  v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
  if (v.empty()) v = std::to_string(st.mtime_ns) + "-" + std::to_string(st.size);
  return '"' + v + '"';
}

namespace {

// The number of parts in a multipart ETag ("<md5>-N", quotes stripped), or 0.
size_t PartsInEtag(const std::string& etag) {
  const size_t dash = etag.rfind('-');
  if (dash == std::string::npos || dash + 1 >= etag.size() || etag.size() - dash > 6) return 0;
  size_t n = 0;
  for (size_t i = dash + 1; i < etag.size(); ++i) {
    if (etag[i] < '0' || etag[i] > '9') return 0;
    n = n * 10 + static_cast<size_t>(etag[i] - '0');
  }
  return n;
}

// GET and HEAD ?partNumber=N: the bytes of part N, as a range. An object
// uploaded whole has one part; a multipart one the parts its Complete
// listed (kPartSizesName, checked against its ETag and size). Adds
// x-amz-mp-parts-count for a multipart object.
S3Result<Range> PartRange(const FileStatus& st, const ObjectMetadata& meta, const std::string* text, bool has_range,
                          net::HttpResponse* res) {
  auto n = ParsePartNumber(text);
  if (!n) return std::unexpected(n.error());
  if (has_range) return S3Err(400, "InvalidRequest", "Cannot specify both Range header and partNumber query parameter");
  const std::string etag = ETagOf(st, meta);
  size_t parts = PartsInEtag(etag.substr(1, etag.size() - 2));
  if (parts == 0 && st.version.starts_with("wb-")) {
    // A write-back file has its holders' version until the upload; its
    // Complete's part sizes are kept with it.
    if (auto kept = PartSizesOf(meta, 0, st.size)) parts = kept->size();
  }
  if (parts == 0) {
    if (*n != 1 || st.size == 0) {
      return S3Err(400, "InvalidPart",
                   "there is no part " + std::to_string(*n) + " of " + st.path + ": it was uploaded whole, as part 1");
    }
    return Range{0, st.size};
  }
  res->headers.emplace_back("x-amz-mp-parts-count", std::to_string(parts));
  if (static_cast<size_t>(*n) > parts) {
    return S3Err(
        400, "InvalidPart",
        "there is no part " + std::to_string(*n) + " of " + st.path + ": it has " + std::to_string(parts) + " parts");
  }
  auto sizes = PartSizesOf(meta, parts, st.size);
  if (!sizes) {
    return S3Err(501, "NotImplemented",
                 "the part sizes of " + st.path +
                     " are not known (it was not completed through this endpoint): read it with a Range instead");
  }
  uint64_t begin = 0;
  for (int i = 1; i < *n; ++i) begin += (*sizes)[static_cast<size_t>(i - 1)];
  const uint64_t len = (*sizes)[static_cast<size_t>(*n - 1)];
  if (len == 0) return S3Err(400, "InvalidPart", "part " + std::to_string(*n) + " of " + st.path + " is empty");
  return Range{begin, begin + len};
}

// The answer for the object `st` (`file` open at that version, or null for a
// HEAD): conditions, range, headers, and the body streamed from `file`.
S3Result<net::HttpResponse> ObjectResponse(const FileStatus& st, std::unique_ptr<File> file, TaskPool& pool,
                                           const ObjectRequest& req, const ObjectMetadata& meta) {
  const net::HttpRequest& http = *req.http;
  const bool head = http.method == "HEAD";
  if (st.is_dir) return S3Err(404, "NoSuchKey", req.path + " is a directory, not an object");

  const std::string etag = ETagOf(st, meta);
  const int64_t mtime_s = st.mtime_ns / 1'000'000'000;
  auto header_time = [&](const char* name) -> std::optional<int64_t> {
    const std::string* h = http.Header(name);
    return h ? ParseHttpDate(*h) : std::nullopt;
  };
  // RFC 7232 order, as S3 applies it.
  const std::string* if_match = http.Header("If-Match");
  const std::string* if_none_match = http.Header("If-None-Match");
  if (if_match && !EtagListMatches(*if_match, etag)) {
    return S3Err(412, "PreconditionFailed", "If-Match " + *if_match + " does not match the ETag " + etag);
  }
  if (!if_match) {
    if (auto t = header_time("If-Unmodified-Since"); t && mtime_s > *t) {
      return S3Err(412, "PreconditionFailed", "the object was modified after If-Unmodified-Since");
    }
  }
  bool not_modified = false;
  if (if_none_match) {
    not_modified = EtagListMatches(*if_none_match, etag);
  } else if (auto t = header_time("If-Modified-Since"); t && mtime_s <= *t) {
    not_modified = true;
  }

  net::HttpResponse res;
  res.headers.emplace_back("ETag", etag);
  res.headers.emplace_back("Last-Modified", HttpDate(st.mtime_ns));
  if (not_modified) {
    res.status = 304;
    return res;
  }
  auto range = ParseRange(http.Header("Range"), st.size);
  if (!range) return std::unexpected(range.error());
  if (const std::string* pn = Param(*req.query, "partNumber")) {
    auto part = PartRange(st, meta, pn, http.Header("Range") != nullptr, &res);
    if (!part) return std::unexpected(part.error());
    *range = *part;
  }
  uint64_t begin = 0, end = st.size;
  if (*range) {
    begin = (*range)->begin;
    end = (*range)->end;
    res.status = 206;
    res.headers.emplace_back("Content-Range", "bytes " + std::to_string(begin) + "-" + std::to_string(end - 1) + "/" +
                                                  std::to_string(st.size));
  }
  res.headers.emplace_back("Accept-Ranges", "bytes");
  std::string content_type = meta.content_type.empty() ? "binary/octet-stream" : meta.content_type;
  AddMetadataHeaders(meta, &res);
  static const std::pair<const char*, const char*> kOverrides[] = {
      {"response-content-type", "Content-Type"},
      {"response-content-language", "Content-Language"},
      {"response-expires", "Expires"},
      {"response-cache-control", "Cache-Control"},
      {"response-content-disposition", "Content-Disposition"},
      {"response-content-encoding", "Content-Encoding"}};
  for (const auto& [param, header] : kOverrides) {
    const std::string* v = Param(*req.query, param);
    if (!v) continue;
    if (v->find_first_of("\r\n") != std::string::npos) {
      return S3Err(400, "InvalidArgument", std::string(param) + " must not contain a line break");
    }
    if (std::string_view(header) == "Content-Type") {
      content_type = *v;
    } else {
      // Instead of the one the object keeps, not beside it.
      std::erase_if(res.headers, [&](const auto& h) { return h.first == header; });
      res.headers.emplace_back(header, *v);
    }
  }
  res.headers.emplace_back("Content-Type", content_type);
  if (end > begin) {
    if (head) {
      // The length only: the server sends no body for HEAD.
      res.parts.push_back(net::BodyPart::Deferred(
          end - begin, [](net::BodyPart::Ready) {},
          []() -> Result<std::vector<net::BodyPart>> { return Err(Code::kInternal, "a HEAD has no body"); }));
    } else {
      // The rest streams, one step ahead of the server.
      auto stream = std::make_shared<ObjectStream>(std::move(file), pool, req.local);
      auto parts = stream->Body(begin, end);
      if (!parts) return std::unexpected(FromStatus(parts.error()));
      res.parts = std::move(*parts);
    }
  }
  return res;
}

}  // namespace

S3Result<net::HttpResponse> GetObject(Client& client, TaskPool& pool, const ObjectRequest& req) {
  if (req.http->method == "HEAD") {
    auto st = client.Stat(req.path);
    if (!st) return std::unexpected(FromStatus(st.error()));
    if (st->is_dir) return ObjectResponse(*st, nullptr, pool, req, {});
    return ObjectResponse(*st, nullptr, pool, req, req.metadata ? req.metadata->Get(client, *st) : ObjectMetadata{});
  }
  auto f = client.OpenFile(req.path);
  if (!f && f.error().code() == Code::kIsDirectory) {
    return S3Err(404, "NoSuchKey", req.path + " is a directory, not an object");  // as HEAD says
  }
  if (!f) return std::unexpected(FromStatus(f.error()));
  FileStatus st = (*f)->status();
  return ObjectResponse(st, std::move(*f), pool, req, req.metadata ? req.metadata->Get(client, st) : ObjectMetadata{});
}

std::optional<S3Result<net::HttpResponse>> GetCachedObject(Client& client, TaskPool& pool, const ObjectRequest& req) {
  if (req.http->method != "GET" || Param(*req.query, "partNumber")) return std::nullopt;
  auto f = OpenCachedOnly(client, req.path);
  if (!f) return std::nullopt;
  FileStatus st = (*f)->status();
  // Every byte the answer sends must be in memory already: nothing else may
  // be read on an I/O thread. (A range past the end is answered as usual.)
  auto range = ParseRange(req.http->Header("Range"), st.size);
  const uint64_t end = range && *range ? (*range)->end : st.size;
  if (end > OpenedBytesOf(**f).size()) return std::nullopt;
  std::optional<ObjectMetadata> meta;
  if (req.metadata && !(meta = req.metadata->Peek(st))) return std::nullopt;  // read on the pool
  return ObjectResponse(st, std::move(*f), pool, req, meta ? *meta : ObjectMetadata{});
}

}  // namespace shoal::s3
