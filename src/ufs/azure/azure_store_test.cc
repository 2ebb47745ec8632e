// AzureStore against a real Azurite, which checks Shared Key signatures and
// SAS tokens: the shared conformance suite with both kinds of credentials,
// plus credential sources, permission and missing-container errors, and
// proof that large writes go through Put Block + Put Block List; and Entra ID
// bearer tokens (from the EntraStandIn) against Azurite over HTTPS.
#include "ufs/azure/azure_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <sys/wait.h>

#include <atomic>
#include <filesystem>

#include "common/config.h"
#include "common/subprocess.h"
#include "tests/harness/azurite.h"
#include "tests/harness/entra_stand_in.h"
#include "ufs/azure/azure_auth.h"
#include "ufs/conformance_test.h"
#include "ufs/http/http_transport.h"

namespace shoal {
namespace {

using testing::AzuriteProcess;
constexpr const char* kContainer = "conformance";

// One Azurite for the whole binary, stopped (and its directory removed) at exit.
AzuriteProcess* Azurite() {
  static std::unique_ptr<AzuriteProcess> az = []() -> std::unique_ptr<AzuriteProcess> {
    auto a = AzuriteProcess::Start();
    if (!a) {
      ADD_FAILURE() << a.error().ToString();
      return nullptr;
    }
    auto st = a->CreateContainer(kContainer);
    if (!st.ok()) {
      ADD_FAILURE() << st.ToString();
      return nullptr;
    }
    return std::make_unique<AzuriteProcess>(std::move(*a));
  }();
  return az.get();
}

std::string FreshPrefix() {
  static std::atomic<int> n{0};
  return "t" + std::to_string(n++) + "-" + std::to_string(::getpid());
}

// Small blocks so the conformance suite's 12 MiB write is 12 parallel Put Blocks.
std::map<std::string, std::string> Tuning() {
  return {{"block_size", "1MiB"}, {"upload_threshold", "2MiB"}, {"upload_concurrency", "4"}};
}

MountConfig Mount(std::map<std::string, std::string> options, const std::string& container = kContainer) {
  MountConfig m;
  m.path = "/azure";
  m.ufs = "az://" + container + "/" + FreshPrefix();
  m.options = std::move(options);
  return m;
}

std::shared_ptr<UnderStore> Open(const MountConfig& m) {
  auto s = OpenUnderStore(m);
  if (!s) ADD_FAILURE() << s.error().ToString();
  return s ? *s : nullptr;
}

std::map<std::string, std::string> SharedKeyOptions() {
  return {{"endpoint", Azurite()->blob_endpoint()}, {"account", AzuriteProcess::kAccount}, {"key", AzuriteProcess::kKey}};
}

std::shared_ptr<UnderStore> MakeFreshSharedKey() {
  if (!Azurite()) return nullptr;
  auto o = SharedKeyOptions();
  o.merge(Tuning());
  return Open(Mount(o));
}

std::shared_ptr<UnderStore> MakeFreshSas() {
  if (!Azurite()) return nullptr;
  auto sas = Azurite()->AccountSas("rwdlac");
  if (!sas) {
    ADD_FAILURE() << sas.error().ToString();
    return nullptr;
  }
  auto o = Tuning();
  o.emplace("endpoint", Azurite()->blob_endpoint());
  o.emplace("sas_token", *sas);
  return Open(Mount(o));
}

INSTANTIATE_TEST_SUITE_P(Azure, UnderStoreConformance,
                         ::testing::Values(StoreFactory{"azure_shared_key", MakeFreshSharedKey, /*has_rename=*/false,
                                                        /*renames_dirs=*/false, /*keeps_metadata=*/true},
                                           StoreFactory{"azure_sas", MakeFreshSas, /*has_rename=*/false,
                                                        /*renames_dirs=*/false, /*keeps_metadata=*/true}),
                         [](const auto& info) { return info.param.name; });

// Issue 32 item 10: modes, owners and times kept in blob metadata (Set Blob
// Metadata), next to the same prefix opened without the option.
TEST(AzureStore, PosixAttributesAreKeptInBlobMetadata) {
  ASSERT_NE(Azurite(), nullptr);
  MountConfig plain = Mount(SharedKeyOptions());
  MountConfig with = plain;
  with.options["posix_attributes"] = "true";
  auto store = Open(with);
  auto raw = Open(plain);
  ASSERT_TRUE(store && raw);
  CheckPosixAttributesInMetadata(*store, *raw);
}

TEST(AzureStore, WrongKeyIsPermissionDeniedNamingTheMount) {
  ASSERT_NE(Azurite(), nullptr);
  auto o = SharedKeyOptions();
  o["key"] = Base64Encode(std::string(64, 'k'));  // well-formed, but not the account's key
  auto m = Mount(o);
  m.path = "/wrong-key";
  auto store = Open(m);
  ASSERT_NE(store, nullptr);
  auto st = store->Stat("x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kPermissionDenied) << st.error().ToString();
  EXPECT_NE(st.error().message().find("mount /wrong-key"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("check the account key or SAS token"), std::string::npos);
  EXPECT_EQ(st.error().message().find(o["key"]), std::string::npos) << "the key must never appear in messages";
  auto w = store->Write("x", std::string_view("data"));
  EXPECT_EQ(w.code(), Code::kPermissionDenied) << w.ToString();
}

TEST(AzureStore, ReadOnlySasCannotWriteAndNeverLeaksTheToken) {
  ASSERT_NE(Azurite(), nullptr);
  auto writer = MakeFreshSharedKey();
  auto sas = Azurite()->AccountSas("rl");
  ASSERT_TRUE(sas) << sas.error().ToString();
  MountConfig m;
  m.path = "/ro";
  m.ufs = writer->uri();
  m.options = {{"endpoint", Azurite()->blob_endpoint()}, {"sas_token", *sas}};
  auto reader = Open(m);
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(writer->Write("f", std::string_view("hello")).ok());
  char buf[5];
  auto n = reader->Read("f", 0, buf);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(std::string(buf, *n), "hello");
  auto st = reader->Write("g", std::string_view("nope"));
  EXPECT_EQ(st.code(), Code::kPermissionDenied) << st.ToString();
  EXPECT_EQ(st.message().find("sig="), std::string::npos) << st.message();
}

TEST(AzureStore, MissingContainerIsNotFoundNamingIt) {
  ASSERT_NE(Azurite(), nullptr);
  auto store = Open(Mount(SharedKeyOptions(), "no-such-container"));
  ASSERT_NE(store, nullptr);
  auto st = store->Stat("x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound);
  EXPECT_NE(st.error().message().find("container 'no-such-container'"), std::string::npos) << st.error().message();
  auto l = store->List("", {});
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message().find("no-such-container"), std::string::npos) << l.error().message();
}

TEST(AzureStore, ConnectionStringOption) {
  ASSERT_NE(Azurite(), nullptr);
  auto store = Open(Mount({{"connection_string", Azurite()->connection_string()}}));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Write("cs", std::string_view("via connection string")).ok());
  auto st = store->Stat("cs");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->size, 21u);
}

TEST(AzureStore, EnvironmentConnectionString) {
  ASSERT_NE(Azurite(), nullptr);
  ::setenv("AZURE_STORAGE_CONNECTION_STRING", Azurite()->connection_string().c_str(), 1);
  auto store = Open(Mount({}));
  ::unsetenv("AZURE_STORAGE_CONNECTION_STRING");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Write("env", std::string_view("x")).ok());
  EXPECT_TRUE(store->Stat("env"));
}

TEST(AzureStore, LargeWriteCommitsBlocksOnlyOnClose) {
  auto store = MakeFreshSharedKey();
  ASSERT_NE(store, nullptr);
  auto w = store->OpenWriter("blocks/obj");
  ASSERT_TRUE(w);
  std::string mib(1 << 20, 'b');
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*w)->Append(mib).ok());  // past upload_threshold: blocks in flight
  auto before = store->Stat("blocks/obj");
  ASSERT_FALSE(before);
  EXPECT_EQ(before.error().code(), Code::kNotFound) << "uncommitted blocks must stay invisible";
  ASSERT_TRUE((*w)->Close().ok());
  // Ask the service which blocks make up the blob: five 1 MiB blocks.
  HttpRequest req;
  req.url = Azurite()->blob_endpoint() + "/" + kContainer + "/" +
            store->uri().substr(std::string("az://").size() + std::string(kContainer).size() + 1) +
            "blocks/obj?comp=blocklist&blocklisttype=committed";
  req.headers = {{"x-ms-version", "2021-08-06"}, {"x-ms-date", HttpDate(std::chrono::system_clock::now())}};
  SignSharedKey(req, AzuriteProcess::kAccount, *Base64Decode(AzuriteProcess::kKey));
  auto r = PerformHttp(req);
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->status, 200) << r->body;
  size_t blocks = 0;
  for (size_t p = 0; (p = r->body.find("<Block>", p)) != std::string::npos; ++p) ++blocks;
  EXPECT_EQ(blocks, 5u) << r->body;
}

