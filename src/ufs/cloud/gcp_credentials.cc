#include "ufs/cloud/gcp_credentials.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "common/file_text.h"
#include "ufs/azure/azure_auth.h"
#include "ufs/cloud/token_http.h"

namespace shoal::cloud {
namespace {

using nlohmann::json;

constexpr std::string_view kDefaultScope = "https://www.googleapis.com/auth/devstorage.read_write";
constexpr std::string_view kGoogleTokenUri = "https://oauth2.googleapis.com/token";
constexpr std::string_view kJwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::string_view kDefaultMetadataHost = "metadata.google.internal";
constexpr std::string_view kMetadataTokenPath = "/computeMetadata/v1/instance/service-accounts/default/token";
constexpr int64_t kAssertionLifetimeSeconds = 3600;  // the most Google's token endpoint accepts

constexpr std::string_view kChainAdvice =
    "set GOOGLE_APPLICATION_CREDENTIALS (or mount option credentials_file) to a service account key file, "
    "run `gcloud auth application-default login`, give the mount HMAC keys (access_key_id and "
    "secret_access_key), or set `credentials: anonymous` for a public bucket";

// ---------------------------------------------------------------------------
// RS256 (RSASSA-PKCS1-v1_5 with SHA-256) over OpenSSL.

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

// The first queued OpenSSL error as text (it names a reason, never key
// bytes), clearing the queue so it does not surface in unrelated calls.
std::string TakeOpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no detail from OpenSSL";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// An encrypted key must not make OpenSSL prompt on the terminal.
int NoPassphrase(char*, int, int, void*) { return 0; }

Result<std::string> SignRs256(std::string_view private_key_pem, std::string_view data) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())));
  if (!bio) return Err(Code::kInternal, "RS256: out of memory reading the private key");
  std::unique_ptr<EVP_PKEY, PkeyFree> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  if (!key) {
    return Err(Code::kInvalidArgument,
               "private_key is not an unencrypted PEM private key (" + TakeOpenSslError() + ")");
  }
  if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
    return Err(Code::kInvalidArgument, "private_key is not an RSA key (RS256 needs one)");
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  size_t length = 0;
  auto bytes = reinterpret_cast<const unsigned char*>(data.data());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &length, bytes, data.size()) != 1) {
    return Err(Code::kInternal, "RS256 signing failed: " + TakeOpenSslError());
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length, bytes, data.size()) != 1) {
    return Err(Code::kInternal, "RS256 signing failed: " + TakeOpenSslError());
  }
  signature.resize(length);
  return signature;
}

