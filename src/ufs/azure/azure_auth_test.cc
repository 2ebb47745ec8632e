// Shared Key signing, SAS generation and credential resolution. Expected
// signatures were computed independently (Python's hmac/hashlib over the same
// string-to-sign) with Azurite's public development key.
#include "ufs/azure/azure_auth.h"

#include <gtest/gtest.h>

#include "common/config.h"
#include "ufs/azure/azure_client.h"
#include "ufs/http/http_transport.h"
#include "ufs/uri.h"

namespace shoal {
namespace {

constexpr const char* kDevKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

std::string DevKeyBytes() { return *Base64Decode(kDevKey); }

TEST(AzureSharedKey, ContainerRequestStringToSign) {
  std::vector<std::pair<std::string, std::string>> headers = {{"x-ms-version", "2009-09-19"},
                                                              {"x-ms-date", "Sun, 11 Oct 2009 21:49:13 GMT"}};
  std::string sts = SharedKeyStringToSign(
      "devstoreaccount1", "GET", "http://127.0.0.1:10000/devstoreaccount1/mycontainer?restype=container&comp=metadata&timeout=20",
      headers, 0);
  EXPECT_EQ(sts,
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Sun, 11 Oct 2009 21:49:13 GMT\nx-ms-version:2009-09-19\n"
            "/devstoreaccount1/devstoreaccount1/mycontainer\ncomp:metadata\nrestype:container\ntimeout:20");
  EXPECT_EQ(HmacSha256Base64(DevKeyBytes(), sts), "6EMsagbxjsiyEt3O14R7CUVOI+YDOwH7C7a5NgpHKPw=");
}

TEST(AzureSharedKey, PutBlockWithStandardHeadersAndEncodedQuery) {
  HttpRequest req;
  req.method = "PUT";
  req.url = "http://127.0.0.1:10000/devstoreaccount1/c/dir/a%20b.bin?comp=block&blockid=c2hvYWwtYmxvY2stMDAwMDAwMDA%3D";
  req.headers = {{"x-ms-version", "2021-08-06"},       {"X-MS-Date", "Mon, 01 Jan 2024 00:00:00 GMT"},
                 {"Content-Type", "application/xml"}, {"If-Match", "\"0x8D\""},
                 {"x-ms-range", "bytes=0-99"},        {"x-ms-blob-type", " BlockBlob "}};
  std::string body(1024, 'x');
  req.body = body;
  std::string sts = SharedKeyStringToSign("devstoreaccount1", req.method, req.url, req.headers, req.body.size());
  EXPECT_EQ(sts,
            "PUT\n\n\n1024\n\napplication/xml\n\n\n\"0x8D\"\n\n\n\n"
            "x-ms-blob-type:BlockBlob\nx-ms-date:Mon, 01 Jan 2024 00:00:00 GMT\nx-ms-range:bytes=0-99\n"
            "x-ms-version:2021-08-06\n/devstoreaccount1/devstoreaccount1/c/dir/a%20b.bin\n"
            "blockid:c2hvYWwtYmxvY2stMDAwMDAwMDA=\ncomp:block");
  SignSharedKey(req, "devstoreaccount1", DevKeyBytes());
  ASSERT_EQ(req.headers.back().first, "Authorization");
  EXPECT_EQ(req.headers.back().second, "SharedKey devstoreaccount1:99guHzz6BtJL9HKw0kPKQ9/wBPfvIkIeCQ4n6i9txIA=");
}

TEST(AzureSharedKey, ZeroContentLengthSignsAsEmpty) {
  std::string sts = SharedKeyStringToSign("a", "PUT", "https://a.blob.core.windows.net/c/b", {}, 0);
  EXPECT_EQ(sts, "PUT\n\n\n\n\n\n\n\n\n\n\n\n/a/c/b");
}

TEST(AzureSas, AccountSasSignature) {
  auto sas = MakeAccountSas("devstoreaccount1", kDevKey, "rl", "2030-01-01T00:00:00Z");
  ASSERT_TRUE(sas) << sas.error().ToString();
  EXPECT_EQ(*sas,
            "sv=2021-08-06&ss=b&srt=sco&sp=rl&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp"
            "&sig=vDMcyw3ZlebJO5%2BzeUI5GFTFTx%2B1XDXzVVIoXUDAJBQ%3D");
}

TEST(AzureBase64, RoundTrip) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "shoal-block-00000000"}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(Base64Encode("shoal-block-00000000"), "c2hvYWwtYmxvY2stMDAwMDAwMDA=");
  EXPECT_FALSE(Base64Decode("not base64!"));
}

