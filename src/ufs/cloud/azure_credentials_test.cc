// Entra ID providers against the EntraStandIn: each provider, the auto
// chain's precedence, each failure's message (never with a secret in it),
// named providers, a CredentialCache refreshing a short-lived token, and the
// Blob client taking the current token for every request.
#include "ufs/cloud/azure_credentials.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "common/config.h"
#include "net/http_server.h"
#include "tests/harness/entra_stand_in.h"
#include "tests/harness/harness_util.h"
#include "ufs/azure/azure_client.h"
#include "ufs/http/http_transport.h"
#include "ufs/uri.h"

namespace shoal::cloud {
namespace {

using shoal::testing::EntraStandIn;
using shoal::testing::WaitFor;
using namespace std::chrono_literals;

constexpr const char* kTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
constexpr const char* kClient = "0f3c2a1e-5b6d-4e7f-8a9b-0c1d2e3f4a5b";
constexpr const char* kSecret = "Xq8~client.SECRET-never-logged";
constexpr const char* kAssertion = "eyJhbGciOiJSUzI1NiJ9.federated-ASSERTION-never-logged.sig";
constexpr const char* kIdentityHeader = "identity-HEADER-never-logged";
// Nothing listens on port 1: instance metadata is absent there, at once.
constexpr const char* kNoImds = "http://127.0.0.1:1";

class EntraCredentials : public ::testing::Test {
 protected:
  EntraCredentials() {
    entra_.SetClientSecret(kClient, kSecret);
    entra_.SetFederatedAssertion(kClient, kAssertion);
    entra_.SetIdentityHeader(kIdentityHeader);
    auto dir = shoal::testing::MakeTempDir("entra", "the federated token file");
    if (!dir) ADD_FAILURE() << dir.error().ToString();
    dir_ = dir ? *dir : "/tmp";
    token_file_ = dir_ + "/azure-identity-token";
    WriteTokenFile(kAssertion);
  }
  ~EntraCredentials() override { std::filesystem::remove_all(dir_); }

  void WriteTokenFile(const std::string& jwt) { std::ofstream(token_file_, std::ios::trunc) << jwt << "\n"; }

  // Each provider's variables, pointed at the stand-in.
  std::map<std::string, std::string> ServicePrincipal() const {
    return {{"AZURE_TENANT_ID", kTenant},
            {"AZURE_CLIENT_ID", kClient},
            {"AZURE_CLIENT_SECRET", kSecret},
            {"AZURE_AUTHORITY_HOST", entra_.url()},
            {"AZURE_POD_IDENTITY_AUTHORITY_HOST", kNoImds}};
  }
  std::map<std::string, std::string> Workload() const {
    return {{"AZURE_TENANT_ID", kTenant},
            {"AZURE_CLIENT_ID", kClient},
            {"AZURE_FEDERATED_TOKEN_FILE", token_file_},
            {"AZURE_AUTHORITY_HOST", entra_.url()},
            {"AZURE_POD_IDENTITY_AUTHORITY_HOST", kNoImds}};
  }
  std::map<std::string, std::string> Imds() const { return {{"AZURE_POD_IDENTITY_AUTHORITY_HOST", entra_.url()}}; }

  static Env EnvOf(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
      auto it = vars.find(std::string(name));
      if (it == vars.end() || it->second.empty()) return std::nullopt;
      return it->second;
    };
  }
  static Result<Chosen> Resolve(std::string choice, std::map<std::string, std::string> vars) {
    return ResolveAzureTokenCredentials({{"credentials", std::move(choice)}}, EnvOf(std::move(vars)));
  }

  // No secret of the test may appear in `text`.
  static void ExpectNoSecret(const std::string& text) {
    for (const char* s : {kSecret, kAssertion, kIdentityHeader}) {
      EXPECT_EQ(text.find(s), std::string::npos) << "a secret leaked into: " << text;
    }
  }