std::string Base64Url(std::string_view bytes) {
  std::string s = Base64Encode(bytes);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

// ---------------------------------------------------------------------------
// Key files.

// A key file and what named it, for messages: "GOOGLE_APPLICATION_CREDENTIALS",
// "mount option credentials_file", "gcloud's well-known location".
struct KeyFileSource {
  std::string path;
  std::string named_by;
};

struct ServiceAccountKey {
  std::string path;
  std::string client_email, private_key, private_key_id, token_uri;
};
struct AuthorizedUserKey {
  std::string path;
  std::string client_id, client_secret, refresh_token, token_uri;
};
using KeyFile = std::variant<ServiceAccountKey, AuthorizedUserKey>;

// A string field of a key file; a missing or empty one is an error naming
// the file and the field (only when `required`).
Result<std::string> KeyField(const json& doc, const KeyFileSource& source, std::string_view type, const char* field,
                             bool required) {
  auto it = doc.find(field);
  if (it != doc.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
    return it->get<std::string>();
  }
  if (!required) return std::string();
  return Err(
      Code::kInvalidArgument,
      "Google key file " + source.path + " (from " + source.named_by + ", type " + std::string(type) +
          ") has no string field \"" + field + "\": " +
          (type == "service_account" ? "create a new key (gcloud iam service-accounts keys create) and point to it"
                                     : "run `gcloud auth application-default login` again"));
}

Result<KeyFile> LoadKeyFile(const KeyFileSource& source) {
  auto text = ReadFileText(source.path);
  if (!text) {
    return Err(text.error().code(), "Google key file " + source.path + " (from " + source.named_by +
                                        ") cannot be read: " + text.error().message() +
                                        "; check the path and that this user may read the file");
  }
  // No parse error detail: it would quote bytes of the file (the private key).
  json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return Err(Code::kInvalidArgument, "Google key file " + source.path + " (from " + source.named_by +
                                           ") is not a JSON object: download the key file again");
  }
  auto type = doc.find("type");
  if (type == doc.end() || !type->is_string()) {
    return Err(Code::kInvalidArgument, "Google key file " + source.path + " (from " + source.named_by +
                                           ") has no string field \"type\": Shoal reads \"service_account\" and "
                                           "\"authorized_user\" key files");
  }
  const std::string& kind = type->get_ref<const std::string&>();
  if (kind == "service_account") {
    ServiceAccountKey key;
    key.path = source.path;
    auto email = KeyField(doc, source, kind, "client_email", true);
    if (!email) return Err(email.error());
    auto pem = KeyField(doc, source, kind, "private_key", true);
    if (!pem) return Err(pem.error());
    auto token_uri = KeyField(doc, source, kind, "token_uri", true);
    if (!token_uri) return Err(token_uri.error());
    // Optional, as for google-auth: without it the JWT has no "kid".
    auto key_id = KeyField(doc, source, kind, "private_key_id", false);
    key.client_email = std::move(*email);
    key.private_key = std::move(*pem);
    key.private_key_id = std::move(*key_id);
    key.token_uri = std::move(*token_uri);
    return key;
  }
  if (kind == "authorized_user") {
    AuthorizedUserKey key;
    key.path = source.path;
    auto client_id = KeyField(doc, source, kind, "client_id", true);
    if (!client_id) return Err(client_id.error());
    auto client_secret = KeyField(doc, source, kind, "client_secret", true);
    if (!client_secret) return Err(client_secret.error());
    auto refresh_token = KeyField(doc, source, kind, "refresh_token", true);
    if (!refresh_token) return Err(refresh_token.error());
    auto token_uri = KeyField(doc, source, kind, "token_uri", false);
    key.client_id = std::move(*client_id);
    key.client_secret = std::move(*client_secret);
    key.refresh_token = std::move(*refresh_token);
    key.token_uri = token_uri->empty() ? std::string(kGoogleTokenUri) : std::move(*token_uri);
    return key;
  }
  std::string shown = kind.size() > 40 ? kind.substr(0, 40) + "..." : kind;
  return Err(Code::kInvalidArgument,
             "Google key file " + source.path + " (from " + source.named_by + ") has \"type\": \"" + shown +
                 "\"; Shoal reads \"service_account\" and \"authorized_user\" key files (for others, give the "
                 "mount HMAC keys or run on a node with a metadata server)");
}

// gcloud's application-default file, or nullopt when neither CLOUDSDK_CONFIG
// nor HOME says where it would be.
std::optional<std::string> WellKnownFile(const Env& env) {
  if (auto dir = env("CLOUDSDK_CONFIG")) return *dir + "/application_default_credentials.json";
  if (auto home = env("HOME")) return *home + "/.config/gcloud/application_default_credentials.json";
  return std::nullopt;
}

bool IsFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// ---------------------------------------------------------------------------
// Fetch helpers shared by the providers.

// The token in `body` (ParseOAuthToken refuses one that has already
// expired), or why not, naming the endpoint that answered.
Result<Secret> TokenFromAnswer(const std::string& who, std::string_view endpoint, std::string_view body,
                               WallClock::time_point now) {
  auto secret = ParseOAuthToken(who, body, now);
  if (!secret) {
    return Err(secret.error().code(), secret.error().message() + " (the answer of " + std::string(endpoint) + ")");
  }
  return secret;
}

// The endpoint's error, with what to do about it: `unreachable_hint` when it
// could not be reached, `refused_hint` when it refused.
Status WithHint(const Status& error, std::string_view unreachable_hint, std::string_view refused_hint) {
  std::string hint(refused_hint);
  if (error.message().find(": HTTP 5") != std::string::npos) {
    hint = "the endpoint failed on its side: try again later";
  } else if (error.code() == Code::kUnavailable || error.code() == Code::kTimeout) {
    hint = unreachable_hint;
  }
  return Status(error.code(), error.message() + "; " + hint);
}

