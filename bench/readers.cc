// The POSIX and HTTP readers of the load generator (the Shoal one is in
// shoal_reader.cc, built only when the client library exists).
#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "bench/loadgen.h"

namespace shoal::bench {

namespace {

class PosixReader : public Reader {
 public:
  PosixReader(std::string root, size_t chunk, bool drop_cache)
      : root_(std::move(root)), buf_(chunk), drop_cache_(drop_cache) {}

  Result<uint64_t> Read(const DatasetFile& file, uint64_t offset, uint64_t length, const Sink& sink) override {
    std::string path = root_ + "/" + file.name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Err(Code::kIo, "open " + path + ": " + std::strerror(errno));
    uint64_t done = 0;
    while (done < length) {
      size_t want = std::min<uint64_t>(buf_.size(), length - done);
      ssize_t n = ::pread(fd, buf_.data(), want, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int e = errno;
        ::close(fd);
        return Err(Code::kIo, "read " + path + ": " + std::strerror(e));
      }
      if (n == 0) break;
      sink(std::span<const char>(buf_.data(), static_cast<size_t>(n)));
      done += static_cast<uint64_t>(n);
    }
    // The kernel forgets what was read: the next epoch reads through the file system again.
    if (drop_cache_) ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(done), POSIX_FADV_DONTNEED);
    ::close(fd);
    return done;
  }

 private:
  std::string root_;
  std::vector<char> buf_;
  bool drop_cache_;
};

// One keep-alive libcurl handle per reader thread.
class HttpReader : public Reader {
 public:
  explicit HttpReader(std::string base) : base_(std::move(base)), curl_(curl_easy_init()) {}
  ~HttpReader() override { curl_easy_cleanup(curl_); }

  Result<uint64_t> Read(const DatasetFile& file, uint64_t offset, uint64_t length, const Sink& sink) override {
    if (!curl_) return Err(Code::kInternal, "curl_easy_init failed");
    std::string url = base_ + "/" + file.name;
    curl_easy_reset(curl_);
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_PROXY, "");  // loopback only, never an environment proxy
    curl_easy_setopt(curl_, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT, 600L);
    // An S3 endpoint in redirect mode answers 307 to the owning worker.
    curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl_, CURLOPT_MAXREDIRS, 2L);
    // https:// URLs: the CA of a local test server (bench/tls_bench.sh).
    if (const char* ca = std::getenv("LOADGEN_CA_FILE"); ca && *ca) curl_easy_setopt(curl_, CURLOPT_CAINFO, ca);
    std::string range;
    if (offset != 0 || length != file.size) {
      range = std::to_string(offset) + "-" + std::to_string(offset + length - 1);
      curl_easy_setopt(curl_, CURLOPT_RANGE, range.c_str());
    }
    Ctx ctx{curl_, &sink, 0, 0, {}};
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &HttpReader::OnData);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &ctx);
    CURLcode rc = curl_easy_perform(curl_);
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
      return Err(Code::kUnavailable, "GET " + url + ": " + curl_easy_strerror(rc));
    if (status != 200 && status != 206)
      return Err(Code::kIo, "GET " + url + ": HTTP " + std::to_string(status) + " " + ctx.error_body.substr(0, 200));
    return ctx.bytes;
  }

 private:
  struct Ctx {
    CURL* curl;
    const Sink* sink;
    uint64_t bytes;
    long status;
    std::string error_body;
  };

  static size_t OnData(char* p, size_t size, size_t n, void* user) {
    auto* ctx = static_cast<Ctx*>(user);
    size_t len = size * n;
    if (ctx->status == 0) curl_easy_getinfo(ctx->curl, CURLINFO_RESPONSE_CODE, &ctx->status);
    if (ctx->status != 200 && ctx->status != 206) {
      // An error body (S3 XML) goes into the message, not into the checksum.
      if (ctx->error_body.size() < 1024) ctx->error_body.append(p, std::min<size_t>(len, 1024));
      return len;
    }
    ctx->bytes += len;
    (*ctx->sink)(std::span<const char>(p, len));
    return len;
  }

  std::string base_;
  CURL* curl_;
};

}  // namespace

ReaderFactory PosixReaders(const std::string& root, bool drop_cache) {
  return [root, drop_cache]() -> Result<std::unique_ptr<Reader>> {
    return std::make_unique<PosixReader>(root, 1 << 20, drop_cache);
  };
}

ReaderFactory HttpReaders(const std::string& base_url) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return [base]() -> Result<std::unique_ptr<Reader>> { return std::make_unique<HttpReader>(base); };
}

Result<ReaderFactory> ReadersFromSpec(const std::string& spec) {
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "posix" && !rest.empty()) return PosixReaders(rest, false);
  if (kind == "posix-dropcache" && !rest.empty()) return PosixReaders(rest, true);
  if (kind == "http" && !rest.empty()) return HttpReaders(rest);
  if (kind == "shoal") {
    // shoal:CONFIG:PREFIX; the prefix is a namespace path such as /bench.
    auto c2 = rest.rfind(':');
    if (c2 == std::string::npos) return Err(Code::kInvalidArgument, "reader spec shoal:CONFIG:PREFIX, got " + spec);
    return ShoalReaders(rest.substr(0, c2), rest.substr(c2 + 1));
  }
  return Err(Code::kInvalidArgument,
             "bad reader spec '" + spec + "': use posix:DIR, posix-dropcache:DIR, http:URL or shoal:CONFIG:PREFIX");
}

}  // namespace shoal::bench
