#include "tests/harness/entra_stand_in.h"

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/sigv4.h"
#include "ufs/azure/azure_auth.h"
#include "ufs/cloud/token_http.h"
#include "ufs/uri.h"

namespace shoal::testing {
namespace {

using Json = nlohmann::json;
using WallClock = std::chrono::system_clock;

constexpr const char* kScope = "https://storage.azure.com/.default";
constexpr const char* kJwtBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

std::string Base64Url(std::string_view bytes) {
  std::string b = s3::Base64Of(bytes);
  while (!b.empty() && b.back() == '=') b.pop_back();
  for (auto& c : b) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return b;
}

net::HttpResponse JsonAnswer(int status, const Json& body) {
  return net::HttpResponse::Text(status, body.dump(), "application/json; charset=utf-8");
}

// Entra ID's error shape: {"error": "...", "error_description": "AADSTS...: ..."}.
net::HttpResponse OAuthError(int status, std::string error, std::string description) {
  return JsonAnswer(status, {{"error", std::move(error)}, {"error_description", std::move(description)}});
}

int64_t Unix(WallClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

struct EntraStandIn::State {
  std::mutex mu;
  std::string tenant;
  std::map<std::string, std::string> secrets;     // client id -> client secret
  std::map<std::string, std::string> assertions;  // client id -> federated assertion
  std::string identity_header;
  std::string user_assigned;
  std::chrono::seconds lifetime{3600};
  Fault fault = Fault::kNone;
  Requests requests;
  std::string last_token;
  uint64_t issued = 0;
  std::vector<net::Responder> parked;  // kHang: answered when the stand-in goes

  // A fault's answer, if one is set; true when it answered. Lock held.
  bool AnswerFault(const net::Responder& res) {
    switch (fault) {
      case Fault::kNone:
      case Fault::kExpired: return false;
      case Fault::kServerError:
        res.Respond(OAuthError(500, "temporarily_unavailable", "AADSTS50196: the stand-in fails on purpose"));
        return true;
      case Fault::kHang: parked.push_back(res); return true;
      case Fault::kGarbage:
        res.Respond(net::HttpResponse::Text(200, "<html><body>Sign in to continue</body></html>", "text/html"));
        return true;
    }
    return false;
  }

  // A new JWT-shaped token for `client_id`, expiring at `exp`. Lock held.
  std::string Issue(const std::string& client_id, WallClock::time_point now, WallClock::time_point exp) {
    Json header = {{"typ", "JWT"}, {"alg", "RS256"}, {"kid", "shoal-stand-in"}};
    Json claims = {{"aud", "https://storage.azure.com"},
                   {"iss", "https://sts.windows.net/" + tenant + "/"},
                   {"iat", Unix(now) - 300},  // as Entra does: five minutes of clock skew allowed
                   {"nbf", Unix(now) - 300},
                   {"exp", Unix(exp)},
                   {"appid", client_id},
                   {"tid", tenant},
                   {"ver", "1.0"},
                   {"jti", "stand-in-" + std::to_string(++issued)}};
    last_token = Base64Url(header.dump()) + "." + Base64Url(claims.dump()) + "." +
                 Base64Url("unsigned-" + std::to_string(issued));
    return last_token;
  }

  WallClock::time_point Expiry(WallClock::time_point now) const {
    return fault == Fault::kExpired ? now - std::chrono::seconds(60) : now + lifetime;
  }
};

EntraStandIn::EntraStandIn(std::string tenant) : state_(std::make_shared<State>()) {
  state_->tenant = std::move(tenant);
  auto st = state_;
  net::Router r;
  // The v2.0 token endpoint, client credentials grant.
  r.Add("POST", "/" + st->tenant + "/oauth2/v2.0/token", [st](const net::HttpRequest& req, net::Responder res) {
    std::lock_guard lock(st->mu);
    ++st->requests.token;
    if (st->AnswerFault(res)) return;
    auto form = cloud::FormDecode(req.body);
    if (form["grant_type"] != "client_credentials") {
      return res.Respond(
          OAuthError(400, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant type."));
    }
    if (form["scope"] != kScope) {
      return res.Respond(OAuthError(400, "invalid_scope",
                                    "AADSTS70011: The provided value for the input parameter 'scope' is not valid."));
    }
    const std::string& client = form["client_id"];
    bool known = st->secrets.contains(client) || st->assertions.contains(client);
    if (!known) {
      return res.Respond(
          OAuthError(400, "unauthorized_client",
                     "AADSTS700016: Application with identifier '" + client + "' was not found in the directory."));
    }
    if (form.contains("client_secret")) {
      auto it = st->secrets.find(client);
      if (it == st->secrets.end() || it->second != form["client_secret"]) {
        return res.Respond(OAuthError(401, "invalid_client", "AADSTS7000215: Invalid client secret provided."));
      }
    } else if (form.contains("client_assertion")) {
      auto it = st->assertions.find(client);
      if (form["client_assertion_type"] != kJwtBearer) {
        return res.Respond(OAuthError(400, "invalid_request",
                                      "AADSTS50027: client_assertion_type must be " + std::string(kJwtBearer)));
      }
      if (it == st->assertions.end() || it->second != form["client_assertion"]) {
        return res.Respond(OAuthError(401, "invalid_client",
                                      "AADSTS70021: No matching federated identity record found for presented "
                                      "assertion."));
      }
    } else {
      return res.Respond(OAuthError(401, "invalid_client",
                                    "AADSTS7000218: The request body must contain the following parameter: "
                                    "'client_assertion' or 'client_secret'."));
    }
    auto now = WallClock::now();
    auto exp = st->Expiry(now);
    int64_t in = Unix(exp) - Unix(now);
    res.Respond(JsonAnswer(200, {{"token_type", "Bearer"},
                                 {"expires_in", in},
                                 {"ext_expires_in", in},
                                 {"access_token", st->Issue(client, now, exp)}}));
  });

  // Managed identity, both flavours: the query's checks are shared.
  auto managed = [st](const net::HttpRequest& req, net::Responder res, bool app_service) {
    std::lock_guard lock(st->mu);
    ++(app_service ? st->requests.app_service : st->requests.imds);
    if (st->AnswerFault(res)) return;
    if (app_service) {
      const std::string* h = req.Header("X-IDENTITY-HEADER");
      if (!h || *h != st->identity_header) {
        return res.Respond(OAuthError(401, "unauthorized", "the X-IDENTITY-HEADER header is missing or wrong"));
      }
    } else {
      const std::string* h = req.Header("Metadata");
      if (!h || *h != "true") {
        return res.Respond(OAuthError(400, "invalid_request", "Required metadata header not specified"));
      }
    }
    auto q = cloud::FormDecode(req.query());
    const char* version = app_service ? "2019-08-01" : "2018-02-01";
    if (q["api-version"] != version) {
      return res.Respond(OAuthError(400, "invalid_request", "api-version must be " + std::string(version)));
    }
    if (q["resource"] != "https://storage.azure.com/" && q["resource"] != "https://storage.azure.com") {
      return res.Respond(
          OAuthError(400, "invalid_resource",
                     "AADSTS500011: The resource principal named " + q["resource"] + " was not found in the tenant."));
    }
    std::string client = q.contains("client_id") ? q["client_id"] : "system-assigned";
    if (q.contains("client_id") && client != st->user_assigned) {
      return res.Respond(OAuthError(400, "invalid_request", "Identity not found"));
    }
    auto now = WallClock::now();
    auto exp = st->Expiry(now);
    Json body = {{"access_token", st->Issue(client, now, exp)},
                 {"expires_on", std::to_string(Unix(exp))},
                 {"resource", q["resource"]},
                 {"token_type", "Bearer"},
                 {"client_id", client}};
    if (!app_service) {
      body["expires_in"] = std::to_string(Unix(exp) - Unix(now));
      body["ext_expires_in"] = body["expires_in"];
      body["not_before"] = std::to_string(Unix(now) - 300);
      body["refresh_token"] = "";
    }
    res.Respond(JsonAnswer(200, body));
  };
  r.Add("GET", "/metadata/identity/oauth2/token",
        [managed](const net::HttpRequest& req, net::Responder res) { managed(req, std::move(res), false); });
  r.Add("GET", "/msi/token",
        [managed](const net::HttpRequest& req, net::Responder res) { managed(req, std::move(res), true); });
  r.SetFallback([st](const net::HttpRequest& req, net::Responder res) {
    if (req.path().ends_with("/oauth2/v2.0/token")) {
      std::lock_guard lock(st->mu);
      ++st->requests.token;
      return res.Respond(OAuthError(
          400, "invalid_request",
          "AADSTS90002: Tenant '" + std::string(req.path().substr(1, req.path().find('/', 1) - 1)) + "' not found."));
    }
    res.Respond(net::HttpResponse::Text(404, "no such endpoint in the Entra ID stand-in", "text/plain"));
  });

  auto s = net::HttpServer::Bind({});
  if (!s) throw std::runtime_error("the Entra ID stand-in cannot listen: " + s.error().ToString());
  server_ = std::move(*s);
  std::vector<net::Router> routers;
  routers.push_back(std::move(r));
  server_->Serve(std::move(routers));
}

EntraStandIn::~EntraStandIn() {
  std::vector<net::Responder> parked;
  {
    std::lock_guard lock(state_->mu);
    parked.swap(state_->parked);
  }
  for (auto& r : parked) r.Respond(OAuthError(503, "temporarily_unavailable", "the stand-in is stopping"));
  server_.reset();
}

std::string EntraStandIn::url() const { return "http://" + server_->address(); }
std::string EntraStandIn::identity_endpoint() const { return url() + "/msi/token"; }

void EntraStandIn::SetClientSecret(std::string client_id, std::string secret) {
  std::lock_guard lock(state_->mu);
  state_->secrets[std::move(client_id)] = std::move(secret);
}

void EntraStandIn::SetFederatedAssertion(std::string client_id, std::string assertion) {
  std::lock_guard lock(state_->mu);
  state_->assertions[std::move(client_id)] = std::move(assertion);
}

void EntraStandIn::SetIdentityHeader(std::string header) {
  std::lock_guard lock(state_->mu);
  state_->identity_header = std::move(header);
}

void EntraStandIn::SetUserAssignedClientId(std::string client_id) {
  std::lock_guard lock(state_->mu);
  state_->user_assigned = std::move(client_id);
}

void EntraStandIn::SetLifetime(std::chrono::seconds lifetime) {
  std::lock_guard lock(state_->mu);
  state_->lifetime = lifetime;
}

void EntraStandIn::SetFault(Fault fault) {
  std::lock_guard lock(state_->mu);
  state_->fault = fault;
}

EntraStandIn::Requests EntraStandIn::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->requests;
}

std::string EntraStandIn::last_token() const {
  std::lock_guard lock(state_->mu);
  return state_->last_token;
}

std::string EntraStandIn::ClaimsOf(const std::string& token) {
  auto a = token.find('.');
  auto b = token.find('.', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos) return {};
  std::string part = token.substr(a + 1, b - a - 1);
  for (auto& c : part) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (part.size() % 4) part += '=';
  auto decoded = Base64Decode(part);
  return decoded ? *decoded : std::string();
}

}  // namespace shoal::testing
