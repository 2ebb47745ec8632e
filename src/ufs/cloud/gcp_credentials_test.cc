// Google Application Default Credentials against the GCP stand-in (metadata
// server and OAuth token endpoint, from Google's docs): each provider, the
// chain's precedence, every failure mode's message, the named providers, a
// CredentialCache refreshing a short-lived token, and a cross-check with
// Debian's google-auth (the reference client) on the same stand-in and files.
#include "ufs/cloud/gcp_credentials.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_text.h"
#include "common/subprocess.h"
#include "tests/harness/gcp_stand_in.h"
#include "tests/harness/harness_util.h"
#include "ufs/azure/azure_auth.h"
#include "ufs/http/http_transport.h"

namespace shoal::cloud {
namespace {

using namespace std::chrono_literals;
using shoal::testing::GcpStandIn;
using Fault = GcpStandIn::Fault;
using Endpoint = GcpStandIn::Endpoint;
using Options = std::map<std::string, std::string>;

constexpr std::string_view kDefaultScope = "https://www.googleapis.com/auth/devstorage.read_write";
// Nothing listens on port 1: the metadata server is "absent" at once.
constexpr std::string_view kNoMetadata = "127.0.0.1:1";

Env EnvOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

std::string Base64UrlDecode(std::string_view in) {
  std::string s(in);
  for (char& c : s) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (s.size() % 4 != 0) s += '=';
  return Base64Decode(s).value_or("");
}

class GcpCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = shoal::testing::MakeScratchDir("gcp-creds", "the GCP credentials test");
    ASSERT_TRUE(dir) << dir.error().ToString();
    dir_ = *dir;
    home_ = dir_->path + "/home";
    std::filesystem::create_directories(home_);
  }

  std::string Write(const std::string& relative, const std::string& text) {
    std::string path = dir_->path + "/" + relative;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    Status s = WriteFileAtomic(path, text, 0600);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return path;
  }
  std::string WellKnownPath() const { return home_ + "/.config/gcloud/application_default_credentials.json"; }
  std::string WriteWellKnown(const std::string& text) {
    return Write("home/.config/gcloud/application_default_credentials.json", text);
  }

  // An environment with an empty HOME, no key files and no metadata server,
  // plus `vars`.
  std::map<std::string, std::string> Vars(std::map<std::string, std::string> vars = {}) const {
    vars.emplace("HOME", home_);
    vars.emplace("GCE_METADATA_HOST", std::string(kNoMetadata));
    return vars;
  }

  // The message of a failed resolution, checked to carry no secret.
  std::string FailureOf(const Options& options, const std::map<std::string, std::string>& vars) {
    auto chosen = ResolveGoogleCredentials(options, EnvOf(vars));
    EXPECT_FALSE(chosen) << "resolved " << (chosen ? chosen->provider->name() : "");
    if (chosen) return "";
    const std::string& m = chosen.error().message();
    std::istringstream pem(stand_in_.private_key_pem());
    std::string line;
    while (std::getline(pem, line)) {
      if (line.size() > 20) {
        EXPECT_EQ(m.find(line), std::string::npos) << "a private key line in: " << m;
      }
    }
    EXPECT_EQ(m.find(stand_in_.client_secret()), std::string::npos) << m;
    EXPECT_EQ(m.find(stand_in_.refresh_token()), std::string::npos) << m;
    if (std::string token = stand_in_.last_issued().token; !token.empty()) {
      EXPECT_EQ(m.find(token), std::string::npos) << m;
    }
    return m;
  }

  GcpStandIn stand_in_;
  std::shared_ptr<shoal::testing::ScratchDir> dir_;
  std::string home_;
};

// ---------------------------------------------------------------------------
// The JWT assertion.

