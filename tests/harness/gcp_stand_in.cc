#include "tests/harness/gcp_stand_in.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>

#include "ufs/azure/azure_auth.h"
#include "ufs/uri.h"

namespace shoal::testing {
namespace {

using nlohmann::json;
using WallClock = std::chrono::system_clock;

constexpr std::string_view kMetadataPrefix = "/computeMetadata/v1/";
constexpr std::string_view kProject = "shoal-stand-in";

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string RandomHex(size_t n) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (char& c : s) c = kHex[random() % 16];
  return s;
}

Pkey NewRsaKey() {
  Pkey key(EVP_RSA_gen(2048));
  if (!key) throw std::runtime_error("the GCP stand-in cannot generate an RSA key (OpenSSL EVP_RSA_gen)");
  return key;
}

std::string PrivatePem(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    throw std::runtime_error("the GCP stand-in cannot write its private key as PEM");
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::optional<std::string> Base64UrlDecode(std::string_view in) {
  std::string s(in);
  for (char& c : s) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (s.size() % 4 != 0) s += '=';
  auto out = Base64Decode(s);
  if (!out) return std::nullopt;
  return *out;
}

// application/x-www-form-urlencoded (or a query string) into fields.
std::map<std::string, std::string> ParseForm(std::string_view body) {
  std::map<std::string, std::string> fields;
  while (!body.empty()) {
    size_t amp = body.find('&');
    std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    size_t eq = pair.find('=');
    auto decode = [](std::string_view s) {
      std::string plus(s);
      for (char& c : plus) {
        if (c == '+') c = ' ';
      }
      return PercentDecode(plus).value_or(plus);
    };
    fields[decode(pair.substr(0, eq))] = eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1));
  }
  return fields;
}

net::HttpResponse Json(int status, const json& body) {
  return net::HttpResponse::Text(status, body.dump(), "application/json");
}

}  // namespace

struct GcpStandIn::Keys {
  Pkey key;  // the verifier uses only its public half
};

GcpStandIn::GcpStandIn() : keys_(std::make_shared<Keys>()) {
  keys_->key = NewRsaKey();
  private_key_pem_ = PrivatePem(keys_->key.get());
  key_id_ = RandomHex(40);
  client_email_ = "stand-in@" + std::string(kProject) + ".iam.gserviceaccount.com";
  client_id_ = RandomHex(12) + ".apps.googleusercontent.com";
  client_secret_ = "d-" + RandomHex(24);
  refresh_token_ = "1//" + RandomHex(48);

  net::Router r;
  auto metadata = [this](const net::HttpRequest& req, net::Responder res) { ServeMetadata(req, std::move(res)); };
  r.Add("GET", "/", metadata);
  r.Add("GET", std::string(kMetadataPrefix) + "project/project-id", metadata);
  // The node's account answers to "default" and to its email.
  for (const std::string& account : {std::string("default"), client_email_}) {
    r.Add("GET", std::string(kMetadataPrefix) + "instance/service-accounts/" + account + "/", metadata);
    r.Add("GET", std::string(kMetadataPrefix) + "instance/service-accounts/" + account + "/token", metadata);
  }
  r.Add("POST", "/token", [this](const net::HttpRequest& req, net::Responder res) { ServeToken(req, std::move(res)); });
  auto s = net::HttpServer::Bind({});
  if (!s) throw std::runtime_error("the GCP stand-in cannot listen: " + s.error().ToString());
  server_ = std::move(*s);
  std::vector<net::Router> routers;
  routers.push_back(std::move(r));
  server_->Serve(std::move(routers));
}

GcpStandIn::~GcpStandIn() {
  server_->Stop();
  server_->Wait();
  std::vector<net::Responder> held;
  {
    std::lock_guard lock(mu_);
    held.swap(held_);
  }
  held.clear();  // their clients are gone with the server
  server_.reset();
}

std::string GcpStandIn::host() const { return server_->address(); }
std::string GcpStandIn::token_uri() const { return "http://" + server_->address() + "/token"; }