TEST(AzureStore, DirectoryStatAndListingOfPrefixes) {
  auto store = MakeFreshSharedKey();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Write("d/e/f", std::string_view("1")).ok());
  auto st = store->Stat("d/e");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_TRUE(st->is_dir);
  auto root = store->Stat("");
  ASSERT_TRUE(root) << root.error().ToString();
  EXPECT_TRUE(root->is_dir);
  auto l = store->List("d/", {});
  ASSERT_TRUE(l) << l.error().ToString();
  ASSERT_EQ(l->entries.size(), 1u);
  EXPECT_EQ(l->entries[0].key, "d/e");
  EXPECT_TRUE(l->entries[0].is_dir);
}

// Azurite takes bearer tokens only over HTTPS (`--oauth basic`); the token
// comes from the Entra ID stand-in through `credentials: client-secret`.
TEST(AzureStore, EntraIdBearerTokenReadsWritesAndLists) {
  auto dir = testing::MakeTempDir("azure-oauth", "Azurite's certificate");
  ASSERT_TRUE(dir) << dir.error().ToString();
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{*dir};
  std::string key = *dir + "/key.pem", cert = *dir + "/cert.pem";
  // A throwaway self-signed certificate for 127.0.0.1, made by the openssl CLI.
  Subprocess::Options gen_options;
  gen_options.argv = {
      "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",        "-keyout", key,
      "-out",    cert,  "-days", "1",       "-subj",    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"};
  gen_options.stderr_to_stdout = true;
  auto gen = Subprocess::Start(gen_options);
  ASSERT_TRUE(gen) << gen.error().ToString();
  int status = gen->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "openssl req failed: " << gen->output();

  AzuriteProcess::Options ao;
  ao.tls_cert_file = cert;
  ao.tls_key_file = key;
  ao.oauth = true;
  auto az = AzuriteProcess::Start(ao);
  ASSERT_TRUE(az) << az.error().ToString();
  ASSERT_TRUE(az->blob_endpoint().starts_with("https://"));
  ASSERT_TRUE(az->CreateContainer("bearer").ok());

  const std::string tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47", client = "5e1f7c2a-0b3d-4c8e-9f60-7a8b9c0d1e2f";
  const std::string secret = "e2e~client-SECRET";
  testing::EntraStandIn entra(tenant);
  entra.SetClientSecret(client, secret);
  ::setenv("AZURE_TENANT_ID", tenant.c_str(), 1);
  ::setenv("AZURE_CLIENT_ID", client.c_str(), 1);
  ::setenv("AZURE_CLIENT_SECRET", secret.c_str(), 1);
  ::setenv("AZURE_AUTHORITY_HOST", entra.url().c_str(), 1);
  MountConfig m;
  m.path = "/bearer";
  m.ufs = "az://bearer/" + FreshPrefix();
  m.options = {{"endpoint", az->blob_endpoint()}, {"ca_file", cert}, {"credentials", "client-secret"}};
  auto store = OpenUnderStore(m);
  for (const char* v : {"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_AUTHORITY_HOST"}) {
    ::unsetenv(v);
  }
  ASSERT_TRUE(store) << store.error().ToString();
  EXPECT_EQ(entra.requests().token, 1);

  // A blob written with the shared key, read and listed with the bearer token.
  MountConfig writer_mount = m;
  writer_mount.path = "/bearer-writer";
  writer_mount.options = {{"endpoint", az->blob_endpoint()},
                          {"ca_file", cert},
                          {"account", AzuriteProcess::kAccount},
                          {"key", AzuriteProcess::kKey}};
  auto writer = OpenUnderStore(writer_mount);
  ASSERT_TRUE(writer) << writer.error().ToString();
  ASSERT_TRUE((*writer)->Write("d/by-key", std::string_view("shared key")).ok());
  char buf[10];
  auto n = (*store)->Read("d/by-key", 0, buf);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(std::string(buf, *n), "shared key");
  ASSERT_TRUE((*store)->Write("d/by-token", std::string_view("bearer")).ok());
  auto l = (*store)->List("d/", {});
  ASSERT_TRUE(l) << l.error().ToString();
  ASSERT_EQ(l->entries.size(), 2u);
  EXPECT_EQ(l->entries[0].key, "d/by-key");
  EXPECT_EQ(l->entries[1].key, "d/by-token");
  EXPECT_EQ(entra.requests().token, 1) << "one token serves every request of its life";

  // The same token over plain HTTP (the shared Azurite) is refused: the
  // message says what to check for a token, and never holds it.
  ASSERT_NE(Azurite(), nullptr);
  ::setenv("AZURE_TENANT_ID", tenant.c_str(), 1);
  ::setenv("AZURE_CLIENT_ID", client.c_str(), 1);
  ::setenv("AZURE_CLIENT_SECRET", secret.c_str(), 1);
  ::setenv("AZURE_AUTHORITY_HOST", entra.url().c_str(), 1);
  auto plain = Mount({{"endpoint", Azurite()->blob_endpoint()}, {"credentials", "client-secret"}});
  plain.path = "/bearer-http";
  auto refused = OpenUnderStore(plain);
  for (const char* v : {"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_AUTHORITY_HOST"}) {
    ::unsetenv(v);
  }
  ASSERT_TRUE(refused) << refused.error().ToString();
  auto st = (*refused)->Stat("x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kPermissionDenied) << st.error().ToString();
  EXPECT_NE(st.error().message().find("Storage Blob Data"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("client-secret"), std::string::npos) << st.error().message();
  EXPECT_EQ(st.error().message().find(entra.last_token()), std::string::npos) << "the token must never appear";
  EXPECT_EQ(st.error().message().find(secret), std::string::npos);
}

TEST(AzureStore, UnknownOptionIsRejected) {
  MountConfig m;
  m.path = "/typo";
  m.ufs = "az://c/p";
  m.options = {{"acount", "x"}};
  auto s = OpenUnderStore(m);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), Code::kInvalidArgument);
  EXPECT_NE(s.error().message().find("acount"), std::string::npos);
}

}  // namespace
}  // namespace shoal
