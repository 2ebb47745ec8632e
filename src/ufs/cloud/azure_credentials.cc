#include "ufs/cloud/azure_credentials.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ufs/cloud/token_http.h"
#include "ufs/uri.h"

namespace shoal::cloud {
namespace {

constexpr std::string_view kScope = "https://storage.azure.com/.default";
constexpr std::string_view kResource = "https://storage.azure.com/";
constexpr std::string_view kDefaultAuthority = "https://login.microsoftonline.com";
constexpr std::string_view kDefaultImdsHost = "http://169.254.169.254";
constexpr std::string_view kJwtBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
// How long the chain waits for instance metadata to show it exists.
constexpr std::chrono::milliseconds kImdsProbeTimeout{1'000};

std::string StripSlashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// "A, B and C"
std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

// The variables of `names` that are not set, as "A and B are not set" ("" when all are).
std::string Missing(const Env& env, std::initializer_list<const char*> names) {
  std::vector<std::string> missing;
  for (const char* n : names) {
    if (!env(n)) missing.emplace_back(n);
  }
  if (missing.empty()) return {};
  return Join(missing) + (missing.size() == 1 ? " is" : " are") + " not set";
}

// A tenant is a GUID or a domain: it goes into the token URL's path.
bool IsTenantId(std::string_view t) {
  if (t.empty() || t.size() > 256) return false;
  for (char c : t) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') return false;
  }
  return true;
}

// Client secret and workload identity: one token endpoint, two ways to prove
// who the client is.
class EntraTokenProvider : public Provider {
 public:
  struct Config {
    std::string tenant;
    std::string client_id;
    std::string authority;      // https://login.microsoftonline.com, no trailing '/'
    std::string client_secret;  // client-secret
    std::string token_file;     // workload-identity
  };
  explicit EntraTokenProvider(Config c) : c_(std::move(c)) {}

  std::string name() const override { return c_.token_file.empty() ? "client-secret" : "workload-identity"; }
  std::string detail() const override {
    std::string d = "tenant " + c_.tenant + ", client " + c_.client_id + " at " + c_.authority;
    if (!c_.token_file.empty()) d += ", token file " + c_.token_file;
    return d;
  }

  Result<Secret> Fetch() override {
    std::vector<std::pair<std::string, std::string>> form = {
        {"grant_type", "client_credentials"}, {"client_id", c_.client_id}, {"scope", std::string(kScope)}};
    if (c_.token_file.empty()) {
      form.emplace_back("client_secret", c_.client_secret);
    } else {
      auto assertion = ReadAssertion();
      if (!assertion) return Err(assertion.error());
      form.emplace_back("client_assertion_type", std::string(kJwtBearer));
      form.emplace_back("client_assertion", std::move(*assertion));
    }
    TokenCall call;
    call.method = "POST";
    call.url = c_.authority + "/" + c_.tenant + "/oauth2/v2.0/token";
    call.headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}};
    call.body = FormEncode(form);
    auto body = CallTokenEndpoint(name(), call);
    if (!body) return Err(body.error().code(), body.error().message() + "; " + Advice());
    auto token = ParseOAuthToken(name(), *body, WallClock::now());
    if (!token) return Err(token.error().code(), token.error().message() + " from " + call.url);
    return token;
  }

 private:
  std::string Advice() const {
    if (c_.token_file.empty()) {
      return "check AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (client secrets expire: make a new one "
             "in the app registration's Certificates & secrets) and AZURE_AUTHORITY_HOST";
    }
    return "check that the app or managed identity " + c_.client_id +
           " has a federated credential for this pod's service account (issuer: the cluster's OIDC issuer URL, "
           "subject: system:serviceaccount:NAMESPACE:NAME), and AZURE_TENANT_ID and AZURE_CLIENT_ID";
  }

  // The kubelet rewrites the file before the token in it expires: read it anew.
  Result<std::string> ReadAssertion() const {
    std::ifstream in(c_.token_file, std::ios::binary);
    if (!in) {
      return Err(Code::kNotFound, "workload-identity: cannot read the federated token file " + c_.token_file +
                                      " (AZURE_FEDERATED_TOKEN_FILE): " + std::strerror(errno) +
                                      "; check that the pod has the label azure.workload.identity/use: \"true\" "
                                      "and a service account annotated with the client id");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string jwt = ss.str();
    while (!jwt.empty() && std::isspace(static_cast<unsigned char>(jwt.back()))) jwt.pop_back();
    if (jwt.empty()) {
      return Err(Code::kInvalidArgument, "workload-identity: the federated token file " + c_.token_file +
                                             " is empty; the kubelet writes it when the pod starts: check the "
                                             "projected service account token volume");
    }
    return jwt;
  }

  Config c_;
};

// Managed identity: App Service's identity endpoint, or instance metadata.
class ManagedIdentityProvider : public Provider {
 public:
  struct Config {
    std::string identity_endpoint;  // App Service, Functions, Arc; "" for instance metadata
    std::string identity_header;
    std::string imds_host;  // http://169.254.169.254, no trailing '/'
    std::string client_id;  // user-assigned identity; "" for the system-assigned one
    bool probe = false;     // ask instance metadata once, quickly, whether it is there
  };
  explicit ManagedIdentityProvider(Config c) : c_(std::move(c)), probe_pending_(c_.probe) {}

