// The S3 backend against a real S3 server (s3rver, started once per test
// binary on a kernel-chosen port): the shared conformance suite for s3://
// (unsigned and signed payloads) and gs:// (endpoint pointed at s3rver), plus
// S3-specific behaviour.
#include "ufs/s3/s3_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <memory>

#include "common/config.h"
#include "tests/harness/s3rver.h"
#include "ufs/conformance_test.h"

namespace shoal {
namespace {

using testing::S3rverProcess;

constexpr const char* kBucket = "shoal-test";
constexpr const char* kGcsBucket = "shoal-gcs";

// The server outlives every test and stops when the binary exits.
S3rverProcess* Server() {
  static std::unique_ptr<S3rverProcess> server = [] {
    auto s = S3rverProcess::Start();
    if (!s) {
      std::fprintf(stderr, "cannot start s3rver: %s\n", s.error().ToString().c_str());
      return std::unique_ptr<S3rverProcess>();
    }
    for (const char* b : {kBucket, kGcsBucket}) {
      if (auto st = s->CreateBucket(b); !st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        return std::unique_ptr<S3rverProcess>();
      }
    }
    return std::make_unique<S3rverProcess>(std::move(*s));
  }();
  return server.get();
}

std::string FreshPrefix() {
  static std::atomic<int> n{0};
  return "t" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

MountConfig Mount(const std::string& ufs, std::map<std::string, std::string> options) {
  MountConfig m;
  m.path = "/data";
  m.ufs = ufs;
  m.options = std::move(options);
  m.options["endpoint"] = Server()->endpoint();
  // Small parts so the 12 MiB conformance write goes multipart.
  m.options.emplace("multipart_threshold", "5MiB");
  m.options.emplace("multipart_part_size", "5MiB");
  return m;
}

std::shared_ptr<UnderStore> Open(const MountConfig& m) {
  auto s = OpenUnderStore(m);
  if (!s) ADD_FAILURE() << s.error().ToString();
  return s ? *s : nullptr;
}

std::shared_ptr<UnderStore> MakeS3() {
  if (!Server()) return nullptr;
  return Open(Mount(std::string("s3://") + kBucket + "/" + FreshPrefix(),
                    {{"access_key_id", S3rverProcess::kAccessKeyId},
                     {"secret_access_key", S3rverProcess::kSecretAccessKey}}));
}

std::shared_ptr<UnderStore> MakeS3SignedPayload() {
  if (!Server()) return nullptr;
  return Open(Mount(std::string("s3://") + kBucket + "/" + FreshPrefix() + "/nested",
                    {{"access_key_id", S3rverProcess::kAccessKeyId},
                     {"secret_access_key", S3rverProcess::kSecretAccessKey},
                     {"payload_signing", "signed"},
                     {"multipart_concurrency", "2"}}));
}

std::shared_ptr<UnderStore> MakeGcs() {
  if (!Server()) return nullptr;
  return Open(Mount(std::string("gs://") + kGcsBucket + "/" + FreshPrefix(),
                    {{"access_key_id", S3rverProcess::kAccessKeyId},
                     {"secret_access_key", S3rverProcess::kSecretAccessKey}}));
}

INSTANTIATE_TEST_SUITE_P(S3, UnderStoreConformance,
                         ::testing::Values(StoreFactory{"s3", MakeS3, true, false, /*keeps_metadata=*/true},
                                           StoreFactory{"s3_signed_payload", MakeS3SignedPayload, true, false, true},
                                           StoreFactory{"gcs", MakeGcs, true, false, true}),
                         [](const auto& info) { return info.param.name; });

// Issue 32 item 10: modes, owners and times kept in user metadata, on S3 and
// on GCS (its XML API), each next to the same prefix opened without the option.
TEST(S3Store, PosixAttributesAreKeptInUserMetadata) {
  if (!Server()) GTEST_FAIL() << "no s3rver";
  for (std::string scheme : {"s3", "gs"}) {
    SCOPED_TRACE(scheme);
    const std::string ufs = scheme + "://" + (scheme == "s3" ? kBucket : kGcsBucket) + "/" + FreshPrefix();
    const std::map<std::string, std::string> keys = {{"access_key_id", S3rverProcess::kAccessKeyId},
                                                     {"secret_access_key", S3rverProcess::kSecretAccessKey}};
    auto with = keys;
    with["posix_attributes"] = "true";
    auto store = Open(Mount(ufs, with));
    auto raw = Open(Mount(ufs, keys));
    ASSERT_TRUE(store && raw);
    CheckPosixAttributesInMetadata(*store, *raw);
  }
}

TEST(S3Store, RootIsADirectoryAndListsFolders) {
  auto store = MakeS3();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Write("top.txt", std::string_view("t")).ok());
  ASSERT_TRUE(store->Write("d1/a", std::string_view("a")).ok());
  // One level only: s3rver 3.7 misses common prefixes whose objects sit two
  // or more levels down (real S3 does not).
  ASSERT_TRUE(store->Write("d2/b", std::string_view("c")).ok());
  auto root = store->Stat("");
  ASSERT_TRUE(root) << root.error().ToString();
  EXPECT_TRUE(root->is_dir);
  auto page = store->List("", {});
  ASSERT_TRUE(page) << page.error().ToString();
  ASSERT_EQ(page->entries.size(), 3u);
  EXPECT_EQ(page->entries[0].key, "d1");
  EXPECT_TRUE(page->entries[0].is_dir);
  EXPECT_EQ(page->entries[1].key, "d2");
  EXPECT_EQ(page->entries[2].key, "top.txt");
  EXPECT_FALSE(page->entries[2].etag.empty());
  EXPECT_GT(page->entries[2].mtime_ns, 0);
  auto f = store->Stat("top.txt");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->etag, page->entries[2].etag);  // HEAD and LIST agree, without quotes
  EXPECT_EQ(f->etag.find('"'), std::string::npos);
}

class S3DeleteKeys : public ::testing::TestWithParam<std::shared_ptr<UnderStore> (*)()> {};
// Named, not printed: a function pointer prints as an address, which differs
// between CTest's discovery run and the test run, so the test would never run.
INSTANTIATE_TEST_SUITE_P(S3, S3DeleteKeys, ::testing::Values(&MakeS3, &MakeGcs),
                         [](const auto& info) { return info.param == &MakeS3 ? std::string("s3") : std::string("gcs"); });

TEST_P(S3DeleteKeys, RemovesMany) {
  auto store = GetParam()();
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  for (int i = 0; i < 5; ++i) {
    keys.push_back("many/k" + std::to_string(i));
    ASSERT_TRUE(store->Write(keys.back(), std::string_view("x")).ok());
  }
  auto st = s3::DeleteKeys(*store, keys);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto page = store->List("many/", {});
  ASSERT_TRUE(page);
  EXPECT_TRUE(page->entries.empty());
  // UnderStore::Delete asks first: a missing key is NotFound, as on every store.
  EXPECT_EQ(store->Delete("many/k0").code(), Code::kNotFound);
}

TEST(S3Store, MissingBucketIsNotFoundNamingIt) {
  ASSERT_NE(Server(), nullptr);
  auto store = Open(Mount("s3://no-such-bucket/x", {{"credentials", "anonymous"}}));
  ASSERT_NE(store, nullptr);
  auto st = store->Stat("k");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound);
  EXPECT_NE(st.error().message().find("no-such-bucket"), std::string::npos) << st.error().ToString();
}