TEST_F(GcpCredentialsTest, JwtIsRs256WithTheClaimsGoogleAsksFor) {
  auto now = WallClock::from_time_t(1'800'000'000);
  auto jwt = MakeServiceAccountJwt("sa@p.iam.gserviceaccount.com", stand_in_.private_key_pem(), "kid-1", kDefaultScope,
                                   "https://oauth2.googleapis.com/token", now);
  ASSERT_TRUE(jwt) << jwt.error().ToString();
  EXPECT_EQ(jwt->find_first_of("=+/"), std::string::npos) << "base64url without padding";
  size_t dot1 = jwt->find('.'), dot2 = jwt->rfind('.');
  ASSERT_NE(dot1, dot2);
  auto header = nlohmann::json::parse(Base64UrlDecode(jwt->substr(0, dot1)));
  auto claims = nlohmann::json::parse(Base64UrlDecode(jwt->substr(dot1 + 1, dot2 - dot1 - 1)));
  EXPECT_EQ(header, (nlohmann::json{{"alg", "RS256"}, {"typ", "JWT"}, {"kid", "kid-1"}}));
  EXPECT_EQ(claims["iss"], "sa@p.iam.gserviceaccount.com");
  EXPECT_EQ(claims["scope"], kDefaultScope);
  EXPECT_EQ(claims["aud"], "https://oauth2.googleapis.com/token");
  EXPECT_EQ(claims["iat"], 1'800'000'000);
  EXPECT_EQ(claims["exp"], 1'800'003'600);
  EXPECT_EQ(Base64UrlDecode(jwt->substr(dot2 + 1)).size(), 256u) << "an RSA-2048 signature";
}

TEST_F(GcpCredentialsTest, JwtRefusesAKeyThatIsNotAnRsaPrivateKey) {
  auto garbage = MakeServiceAccountJwt("sa@p", "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
                                       "", "", "aud", WallClock::now());
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code(), Code::kInvalidArgument);
  EXPECT_NE(garbage.error().message().find("not an unencrypted PEM private key"), std::string::npos);
  EXPECT_EQ(garbage.error().message().find("bm90IGEga2V5"), std::string::npos) << "no key bytes in messages";

  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> ec(EVP_EC_gen("P-256"), EVP_PKEY_free);
  ASSERT_TRUE(ec);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  ASSERT_EQ(PEM_write_bio_PrivateKey(bio.get(), ec.get(), nullptr, nullptr, 0, nullptr, nullptr), 1);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  auto not_rsa = MakeServiceAccountJwt("sa@p", std::string(data, n), "", "", "aud", WallClock::now());
  ASSERT_FALSE(not_rsa);
  EXPECT_NE(not_rsa.error().message().find("not an RSA key"), std::string::npos) << not_rsa.error().ToString();
}

// ---------------------------------------------------------------------------
// Each provider.

TEST_F(GcpCredentialsTest, ServiceAccountKeyFileGetsATokenTheEndpointAccepts) {
  stand_in_.SetLifetime(1800s);
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  auto before = WallClock::now();
  auto chosen = ResolveGoogleCredentials({}, EnvOf(Vars({{"GOOGLE_APPLICATION_CREDENTIALS", key}})));
  ASSERT_TRUE(chosen) << chosen.error().ToString();
  EXPECT_EQ(chosen->provider->name(), "service-account");
  EXPECT_EQ(chosen->provider->detail(), "key file " + key + " (client_email " + stand_in_.client_email() + ")");
  EXPECT_TRUE(stand_in_.Accepts(chosen->first.bearer_token));
  EXPECT_GE(chosen->first.expires, before + 1799s);
  EXPECT_LE(chosen->first.expires, WallClock::now() + 1800s);
  auto issued = stand_in_.last_issued();
  EXPECT_EQ(issued.grant, "jwt-bearer");
  EXPECT_EQ(issued.subject, stand_in_.client_email());
  EXPECT_EQ(issued.scope, kDefaultScope);
  EXPECT_EQ(issued.key_id, stand_in_.key_id());

  // Each Fetch signs a new assertion and gets a new token.
  auto again = chosen->provider->Fetch();
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_NE(again->bearer_token, chosen->first.bearer_token);
  EXPECT_TRUE(stand_in_.Accepts(again->bearer_token));
}

TEST_F(GcpCredentialsTest, ScopesOptionReplacesTheDefaultScope) {
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  Options options{{"scopes",
                   "https://www.googleapis.com/auth/devstorage.read_only, "
                   "https://www.googleapis.com/auth/cloud-platform"}};
  auto chosen = ResolveGoogleCredentials(options, EnvOf(Vars({{"GOOGLE_APPLICATION_CREDENTIALS", key}})));
  ASSERT_TRUE(chosen) << chosen.error().ToString();
  EXPECT_EQ(stand_in_.last_issued().scope,
            "https://www.googleapis.com/auth/devstorage.read_only https://www.googleapis.com/auth/cloud-platform");

  auto metadata = ResolveGoogleCredentials(options, EnvOf({{"GCE_METADATA_HOST", stand_in_.host()}}));
  ASSERT_TRUE(metadata) << metadata.error().ToString();
  EXPECT_EQ(stand_in_.last_issued().scope,
            "https://www.googleapis.com/auth/devstorage.read_only,https://www.googleapis.com/auth/cloud-platform");
}

TEST_F(GcpCredentialsTest, AuthorizedUserFromGcloudsWellKnownFile) {
  WriteWellKnown(stand_in_.AuthorizedUserJson());
  auto chosen = ResolveGoogleCredentials({}, EnvOf(Vars()));
  ASSERT_TRUE(chosen) << chosen.error().ToString();
  EXPECT_EQ(chosen->provider->name(), "authorized-user");
  EXPECT_EQ(chosen->provider->detail(), "key file " + WellKnownPath() + " (client_id " + stand_in_.client_id() + ")");
  EXPECT_TRUE(stand_in_.Accepts(chosen->first.bearer_token));
  EXPECT_EQ(stand_in_.last_issued().grant, "refresh_token");
}

TEST_F(GcpCredentialsTest, CloudsdkConfigNamesTheWellKnownFilesDirectory) {
  WriteWellKnown(stand_in_.AuthorizedUserJson());  // under HOME: not read
  std::string in_config = Write("gcloud-config/application_default_credentials.json", stand_in_.ServiceAccountJson());
  auto chosen = ResolveGoogleCredentials({}, EnvOf(Vars({{"CLOUDSDK_CONFIG", dir_->path + "/gcloud-config"}})));
  ASSERT_TRUE(chosen) << chosen.error().ToString();
  EXPECT_EQ(chosen->provider->name(), "service-account");
  EXPECT_NE(chosen->provider->detail().find(in_config), std::string::npos);
}

TEST_F(GcpCredentialsTest, MetadataServerGivesTheNodesToken) {
  auto chosen = ResolveGoogleCredentials({}, EnvOf(Vars({{"GCE_METADATA_HOST", stand_in_.host()}})));
  ASSERT_TRUE(chosen) << chosen.error().ToString();
  EXPECT_EQ(chosen->provider->name(), "metadata-server");
  EXPECT_EQ(chosen->provider->detail(), "http://" + stand_in_.host());
  EXPECT_TRUE(stand_in_.Accepts(chosen->first.bearer_token));
  EXPECT_EQ(stand_in_.metadata_requests(), 1);
  EXPECT_EQ(stand_in_.last_issued().scope, "") << "no scopes asked for without the option";

  // Older google-auth's variable names the host too.
  auto older = ResolveGoogleCredentials({}, EnvOf({{"HOME", home_}, {"GCE_METADATA_ROOT", stand_in_.host()}}));
  ASSERT_TRUE(older) << older.error().ToString();
  EXPECT_EQ(older->provider->name(), "metadata-server");
}

TEST_F(GcpCredentialsTest, StandInsMetadataServerRefusesRequestsWithoutTheFlavorHeader) {
  HttpRequest req;
  req.url = "http://" + stand_in_.host() + "/computeMetadata/v1/instance/service-accounts/default/token";
  auto r = PerformHttp(req);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(stand_in_.issued_count(), 0);
}

// ---------------------------------------------------------------------------
// The chain's precedence: env file, then well-known file, then metadata.

TEST_F(GcpCredentialsTest, ChainPrefersEnvFileThenWellKnownFileThenMetadata) {
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  WriteWellKnown(stand_in_.AuthorizedUserJson());
  auto vars = Vars({{"GOOGLE_APPLICATION_CREDENTIALS", key}, {"GCE_METADATA_HOST", stand_in_.host()}});

  auto all = ResolveGoogleCredentials({}, EnvOf(vars));
  ASSERT_TRUE(all) << all.error().ToString();
  EXPECT_EQ(all->provider->name(), "service-account");

  vars.erase("GOOGLE_APPLICATION_CREDENTIALS");
  auto no_env = ResolveGoogleCredentials({}, EnvOf(vars));
  ASSERT_TRUE(no_env) << no_env.error().ToString();
  EXPECT_EQ(no_env->provider->name(), "authorized-user");

  std::filesystem::remove(WellKnownPath());
  auto metadata_only = ResolveGoogleCredentials({}, EnvOf(vars));
  ASSERT_TRUE(metadata_only) << metadata_only.error().ToString();
  EXPECT_EQ(metadata_only->provider->name(), "metadata-server");
  EXPECT_EQ(stand_in_.metadata_requests(), 1) << "the files won before the metadata server was asked";

  // Mount option credentials_file comes before GOOGLE_APPLICATION_CREDENTIALS.
  std::string user = Write("user.json", stand_in_.AuthorizedUserJson());
  auto option =
      ResolveGoogleCredentials({{"credentials_file", user}}, EnvOf(Vars({{"GOOGLE_APPLICATION_CREDENTIALS", key}})));
  ASSERT_TRUE(option) << option.error().ToString();
  EXPECT_EQ(option->provider->name(), "authorized-user");
}

TEST_F(GcpCredentialsTest, NoCredentialsAnywhereListsEachPlaceAndWhatToDo) {
  std::string m = FailureOf({}, Vars());
  EXPECT_NE(m.find("GOOGLE_APPLICATION_CREDENTIALS not set"), std::string::npos) << m;
  EXPECT_NE(m.find("no file at " + WellKnownPath()), std::string::npos) << m;
  EXPECT_NE(m.find("metadata-server"), std::string::npos) << m;
  EXPECT_NE(m.find(std::string(kNoMetadata)), std::string::npos) << m;
  EXPECT_NE(m.find("gcloud auth application-default login"), std::string::npos) << m;
  EXPECT_NE(m.find("credentials: anonymous"), std::string::npos) << m;
  EXPECT_NE(m.find("access_key_id"), std::string::npos) << m;
  auto chosen = ResolveGoogleCredentials({}, EnvOf(Vars()));
  EXPECT_EQ(chosen.error().code(), Code::kPermissionDenied);
}

TEST_F(GcpCredentialsTest, ABrokenEnvKeyFileStopsTheChainNamingFileAndField) {
  auto vars = Vars({{"GCE_METADATA_HOST", stand_in_.host()}});  // would answer, but is not reached

  vars["GOOGLE_APPLICATION_CREDENTIALS"] = dir_->path + "/missing.json";
  std::string m = FailureOf({}, vars);
  EXPECT_NE(m.find(dir_->path + "/missing.json"), std::string::npos) << m;
  EXPECT_NE(m.find("GOOGLE_APPLICATION_CREDENTIALS"), std::string::npos) << m;

  vars["GOOGLE_APPLICATION_CREDENTIALS"] =
      Write("not-json.json", "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN");
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("not-json.json"), std::string::npos) << m;
  EXPECT_NE(m.find("not a JSON object"), std::string::npos) << m;
  EXPECT_EQ(m.find("BEGIN"), std::string::npos) << "no bytes of the file: " << m;

  vars["GOOGLE_APPLICATION_CREDENTIALS"] = Write("external.json", R"({"type": "external_account"})");
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("external.json"), std::string::npos) << m;
  EXPECT_NE(m.find("\"external_account\""), std::string::npos) << m;

  auto doc = nlohmann::json::parse(stand_in_.ServiceAccountJson());
  for (const char* field : {"client_email", "private_key", "token_uri"}) {
    auto broken = doc;
    broken.erase(field);
    vars["GOOGLE_APPLICATION_CREDENTIALS"] = Write(std::string("no-") + field + ".json", broken.dump());
    m = FailureOf({}, vars);
    EXPECT_NE(m.find(std::string("no-") + field + ".json"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("\"") + field + "\""), std::string::npos) << m;
  }
  auto user = nlohmann::json::parse(stand_in_.AuthorizedUserJson());
  user.erase("refresh_token");
  vars["GOOGLE_APPLICATION_CREDENTIALS"] = Write("no-refresh.json", user.dump());
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("\"refresh_token\""), std::string::npos) << m;

  auto bad_key = doc;
  bad_key["private_key"] = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n";
  vars["GOOGLE_APPLICATION_CREDENTIALS"] = Write("bad-key.json", bad_key.dump());
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("bad-key.json"), std::string::npos) << m;
  EXPECT_NE(m.find("private_key"), std::string::npos) << m;
  EXPECT_EQ(m.find("bm90IGEga2V5"), std::string::npos) << m;
  EXPECT_EQ(stand_in_.metadata_requests(), 0);
}