// Scopes from mount option `scopes` (comma- or space-separated), or the default.
std::vector<std::string> ScopesOf(const std::map<std::string, std::string>& options) {
  std::vector<std::string> scopes;
  if (auto it = options.find("scopes"); it != options.end()) {
    std::string current;
    for (char c : it->second + ",") {
      if (c == ',' || c == ' ' || c == '\t' || c == '\n') {
        if (!current.empty()) scopes.push_back(std::move(current));
        current.clear();
      } else {
        current += c;
      }
    }
  }
  if (scopes.empty()) scopes.emplace_back(kDefaultScope);
  return scopes;
}

std::string Join(const std::vector<std::string>& parts, char separator) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

// ---------------------------------------------------------------------------
// The providers.

class ServiceAccountProvider final : public Provider {
 public:
  ServiceAccountProvider(ServiceAccountKey key, std::string scope) : key_(std::move(key)), scope_(std::move(scope)) {}

  std::string name() const override { return "service-account"; }
  std::string detail() const override { return "key file " + key_.path + " (client_email " + key_.client_email + ")"; }

  Result<Secret> Fetch() override {
    const std::string who = "service-account (key file " + key_.path + ")";
    auto now = WallClock::now();
    auto jwt =
        MakeServiceAccountJwt(key_.client_email, key_.private_key, key_.private_key_id, scope_, key_.token_uri, now);
    if (!jwt) {
      return Err(jwt.error().code(),
                 who + ": " + jwt.error().message() + ": create a new key (gcloud iam service-accounts keys create)");
    }
    TokenCall call;
    call.method = "POST";
    call.url = key_.token_uri;
    call.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
    call.body = FormEncode({{"grant_type", std::string(kJwtBearerGrant)}, {"assertion", *jwt}});
    auto body = CallTokenEndpoint(who, call);
    if (!body) {
      return Err(WithHint(body.error(),
                          "check that " + key_.token_uri + " is reachable from this host (proxy, firewall)",
                          "check that the key is not deleted or disabled (gcloud iam service-accounts keys list "
                          "--iam-account " +
                              key_.client_email + ") and that this host's clock is right"));
    }
    return TokenFromAnswer(who, "POST " + key_.token_uri, *body, now);
  }

 private:
  ServiceAccountKey key_;
  std::string scope_;  // space-separated, as the JWT claim wants it
};

class AuthorizedUserProvider final : public Provider {
 public:
  explicit AuthorizedUserProvider(AuthorizedUserKey key) : key_(std::move(key)) {}

  std::string name() const override { return "authorized-user"; }
  std::string detail() const override { return "key file " + key_.path + " (client_id " + key_.client_id + ")"; }

  Result<Secret> Fetch() override {
    const std::string who = "authorized-user (key file " + key_.path + ")";
    auto now = WallClock::now();
    TokenCall call;
    call.method = "POST";
    call.url = key_.token_uri;
    call.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
    call.body = FormEncode({{"grant_type", "refresh_token"},
                            {"client_id", key_.client_id},
                            {"client_secret", key_.client_secret},
                            {"refresh_token", key_.refresh_token}});
    auto body = CallTokenEndpoint(who, call);
    if (!body) {
      return Err(WithHint(body.error(),
                          "check that " + key_.token_uri + " is reachable from this host (proxy, firewall)",
                          "the login may have been revoked or expired: run `gcloud auth application-default login` "
                          "again"));
    }
    return TokenFromAnswer(who, "POST " + key_.token_uri, *body, now);
  }

 private:
  AuthorizedUserKey key_;
};

class MetadataServerProvider final : public Provider {
 public:
  // `probing`: until the server first answers, give up fast (off Google
  // Cloud it is absent, and the chain goes on); once it has, refreshes are
  // patient.
  MetadataServerProvider(std::string host, std::optional<std::string> scopes, bool probing)
      : host_(std::move(host)), scopes_(std::move(scopes)), answered_(!probing) {}

  std::string name() const override { return "metadata-server"; }
  std::string detail() const override { return "http://" + host_; }

