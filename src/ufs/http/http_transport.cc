#include "ufs/http/http_transport.h"

#include <curl/curl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
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

// An easy handle and the sockets its connections use. curl opens and closes
// them through OnOpenSocket/OnCloseSocket (exactly as it would itself), so a
// request knows which socket its transfer reads: the only one open (each handle
// keeps its own connection cache, and runs one request at a time).
struct Handle {
  CURL* curl = nullptr;
  CURLM* multi = nullptr;  // runs curl's transfers (Perform); holds the handle's connection cache
  std::vector<curl_socket_t> sockets;

  // The socket of the transfer in progress, when that is certain.
  curl_socket_t OnlySocket() const { return sockets.size() == 1 ? sockets[0] : CURL_SOCKET_BAD; }
};

curl_socket_t OnOpenSocket(void* user, curlsocktype /*purpose*/, curl_sockaddr* addr) {
  curl_socket_t fd = ::socket(addr->family, addr->socktype, addr->protocol);
  if (fd != CURL_SOCKET_BAD) static_cast<Handle*>(user)->sockets.push_back(fd);
  return fd;
}

int OnCloseSocket(void* user, curl_socket_t fd) {
  auto& v = static_cast<Handle*>(user)->sockets;
  v.erase(std::remove(v.begin(), v.end(), fd), v.end());
  return ::close(fd);
}

// Idle easy handles, shared by all threads. A request takes the handle that
// finished last, whose connection is the most likely to still be open, and
// gives it back when done; so a process keeps about as many connections open
// as it has requests in flight, however many threads make them. (One handle
// per thread would open a connection per thread: each pays a TCP, and for
// HTTPS a TLS, handshake before its first request, and the store sees more
// connections than there are requests.)
class HandlePool {
 public:
  Handle* Take() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        Handle* h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    static CurlGlobal global;
    auto* h = new Handle;
    h->curl = curl_easy_init();
    h->multi = curl_multi_init();
    if (!h->curl || !h->multi) {
      Destroy(h);
      return nullptr;
    }
    return h;
  }
  void Give(Handle* h) {
    {
      std::lock_guard lock(mu_);
      if (idle_.size() < kMaxIdle) {
        idle_.push_back(h);
        return;
      }
    }
    Destroy(h);
  }

 private:
  static void Destroy(Handle* h) {
    if (h->curl) curl_easy_cleanup(h->curl);
    if (h->multi) curl_multi_cleanup(h->multi);  // closes its connections through OnCloseSocket
    delete h;
  }

  static constexpr size_t kMaxIdle = 64;
  std::mutex mu_;
  std::vector<Handle*> idle_;  // the most recently used last
};

HandlePool& Pool() {
  static auto* pool = new HandlePool;  // never destroyed: threads may still use it at exit
  return *pool;
}

// A handle from the pool for one request, given back on scope exit.
struct EasyHandle {
  Handle* h = Pool().Take();
  EasyHandle() = default;
  EasyHandle(const EasyHandle&) = delete;
  EasyHandle& operator=(const EasyHandle&) = delete;
  ~EasyHandle() {
    if (h) Pool().Give(h);
  }
};

// Runs one transfer as curl_easy_perform would (a multi handle of its own that
// keeps the connection for the next request; curl enforces the timeouts), but
// waits with curl_multi_wait: curl_easy_perform's curl_multi_poll also polls a
// wake-up socket pair, once more before every transfer and with each wait,
// which nothing here ever uses.
CURLcode Perform(Handle& h) {
  if (curl_multi_add_handle(h.multi, h.curl) != CURLM_OK) return CURLE_FAILED_INIT;
  CURLcode result = CURLE_OK;
  bool done = false;
  while (!done) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(h.multi, &running);
    if (mc == CURLM_OK && running > 0) mc = curl_multi_wait(h.multi, nullptr, 0, 1000, nullptr);
    if (mc != CURLM_OK) {
      result = mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_RECV_ERROR;
      break;
    }
    if (running > 0) continue;
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(h.multi, &left)) {
      if (m->msg == CURLMSG_DONE && m->easy_handle == h.curl) {
        result = m->data.result;
        done = true;
      }
    }
    if (!done) {
      result = CURLE_RECV_ERROR;  // not running and no result: curl lost the transfer
      break;
    }
  }
  curl_multi_remove_handle(h.multi, h.curl);
  return result;
}

