#include "s3/s3_redirect.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "client/client_internal.h"

namespace shoal::s3 {
namespace {

constexpr auto kRefreshEvery = std::chrono::seconds(2);
constexpr auto kMaxRedirectExpiry = std::chrono::seconds(60);

bool IsAuthParam(std::string_view k) { return k.starts_with("X-Amz-"); }

}  // namespace

Redirector::Redirector(const Authenticator& auth, std::string region, std::string self_id)
    : auth_(auth), region_(std::move(region)), self_id_(std::move(self_id)) {}

std::string Redirector::EndpointOf(Client& client, const std::string& id) {
  std::lock_guard lock(mu_);
  auto now = std::chrono::steady_clock::now();
  auto it = endpoints_.find(id);
  if (it != endpoints_.end() && now - fetched_ < kRefreshEvery * 15) return it->second;
  if (now - fetched_ < kRefreshEvery) return it == endpoints_.end() ? std::string() : it->second;
  fetched_ = now;
  // One fan-out to every worker (client.timeout bounds it); a worker that
  // does not answer keeps what was known of it.
  for (const auto& a : CallWorkers(client, "GET", [](const std::string&) { return std::string("/v1/status"); })) {
    if (!a.status.ok()) continue;
    auto j = nlohmann::json::parse(a.body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    endpoints_[a.member] = j.value("s3_endpoint", std::string());
  }
  it = endpoints_.find(id);
  return it == endpoints_.end() ? std::string() : it->second;
}

std::optional<net::HttpResponse> Redirector::For(Client& client, const net::HttpRequest& req, const QueryParams& query,
                                                 const AuthInfo& auth, const FileStatus& status) {
  if (!auth.presigned && !auth.access_key.empty()) return std::nullopt;  // header-signed: proxied
  auto owner = client.OwnerOf(status, 0);
  if (!owner || owner->id == self_id_) return std::nullopt;
  std::string endpoint = EndpointOf(client, owner->id);
  if (endpoint.empty()) return std::nullopt;
  std::string target;
  if (auth.presigned) {
    auto now = std::chrono::system_clock::now();
    auto left = std::chrono::duration_cast<std::chrono::seconds>(auth.expires_at - now);
    auto expires = std::min<std::chrono::seconds>(left, kMaxRedirectExpiry);
    if (expires.count() < 1) return std::nullopt;  // about to expire: serve it here
    QueryParams own;
    for (const auto& kv : query) {
      if (!IsAuthParam(kv.first)) own.push_back(kv);
    }
    target = auth_.Presign(req.method == "HEAD" ? "HEAD" : "GET", endpoint, req.path(), std::move(own), auth.access_key,
                           region_, expires, now);
  } else {
    target = req.target;
  }
  net::HttpResponse r;
  r.status = 307;
  r.headers.emplace_back("Location", "http://" + endpoint + target);
  r.headers.emplace_back("x-shoal-owner", owner->id);
  return r;
}

}  // namespace shoal::s3