// ---------------------------------------------------------------------------
// Failure modes of the endpoints: each names the provider and the endpoint.

TEST_F(GcpCredentialsTest, TokenEndpointFailuresNameProviderAndEndpoint) {
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  auto vars = Vars({{"GOOGLE_APPLICATION_CREDENTIALS", key}});

  stand_in_.SetFault(Endpoint::kToken, Fault::kServerError);
  std::string m = FailureOf({}, vars);
  EXPECT_NE(m.find("service-account"), std::string::npos) << m;
  EXPECT_NE(m.find(stand_in_.token_uri()), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 500"), std::string::npos) << m;

  stand_in_.SetFault(Endpoint::kToken, Fault::kGarbage);
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("service-account"), std::string::npos) << m;
  EXPECT_NE(m.find(stand_in_.token_uri()), std::string::npos) << m;
  EXPECT_NE(m.find("no access_token"), std::string::npos) << m;

  stand_in_.SetFault(Endpoint::kToken, Fault::kExpired);
  m = FailureOf({}, vars);
  EXPECT_NE(m.find(stand_in_.token_uri()), std::string::npos) << m;
  EXPECT_NE(m.find("expired"), std::string::npos) << m;

  stand_in_.SetFault(Endpoint::kToken, Fault::kNone);
  auto foreign = nlohmann::json::parse(stand_in_.ServiceAccountJson());
  foreign["private_key"] = GcpStandIn::NewRsaKeyPem();
  vars["GOOGLE_APPLICATION_CREDENTIALS"] = Write("foreign.json", foreign.dump());
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("foreign.json"), std::string::npos) << m;
  EXPECT_NE(m.find("Invalid JWT Signature"), std::string::npos) << m;
  EXPECT_NE(m.find("keys list"), std::string::npos) << "says what to check: " << m;
  EXPECT_EQ(m.find(foreign["private_key"].get<std::string>().substr(40, 40)), std::string::npos) << m;

  auto unreachable = nlohmann::json::parse(stand_in_.ServiceAccountJson());
  unreachable["token_uri"] = "http://" + std::string(kNoMetadata) + "/token";
  vars["GOOGLE_APPLICATION_CREDENTIALS"] = Write("unreachable.json", unreachable.dump());
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("http://127.0.0.1:1/token"), std::string::npos) << m;
  EXPECT_NE(m.find("reachable"), std::string::npos) << m;
}