// Waking up for a body that is not all there yet costs a context switch, and
// curl's polls and receive around it: with curl's own waits, a 130 KiB object
// from s3rver woke a worker 3 times (it arrives in 64 KiB writes), and from a
// store across a network it arrives in many more pieces. Once the body's length
// is known, the socket's SO_RCVLOWAT is set to what is still missing (at most
// one receive buffer), so curl's next poll reports the socket readable only when
// all of that is there, or the peer closed (the kernel also wakes the reader
// when its receive buffer fills, so a low-water mark never stalls a transfer).
// Only for plain HTTP without a proxy: with TLS the bytes in the socket are not
// the body's. The mark is put back to 1 before the connection is reused.
class LowWater {
 public:
  // Whether `url` may use it: http://, no redirects, no proxy from the environment
  // (curl reads these for http:// URLs; a proxy may speak TLS).
  static bool Allowed(const HttpRequest& req) {
    if (req.follow_redirects || !req.url.starts_with("http://")) return false;
    for (const char* v : {"http_proxy", "all_proxy", "ALL_PROXY"}) {
      const char* p = std::getenv(v);
      if (p && *p) return false;
    }
    return true;
  }

  // After curl handed over body bytes: `received` of `expected` are delivered,
  // and curl holds none it has not handed over (it delivers what it receives
  // before it waits again), so the socket must hold expected - received more
  // before a wake is useful.
  void Update(const Handle& h, uint64_t received, uint64_t expected, size_t max_bytes) {
    if (fd_ == CURL_SOCKET_BAD) fd_ = h.OnlySocket();
    if (fd_ == CURL_SOCKET_BAD) return;
    uint64_t missing = expected > received ? expected - received : 0;
    Set(static_cast<int>(std::clamp<uint64_t>(missing, 1, max_bytes)));
  }

  // Back to the default before the connection serves another request (when
  // the transfer ended with its connection closed, the socket is gone). Should
  // that fail, the connection is shut down, so curl opens a fresh one rather
  // than wait on it for a reply smaller than the mark.
  void Reset(const Handle& h) {
    if (fd_ == CURL_SOCKET_BAD || std::find(h.sockets.begin(), h.sockets.end(), fd_) == h.sockets.end()) return;
    Set(1);
    if (mark_ != 1) ::shutdown(fd_, SHUT_RDWR);
  }

 private:
  void Set(int bytes) {
    if (bytes == mark_) return;
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0) mark_ = bytes;
  }

  curl_socket_t fd_ = CURL_SOCKET_BAD;
  int mark_ = 1;
};

struct Sink {
  HttpResponse* resp;
  std::span<char> out;
  bool use_out = false;
  bool status_checked = false;
  CURL* h;
  const Handle* handle = nullptr;
  bool low_water_allowed = false;
  size_t receive_bytes = kDefaultReceiveBytes;  // curl's receive buffer
  uint64_t expected = 0;                        // the body's Content-Length; 0 when not known
  LowWater low_water{};
};

uint64_t ParseLength(const std::string& s) {
  if (s.empty() || s.size() > 19) return 0;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

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
    s->resp->headers.insert_or_assign(std::move(name), std::string(v));  // the name moves into the map
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
    if (s->low_water_allowed && s->resp->headers.find("transfer-encoding") == s->resp->headers.end()) {
      s->expected = ParseLength(s->resp->Header("content-length"));
    }
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

// curl reports progress after it has handed over what one receive brought and
// before it waits again: the moment to set the low-water mark (once per
// receive, not per 16 KiB piece OnBody gets).
int OnProgress(void* user, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/, curl_off_t /*ultotal*/, curl_off_t /*ulnow*/) {
  auto* s = static_cast<Sink*>(user);
  if (s->expected > 0) {
    s->low_water.Update(*s->handle, s->use_out ? s->resp->body_out_size : s->resp->body.size(), s->expected,
                        s->receive_bytes);
  }
  return 0;
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
  if (!easy.h) return Err(Code::kInternal, "curl_easy_init failed");
  CURL* h = easy.h->curl;
  curl_easy_reset(h);

  HttpResponse resp;
  Sink sink{.resp = &resp, .out = req.body_out, .h = h, .handle = easy.h};
  ReadSource src{req.body, 0};

  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, OnOpenSocket);
  curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, easy.h);
  curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, OnCloseSocket);
  curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, easy.h);
  // A download into the caller's buffer takes what the socket holds per
  // receive. With curl's default 16 KiB, a cold 130 KiB object cost a worker
  // about 10 receives and 16 polls (strace of a cold small-files epoch).
  if (req.body_out.size() > kDefaultReceiveBytes) {
    sink.receive_bytes = std::min(req.body_out.size(), kMaxReceiveBytes);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, static_cast<long>(sink.receive_bytes));
  }
  sink.low_water_allowed = LowWater::Allowed(req);
  if (sink.low_water_allowed) {
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &sink);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
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

  CURLcode rc = Perform(*easy.h);
  sink.low_water.Reset(*easy.h);
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
    if (rc == CURLE_PEER_FAILED_VERIFICATION) {
      // Not transient, and curl's words do not say what to do.
      what += req.ca_file.empty()
                  ? ": the store's certificate is not signed by a CA this system trusts; give the mount its CA "
                    "(-o ca_file=PATH, a PEM file), or verify_tls=false to skip the check"
                  : ": the store's certificate is not signed by the CA in ca_file " + req.ca_file +
                        " (or names another host); give the mount the store's CA";
    }
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
