#include "tests/harness/ranger_stand_in.h"

#include <stdexcept>
#include <thread>

#include "common/sigv4.h"

namespace shoal::testing {

RangerStandIn::RangerStandIn(std::string service, std::string user, std::string password)
    : expected_auth_("Basic " + s3::Base64Of(user + ":" + password)) {
  net::Router r;
  r.Add("GET", "/service/plugins/secure/policies/download/" + service,
        [this](const net::HttpRequest& req, net::Responder res) {
          std::unique_lock lock(mu_);
          ++requests_;
          const std::string* auth = req.Header("Authorization");
          if (!auth || *auth != expected_auth_) {
            return res.Respond(net::HttpResponse::Text(401, "unauthorized", "text/plain"));
          }
          std::string q(req.query());
          auto at = q.find("lastKnownVersion=");
          last_known_ = at == std::string::npos ? "" : q.substr(at + 17, q.find('&', at) - at - 17);
          if (mode_ == Mode::kOutage) return res.Respond(net::HttpResponse::Text(503, "down", "text/plain"));
          if (mode_ == Mode::kGarbage) {
            return res.Respond(
                net::HttpResponse::Text(200, document_.substr(0, document_.size() / 2), "application/json"));
          }
          if (mode_ == Mode::kSlow) {
            // Holds this I/O thread: the poller gives up first, the server has another.
            auto delay = slow_for_;
            std::string body = document_;
            lock.unlock();
            std::this_thread::sleep_for(delay);  // the fault itself, not a synchronisation
            return res.Respond(net::HttpResponse::Text(200, body, "application/json"));
          }
          if (last_known_ == std::to_string(version_)) {
            return res.Respond(net::HttpResponse::Text(304, "", "application/json"));
          }
          res.Respond(net::HttpResponse::Text(200, document_, "application/json"));
        });
  r.Add("GET", "/service/roles/secure/download/" + service, [this](const net::HttpRequest& req, net::Responder res) {
    std::lock_guard lock(mu_);
    const std::string* auth = req.Header("Authorization");
    if (!auth || *auth != expected_auth_) {
      return res.Respond(net::HttpResponse::Text(401, "unauthorized", "text/plain"));
    }
    if (roles_document_.empty()) return res.Respond(net::HttpResponse::Text(404, "no roles", "text/plain"));
    std::string q(req.query());
    auto at = q.find("lastKnownRoleVersion=");
    std::string known = at == std::string::npos ? "" : q.substr(at + 21, q.find('&', at) - at - 21);
    if (known == std::to_string(role_version_)) {
      return res.Respond(net::HttpResponse::Text(304, "", "application/json"));
    }
    res.Respond(net::HttpResponse::Text(200, roles_document_, "application/json"));
  });
  auto s = net::HttpServer::Bind({});
  if (!s) throw std::runtime_error("the Ranger stand-in cannot listen: " + s.error().ToString());
  server_ = std::move(*s);
  std::vector<net::Router> routers;
  routers.push_back(std::move(r));
  server_->Serve(std::move(routers));
}

RangerStandIn::~RangerStandIn() = default;

std::string RangerStandIn::url() const { return "http://" + server_->address(); }

void RangerStandIn::Set(Mode mode, int64_t version, std::string document, std::chrono::milliseconds slow_for) {
  std::lock_guard lock(mu_);
  slow_for_ = slow_for;
  mode_ = mode;
  version_ = version;
  document_ = std::move(document);
}

void RangerStandIn::SetRoles(int64_t version, std::string document) {
  std::lock_guard lock(mu_);
  role_version_ = version;
  roles_document_ = std::move(document);
}

int RangerStandIn::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::string RangerStandIn::last_known() const {
  std::lock_guard lock(mu_);
  return last_known_;
}

}  // namespace shoal::testing