TEST_F(GcpCredentialsTest, AuthorizedUserRefusedNamesTheFileWithoutItsSecrets) {
  auto user = nlohmann::json::parse(stand_in_.AuthorizedUserJson());
  user["client_secret"] = "d-not-the-right-secret-0123";
  std::string path = Write("user.json", user.dump());
  std::string m = FailureOf({{"credentials", "authorized-user"}, {"credentials_file", path}}, Vars());
  EXPECT_NE(m.find("authorized-user"), std::string::npos) << m;
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("invalid_client"), std::string::npos) << m;
  EXPECT_NE(m.find("gcloud auth application-default login"), std::string::npos) << m;
  EXPECT_EQ(m.find("d-not-the-right-secret-0123"), std::string::npos) << m;
}

TEST_F(GcpCredentialsTest, MetadataFailuresNameTheServer) {
  auto vars = Vars({{"GCE_METADATA_HOST", stand_in_.host()}});
  Options metadata{{"credentials", "metadata"}};

  stand_in_.SetFault(Endpoint::kMetadata, Fault::kServerError);
  std::string m = FailureOf(metadata, vars);
  EXPECT_NE(m.find("metadata-server"), std::string::npos) << m;
  EXPECT_NE(m.find("http://" + stand_in_.host()), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 500"), std::string::npos) << m;

  stand_in_.SetFault(Endpoint::kMetadata, Fault::kGarbage);
  m = FailureOf(metadata, vars);
  EXPECT_NE(m.find("no access_token"), std::string::npos) << m;
  EXPECT_NE(m.find(stand_in_.host()), std::string::npos) << m;

  stand_in_.SetFault(Endpoint::kMetadata, Fault::kExpired);
  m = FailureOf(metadata, vars);
  EXPECT_NE(m.find("expired"), std::string::npos) << m;

  // In the chain, the metadata server is a probe: its failure is one line of
  // the "nothing found" error, not the error.
  stand_in_.SetFault(Endpoint::kMetadata, Fault::kGarbage);
  m = FailureOf({}, vars);
  EXPECT_NE(m.find("no credentials found"), std::string::npos) << m;
  EXPECT_NE(m.find("no access_token"), std::string::npos) << m;
}

TEST_F(GcpCredentialsTest, AHangingMetadataServerIsGivenUpOnQuickly) {
  stand_in_.SetFault(Endpoint::kMetadata, Fault::kHang);
  auto start = std::chrono::steady_clock::now();
  auto chosen = ResolveGoogleCredentials({}, EnvOf(Vars({{"GCE_METADATA_HOST", stand_in_.host()}})));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(chosen);
  EXPECT_EQ(chosen.error().code(), Code::kPermissionDenied);
  EXPECT_NE(chosen.error().message().find("metadata-server"), std::string::npos) << chosen.error().ToString();
  EXPECT_NE(chosen.error().message().find(stand_in_.host()), std::string::npos) << chosen.error().ToString();
  EXPECT_LT(took, 10s) << "the probe waits about 2 s";
  EXPECT_EQ(stand_in_.metadata_requests(), 1);
}

// ---------------------------------------------------------------------------
// credentials: one named provider.

TEST_F(GcpCredentialsTest, NamedProvidersUseOnlyWhatTheyName) {
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  WriteWellKnown(stand_in_.AuthorizedUserJson());
  auto vars = Vars({{"GOOGLE_APPLICATION_CREDENTIALS", key}, {"GCE_METADATA_HOST", stand_in_.host()}});

  auto metadata = ResolveGoogleCredentials({{"credentials", "metadata"}}, EnvOf(vars));
  ASSERT_TRUE(metadata) << metadata.error().ToString();
  EXPECT_EQ(metadata->provider->name(), "metadata-server");

  auto user = ResolveGoogleCredentials({{"credentials", "authorized-user"}, {"credentials_file", WellKnownPath()}},
                                       EnvOf(vars));
  ASSERT_TRUE(user) << user.error().ToString();
  EXPECT_EQ(user->provider->name(), "authorized-user");

  auto sa = ResolveGoogleCredentials({{"credentials", "service-account"}}, EnvOf(vars));
  ASSERT_TRUE(sa) << sa.error().ToString();
  EXPECT_EQ(sa->provider->name(), "service-account");

  // Without credentials_file or the env variable: the well-known file.
  vars.erase("GOOGLE_APPLICATION_CREDENTIALS");
  auto well_known = ResolveGoogleCredentials({{"credentials", "authorized-user"}}, EnvOf(vars));
  ASSERT_TRUE(well_known) << well_known.error().ToString();
  EXPECT_NE(well_known->provider->detail().find(WellKnownPath()), std::string::npos);

  std::string m = FailureOf({{"credentials", "service-account"}}, vars);
  EXPECT_NE(m.find("is of type authorized_user"), std::string::npos) << m;
  EXPECT_NE(m.find("credentials: authorized-user"), std::string::npos) << m;

  std::filesystem::remove(WellKnownPath());
  m = FailureOf({{"credentials", "authorized-user"}}, vars);
  EXPECT_EQ(ResolveGoogleCredentials({{"credentials", "authorized-user"}}, EnvOf(vars)).error().code(),
            Code::kPermissionDenied)
      << "no credentials, as the chain says it";
  EXPECT_NE(m.find("needs a key file"), std::string::npos) << m;
  EXPECT_NE(m.find("credentials_file"), std::string::npos) << m;

  int tokens = stand_in_.issued_count();
  auto anonymous = ResolveGoogleCredentials({{"credentials", "anonymous"}}, EnvOf(vars));
  ASSERT_TRUE(anonymous) << anonymous.error().ToString();
  EXPECT_EQ(anonymous->provider->name(), "anonymous");
  EXPECT_EQ(anonymous->first.bearer_token, "");
  EXPECT_FALSE(anonymous->first.expiring());
  EXPECT_EQ(stand_in_.issued_count(), tokens) << "anonymous asks nobody";

  m = FailureOf({{"credentials", "workload-identity"}}, vars);
  EXPECT_NE(m.find("'workload-identity'"), std::string::npos) << m;
  EXPECT_NE(m.find("service-account, authorized-user, metadata, anonymous"), std::string::npos) << m;
}

// ---------------------------------------------------------------------------
// A CredentialCache over the service-account provider.

TEST_F(GcpCredentialsTest, CacheRefreshesAShortLivedServiceAccountTokenAheadOfExpiry) {
  stand_in_.SetLifetime(3s);
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  auto chosen =
      ResolveGoogleCredentials({{"credentials", "service-account"}, {"credentials_file", key}}, EnvOf(Vars()));
  ASSERT_TRUE(chosen) << chosen.error().ToString();
  std::string first = chosen->first.bearer_token;
  auto cache = CredentialCache::Start(std::move(chosen->provider), {.mount = "/gcs"}, std::move(chosen->first));
  ASSERT_TRUE(cache) << cache.error().ToString();

  int checked = 0;
  bool refreshed = shoal::testing::WaitFor(
      [&] {
        auto secret = (*cache)->Current();
        if (!secret) {
          ADD_FAILURE() << secret.error().ToString();
          return true;
        }
        ++checked;
        EXPECT_TRUE(stand_in_.Accepts((*secret)->bearer_token)) << "the cache handed out a token the endpoint refuses";
        return (*secret)->bearer_token != first && (*cache)->info().refreshes >= 2;
      },
      30s);
  ASSERT_TRUE(refreshed) << "no refresh seen; " << (*cache)->Describe();
  EXPECT_GT(checked, 1);
  auto info = (*cache)->info();
  EXPECT_EQ(info.provider, "service-account");
  EXPECT_EQ(info.failures, 0u) << info.last_error;
  EXPECT_GE(stand_in_.token_requests(), 3);
}

// ---------------------------------------------------------------------------
// Cross-check with the reference client: Debian's google-auth, run on the
// same stand-in and files. Its token must be accepted, and the provider it
// picks must be the one Shoal picks for the same environment.

constexpr const char* kPython = "/usr/bin/python3";

// argv[1]: import (only that) | service-account (argv[2] the key file) | metadata | default.
// Prints KIND <class>, TOKEN <token> or ERROR <type> <message>, then DONE.
constexpr const char* kGoogleAuthScript = R"PY(
import sys
try:
    import google.auth, google.auth.transport.requests
    from google.oauth2 import service_account
    from google.auth import compute_engine
except Exception as e:
    print('NOIMPORT', repr(e))
    print('DONE', flush=True)
    sys.exit(0)
SCOPE = 'https://www.googleapis.com/auth/devstorage.read_write'
mode = sys.argv[1]
if mode == 'import':
    print('DONE', flush=True)
    sys.exit(0)
try:
    if mode == 'service-account':
        creds = service_account.Credentials.from_service_account_file(sys.argv[2], scopes=[SCOPE])
    elif mode == 'metadata':
        creds = compute_engine.Credentials()
    else:
        creds, _ = google.auth.default(scopes=[SCOPE])
    kind = type(creds).__module__ + '.' + type(creds).__name__
    print('KIND', kind)
    # google-auth 1.5.1 sends authorized users to Google's own token_uri,
    # whatever the file says: their refresh is not cross-checked here.
    if kind != 'google.oauth2.credentials.Credentials':
        creds.refresh(google.auth.transport.requests.Request())
        print('TOKEN', creds.token)
except Exception as e:
    print('ERROR', type(e).__name__, str(e).replace('\n', ' ')[:300])
print('DONE', flush=True)
)PY";