  Result<Secret> Fetch() override {
    const std::string who = "metadata-server (http://" + host_ + ")";
    auto now = WallClock::now();
    TokenCall call;
    call.url = "http://" + host_ + std::string(kMetadataTokenPath);
    if (scopes_) call.url += "?" + FormEncode({{"scopes", *scopes_}});
    call.headers = {{"Metadata-Flavor", "Google"}};
    if (!answered_.load()) {
      call.timeout = std::chrono::milliseconds(2'000);
      call.attempts = 1;
    }
    auto body = CallTokenEndpoint(who, call);
    if (!body) {
      return Err(WithHint(
          body.error(),
          "expected off Google Cloud; on GCE or GKE, check that http://" + host_ + " is reachable from this host",
          "check the node's service account (on GKE, the Workload Identity binding of the pod's "
          "Kubernetes service account)"));
    }
    auto secret = TokenFromAnswer(who, "GET " + call.url, *body, now);
    if (secret) answered_.store(true);
    return secret;
  }

 private:
  std::string host_;
  std::optional<std::string> scopes_;  // comma-separated; nullopt: the node's own
  std::atomic<bool> answered_;
};

class AnonymousProvider final : public Provider {
 public:
  std::string name() const override { return "anonymous"; }
  std::string detail() const override { return "no token (public buckets only)"; }
  Result<Secret> Fetch() override { return Secret{}; }
};

// ---------------------------------------------------------------------------
// Resolution.

std::string MetadataHost(const Env& env) {
  std::optional<std::string> host = env("GCE_METADATA_HOST");
  if (!host) host = env("GCE_METADATA_ROOT");  // older google-auth's name
  std::string h = host.value_or(std::string(kDefaultMetadataHost));
  if (h.starts_with("http://")) h.erase(0, 7);
  while (!h.empty() && h.back() == '/') h.pop_back();
  return h;
}

std::unique_ptr<Provider> ProviderFor(KeyFile key, const std::string& scope) {
  if (auto* sa = std::get_if<ServiceAccountKey>(&key)) {
    return std::make_unique<ServiceAccountProvider>(std::move(*sa), scope);
  }
  return std::make_unique<AuthorizedUserProvider>(std::move(std::get<AuthorizedUserKey>(key)));
}

// The key file a mount names explicitly: option credentials_file, else
// GOOGLE_APPLICATION_CREDENTIALS; nullopt when neither.
std::optional<KeyFileSource> ExplicitKeyFile(const std::map<std::string, std::string>& options, const Env& env) {
  if (auto it = options.find("credentials_file"); it != options.end() && !it->second.empty()) {
    return KeyFileSource{it->second, "mount option credentials_file"};
  }
  if (auto path = env("GOOGLE_APPLICATION_CREDENTIALS")) return KeyFileSource{*path, "GOOGLE_APPLICATION_CREDENTIALS"};
  return std::nullopt;
}

Result<Chosen> FetchFirst(std::unique_ptr<Provider> provider) {
  auto first = provider->Fetch();
  if (!first) return Err(first.error());
  return Chosen{std::move(provider), std::move(*first)};
}

// credentials: service-account | authorized-user: that type of key file only.
Result<Chosen> NamedKeyFileProvider(std::string_view mode, const std::map<std::string, std::string>& options,
                                    const Env& env, const std::string& scope) {
  std::optional<KeyFileSource> source = ExplicitKeyFile(options, env);
  if (!source) {
    auto well_known = WellKnownFile(env);
    if (!well_known || !IsFile(*well_known)) {
      return Err(Code::kPermissionDenied,
                 "credentials: " + std::string(mode) +
                     " needs a key file: set mount option credentials_file or "
                     "GOOGLE_APPLICATION_CREDENTIALS (there is no file at " +
                     well_known.value_or("~/.config/gcloud/application_default_credentials.json") + ")");
    }
    source = KeyFileSource{*well_known, "gcloud's well-known location"};
  }
  auto key = LoadKeyFile(*source);
  if (!key) return Err(key.error());
  bool is_service_account = std::holds_alternative<ServiceAccountKey>(*key);
  if (is_service_account != (mode == "service-account")) {
    return Err(Code::kInvalidArgument,
               "credentials: " + std::string(mode) + ", but Google key file " + source->path + " (from " +
                   source->named_by + ") is of type " + (is_service_account ? "service_account" : "authorized_user") +
                   ": set `credentials: " + (is_service_account ? "service-account" : "authorized-user") +
                   "` (or auto), or point credentials_file at another file");
  }
  return FetchFirst(ProviderFor(std::move(*key), scope));
}

Result<Chosen> DefaultChain(const std::map<std::string, std::string>& options, const Env& env, const std::string& scope,
                            const std::optional<std::string>& metadata_scopes) {
  std::vector<Candidate> candidates;

  std::optional<KeyFileSource> explicit_file = ExplicitKeyFile(options, env);
  candidates.push_back({.name = "key-file",
                        .not_configured = explicit_file ? "" : "GOOGLE_APPLICATION_CREDENTIALS not set",
                        .make = [explicit_file, scope]() -> Result<std::unique_ptr<Provider>> {
                          auto key = LoadKeyFile(*explicit_file);
                          if (!key) return Err(key.error());
                          return ProviderFor(std::move(*key), scope);
                        }});

  std::optional<std::string> well_known = WellKnownFile(env);
  std::string gcloud_missing;
  if (!well_known) {
    gcloud_missing = "neither CLOUDSDK_CONFIG nor HOME is set";
  } else if (!IsFile(*well_known)) {
    gcloud_missing = "no file at " + *well_known;
  }
  candidates.push_back({.name = "gcloud-login",
                        .not_configured = gcloud_missing,
                        .make = [well_known, scope]() -> Result<std::unique_ptr<Provider>> {
                          auto key = LoadKeyFile({*well_known, "gcloud's well-known location"});
                          if (!key) return Err(key.error());
                          return ProviderFor(std::move(*key), scope);
                        }});

  std::string host = MetadataHost(env);
  candidates.push_back({.name = "metadata-server",
                        .not_configured = "",
                        .probe = true,
                        .make = [host, metadata_scopes]() -> Result<std::unique_ptr<Provider>> {
                          return std::unique_ptr<Provider>(
                              std::make_unique<MetadataServerProvider>(host, metadata_scopes, /*probing=*/true));
                        }});

  return RunChain("Google Cloud Storage credentials", std::move(candidates), kChainAdvice);
}

}  // namespace

