// `shoal up --ufs s3://...` on a node with no keys at all, only an IAM role
// behind instance metadata (a local IMDSv2 stand-in) and a bucket that takes
// only the temporary keys with their session token: the cluster starts, reads
// the right bytes, and says which provider gave the credentials; with no
// provider at all it stops at start with exit 4 and a list of what it tried.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "common/config.h"
#include "tests/cli_helpers.h"
#include "tests/harness/aws_stand_in.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

class CloudCredentialsUp : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = MakeScratchDir("cloudup", "shoal up with cloud credentials");
    ASSERT_TRUE(d) << d.error().ToString();
    dir_ = *d;
    fs::create_directories(dir_->path + "/home");
    // No keys, no profile: an empty HOME, and nothing AWS in the environment.
    ::setenv("HOME", (dir_->path + "/home").c_str(), 1);
    for (const char* v :
         {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_CONFIG_FILE",
          "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
          "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_EC2_METADATA_DISABLED",
          "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}) {
      ::unsetenv(v);
    }
    aws_.PutObject("training", "shards/part-0.bin", RandomBytes(300'000, 11));
  }
  void TearDown() override {
    up_.proc.Stop();
    ::unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    ::unsetenv("AWS_EC2_METADATA_DISABLED");
  }
  std::vector<std::string> UpArgs() {
    return {"--ufs",        "s3://training/shards/",
            "-o",           "endpoint=" + aws_.url(),
            "--workers",    "2",
            "--state-dir",  dir_->path + "/state",
            "--cache-size", "64MiB"};
  }

  AwsStandIn aws_;
  std::shared_ptr<ScratchDir> dir_;
  Up up_;
};

TEST_F(CloudCredentialsUp, InstanceMetadataRoleReadsTheBucket) {
  ::setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", aws_.url().c_str(), 1);
  aws_.set_lifetime(std::chrono::seconds(6));  // short enough to see the workers refresh
  up_ = LaunchUp(UpArgs(), dir_->path + "/up.err");
  ASSERT_TRUE(up_.ready) << "exit " << up_.exit_code << ": " << up_.err() << up_.proc.output();
  EXPECT_NE(up_.proc.output().find("credentials: /data: instance-metadata (" + aws_.url() + ", role shoal-node-role)"),
            std::string::npos)
      << up_.proc.output();

  auto cat = Shoal({"cat", "/data/part-0.bin", "--config", up_.config});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == RandomBytes(300'000, 11)) << "wrong bytes: " << cat.out.size();

  auto status = Shoal({"status", "--config", up_.config});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(CountLines(status.out, "credentials /data: instance-metadata"), 2) << status.out;  // each worker

  // The workers refresh the role's keys before they expire, counted in a
  // metric, and read with the new ones.
  auto cfg = LoadConfig(up_.config);
  ASSERT_TRUE(cfg) << cfg.error().ToString();
  std::vector<std::string> workers;
  for (const auto& w : cfg->cluster.workers) workers.push_back(w.address);
  const std::string refreshed =
      R"(shoal_ufs_credential_refreshes_total{mount="/data",provider="instance-metadata",result="ok"})";
  EXPECT_TRUE(WaitFor([&] { return WorkerMetricSum(workers, refreshed).value_or(0) >= 2; }, std::chrono::seconds(60)))
      << "no refresh counted";
  aws_.PutObject("training", "shards/part-1.bin", RandomBytes(200'000, 12));
  auto again = Shoal({"cat", "/data/part-1.bin", "--config", up_.config});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(again.out == RandomBytes(200'000, 12));

  auto n = aws_.counts();
  EXPECT_GT(n.s3_ok, 0);
  EXPECT_EQ(n.s3_no_token + n.s3_expired + n.s3_refused, 0);
  EXPECT_EQ(n.imds_unauthorized, 0);  // IMDSv2 only: every GET carried its session token
  // The temporary keys stay in the workers' memory: no file shoal up wrote holds them.
  std::string key = aws_.last_issued_key();
  for (const auto& e : fs::recursive_directory_iterator(dir_->path + "/state")) {
    if (!e.is_regular_file() || e.file_size() > (1 << 20)) continue;
    EXPECT_EQ(Slurp(e.path()).find("standin"), std::string::npos) << e.path() << " holds a credential";
  }
}

// EKS IRSA: a projected service-account token and a role, exchanged at STS.
TEST_F(CloudCredentialsUp, WebIdentityRoleReadsTheBucket) {
  const std::string token_file = dir_->path + "/irsa-token";
  ASSERT_TRUE(WriteFile(token_file, "web-identity-token").ok());
  ::setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.c_str(), 1);
  ::setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/trainer", 1);
  ::setenv("AWS_ENDPOINT_URL_STS", aws_.url().c_str(), 1);
  ::setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  up_ = LaunchUp(UpArgs(), dir_->path + "/up.err");
  ::unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
  ::unsetenv("AWS_ROLE_ARN");
  ::unsetenv("AWS_ENDPOINT_URL_STS");
  ASSERT_TRUE(up_.ready) << "exit " << up_.exit_code << ": " << up_.err() << up_.proc.output();
  EXPECT_NE(up_.proc.output().find("credentials: /data: web-identity (role arn:aws:iam::123456789012:role/trainer"),
            std::string::npos)
      << up_.proc.output();
  auto cat = Shoal({"cat", "/data/part-0.bin", "--config", up_.config});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == RandomBytes(300'000, 11));
  EXPECT_GE(aws_.counts().assume_role_web_identity, 3);  // shoal up's check, then each of the 2 workers
  EXPECT_EQ(aws_.counts().s3_no_token + aws_.counts().s3_expired, 0);
}

TEST_F(CloudCredentialsUp, NoProviderStopsAtStartWithEverythingItTried) {
  ::setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", aws_.url().c_str(), 1);
  aws_.set_fault(AwsStandIn::Endpoint::kImds, AwsStandIn::Fault::kError500);  // not on EC2 after all
  up_ = LaunchUp(UpArgs(), dir_->path + "/up.err");
  ASSERT_FALSE(up_.ready);
  EXPECT_EQ(up_.exit_code, 4) << up_.err();
  const std::string err = up_.err();
  for (const char* tried : {"environment: AWS_ACCESS_KEY_ID is not set",
                            "web-identity:", "container:", "instance-metadata:", "credentials: anonymous"}) {
    EXPECT_NE(err.find(tried), std::string::npos) << tried << " not in: " << err;
  }
}

}  // namespace
}  // namespace shoal::testing