TEST(AzureDates, FormatAndParse) {
  auto t = std::chrono::system_clock::from_time_t(1255297753);  // Sun, 11 Oct 2009 21:49:13 GMT
  EXPECT_EQ(HttpDate(t), "Sun, 11 Oct 2009 21:49:13 GMT");
  EXPECT_EQ(ParseHttpDate("Sun, 11 Oct 2009 21:49:13 GMT"), int64_t{1255297753} * 1'000'000'000);
  EXPECT_EQ(ParseHttpDate("garbage"), 0);
}

// fuzz/crashes/store_xml/http-date-year-200: a List Blobs Last-Modified in
// year 200 overflowed the nanoseconds (UBSan: signed overflow). Years outside
// 1900-2200 and fields out of range read as unknown (0).
TEST(AzureDates, OutOfRangeFieldsReadAsUnknown) {
  for (const char* bad :
       {"Sun, 11 Oct 0200 21:49:13 GMT", "Sun, 11 Oct 9999 21:49:13 GMT", "Sun, 11 Oct -2009 21:49:13 GMT",
        "Sun, 00 Oct 2009 21:49:13 GMT", "Sun, 32 Oct 2009 21:49:13 GMT", "Sun, 11 Oct 2009 24:49:13 GMT",
        "Sun, 11 Oct 2009 21:-1:13 GMT", "Sun, 11 Oct 2009 21:49:61 GMT",
        "Sun, 11 Oct 2009 21:49:99999999999999999999 GMT"}) {
    EXPECT_EQ(ParseHttpDate(bad), 0) << bad;
  }
  EXPECT_EQ(ParseHttpDate("Mon, 01 Jan 1900 00:00:00 GMT"), int64_t{-2208988800} * 1'000'000'000);
}

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(AzureCredentials, ConnectionStringWithBlobEndpoint) {
  auto c = ParseConnectionString(std::string("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=") +
                                 kDevKey + ";BlobEndpoint=http://127.0.0.1:1234/devstoreaccount1/;");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->account, "devstoreaccount1");
  EXPECT_EQ(c->key, kDevKey);  // '=' padding inside the value survives
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:1234/devstoreaccount1");
  EXPECT_TRUE(c->sas_token.empty());
}

TEST(AzureCredentials, ConnectionStringDefaultsAndSas) {
  auto c = ParseConnectionString("AccountName=acct;SharedAccessSignature=?sv=2021&sig=abc%3D;EndpointSuffix=core.example.net");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->endpoint, "https://acct.blob.core.example.net");
  EXPECT_EQ(c->sas_token, "sv=2021&sig=abc%3D");
  auto sas_only = ParseConnectionString("BlobEndpoint=https://other.blob.core.windows.net;SharedAccessSignature=sv=1&sig=x");
  ASSERT_TRUE(sas_only);
  EXPECT_EQ(sas_only->account, "other");
  auto dev = ParseConnectionString("UseDevelopmentStorage=true");
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_FALSE(ParseConnectionString("AccountName"));
  EXPECT_FALSE(ParseConnectionString("AccountKey=abc"));
}

TEST(AzureCredentials, EnvironmentAccountAndKey) {
  auto c = ResolveAzureCredentials({}, Env({{"AZURE_STORAGE_ACCOUNT", "envacct"}, {"AZURE_STORAGE_KEY", kDevKey}}));
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->account, "envacct");
  EXPECT_EQ(c->key, kDevKey);
  EXPECT_EQ(c->endpoint, "https://envacct.blob.core.windows.net");
}