std::string GcpStandIn::ServiceAccountJson() const {
  return json{{"type", "service_account"},
              {"project_id", kProject},
              {"private_key_id", key_id_},
              {"private_key", private_key_pem_},
              {"client_email", client_email_},
              {"client_id", "104" + RandomHex(8)},
              {"auth_uri", "https://accounts.google.com/o/oauth2/auth"},
              {"token_uri", token_uri()}}
      .dump(2);
}

std::string GcpStandIn::AuthorizedUserJson() const {
  return json{{"type", "authorized_user"},
              {"client_id", client_id_},
              {"client_secret", client_secret_},
              {"refresh_token", refresh_token_},
              {"token_uri", token_uri()}}
      .dump(2);
}

std::string GcpStandIn::NewRsaKeyPem() {
  Pkey key = NewRsaKey();
  return PrivatePem(key.get());
}

void GcpStandIn::SetLifetime(std::chrono::seconds lifetime) {
  std::lock_guard lock(mu_);
  lifetime_ = lifetime;
}

void GcpStandIn::SetFault(Endpoint endpoint, Fault fault) {
  std::lock_guard lock(mu_);
  (endpoint == Endpoint::kMetadata ? metadata_fault_ : token_fault_) = fault;
}

int GcpStandIn::metadata_requests() const {
  std::lock_guard lock(mu_);
  return metadata_requests_;
}

int GcpStandIn::token_requests() const {
  std::lock_guard lock(mu_);
  return token_requests_;
}

int GcpStandIn::issued_count() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(issued_.size());
}

GcpStandIn::Issued GcpStandIn::last_issued() const {
  std::lock_guard lock(mu_);
  return last_issued_;
}

std::string GcpStandIn::last_refusal() const {
  std::lock_guard lock(mu_);
  return last_refusal_;
}

bool GcpStandIn::Accepts(const std::string& token) const {
  std::lock_guard lock(mu_);
  auto it = issued_.find(token);
  return it != issued_.end() && it->second > WallClock::now();
}

// REQUIRES: mu_ held.
bool GcpStandIn::ApplyFault(Fault fault, net::Responder& responder) {
  switch (fault) {
    case Fault::kNone:
    case Fault::kExpired:  // applied when issuing
      return false;
    case Fault::kServerError:
      responder.Respond(Json(500, {{"error", "internal_failure"}, {"error_description", "stand-in fault: 500"}}));
      return true;
    case Fault::kHang: held_.push_back(std::move(responder)); return true;
    case Fault::kGarbage:
      responder.Respond(net::HttpResponse::Text(200, "<html><body>captive portal</body></html>", "text/html"));
      return true;
  }
  return false;
}

// REQUIRES: mu_ held.
net::HttpResponse GcpStandIn::Issue(std::string grant, std::string subject, std::string scope, std::string key_id) {
  Issued issued{.token = "",
                .grant = std::move(grant),
                .subject = std::move(subject),
                .scope = std::move(scope),
                .key_id = std::move(key_id)};
  bool expired = issued.grant == "metadata" ? metadata_fault_ == Fault::kExpired : token_fault_ == Fault::kExpired;
  int64_t expires_in = expired ? -60 : lifetime_.count();
  issued.token = "ya29.stand-in-" + std::to_string(next_token_++) + "-" + RandomHex(16);
  issued_[issued.token] = WallClock::now() + std::chrono::seconds(expires_in);
  last_issued_ = issued;
  return Json(200, {{"access_token", issued.token}, {"expires_in", expires_in}, {"token_type", "Bearer"}});
}

// REQUIRES: mu_ held.
net::HttpResponse GcpStandIn::Refuse(int status, std::string error, std::string description) {
  last_refusal_ = error + ": " + description;
  return Json(status, {{"error", std::move(error)}, {"error_description", std::move(description)}});
}