  EntraStandIn entra_{kTenant};
  std::string dir_;
  std::string token_file_;
};

TEST_F(EntraCredentials, ClientSecretGetsAStorageToken) {
  entra_.SetLifetime(3600s);
  auto c = Resolve("client-secret", ServicePrincipal());
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "client-secret");
  EXPECT_NE(c->provider->detail().find(kTenant), std::string::npos) << c->provider->detail();
  EXPECT_NE(c->provider->detail().find(kClient), std::string::npos) << c->provider->detail();
  ExpectNoSecret(c->provider->detail());
  EXPECT_EQ(c->first.bearer_token, entra_.last_token());
  std::string claims = EntraStandIn::ClaimsOf(c->first.bearer_token);
  EXPECT_NE(claims.find("\"aud\":\"https://storage.azure.com\""), std::string::npos) << claims;
  EXPECT_NE(claims.find("\"iss\":\"https://sts.windows.net/" + std::string(kTenant) + "/\""), std::string::npos);
  auto left = c->first.expires - WallClock::now();
  EXPECT_GT(left, 3500s);
  EXPECT_LE(left, 3600s);
  EXPECT_EQ(entra_.requests().token, 1);
}

TEST_F(EntraCredentials, WrongClientSecretIsRefusedWithoutEchoingIt) {
  auto vars = ServicePrincipal();
  vars["AZURE_CLIENT_SECRET"] = "Wrong~SECRET-also-never-logged";
  auto c = Resolve("client-secret", vars);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), Code::kPermissionDenied) << c.error().ToString();
  const std::string& m = c.error().message();
  EXPECT_NE(m.find("client-secret"), std::string::npos) << m;
  EXPECT_NE(m.find("AADSTS7000215"), std::string::npos) << "Entra's own reason: " << m;
  EXPECT_NE(m.find("AZURE_CLIENT_SECRET"), std::string::npos) << "what to check: " << m;
  EXPECT_EQ(m.find("Wrong~SECRET"), std::string::npos) << m;
  ExpectNoSecret(m);
}

TEST_F(EntraCredentials, UnknownTenantAndBadTenantId) {
  auto vars = ServicePrincipal();
  vars["AZURE_TENANT_ID"] = "contoso.onmicrosoft.com";
  auto unknown = Resolve("client-secret", vars);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("AADSTS90002"), std::string::npos) << unknown.error().message();
  vars["AZURE_TENANT_ID"] = "../../evil?x=";
  auto bad = Resolve("client-secret", vars);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("is not a tenant id"), std::string::npos) << bad.error().message();
}

TEST_F(EntraCredentials, WorkloadIdentityRereadsTheTokenFileAtEveryFetch) {
  auto c = Resolve("workload-identity", Workload());
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "workload-identity");
  EXPECT_NE(c->provider->detail().find(token_file_), std::string::npos) << c->provider->detail();
  ExpectNoSecret(c->provider->detail());
  // The kubelet rotates the projected token: the next fetch must send the new one.
  const std::string rotated = "eyJhbGciOiJSUzI1NiJ9.ROTATED-assertion.sig";
  entra_.SetFederatedAssertion(kClient, rotated);
  WriteTokenFile(rotated);
  auto again = c->provider->Fetch();
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_NE(again->bearer_token, c->first.bearer_token);
  // A stale file (the identity's federated credential no longer matches) is refused.
  WriteTokenFile(kAssertion);
  auto stale = c->provider->Fetch();
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), Code::kPermissionDenied);
  EXPECT_NE(stale.error().message().find("federated credential"), std::string::npos) << stale.error().message();
  ExpectNoSecret(stale.error().message());
  EXPECT_EQ(stale.error().message().find("ROTATED"), std::string::npos);
}

TEST_F(EntraCredentials, WorkloadIdentityWithoutItsTokenFileNamesIt) {
  std::filesystem::remove(token_file_);
  auto c = Resolve("workload-identity", Workload());
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find(token_file_), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("AZURE_FEDERATED_TOKEN_FILE"), std::string::npos);
  EXPECT_EQ(entra_.requests().token, 0) << "nothing to send without the assertion";
}

TEST_F(EntraCredentials, ManagedIdentityFromInstanceMetadata) {
  auto c = Resolve("managed-identity", Imds());
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "managed-identity");
  EXPECT_NE(c->provider->detail().find(entra_.url()), std::string::npos) << c->provider->detail();
  EXPECT_NE(EntraStandIn::ClaimsOf(c->first.bearer_token).find("\"appid\":\"system-assigned\""), std::string::npos);
  EXPECT_GT(c->first.expires, WallClock::now() + 3000s);
  EXPECT_EQ(entra_.requests().imds, 1) << "a named provider does not probe first";
}