TEST(AzureCredentials, EnvironmentSasToken) {
  auto c = ResolveAzureCredentials({}, Env({{"AZURE_STORAGE_ACCOUNT", "a"}, {"AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=x"}}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sas_token, "sv=1&sig=x");
  EXPECT_TRUE(c->key.empty());
}

TEST(AzureCredentials, EnvironmentConnectionStringWinsOverAccountVariables) {
  auto c = ResolveAzureCredentials(
      {}, Env({{"AZURE_STORAGE_CONNECTION_STRING", "AccountName=cs;AccountKey=" + std::string(kDevKey) +
                                                       ";BlobEndpoint=http://127.0.0.1:9/cs"},
               {"AZURE_STORAGE_ACCOUNT", "ignored"}}));
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->account, "cs");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9/cs");
}

TEST(AzureCredentials, MountOptionsOverrideEnvironment) {
  auto env = Env({{"AZURE_STORAGE_CONNECTION_STRING", "AccountName=envacct;AccountKey=" + std::string(kDevKey)}});
  auto c = ResolveAzureCredentials({{"account", "opt"}, {"key", kDevKey}, {"endpoint", "http://127.0.0.1:5/opt/"}}, env);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->account, "opt");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:5/opt");
  // A connection_string option, with one field overridden by its own option.
  auto d = ResolveAzureCredentials({{"connection_string", "AccountName=x;AccountKey=" + std::string(kDevKey)},
                                    {"sas_token", "sv=1&sig=y"}},
                                   env);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->account, "x");
  EXPECT_EQ(d->sas_token, "sv=1&sig=y");
}

TEST(AzureCredentials, ErrorsNeverEchoTheKey) {
  auto none = ResolveAzureCredentials({}, Env({}));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), Code::kInvalidArgument);
  EXPECT_NE(none.error().message().find("AZURE_STORAGE_ACCOUNT"), std::string::npos);
  auto bad = ResolveAzureCredentials({{"account", "a"}, {"key", "secret!!key"}}, Env({}));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message().find("secret!!key"), std::string::npos) << bad.error().message();
}

// Which credentials a mount uses (option `credentials`): the static ones need
// no request; an empty chain says what it tried. Entra ID providers are tested
// against a stand-in in src/ufs/cloud/azure_credentials_test.cc.
TEST(AzureIdentity, AutoTakesTheKeyThenTheSasNamedAfterTheirSource) {
  auto key = ResolveAzureCredentials({{"account", "acct"}, {"key", kDevKey}, {"sas_token", "sv=1&sig=x"}}, Env({}));
  ASSERT_TRUE(key);
  auto id = ChooseAzureIdentity(*key, "auto", Env({}), "az://c/");
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(id->auth, AzureAuth::kSharedKey);
  EXPECT_EQ(id->provider->name(), "shared-key");
  EXPECT_EQ(id->provider->detail(), "account acct, key from option key");
  EXPECT_FALSE(id->first.expiring());

  auto sas = ChooseAzureIdentity(*key, "sas", Env({}), "az://c/");
  ASSERT_TRUE(sas) << sas.error().ToString();
  EXPECT_EQ(sas->auth, AzureAuth::kSas);
  EXPECT_EQ(sas->provider->name(), "sas");

  auto env_sas =
      ResolveAzureCredentials({}, Env({{"AZURE_STORAGE_ACCOUNT", "a"}, {"AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x"}}));
  ASSERT_TRUE(env_sas);
  auto e = ChooseAzureIdentity(*env_sas, "", Env({}), "az://c/");
  ASSERT_TRUE(e) << e.error().ToString();
  EXPECT_EQ(e->auth, AzureAuth::kSas);
  EXPECT_EQ(e->provider->detail(), "account a, SAS from AZURE_STORAGE_SAS_TOKEN");

  auto cs =
      ResolveAzureCredentials({{"connection_string", "AccountName=x;AccountKey=" + std::string(kDevKey)}}, Env({}));
  ASSERT_TRUE(cs);
  auto c = ChooseAzureIdentity(*cs, "auto", Env({}), "az://c/");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->auth, AzureAuth::kSharedKey);
  EXPECT_EQ(c->provider->name(), "connection-string");
  for (const auto& p : {id->provider.get(), sas->provider.get(), e->provider.get(), c->provider.get()}) {
    EXPECT_EQ(p->detail().find(kDevKey), std::string::npos) << p->detail();
    EXPECT_EQ(p->detail().find("sig="), std::string::npos) << p->detail();
  }
}