void GcpStandIn::ServeMetadata(const net::HttpRequest& req, net::Responder res) {
  std::lock_guard lock(mu_);
  std::string_view path = req.path();
  auto answer = [&](net::HttpResponse response) {
    response.headers.emplace_back("Metadata-Flavor", "Google");
    res.Respond(std::move(response));
  };
  if (path == "/") return answer(net::HttpResponse::Text(200, "computeMetadata/\n", "application/text"));
  bool token = path.ends_with("/token");
  if (token) ++metadata_requests_;
  const std::string* flavor = req.Header("Metadata-Flavor");
  if (!flavor || *flavor != "Google") {
    last_refusal_ = "metadata: no Metadata-Flavor: Google header";
    return answer(net::HttpResponse::Text(403, "Missing required header: Metadata-Flavor", "text/html"));
  }
  if (path.ends_with("/project-id"))
    return answer(net::HttpResponse::Text(200, std::string(kProject), "application/text"));
  auto query = ParseForm(req.query());
  if (!token) {  // the service account's description (google-auth reads it before the token)
    return answer(Json(200, {{"aliases", {"default"}},
                             {"email", client_email_},
                             {"scopes", {"https://www.googleapis.com/auth/cloud-platform"}}}));
  }
  if (ApplyFault(metadata_fault_, res)) return;
  answer(Issue("metadata", client_email_, query["scopes"]));
}

void GcpStandIn::ServeToken(const net::HttpRequest& req, net::Responder res) {
  std::lock_guard lock(mu_);
  ++token_requests_;
  if (ApplyFault(token_fault_, res)) return;
  auto form = ParseForm(req.body);
  const std::string& grant = form["grant_type"];

  if (grant == "refresh_token") {
    if (form["client_id"] != client_id_ || form["client_secret"] != client_secret_) {
      return res.Respond(Refuse(401, "invalid_client", "The OAuth client was not found."));
    }
    if (form["refresh_token"] != refresh_token_) {
      return res.Respond(Refuse(400, "invalid_grant", "Bad Request"));
    }
    return res.Respond(Issue("refresh_token", client_id_));
  }
  if (grant != "urn:ietf:params:oauth:grant-type:jwt-bearer") {
    return res.Respond(Refuse(400, "unsupported_grant_type", "Invalid grant_type: " + grant));
  }

  // RFC 7523: header.claims.signature, each base64url.
  const std::string& assertion = form["assertion"];
  size_t dot1 = assertion.find('.');
  size_t dot2 = dot1 == std::string::npos ? dot1 : assertion.find('.', dot1 + 1);
  if (dot2 == std::string::npos) return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: not three parts"));
  auto header_text = Base64UrlDecode(std::string_view(assertion).substr(0, dot1));
  auto claims_text = Base64UrlDecode(std::string_view(assertion).substr(dot1 + 1, dot2 - dot1 - 1));
  auto signature = Base64UrlDecode(std::string_view(assertion).substr(dot2 + 1));
  if (!header_text || !claims_text || !signature) {
    return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: a part is not base64url"));
  }
  json header = json::parse(*header_text, nullptr, false);
  json claims = json::parse(*claims_text, nullptr, false);
  if (!header.is_object() || !claims.is_object()) {
    return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: header or claims not a JSON object"));
  }
  if (header.value("alg", "") != "RS256") {
    return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: alg is not RS256"));
  }
  if (header.contains("kid") && header.value("kid", "") != key_id_) {
    return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: kid names no key of this service account"));
  }

  std::string_view signed_part = std::string_view(assertion).substr(0, dot2);
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  bool verified =
      ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, keys_->key.get()) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature->data()), signature->size(),
                       reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size()) == 1;
  if (!verified) return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT Signature."));

  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(WallClock::now().time_since_epoch()).count();
  if (claims.value("iss", "") != client_email_) {
    return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: iss is not this service account"));
  }
  if (claims.value("aud", "") != token_uri()) {
    return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: aud is not " + token_uri()));
  }
  if (!claims["iat"].is_number_integer() || !claims["exp"].is_number_integer()) {
    return res.Respond(Refuse(400, "invalid_grant", "Invalid JWT: iat or exp missing"));
  }
  int64_t iat = claims["iat"].get<int64_t>(), exp = claims["exp"].get<int64_t>();
  if (iat > now + 300 || exp <= now || exp - iat > 3600) {
    return res.Respond(Refuse(400, "invalid_grant",
                              "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
                              "timeframe. Check your iat and exp values in the JWT claim."));
  }
  res.Respond(Issue("jwt-bearer", claims.value("iss", ""), claims.value("scope", ""), header.value("kid", "")));
}

}  // namespace shoal::testing