struct GoogleAuthRun {
  bool importable = true;
  std::string kind, token, error, output;
};

// Runs the script with exactly `vars` (plus PATH and LANG) as its environment.
GoogleAuthRun RunGoogleAuth(const std::map<std::string, std::string>& vars, std::vector<std::string> args) {
  Subprocess::Options o;
  o.argv = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
  for (const auto& [k, v] : vars) o.argv.push_back(k + "=" + v);
  o.argv.insert(o.argv.end(), {kPython, "-c", kGoogleAuthScript});
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stderr_to_stdout = true;
  GoogleAuthRun run;
  auto child = Subprocess::Start(o);
  if (!child) {
    ADD_FAILURE() << "cannot start " << kPython << ": " << child.error().ToString();
    return run;
  }
  auto done = child->WaitForLine("DONE", 120s);
  EXPECT_TRUE(done) << "google-auth did not finish: " << done.error().ToString();
  child->Wait(30s);
  run.output = child->output();
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("NOIMPORT")) run.importable = false;
    if (line.starts_with("KIND ")) run.kind = line.substr(5);
    if (line.starts_with("TOKEN ")) run.token = line.substr(6);
    if (line.starts_with("ERROR ")) run.error = line.substr(6);
  }
  return run;
}

// Shoal's provider name for a google-auth credentials class ("none" for an error).
std::string ShoalNameOf(const GoogleAuthRun& run) {
  if (run.kind == "google.oauth2.service_account.Credentials") return "service-account";
  if (run.kind == "google.oauth2.credentials.Credentials") return "authorized-user";
  if (run.kind == "google.auth.compute_engine.credentials.Credentials") return "metadata-server";
  return run.error.empty() ? "unknown: " + run.kind : "none";
}