TEST(AzureIdentity, NamedStaticCredentialsSayWhatIsMissing) {
  auto acct = ResolveAzureCredentials({{"account", "acct"}}, Env({}));
  ASSERT_TRUE(acct);
  auto key = ChooseAzureIdentity(*acct, "shared-key", Env({}), "az://c/");
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().code(), Code::kInvalidArgument);
  EXPECT_NE(key.error().message().find("no account key (option key"), std::string::npos) << key.error().message();
  auto sas = ChooseAzureIdentity(*acct, "sas", Env({}), "az://c/");
  ASSERT_FALSE(sas);
  EXPECT_NE(sas.error().message().find("AZURE_STORAGE_SAS_TOKEN"), std::string::npos) << sas.error().message();
  auto anon = ChooseAzureIdentity(*acct, "anonymous", Env({}), "az://c/");
  ASSERT_TRUE(anon) << anon.error().ToString();
  EXPECT_EQ(anon->auth, AzureAuth::kAnonymous);
  EXPECT_EQ(anon->provider->name(), "anonymous");
  auto sp = CheckAzureIdentity(*acct, "client-secret", Env({{"AZURE_TENANT_ID", "t"}}));
  EXPECT_EQ(sp.code(), Code::kInvalidArgument);
  EXPECT_NE(sp.message().find("AZURE_CLIENT_ID and AZURE_CLIENT_SECRET are not set"), std::string::npos)
      << sp.message();
}

TEST(AzureIdentity, AutoWithNothingListsEveryProvider) {
  auto acct = ResolveAzureCredentials({{"account", "acct"}}, Env({}));
  ASSERT_TRUE(acct);
  // Nothing listens on port 1: no instance metadata, at once.
  auto id = ChooseAzureIdentity(*acct, "auto", Env({{"AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://127.0.0.1:1"}}),
                                "az://c/p/");
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code(), Code::kPermissionDenied);
  const std::string& m = id.error().message();
  EXPECT_TRUE(m.starts_with("Azure credentials for az://c/p/: no credentials found")) << m;
  for (const char* part : {"shared-key: no account key", "sas: no SAS token", "client-secret: ", "workload-identity: ",
                           "managed-identity: no instance metadata endpoint", "credentials: anonymous"}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << " in: " << m;
  }
}

TEST(AzureIdentity, BearerTokensStillNeedTheAccount) {
  auto none = ResolveAzureCredentials({{"credentials", "managed-identity"}}, Env({}));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("Entra ID tokens need it too"), std::string::npos) << none.error().message();
}

TEST(AzureIdentity, TheCredentialsOptionIsChecked) {
  MountConfig m;
  m.path = "/c";
  m.ufs = "az://ctr/p";
  m.options = {{"account", "acct"}, {"credentials", "password"}};
  auto uri = ParseUfsUri(m.ufs);
  ASSERT_TRUE(uri);
  auto bad = ParseAzureSettings(*uri, m, Env({}));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("managed-identity"), std::string::npos) << bad.error().message();
  // Without starting credentials nothing is fetched, but what is missing is said.
  m.options["credentials"] = "workload-identity";
  auto check = ParseAzureSettings(*uri, m, Env({}), /*start_credentials=*/false);
  ASSERT_FALSE(check);
  EXPECT_NE(check.error().message().find("AZURE_FEDERATED_TOKEN_FILE"), std::string::npos) << check.error().message();
  m.options = {{"account", "acct"}, {"credentials", "anonymous"}};
  auto anon = ParseAzureSettings(*uri, m, Env({}));
  ASSERT_TRUE(anon) << anon.error().ToString();
  EXPECT_EQ(anon->auth, AzureAuth::kAnonymous);
  ASSERT_NE(anon->credentials, nullptr);
  EXPECT_EQ(anon->credentials->info().provider, "anonymous");
}

}  // namespace
}  // namespace shoal