Result<std::string> MakeServiceAccountJwt(std::string_view client_email, std::string_view private_key_pem,
                                          std::string_view key_id, std::string_view scope, std::string_view audience,
                                          WallClock::time_point now) {
  nlohmann::ordered_json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key_id.empty()) header["kid"] = std::string(key_id);
  int64_t iat = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  nlohmann::ordered_json claims = {{"iss", std::string(client_email)}};
  if (!scope.empty()) claims["scope"] = std::string(scope);
  claims["aud"] = std::string(audience);
  claims["iat"] = iat;
  claims["exp"] = iat + kAssertionLifetimeSeconds;
  // Invalid UTF-8 in a field is replaced, not thrown on: the endpoint then refuses it.
  auto dump = [](const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  std::string signing_input = Base64Url(dump(header)) + "." + Base64Url(dump(claims));
  auto signature = SignRs256(private_key_pem, signing_input);
  if (!signature) return Err(signature.error());
  return signing_input + "." + Base64Url(*signature);
}

Result<Chosen> ResolveGoogleCredentials(const std::map<std::string, std::string>& options, const Env& env) {
  std::string mode = "auto";
  if (auto it = options.find("credentials"); it != options.end() && !it->second.empty()) mode = it->second;
  std::vector<std::string> scopes = ScopesOf(options);
  std::string jwt_scope = Join(scopes, ' ');
  // The metadata server is asked for scopes only when the mount names them.
  std::optional<std::string> metadata_scopes;
  if (options.contains("scopes")) metadata_scopes = Join(scopes, ',');

  if (mode == "auto") return DefaultChain(options, env, jwt_scope, metadata_scopes);
  if (mode == "service-account" || mode == "authorized-user") {
    return NamedKeyFileProvider(mode, options, env, jwt_scope);
  }
  if (mode == "metadata") {
    return FetchFirst(std::make_unique<MetadataServerProvider>(MetadataHost(env), metadata_scopes, false));
  }
  if (mode == "anonymous") return Chosen{std::make_unique<AnonymousProvider>(), Secret{}};
  return Err(Code::kInvalidArgument, "mount option credentials: '" + mode +
                                         "' is not one of auto, service-account, authorized-user, metadata, "
                                         "anonymous (or give HMAC keys access_key_id and secret_access_key)");
}

}  // namespace shoal::cloud