  std::string name() const override { return "managed-identity"; }
  std::string detail() const override {
    std::string d = c_.identity_endpoint.empty() ? c_.imds_host + " (instance metadata)"
                                                 : c_.identity_endpoint + " (IDENTITY_ENDPOINT)";
    d += c_.client_id.empty() ? ", system-assigned identity" : ", client " + c_.client_id;
    return d;
  }

  Result<Secret> Fetch() override {
    TokenCall call;
    std::string query = "resource=" + PercentEncode(kResource, false);
    if (!c_.client_id.empty()) query += "&client_id=" + PercentEncode(c_.client_id, false);
    if (!c_.identity_endpoint.empty()) {
      call.url = c_.identity_endpoint + (c_.identity_endpoint.find('?') == std::string::npos ? "?" : "&") +
                 "api-version=2019-08-01&" + query;
      call.headers = {{"X-IDENTITY-HEADER", c_.identity_header}};
    } else {
      call.url = c_.imds_host + "/metadata/identity/oauth2/token?api-version=2018-02-01&" + query;
      call.headers = {{"Metadata", "true"}};
      if (probe_pending_) {
        if (auto st = Probe(call.url); !st.ok()) return Err(st);
        probe_pending_ = false;
      }
    }
    auto body = CallTokenEndpoint(name(), call);
    if (!body) return Err(body.error().code(), body.error().message() + "; " + Advice());
    auto token = ParseOAuthToken(name(), *body, WallClock::now());
    if (!token) return Err(token.error().code(), token.error().message() + " from " + detail());
    return token;
  }

 private:
  // Off Azure nothing answers at the metadata address: one request without
  // the Metadata header (which instance metadata refuses with 400) tells
  // within a second whether anything is there.
  Status Probe(const std::string& url) const {
    TokenCall ping;
    ping.url = url;
    ping.timeout = kImdsProbeTimeout;
    ping.attempts = 1;
    auto r = CallTokenEndpoint(name(), ping);
    if (r || (r.error().code() != Code::kUnavailable && r.error().code() != Code::kTimeout)) return {};
    return Status(Code::kUnavailable, "no instance metadata endpoint answered at " + c_.imds_host + " within " +
                                          std::to_string(kImdsProbeTimeout.count()) +
                                          " ms (not an Azure VM or AKS node)");
  }

  std::string Advice() const {
    if (!c_.identity_endpoint.empty()) {
      return "check that the app has a managed identity (Identity blade) and that IDENTITY_ENDPOINT and "
             "IDENTITY_HEADER are the ones the platform set";
    }
    return c_.client_id.empty()
               ? "assign a managed identity to this VM or node pool, or set AZURE_CLIENT_ID to a user-assigned one's "
                 "client id"
               : "check that the user-assigned identity with client id " + c_.client_id +
                     " (AZURE_CLIENT_ID) is assigned to this VM or node pool";
  }