class GoogleAuthCrossCheck : public GcpCredentialsTest {
 protected:
  void SetUp() override {
    GcpCredentialsTest::SetUp();
    // scripts/bootstrap installs python3-google-auth: its absence is a failed
    // set-up, not a reason to skip the cross-check.
    ASSERT_EQ(::access(kPython, X_OK), 0) << kPython << " is missing: run scripts/bootstrap";
    auto probe = RunGoogleAuth({{"HOME", home_}}, {"import"});
    ASSERT_TRUE(probe.importable) << kPython << " cannot import google.auth (run scripts/bootstrap): " << probe.output;
  }

  // What both clients need to find the metadata server (google-auth 1.5.1
  // pings GCE_METADATA_IP, then asks GCE_METADATA_ROOT; Shoal reads
  // GCE_METADATA_HOST, else GCE_METADATA_ROOT).
  std::map<std::string, std::string> MetadataAt(const std::string& host) const {
    return {{"HOME", home_}, {"GCE_METADATA_HOST", host}, {"GCE_METADATA_ROOT", host}, {"GCE_METADATA_IP", host}};
  }
};

TEST_F(GoogleAuthCrossCheck, ServiceAccountTokensFromBothClientsAreAccepted) {
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  auto python = RunGoogleAuth({{"HOME", home_}}, {"service-account", key});
  ASSERT_EQ(python.error, "") << python.output;
  EXPECT_TRUE(stand_in_.Accepts(python.token)) << python.output << "\nrefused: " << stand_in_.last_refusal();
  auto theirs = stand_in_.last_issued();

  auto shoal = ResolveGoogleCredentials({{"credentials", "service-account"}, {"credentials_file", key}},
                                        EnvOf({{"HOME", home_}}));
  ASSERT_TRUE(shoal) << shoal.error().ToString();
  EXPECT_TRUE(stand_in_.Accepts(shoal->first.bearer_token));
  auto ours = stand_in_.last_issued();
  EXPECT_EQ(ours.grant, theirs.grant);
  EXPECT_EQ(ours.subject, theirs.subject);
  EXPECT_EQ(ours.scope, theirs.scope);
  EXPECT_EQ(ours.key_id, theirs.key_id);
}