TEST_F(EntraCredentials, UserAssignedIdentityIsPickedByClientId) {
  auto vars = Imds();
  vars["AZURE_CLIENT_ID"] = kClient;
  auto absent = Resolve("managed-identity", vars);
  ASSERT_FALSE(absent) << "the stand-in has no user-assigned identity yet";
  EXPECT_NE(absent.error().message().find("Identity not found"), std::string::npos) << absent.error().message();
  EXPECT_NE(absent.error().message().find("AZURE_CLIENT_ID"), std::string::npos) << absent.error().message();
  entra_.SetUserAssignedClientId(kClient);
  auto c = Resolve("managed-identity", vars);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_NE(c->provider->detail().find(kClient), std::string::npos);
  EXPECT_NE(EntraStandIn::ClaimsOf(c->first.bearer_token).find(kClient), std::string::npos);
}

TEST_F(EntraCredentials, StandInInstanceMetadataNeedsTheMetadataHeader) {
  HttpRequest req;
  req.url = entra_.url() +
            "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F";
  auto without = PerformHttp(req);
  ASSERT_TRUE(without) << without.error().ToString();
  EXPECT_EQ(without->status, 400);
  req.headers = {{"Metadata", "true"}};
  auto with = PerformHttp(req);
  ASSERT_TRUE(with) << with.error().ToString();
  EXPECT_EQ(with->status, 200) << with->body;
}

TEST_F(EntraCredentials, ManagedIdentityFromTheAppServiceEndpoint) {
  std::map<std::string, std::string> vars = {{"IDENTITY_ENDPOINT", entra_.identity_endpoint()},
                                             {"IDENTITY_HEADER", kIdentityHeader},
                                             {"AZURE_POD_IDENTITY_AUTHORITY_HOST", kNoImds}};
  entra_.SetLifetime(1800s);
  auto c = Resolve("auto", vars);  // configured, so no probe of instance metadata
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "managed-identity");
  EXPECT_NE(c->provider->detail().find("IDENTITY_ENDPOINT"), std::string::npos) << c->provider->detail();
  ExpectNoSecret(c->provider->detail());
  auto left = c->first.expires - WallClock::now();  // from expires_on: App Service gives no expires_in
  EXPECT_GT(left, 1700s);
  EXPECT_LE(left, 1800s);
  EXPECT_EQ(entra_.requests().app_service, 1);
  EXPECT_EQ(entra_.requests().imds, 0);

  vars["IDENTITY_HEADER"] = "wrong-HEADER-never-logged";
  auto wrong = Resolve("managed-identity", vars);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), Code::kPermissionDenied) << wrong.error().ToString();
  EXPECT_NE(wrong.error().message().find("IDENTITY_HEADER"), std::string::npos) << wrong.error().message();
  EXPECT_EQ(wrong.error().message().find("wrong-HEADER"), std::string::npos) << wrong.error().message();
}

TEST_F(EntraCredentials, AutoFollowsDefaultAzureCredentialsOrder) {
  // Everything set: the service principal's secret wins.
  auto all = ServicePrincipal();
  all.merge(Workload());
  all["AZURE_POD_IDENTITY_AUTHORITY_HOST"] = entra_.url();
  auto first = Resolve("auto", all);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->provider->name(), "client-secret");
  // Without the secret: workload identity.
  all.erase("AZURE_CLIENT_SECRET");
  auto second = Resolve("auto", all);
  ASSERT_TRUE(second) << second.error().ToString();
  EXPECT_EQ(second->provider->name(), "workload-identity");
  // Without the token file either: managed identity, found by its probe.
  all.erase("AZURE_FEDERATED_TOKEN_FILE");
  all.erase("AZURE_CLIENT_ID");
  auto third = Resolve("auto", all);
  ASSERT_TRUE(third) << third.error().ToString();
  EXPECT_EQ(third->provider->name(), "managed-identity");
  EXPECT_EQ(entra_.requests().imds, 2) << "the probe (no Metadata header), then the token";
  EXPECT_EQ(entra_.requests().token, 2);
}