  Config c_;
  bool probe_pending_;
};

EntraTokenProvider::Config EntraConfig(const Env& env) {
  EntraTokenProvider::Config c;
  c.tenant = env("AZURE_TENANT_ID").value_or("");
  c.client_id = env("AZURE_CLIENT_ID").value_or("");
  c.authority = StripSlashes(env("AZURE_AUTHORITY_HOST").value_or(std::string(kDefaultAuthority)));
  return c;
}

Status CheckEntraConfig(const EntraTokenProvider::Config& c) {
  if (!IsTenantId(c.tenant)) {
    return Status(Code::kInvalidArgument, "AZURE_TENANT_ID '" + c.tenant +
                                              "' is not a tenant id: use the directory (tenant) id, a GUID, or "
                                              "its domain such as contoso.onmicrosoft.com");
  }
  if (!c.authority.starts_with("https://") && !c.authority.starts_with("http://")) {
    return Status(Code::kInvalidArgument, "AZURE_AUTHORITY_HOST '" + c.authority +
                                              "' is not a URL: use e.g. https://login.microsoftonline.com");
  }
  return {};
}

Result<std::unique_ptr<Provider>> MakeClientSecret(const Env& env) {
  auto c = EntraConfig(env);
  c.client_secret = env("AZURE_CLIENT_SECRET").value_or("");
  if (auto st = CheckEntraConfig(c); !st.ok()) return Err(st);
  return std::unique_ptr<Provider>(std::make_unique<EntraTokenProvider>(std::move(c)));
}

Result<std::unique_ptr<Provider>> MakeWorkloadIdentity(const Env& env) {
  auto c = EntraConfig(env);
  c.token_file = env("AZURE_FEDERATED_TOKEN_FILE").value_or("");
  if (auto st = CheckEntraConfig(c); !st.ok()) return Err(st);
  return std::unique_ptr<Provider>(std::make_unique<EntraTokenProvider>(std::move(c)));
}

ManagedIdentityProvider::Config ManagedConfig(const Env& env) {
  ManagedIdentityProvider::Config c;
  auto endpoint = env("IDENTITY_ENDPOINT");
  auto header = env("IDENTITY_HEADER");
  if (endpoint && header) {
    c.identity_endpoint = *endpoint;
    c.identity_header = *header;
  }
  c.imds_host = StripSlashes(env("AZURE_POD_IDENTITY_AUTHORITY_HOST").value_or(std::string(kDefaultImdsHost)));
  c.client_id = env("AZURE_CLIENT_ID").value_or("");
  return c;
}

Result<std::unique_ptr<Provider>> MakeManagedIdentity(const Env& env, bool probe) {
  auto c = ManagedConfig(env);
  c.probe = probe && c.identity_endpoint.empty();
  return std::unique_ptr<Provider>(std::make_unique<ManagedIdentityProvider>(std::move(c)));
}

class FixedProvider : public Provider {
 public:
  FixedProvider(std::string name, std::string detail) : name_(std::move(name)), detail_(std::move(detail)) {}
  std::string name() const override { return name_; }
  std::string detail() const override { return detail_; }
  Result<Secret> Fetch() override { return Secret{}; }

 private:
  std::string name_;
  std::string detail_;
};

}  // namespace

std::vector<Candidate> AzureTokenCandidates(const Env& env) {
  std::vector<Candidate> out;
  out.push_back({"client-secret", Missing(env, {"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"}), false,
                 [env] { return MakeClientSecret(env); }});
  out.push_back({"workload-identity",
                 Missing(env, {"AZURE_FEDERATED_TOKEN_FILE", "AZURE_TENANT_ID", "AZURE_CLIENT_ID"}), false,
                 [env] { return MakeWorkloadIdentity(env); }});
  // Configured everywhere: instance metadata is tried, quickly, when nothing else is set.
  bool app_service = env("IDENTITY_ENDPOINT") && env("IDENTITY_HEADER");
  out.push_back({"managed-identity", "", !app_service, [env] { return MakeManagedIdentity(env, /*probe=*/true); }});
  return out;
}

Result<std::unique_ptr<Provider>> MakeAzureTokenProvider(std::string_view name, const Env& env) {
  auto need = [&](std::initializer_list<const char*> vars) -> Status {
    std::string missing = Missing(env, vars);
    if (missing.empty()) return {};
    std::vector<std::string> all(vars.begin(), vars.end());
    return Status(Code::kInvalidArgument, "credentials: " + std::string(name) + " needs " + Join(all) +
                                              " in the environment of the Shoal process; " + missing);
  };
  if (name == "client-secret") {
    if (auto st = need({"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"}); !st.ok()) return Err(st);
    return MakeClientSecret(env);
  }
  if (name == "workload-identity") {
    if (auto st = need({"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_FEDERATED_TOKEN_FILE"}); !st.ok()) return Err(st);
    return MakeWorkloadIdentity(env);
  }
  if (name == "managed-identity") return MakeManagedIdentity(env, /*probe=*/false);
  return Err(Code::kInvalidArgument, "credentials: '" + std::string(name) +
                                         "' is not an Entra ID provider: use client-secret, workload-identity "
                                         "or managed-identity");
}

Result<Chosen> ResolveAzureTokenCredentials(const std::map<std::string, std::string>& options, const Env& env) {
  auto it = options.find("credentials");
  std::string choice = it == options.end() || it->second.empty() ? "auto" : it->second;
  if (choice == "auto") {
    return RunChain("Azure Entra ID credentials", AzureTokenCandidates(env),
                    "Set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET for a service principal, or run "
                    "on AKS with workload identity, or on an Azure VM with a managed identity");
  }
  auto provider = MakeAzureTokenProvider(choice, env);
  if (!provider) return Err(provider.error());
  auto first = (*provider)->Fetch();
  if (!first) return Err(first.error());
  return Chosen{std::move(*provider), std::move(*first)};
}

std::unique_ptr<Provider> FixedAzureProvider(std::string name, std::string detail) {
  return std::make_unique<FixedProvider>(std::move(name), std::move(detail));
}

}  // namespace shoal::cloud