TEST_F(GoogleAuthCrossCheck, MetadataTokensFromBothClientsAreAccepted) {
  auto python = RunGoogleAuth(MetadataAt(stand_in_.host()), {"metadata"});
  ASSERT_EQ(python.error, "") << python.output;
  EXPECT_TRUE(stand_in_.Accepts(python.token)) << python.output;
  EXPECT_EQ(stand_in_.last_issued().grant, "metadata");

  auto shoal = ResolveGoogleCredentials({{"credentials", "metadata"}}, EnvOf(MetadataAt(stand_in_.host())));
  ASSERT_TRUE(shoal) << shoal.error().ToString();
  EXPECT_TRUE(stand_in_.Accepts(shoal->first.bearer_token));
}

TEST_F(GoogleAuthCrossCheck, BothClientsPickTheSameProviderInEachEnvironment) {
  std::string key = Write("sa.json", stand_in_.ServiceAccountJson());
  WriteWellKnown(stand_in_.AuthorizedUserJson());
  std::string cloudsdk = Write("gcloud-config/application_default_credentials.json", stand_in_.ServiceAccountJson());

  struct Case {
    std::string what;
    std::map<std::string, std::string> vars;
    bool well_known;
    std::string expected;
  };
  auto env_file = MetadataAt(stand_in_.host());
  env_file["GOOGLE_APPLICATION_CREDENTIALS"] = key;
  auto config_dir = MetadataAt(stand_in_.host());
  config_dir["CLOUDSDK_CONFIG"] = dir_->path + "/gcloud-config";
  std::vector<Case> cases = {
      {"env file, well-known file, metadata", env_file, true, "service-account"},
      {"well-known file, metadata", MetadataAt(stand_in_.host()), true, "authorized-user"},
      {"CLOUDSDK_CONFIG's file, metadata", config_dir, true, "service-account"},
      {"metadata only", MetadataAt(stand_in_.host()), false, "metadata-server"},
      {"nothing", MetadataAt(std::string(kNoMetadata)), false, "none"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    if (!c.well_known) std::filesystem::remove(WellKnownPath());
    auto python = RunGoogleAuth(c.vars, {"default"});
    std::string python_pick = ShoalNameOf(python);
    if (python_pick == "service-account" || python_pick == "metadata-server") {
      EXPECT_TRUE(stand_in_.Accepts(python.token)) << python.output;
    }

    auto shoal = ResolveGoogleCredentials({}, EnvOf(c.vars));
    std::string shoal_pick = shoal ? shoal->provider->name() : "none";
    if (shoal) {
      EXPECT_TRUE(stand_in_.Accepts(shoal->first.bearer_token));
    } else {
      EXPECT_EQ(shoal.error().code(), Code::kPermissionDenied) << shoal.error().ToString();
    }

    EXPECT_EQ(python_pick, c.expected) << python.output;
    EXPECT_EQ(shoal_pick, python_pick) << (shoal ? shoal->provider->detail() : shoal.error().ToString());
  }
}

}  // namespace
}  // namespace shoal::cloud