TEST_F(EntraCredentials, AutoWithNothingListsEveryProviderAndWhatToDo) {
  auto c = Resolve("auto", {{"AZURE_POD_IDENTITY_AUTHORITY_HOST", kNoImds}, {"AZURE_TENANT_ID", kTenant}});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), Code::kPermissionDenied);
  const std::string& m = c.error().message();
  EXPECT_NE(m.find("client-secret: AZURE_CLIENT_ID and AZURE_CLIENT_SECRET are not set"), std::string::npos) << m;
  EXPECT_NE(m.find("workload-identity: AZURE_FEDERATED_TOKEN_FILE and AZURE_CLIENT_ID are not set"), std::string::npos)
      << m;
  EXPECT_NE(m.find("managed-identity: no instance metadata endpoint answered at " + std::string(kNoImds)),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("Set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET"), std::string::npos) << m;
}

TEST_F(EntraCredentials, AutoGivesUpOnSilentInstanceMetadataWithinSeconds) {
  entra_.SetFault(EntraStandIn::Fault::kHang);
  auto start = std::chrono::steady_clock::now();
  auto c = Resolve("auto", Imds());
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), Code::kPermissionDenied) << c.error().ToString();
  EXPECT_NE(c.error().message().find("no instance metadata endpoint answered"), std::string::npos)
      << c.error().message();
  EXPECT_LT(took, 15s) << "the probe waits a second, not a request's full timeout";
}

TEST_F(EntraCredentials, AConfiguredProviderThatFailsStopsTheChain) {
  auto vars = ServicePrincipal();
  vars["AZURE_CLIENT_SECRET"] = "not-the-secret";
  vars["AZURE_POD_IDENTITY_AUTHORITY_HOST"] = entra_.url();  // would work, but comes later
  auto c = Resolve("auto", vars);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), Code::kPermissionDenied);
  EXPECT_NE(c.error().message().find("the client-secret provider is configured here but failed"), std::string::npos)
      << c.error().message();
  EXPECT_EQ(entra_.requests().imds, 0);
}

TEST_F(EntraCredentials, EachFaultOfTheTokenEndpointHasAClearMessage) {
  entra_.SetFault(EntraStandIn::Fault::kServerError);
  auto busy = Resolve("client-secret", ServicePrincipal());
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code(), Code::kUnavailable) << busy.error().ToString();
  EXPECT_NE(busy.error().message().find("HTTP 500"), std::string::npos) << busy.error().message();
  EXPECT_NE(busy.error().message().find(entra_.url()), std::string::npos) << "names the endpoint";
  EXPECT_EQ(entra_.requests().token, 3) << "5xx is retried";

  entra_.SetFault(EntraStandIn::Fault::kGarbage);
  auto garbage = Resolve("client-secret", ServicePrincipal());
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code(), Code::kIo);
  EXPECT_NE(garbage.error().message().find("no access_token"), std::string::npos) << garbage.error().message();
  EXPECT_NE(garbage.error().message().find("client-secret"), std::string::npos) << garbage.error().message();

  entra_.SetFault(EntraStandIn::Fault::kExpired);
  for (const auto& vars : {ServicePrincipal(), Imds()}) {
    auto expired = Resolve(vars.contains("AZURE_CLIENT_SECRET") ? "client-secret" : "managed-identity", vars);
    ASSERT_FALSE(expired);
    EXPECT_NE(expired.error().message().find("expired"), std::string::npos) << expired.error().message();
    EXPECT_NE(expired.error().message().find("clock"), std::string::npos) << expired.error().message();
    ExpectNoSecret(expired.error().message());
  }
}

TEST_F(EntraCredentials, NamedProvidersSayWhatTheyLack) {
  auto wi = Resolve("workload-identity", ServicePrincipal());
  ASSERT_FALSE(wi);
  EXPECT_EQ(wi.error().code(), Code::kInvalidArgument);
  EXPECT_NE(wi.error().message().find("AZURE_FEDERATED_TOKEN_FILE is not set"), std::string::npos)
      << wi.error().message();
  auto cs = Resolve("client-secret", Workload());
  ASSERT_FALSE(cs);
  EXPECT_NE(cs.error().message().find("AZURE_CLIENT_SECRET is not set"), std::string::npos) << cs.error().message();
  auto other = Resolve("shared-key", ServicePrincipal());
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("not an Entra ID provider"), std::string::npos);
  EXPECT_EQ(entra_.requests().total(), 0);
}

