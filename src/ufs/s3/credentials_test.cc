#include "ufs/s3/credentials.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "common/config.h"
#include "ufs/s3/s3_settings.h"

namespace shoal::s3 {
namespace {

// A fake environment, so tests never see the machine's own AWS setup.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](std::string_view n) -> std::optional<std::string> {
      auto it = vars.find(std::string(n));
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  }
};

class S3Credentials : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-s3cred-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    env_.vars["HOME"] = dir_;  // ~/.aws is empty unless a test writes it
    Hermetic();
  }
  // Never the real instance metadata or Google metadata server.
  void Hermetic() {
    env_.vars["AWS_EC2_METADATA_DISABLED"] = "true";
    env_.vars["GCE_METADATA_HOST"] = "127.0.0.1:1";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void WriteFile(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }
  // The settings, and (unless settings_only) the credentials the mount's chain finds.
  Result<S3Settings> Resolve(const std::string& ufs, std::map<std::string, std::string> options = {},
                             bool settings_only = false) {
    MountConfig m;
    m.path = "/m";
    m.ufs = ufs;
    m.options = std::move(options);
    auto uri = ParseUfsUri(ufs);
    EXPECT_TRUE(uri);
    auto s = ResolveS3Settings(*uri, m, env_.lookup());
    if (!s || settings_only) return s;
    if (auto st = AttachCredentials(*s, *uri, m, env_.lookup()); !st.ok()) return Err(st);
    return s;
  }

  std::string dir_;
  FakeEnv env_;
};

TEST_F(S3Credentials, NothingConfiguredIsAnErrorUnlessAnonymousIsAsked) {
  auto none = Resolve("s3://bucket/prefix");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), Code::kPermissionDenied);
  EXPECT_NE(none.error().message().find("no credentials found; tried keys"), std::string::npos)
      << none.error().message();
  EXPECT_NE(none.error().message().find("mount /m (s3://bucket/prefix/)"), std::string::npos) << none.error().message();
  auto s = Resolve("s3://bucket/prefix", {{"credentials", "anonymous"}});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_TRUE(s->creds.anonymous());
  EXPECT_EQ(s->region, "us-east-1");
  EXPECT_EQ(s->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_FALSE(s->path_style);
  EXPECT_EQ(s->BucketBaseUrl(), "https://bucket.s3.us-east-1.amazonaws.com");
  EXPECT_EQ(s->prefix, "prefix/");
}

TEST_F(S3Credentials, EnvironmentVariables) {
  env_.vars = {{"HOME", dir_},
               {"AWS_ACCESS_KEY_ID", "AKIAENV"},
               {"AWS_SECRET_ACCESS_KEY", "envsecret"},
               {"AWS_SESSION_TOKEN", "envtoken"},
               {"AWS_DEFAULT_REGION", "eu-west-1"},
               {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"}};
  Hermetic();
  auto s = Resolve("s3://bucket/p/");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->creds.access_key_id, "AKIAENV");
  EXPECT_EQ(s->creds.secret_access_key, "envsecret");
  EXPECT_EQ(s->creds.session_token, "envtoken");
  EXPECT_EQ(s->region, "eu-west-1");
  EXPECT_EQ(s->endpoint, "http://127.0.0.1:9000");
  EXPECT_TRUE(s->path_style);  // a custom endpoint defaults to path style
  EXPECT_EQ(s->BucketBaseUrl(), "http://127.0.0.1:9000/bucket");

  env_.vars["AWS_REGION"] = "ap-south-1";  // wins over AWS_DEFAULT_REGION
  env_.vars["AWS_ENDPOINT_URL_S3"] = "https://minio.local:9443";  // wins over AWS_ENDPOINT_URL
  s = Resolve("s3://bucket/p/");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->region, "ap-south-1");
  EXPECT_EQ(s->endpoint, "https://minio.local:9443");
}

TEST_F(S3Credentials, MountOptionsWinOverEnvironment) {
  env_.vars["AWS_ACCESS_KEY_ID"] = "AKIAENV";
  env_.vars["AWS_SECRET_ACCESS_KEY"] = "envsecret";
  auto s = Resolve("s3://bucket", {{"access_key_id", "AKIAOPT"}, {"secret_access_key", "optsecret"},
                                   {"region", "us-west-2"}, {"path_style", "true"}});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->creds.access_key_id, "AKIAOPT");
  EXPECT_EQ(s->creds.source, "keys (mount options, access key AKIAOPT), static");
  EXPECT_EQ(s->BucketBaseUrl(), "https://s3.us-west-2.amazonaws.com/bucket");
}

