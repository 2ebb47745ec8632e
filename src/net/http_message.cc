// The plain parts of src/net (no Asio, no Beast): requests, responses, body
// parts, routes, the Responder, and process-wide settings.
#include <signal.h>
#include <sys/resource.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/json_text.h"
#include "net/http_server.h"
#include "net/pending_response.h"

namespace shoal::net {

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

HttpResponse DefaultErrorResponse(int http_status, const Status& st) {
  std::string body = "{\"code\":\"" + JsonEscape(CodeName(st.code())) + "\",\"message\":\"" + JsonEscape(st.message()) + "\"}\n";
  return HttpResponse::Text(http_status, std::move(body), "application/json");
}

std::string_view HttpRequest::path() const {
  std::string_view t(target);
  return t.substr(0, t.find('?'));
}

std::string_view HttpRequest::query() const {
  std::string_view t(target);
  auto q = t.find('?');
  return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

const std::string* HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return &v;
  }
  return nullptr;
}

BodyPart BodyPart::File(int fd, uint64_t offset, uint64_t length, std::shared_ptr<const void> owner) {
  BodyPart p;
  p.kind_ = Kind::kFile;
  p.fd_ = fd;
  p.offset_ = offset;
  p.length_ = length;
  p.owner_ = std::move(owner);
  return p;
}

BodyPart BodyPart::Bytes(std::string_view bytes, std::shared_ptr<const void> owner) {
  BodyPart p;
  p.kind_ = Kind::kBytes;
  p.data_ = bytes.data();
  p.length_ = bytes.size();
  p.owner_ = std::move(owner);
  return p;
}

BodyPart BodyPart::Bytes(std::string bytes) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  std::string_view view(*owned);
  return Bytes(view, std::move(owned));
}

BodyPart BodyPart::Deferred(uint64_t length, std::function<void(Ready)> wait,
                            std::function<Result<std::vector<BodyPart>>()> take) {
  BodyPart p;
  p.kind_ = Kind::kDeferred;
  p.length_ = length;
  p.wait_ = std::move(wait);
  p.take_ = std::move(take);
  return p;
}

HttpResponse HttpResponse::Text(int status, std::string body, std::string_view content_type) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("Content-Type", std::string(content_type));
  r.body = std::move(body);
  return r;
}

void Router::Add(std::string method, std::string path, Handler handler) {
  routes_.push_back({std::move(method), std::move(path), std::move(handler)});
}

void Router::SetFallback(Handler handler) { fallback_ = std::move(handler); }

Router::Match Router::Find(std::string_view method, std::string_view path, const Handler** handler) const {
  std::string_view want = method == "HEAD" ? std::string_view("GET") : method;
  bool path_known = false;
  for (const auto& r : routes_) {
    if (r.path != path) continue;
    path_known = true;
    if (r.method == want) {
      *handler = &r.handler;
      return Match::kFound;
    }
  }
  if (path_known) return Match::kWrongMethod;
  if (fallback_) {
    *handler = &fallback_;
    return Match::kFound;
  }
  return Match::kNone;
}

Responder::Responder(std::shared_ptr<detail::PendingResponse> pending)
    : state_(std::make_shared<detail::ResponderState>()) {
  state_->pending = std::move(pending);
}

void Responder::Respond(HttpResponse response) const {
  if (state_->answered.exchange(true)) {
    spdlog::error("BUG: a request was answered twice; the second answer (HTTP {}) is dropped", response.status);
    return;
  }
  state_->pending->response = std::move(response);
  state_->pending->event.Set();
}

void IgnoreSigpipe() {
  struct sigaction sa{};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGPIPE, &sa, nullptr);
}

size_t DefaultMaxConnections() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 512;
  uint64_t soft = rl.rlim_cur == RLIM_INFINITY ? (1ull << 20) : rl.rlim_cur;
  uint64_t reserve = std::min<uint64_t>(256, soft / 4);  // own files, cache dirs, under-store sockets
  return static_cast<size_t>(std::max<uint64_t>(8, (soft - reserve) / 2));
}

}  // namespace shoal::net