TEST_F(EntraCredentials, CacheRefreshesAShortLivedToken) {
  entra_.SetLifetime(3s);  // refreshed after half of it
  auto c = Resolve("client-secret", ServicePrincipal());
  ASSERT_TRUE(c) << c.error().ToString();
  const std::string first = c->first.bearer_token;
  auto cache = CredentialCache::Start(std::move(c->provider), {.mount = "/azure-refresh"}, std::move(c->first));
  ASSERT_TRUE(cache) << cache.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return entra_.requests().token >= 3; }, 60s)) << "no refresh within a minute";
  auto now = (*cache)->Current();
  ASSERT_TRUE(now) << now.error().ToString();
  EXPECT_NE((*now)->bearer_token, first);
  EXPECT_GT((*now)->expires, WallClock::now());
  auto info = (*cache)->info();
  EXPECT_EQ(info.provider, "client-secret");
  EXPECT_GE(info.refreshes, 1u);
  ExpectNoSecret((*cache)->Describe());
}

// The Blob client sends "Authorization: Bearer <the cache's current token>"
// on every attempt, with an x-ms-version that takes bearer tokens.
TEST_F(EntraCredentials, BlobClientSendsTheCurrentTokenOnEveryAttempt) {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;  // (Authorization, x-ms-version)
  net::Router blob;
  blob.SetFallback([&](const net::HttpRequest& req, net::Responder res) {
    std::lock_guard lock(mu);
    const std::string* auth = req.Header("Authorization");
    const std::string* version = req.Header("x-ms-version");
    seen.emplace_back(auth ? *auth : "", version ? *version : "");
    res.Respond(net::HttpResponse::Text(seen.size() == 1 ? 503 : 200, "", "application/xml"));
  });
  auto server = net::HttpServer::Bind({});
  ASSERT_TRUE(server) << server.error().ToString();
  std::vector<net::Router> routers;
  routers.push_back(std::move(blob));
  (*server)->Serve(std::move(routers));

  ::setenv("AZURE_TENANT_ID", kTenant, 1);
  ::setenv("AZURE_CLIENT_ID", kClient, 1);
  ::setenv("AZURE_CLIENT_SECRET", kSecret, 1);
  ::setenv("AZURE_AUTHORITY_HOST", entra_.url().c_str(), 1);
  MountConfig m;
  m.path = "/bearer";
  m.ufs = "az://ctr/p/";
  m.options = {{"endpoint", "http://" + (*server)->address() + "/acct"}, {"credentials", "client-secret"}};
  entra_.SetLifetime(3s);
  auto uri = ParseUfsUri(m.ufs);
  ASSERT_TRUE(uri);
  auto settings = ParseAzureSettings(*uri, m, ProcessEnv());
  for (const char* v : {"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_AUTHORITY_HOST"}) {
    ::unsetenv(v);
  }
  ASSERT_TRUE(settings) << settings.error().ToString();
  EXPECT_EQ(settings->auth, AzureAuth::kBearer);
  EXPECT_EQ(settings->creds.account, "acct");
  ASSERT_NE(settings->credentials, nullptr);
  EXPECT_EQ(settings->credentials->info().provider, "client-secret");
  AzureClient client(std::move(*settings));

  HttpRequest req;
  req.url = client.BlobUrl("p/x");
  auto r = client.Send(req);  // 503, then 200
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  ASSERT_TRUE(WaitFor([&] { return entra_.requests().token >= 2; }, 60s)) << "no refresh within a minute";
  ASSERT_TRUE(WaitFor([&] { return client.settings().credentials->info().refreshes >= 1; }, 60s));
  auto later = client.Send(req);
  ASSERT_TRUE(later) << later.error().ToString();
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 3u);
  for (const auto& [auth, version] : seen) {
    EXPECT_TRUE(auth.starts_with("Bearer ey")) << auth;
    EXPECT_GE(version, "2017-11-09");
  }
  EXPECT_EQ(seen[0].first, seen[1].first) << "a retry within the token's life reuses it";
  EXPECT_NE(seen[2].first, seen[0].first) << "after a refresh the new token is sent";
}

}  // namespace
}  // namespace shoal::cloud
