#include "ufs/http/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <vector>

#include "ufs/http/call_deadline.h"

namespace shoal {
namespace {

// curl's receive buffer: its default, and the most a download is given.
constexpr size_t kDefaultReceiveBytes = 16 * 1024;
constexpr size_t kMaxReceiveBytes = 256 * 1024;

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

// Idle easy handles, shared by all threads. A request takes the handle that
// finished last, whose connection is the most likely to still be open, and
// gives it back when done; so a process keeps about as many connections open
// as it has requests in flight, however many threads make them. (One handle
// per thread would open a connection per thread: each pays a TCP, and for
// HTTPS a TLS, handshake before its first request, and the store sees more
// connections than there are requests.)
class HandlePool {
 public:
  CURL* Take() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    static CurlGlobal global;
    return curl_easy_init();
  }
  void Give(CURL* h) {
    {
      std::lock_guard lock(mu_);
      if (idle_.size() < kMaxIdle) {
        idle_.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }

 private:
  static constexpr size_t kMaxIdle = 64;
  std::mutex mu_;
  std::vector<CURL*> idle_;  // the most recently used last
};

HandlePool& Pool() {
  static auto* pool = new HandlePool;  // never destroyed: threads may still use it at exit
  return *pool;
}

// A handle from the pool for one request, given back on scope exit.
struct EasyHandle {
  CURL* h = Pool().Take();
  EasyHandle() = default;
  EasyHandle(const EasyHandle&) = delete;
  EasyHandle& operator=(const EasyHandle&) = delete;
  ~EasyHandle() {
    if (h) Pool().Give(h);
  }
};

struct Sink {
  HttpResponse* resp;
  std::span<char> out;
  bool use_out = false;
  bool status_checked = false;
  CURL* h;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {
    s->resp->headers.clear();  // a new response (after a redirect or 100-continue)
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
    s->resp->headers[name] = std::string(v);
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  size_t len = size * n;
  if (!s->status_checked) {
    long code = 0;
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
    s->use_out = !s->out.empty() && code >= 200 && code < 300;
    s->status_checked = true;
  }
  if (s->use_out) {
    size_t room = s->out.size() - s->resp->body_out_size;
    if (len > room) {
      s->resp->body_out_overflow = true;
      return 0;  // aborts the transfer
    }
    std::memcpy(s->out.data() + s->resp->body_out_size, data, len);
    s->resp->body_out_size += len;
  } else {
    s->resp->body.append(data, len);
  }
  return len;
}

struct ReadSource {
  std::span<const char> body;
  size_t pos = 0;
};

size_t OnRead(char* buf, size_t size, size_t n, void* user) {
  auto* r = static_cast<ReadSource*>(user);
  size_t len = std::min(size * n, r->body.size() - r->pos);
  std::memcpy(buf, r->body.data() + r->pos, len);
  r->pos += len;
  return len;
}

int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* r = static_cast<ReadSource*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > r->body.size()) return CURL_SEEKFUNC_FAIL;
  r->pos = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

}  // namespace

Result<HttpResponse> PerformHttp(const HttpRequest& request) {
  // The caller's call deadline (CallDeadline) cuts this request's timeouts.
  const HttpRequest* r = &request;
  HttpRequest bounded;
  if (auto end = CallDeadline::Current()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*end - CallDeadline::Clock::now());
    if (left.count() <= 0) {
      return Err(Code::kTimeout, "the call's deadline passed before " + request.method + " " + request.url + " was sent");
    }
    if (left < request.timeout || left < request.connect_timeout) {
      bounded = request;
      bounded.timeout = std::min(bounded.timeout, left);
      bounded.connect_timeout = std::min(bounded.connect_timeout, left);
      r = &bounded;
    }
  }
  const HttpRequest& req = *r;
  EasyHandle easy;
  CURL* h = easy.h;
  if (!h) return Err(Code::kInternal, "curl_easy_init failed");
  curl_easy_reset(h);

  HttpResponse resp;
  Sink sink{&resp, req.body_out, false, false, h};
  ReadSource src{req.body, 0};

  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  // A download into the caller's buffer takes what the socket holds per
  // receive. With curl's default 16 KiB, a cold 130 KiB object cost a worker
  // about 10 receives and 16 polls (strace of a cold small-files epoch).
  if (req.body_out.size() > kDefaultReceiveBytes) {
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, static_cast<long>(std::min(req.body_out.size(), kMaxReceiveBytes)));
  }
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, req.follow_redirects ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  if (!req.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, req.ca_file.c_str());
  if (!req.verify_tls) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  if (req.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (req.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (req.method == "PUT" || req.method == "POST") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
    curl_easy_setopt(h, CURLOPT_READDATA, &src);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, OnSeek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &src);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    if (req.method == "POST") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "POST");
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }

  curl_slist* headers = nullptr;
  bool has_expect = false;
  for (const auto& [k, v] : req.headers) {
    std::string line = k + ": " + v;
    if (v.empty()) line = k + ";";  // curl's syntax for an empty header value
    headers = curl_slist_append(headers, line.c_str());
    if (strcasecmp(k.c_str(), "expect") == 0) has_expect = true;
  }
  if (!has_expect) headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

  CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
  char* eff = nullptr;
  if (curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff) resp.effective_url = eff;

  if (rc != CURLE_OK) {
    if (rc == CURLE_WRITE_ERROR && resp.body_out_overflow) return resp;
    if (rc == CURLE_PARTIAL_FILE && req.accept_partial) {
      resp.truncated = true;
      return resp;
    }
    std::string what = std::string(curl_easy_strerror(rc)) + " (" + req.method + " " + req.url + ")";
    if (rc == CURLE_OPERATION_TIMEDOUT) return Err(Code::kTimeout, "request timed out after " +
                                                                       std::to_string(req.timeout.count()) + " ms: " + what);
    if (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
        rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_SSL_CONNECT_ERROR) {
      return Err(Code::kUnavailable, what);
    }
    return Err(Code::kUnavailable, what);
  }
  return resp;
}

}  // namespace shoal