TEST(S3Store, UnknownAccessKeyIsPermissionDenied) {
  ASSERT_NE(Server(), nullptr);
  auto store = Open(Mount(std::string("s3://") + kBucket + "/" + FreshPrefix(),
                          {{"access_key_id", "NOTAKEY"}, {"secret_access_key", "wrong-secret"}}));
  ASSERT_NE(store, nullptr);
  auto st = store->Write("k", std::string_view("x"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kPermissionDenied) << st.ToString();
  EXPECT_NE(st.message().find("(mount /data)"), std::string::npos) << st.ToString();
  EXPECT_EQ(st.message().find("wrong-secret"), std::string::npos);
}

TEST(S3Store, EnvironmentAloneIsEnough) {
  // `ufs: s3://bucket/prefix` with nothing else, the endpoint and keys coming
  // from the standard AWS variables.
  ASSERT_NE(Server(), nullptr);
  ::setenv("AWS_ENDPOINT_URL", Server()->endpoint().c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", S3rverProcess::kAccessKeyId, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", S3rverProcess::kSecretAccessKey, 1);
  MountConfig m;
  m.path = "/env";
  m.ufs = std::string("s3://") + kBucket + "/" + FreshPrefix();
  auto store = OpenUnderStore(m);
  ::unsetenv("AWS_ENDPOINT_URL");
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ASSERT_TRUE(store) << store.error().ToString();
  ASSERT_TRUE((*store)->Write("hello", std::string_view("world")).ok());
  char buf[5];
  auto n = (*store)->Read("hello", 0, buf);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(std::string(buf, *n), "world");
}

TEST(S3Store, HttpsWithCustomCaFile) {
  char tmpl[] = "/tmp/shoal-s3tls-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl, key = dir + "/key.pem", cert = dir + "/cert.pem";
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  // A throwaway self-signed certificate for 127.0.0.1, made by the openssl CLI.
  Subprocess::Options o;
  o.argv = {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"};
  o.stderr_to_stdout = true;
  auto gen = Subprocess::Start(o);
  ASSERT_TRUE(gen) << gen.error().ToString();
  int status = gen->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "openssl req failed: " << gen->output();

  S3rverProcess::Options so;
  so.tls_cert_file = cert;
  so.tls_key_file = key;
  auto tls = S3rverProcess::Start(so);
  ASSERT_TRUE(tls) << tls.error().ToString();
  ASSERT_TRUE(tls->endpoint().starts_with("https://"));
  ASSERT_TRUE(tls->CreateBucket("tls-bucket").ok());

  auto mount = [&](std::map<std::string, std::string> extra) {
    MountConfig m;
    m.path = "/tls";
    m.ufs = "s3://tls-bucket/p";
    m.options = {
        {"endpoint", tls->endpoint()}, {"max_retries", "0"}, {"request_timeout", "20s"}, {"credentials", "anonymous"}};
    for (auto& [k, v] : extra) m.options[k] = v;
    auto s = OpenUnderStore(m);
    EXPECT_TRUE(s) << s.error().ToString();
    return s ? *s : nullptr;
  };
  auto trusted = mount({{"ca_file", cert}});
  ASSERT_NE(trusted, nullptr);
  ASSERT_TRUE(trusted->Write("x", std::string_view("over tls")).ok());
  char buf[8];
  auto n = trusted->Read("x", 0, buf);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(std::string(buf, *n), "over tls");

  // The system CAs do not know this certificate: a clear error, not data.
  auto untrusted = mount({});
  auto st = untrusted->Stat("x");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find(tls->endpoint()), std::string::npos) << st.error().ToString();

  auto unverified = mount({{"verify_tls", "false"}});
  EXPECT_TRUE(unverified->Stat("x")) << "verify_tls=false must accept the certificate";
}

}  // namespace
}  // namespace shoal