TEST_F(S3Credentials, SharedFilesWithProfile) {
  WriteFile(dir_ + "/.aws/credentials",
            "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = defsecret\n\n"
            "# a comment\n[training]\naws_access_key_id=AKIATRAIN\naws_secret_access_key=trainsecret\n"
            "aws_session_token = traintoken\n");
  WriteFile(dir_ + "/.aws/config",
            "[default]\nregion = us-east-2\n[profile training]\nregion = eu-north-1\ns3 =\n"
            "  endpoint_url = http://ceph.internal:7480\n");
  auto s = Resolve("s3://bucket/x");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->creds.access_key_id, "AKIADEFAULT");
  EXPECT_EQ(s->region, "us-east-2");

  env_.vars["AWS_PROFILE"] = "training";
  s = Resolve("s3://bucket/x");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->creds.access_key_id, "AKIATRAIN");
  EXPECT_EQ(s->creds.secret_access_key, "trainsecret");
  EXPECT_EQ(s->creds.session_token, "traintoken");
  EXPECT_EQ(s->region, "eu-north-1");
  EXPECT_EQ(s->endpoint, "http://ceph.internal:7480");

  // The mount's profile option wins over AWS_PROFILE.
  s = Resolve("s3://bucket/x", {{"profile", "default"}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->creds.access_key_id, "AKIADEFAULT");
}

TEST_F(S3Credentials, CustomFileLocationsAndMissingProfile) {
  WriteFile(dir_ + "/elsewhere/creds", "[ci]\naws_access_key_id = AKIACI\naws_secret_access_key = cisecret\n");
  env_.vars["AWS_SHARED_CREDENTIALS_FILE"] = dir_ + "/elsewhere/creds";
  auto s = Resolve("s3://bucket", {{"profile", "ci"}});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->creds.access_key_id, "AKIACI");

  auto missing = Resolve("s3://bucket", {{"profile", "nope"}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Code::kInvalidArgument);
  EXPECT_NE(missing.error().message().find("'nope'"), std::string::npos);
}

TEST_F(S3Credentials, GcsIgnoresAwsEnvironment) {
  env_.vars["AWS_ACCESS_KEY_ID"] = "AKIAENV";
  env_.vars["AWS_SECRET_ACCESS_KEY"] = "envsecret";
  env_.vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1";
  auto none = Resolve("gs://bucket/prefix");
  ASSERT_FALSE(none);  // AWS keys are never offered to Google
  auto s = Resolve("gs://bucket/prefix", {{"credentials", "anonymous"}});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_TRUE(s->creds.anonymous());
  EXPECT_EQ(s->region, "auto");
  EXPECT_EQ(s->endpoint, "https://storage.googleapis.com");
  EXPECT_EQ(s->BucketBaseUrl(), "https://bucket.storage.googleapis.com");

  s = Resolve("gs://bucket/prefix", {{"access_key_id", "GOOG1"}, {"secret_access_key", "hmac"},
                                      {"endpoint", "http://127.0.0.1:4443"}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->creds.access_key_id, "GOOG1");
  EXPECT_EQ(s->BucketBaseUrl(), "http://127.0.0.1:4443/bucket");
}

TEST_F(S3Credentials, BadOptionsNameTheOptionNotTheSecret) {
  auto half = Resolve("s3://bkt", {{"secret_access_key", "topsecret"}});
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().message().find("topsecret"), std::string::npos);
  EXPECT_NE(half.error().message().find("access_key_id"), std::string::npos);

  auto unknown = Resolve("s3://bkt", {{"regoin", "x"}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("'regoin'"), std::string::npos);

  EXPECT_FALSE(Resolve("s3://bkt", {{"multipart_part_size", "1MiB"}}));
  EXPECT_FALSE(Resolve("s3://bkt", {{"payload_signing", "maybe"}}));
  EXPECT_FALSE(Resolve("s3://bkt", {{"endpoint", "ftp://x"}}));
  EXPECT_FALSE(Resolve("s3://bkt", {{"max_retries", "-1"}}));
  auto which = Resolve("s3://bkt", {{"credentials", "service-account"}}, /*settings_only=*/true);
  ASSERT_FALSE(which);  // a Google provider on an AWS mount: caught by a config check
  EXPECT_NE(which.error().message().find("instance-metadata"), std::string::npos) << which.error().message();
}

TEST_F(S3Credentials, DottedBucketFallsBackToPathStyle) {
  auto s = Resolve("s3://my.dotted.bucket/x", {}, /*settings_only=*/true);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->path_style);
  EXPECT_EQ(s->BucketBaseUrl(), "https://s3.us-east-1.amazonaws.com/my.dotted.bucket");
}

TEST(S3Ini, SubsectionsAndComments) {
  auto ini = ParseAwsIni("; top\n[a]\nk = v = w\ns3 =\n  endpoint_url = e\n  addressing_style = path\nx=1\n");
  EXPECT_EQ(ini["a"]["k"], "v = w");
  EXPECT_EQ(ini["a"]["s3.endpoint_url"], "e");
  EXPECT_EQ(ini["a"]["s3.addressing_style"], "path");
  EXPECT_EQ(ini["a"]["x"], "1");
}

}  // namespace
}  // namespace shoal::s3
