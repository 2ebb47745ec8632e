// The AWS chain against the stand-ins of IMDSv2, the container endpoint and
// STS (tests/harness/aws_stand_in.h), cross-checked with botocore (the aws
// cli's credential code) pointed at the same stand-ins and files.
#include "ufs/cloud/aws_credentials.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/config.h"
#include "common/subprocess.h"
#include "tests/harness/aws_stand_in.h"
#include "tests/harness/harness_util.h"
#include "ufs/under_store.h"

namespace shoal::cloud {
namespace {

using namespace std::chrono_literals;
using testing::AwsStandIn;

class AwsChain : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = testing::MakeScratchDir("awschain", "AWS chain test files");
    ASSERT_TRUE(d) << d.error().ToString();
    dir_ = *d;
    vars_["HOME"] = dir_->path;                   // an empty ~/.aws unless a test writes one
    vars_["AWS_EC2_METADATA_DISABLED"] = "true";  // never the real 169.254.169.254
  }
  Env env() const {
    return [vars = vars_](std::string_view n) -> std::optional<std::string> {
      auto it = vars.find(std::string(n));
      if (it == vars.end() || it->second.empty()) return std::nullopt;
      return it->second;
    };
  }
  std::string Write(const std::string& name, const std::string& text, bool exec = false) {
    std::string path = dir_->path + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    if (exec) ::chmod(path.c_str(), 0755);
    return path;
  }
  Result<Chosen> Resolve(std::map<std::string, std::string> options = {}) {
    return ResolveAwsCredentials({std::move(options), "us-east-1"}, env());
  }
  void UseImds() {
    vars_.erase("AWS_EC2_METADATA_DISABLED");
    vars_["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = aws_.url();
  }
  void UseWebIdentity() {
    vars_["AWS_WEB_IDENTITY_TOKEN_FILE"] = Write("token", "web-identity-token");  // as the kubelet writes it
    vars_["AWS_ROLE_ARN"] = "arn:aws:iam::123456789012:role/trainer";
    vars_["AWS_ROLE_SESSION_NAME"] = "pod-7";
    vars_["AWS_ENDPOINT_URL_STS"] = aws_.url();
  }

  AwsStandIn aws_;
  std::shared_ptr<testing::ScratchDir> dir_;
  std::map<std::string, std::string> vars_;
};

TEST_F(AwsChain, InstanceMetadataV2GivesTemporaryKeysWithTheirToken) {
  UseImds();
  auto c = Resolve();
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "instance-metadata");
  EXPECT_EQ(c->first.access_key_id, aws_.last_issued_key());
  EXPECT_FALSE(c->first.session_token.empty());
  EXPECT_TRUE(c->first.expiring());
  EXPECT_NE(c->provider->detail().find("role shoal-node-role"), std::string::npos) << c->provider->detail();
  auto n = aws_.counts();
  EXPECT_GE(n.imds_token_puts, 1);
  EXPECT_EQ(n.imds_unauthorized, 0);  // every GET carried the session token
}

TEST_F(AwsChain, InstanceMetadataV1OnlyWhenAllowed) {
  UseImds();
  aws_.set_allow_imdsv1(true);
  aws_.set_fault(AwsStandIn::Endpoint::kImds, AwsStandIn::Fault::kError500);
  auto refused = Resolve();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), Code::kPermissionDenied);
  EXPECT_NE(refused.error().message().find("IMDSv1 is not used unless the mount sets imdsv1: true"), std::string::npos)
      << refused.error().message();
}

TEST_F(AwsChain, NothingFoundListsEveryProviderAndWhy) {
  UseImds();
  aws_.set_fault(AwsStandIn::Endpoint::kImds, AwsStandIn::Fault::kError500);
  auto c = Resolve();
  ASSERT_FALSE(c);
  const std::string m = c.error().message();
  for (const char* name :
       {"keys:", "environment: AWS_ACCESS_KEY_ID is not set", "assume-role:", "web-identity:", "shared-credentials:",
        "process:", "config-file:", "container:", "instance-metadata:", "credentials: anonymous"}) {
    EXPECT_NE(m.find(name), std::string::npos) << name << " missing from: " << m;
  }
  EXPECT_NE(m.find("HTTP 500"), std::string::npos) << m;
}

TEST_F(AwsChain, WebIdentityAssumesTheRoleWithTheTokenFile) {
  UseWebIdentity();
  auto c = Resolve();
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "web-identity");
  EXPECT_EQ(aws_.last_role_arn(), "arn:aws:iam::123456789012:role/trainer");
  EXPECT_EQ(aws_.last_session_name(), "pod-7");
  EXPECT_EQ(c->first.access_key_id, aws_.last_issued_key());
  EXPECT_FALSE(c->first.session_token.empty());
  // A wrong token is STS's refusal, named, and it stops the chain.
  aws_.set_web_identity_token("rotated");
  auto bad = c->provider->Fetch();
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("InvalidIdentityToken"), std::string::npos) << bad.error().message();
  EXPECT_EQ(bad.error().message().find("web-identity-token"), std::string::npos) << "the token leaked";
}

TEST_F(AwsChain, AssumeRoleProfileSignsWithItsSourceProfile) {
  aws_.add_source_key("AKIDSOURCE", "source-secret");
  Write(".aws/credentials", "[base]\naws_access_key_id = AKIDSOURCE\naws_secret_access_key = source-secret\n");
  Write(".aws/config",
        "[profile train]\nrole_arn = arn:aws:iam::1:role/train\nsource_profile = base\n"
        "role_session_name = s1\nsts.endpoint_url = " +
            aws_.url() + "\n");
  vars_["AWS_PROFILE"] = "train";
  auto c = Resolve();
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "assume-role");
  EXPECT_EQ(aws_.last_assume_role_signer(), "AKIDSOURCE");  // STS verified the SigV4 signature
  EXPECT_EQ(aws_.last_role_arn(), "arn:aws:iam::1:role/train");
  EXPECT_EQ(c->first.access_key_id, aws_.last_issued_key());
}

TEST_F(AwsChain, AssumeRoleWithAWrongSourceSecretIsRefused) {
  aws_.add_source_key("AKIDSOURCE", "the-real-secret");
  Write(".aws/credentials", "[base]\naws_access_key_id = AKIDSOURCE\naws_secret_access_key = wrong\n");
  Write(".aws/config", "[profile train]\nrole_arn = arn:aws:iam::1:role/train\nsource_profile = base\n");
  vars_["AWS_PROFILE"] = "train";
  vars_["AWS_ENDPOINT_URL_STS"] = aws_.url();
  auto c = Resolve();
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("SignatureDoesNotMatch"), std::string::npos) << c.error().message();
  EXPECT_EQ(c.error().message().find("wrong"), std::string::npos) << "the secret leaked";
}

TEST_F(AwsChain, ContainerEndpointWithItsAuthorizationTokenFile) {
  aws_.set_container_token("pod-identity-token");
  vars_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = aws_.container_url();
  vars_["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = Write("eks-token", "pod-identity-token\n");
  auto c = Resolve();
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "container");
  EXPECT_EQ(aws_.counts().container_gets, 1);
  vars_["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = Write("eks-token", "stale\n");
  auto refused = Resolve();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("HTTP 401"), std::string::npos) << refused.error().message();
  // Plain http to another host is refused before any request.
  vars_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://10.1.2.3/creds";
  auto remote = Resolve();
  ASSERT_FALSE(remote);
  EXPECT_NE(remote.error().message().find("must be https"), std::string::npos) << remote.error().message();
}

TEST_F(AwsChain, CredentialProcessPrintsVersion1Json) {
  std::string script = Write("creds.sh",
                             "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC\", \"SecretAccessKey\": "
                             "\"p\", \"SessionToken\": \"t\", \"Expiration\": \"2099-01-01T00:00:00Z\"}'\n",
                             true);
  Write(".aws/config", "[default]\ncredential_process = " + script + " --secret-arg\n");
  auto c = Resolve();
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->provider->name(), "process");
  EXPECT_EQ(c->first.access_key_id, "AKIDPROC");
  EXPECT_EQ(c->first.session_token, "t");
  EXPECT_EQ(c->provider->detail().find("--secret-arg"), std::string::npos) << "arguments may be secrets";
  Write("creds.sh", "#!/bin/sh\nexit 3\n", true);
  auto failed = c->provider->Fetch();
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("exit 3"), std::string::npos) << failed.error().message();
}

TEST_F(AwsChain, FaultsAreNamedAndBounded) {
  UseWebIdentity();
  for (auto fault : {AwsStandIn::Fault::kGarbage, AwsStandIn::Fault::kExpired, AwsStandIn::Fault::kError500}) {
    aws_.set_fault(AwsStandIn::Endpoint::kSts, fault);
    auto c = Resolve();
    ASSERT_FALSE(c) << static_cast<int>(fault);
    EXPECT_NE(c.error().message().find("web-identity"), std::string::npos) << c.error().message();
  }
  aws_.set_fault(AwsStandIn::Endpoint::kSts, AwsStandIn::Fault::kHang);
  auto start = std::chrono::steady_clock::now();
  auto c = ResolveAwsCredentials({{}, "us-east-1"}, env());
  EXPECT_FALSE(c);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 25s);  // bounded by the call's deadline, not the stand-in
}

TEST_F(AwsChain, NamedProviderAndAnonymous) {
  vars_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  vars_["AWS_SECRET_ACCESS_KEY"] = "s";
  UseImds();
  auto imds = Resolve({{"credentials", "instance-metadata"}});
  ASSERT_TRUE(imds) << imds.error().ToString();
  EXPECT_EQ(imds->provider->name(), "instance-metadata");  // skips the environment's keys
  auto anon = Resolve({{"credentials", "anonymous"}});
  ASSERT_TRUE(anon);
  EXPECT_TRUE(anon->first.access_key_id.empty());
  auto bad = Resolve({{"credentials", "magic"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("instance-metadata"), std::string::npos) << bad.error().message();
  vars_.erase("AWS_SECRET_ACCESS_KEY");
  auto half = Resolve();
  ASSERT_FALSE(half);
  EXPECT_NE(half.error().message().find("AWS_SECRET_ACCESS_KEY is not"), std::string::npos) << half.error().message();
}

// Reads through the S3 stand-in, which takes only credentials it issued,
// with their session token signed in, before they expire: over three
// lifetimes of 3 s, no read fails and none is signed with expired keys.
TEST_F(AwsChain, ReadsAcrossThreeCredentialLifetimesNeverFail) {
  aws_.set_lifetime(3s);
  aws_.PutObject("bucket", "data/a.bin", testing::RandomBytes(100'000, 7));
  ::setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", aws_.url().c_str(), 1);
  ::unsetenv("AWS_EC2_METADATA_DISABLED");
  ::setenv("HOME", dir_->path.c_str(), 1);
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"}) {
    ::unsetenv(v);
  }
  MountConfig m;
  m.path = "/lifetimes";
  m.ufs = "s3://bucket/data/";
  m.options = {{"endpoint", aws_.url()}, {"max_retries", "0"}};
  auto store = OpenUnderStore(m);
  ASSERT_TRUE(store) << store.error().ToString();
  const std::string want = testing::RandomBytes(100'000, 7);
  int reads = 0, failed = 0;
  auto until = std::chrono::steady_clock::now() + 10s;
  std::string buf(4096, '\0');
  while (std::chrono::steady_clock::now() < until) {
    uint64_t off = (reads * 4099) % 90'000;
    auto n = (*store)->Read("a.bin", off, std::span<char>(buf.data(), buf.size()));
    if (!n || *n != buf.size() || buf != want.substr(off, buf.size())) {
      ++failed;
      ADD_FAILURE() << "read " << reads << ": " << (n ? "wrong bytes" : n.error().ToString());
    }
    ++reads;
    std::this_thread::sleep_for(5ms);  // pacing only: the test is about wall-clock expiry
  }
  ::unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  auto n = aws_.counts();
  EXPECT_EQ(failed, 0);
  EXPECT_GT(reads, 100);
  EXPECT_GE(n.imds_gets, 2 * 3);  // role + keys, at least once per lifetime
  EXPECT_EQ(n.s3_expired, 0);
  EXPECT_EQ(n.s3_no_token, 0);
  EXPECT_EQ(n.s3_refused, 0);
}

// botocore (python3-botocore, what the aws cli runs) pointed at the same
// stand-ins and files must pick the same provider as Shoal in each case.
TEST_F(AwsChain, SamePrecedenceAsBotocore) {
  ASSERT_EQ(::access("/usr/bin/python3", X_OK), 0)
      << "no /usr/bin/python3 (with python3-botocore): run scripts/bootstrap";
  const std::string script = Write("which.py", R"PY(
import sys, botocore.session
s = botocore.session.Session()
orig = s.create_client
def create_client(name, *a, **kw):
    if name == 'sts':
        kw['endpoint_url'] = sys.argv[1]
    return orig(name, *a, **kw)
s.create_client = create_client
try:
    c = s.get_credentials()
    print('=' * 3 + '> %s %s' % (c.method if c else 'none', c.access_key if c else ''))
except Exception as e:
    print('=' * 3 + '> error %s: %s' % (type(e).__name__, e))
)PY");
  aws_.add_source_key("AKIDBASE", "base-secret");
  const std::string proc = Write("proc.sh",
                                 "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC\", "
                                 "\"SecretAccessKey\": \"p\"}'\n",
                                 true);
  // Each case adds one more provider of higher precedence on top of the last.
  struct Case {
    std::string botocore_method, shoal_provider;
    std::function<void()> add;
  };
  std::vector<Case> cases = {
      {"iam-role", "instance-metadata", [&] { UseImds(); }},
      {"container-role", "container", [&] { vars_["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = aws_.container_url(); }},
      {"config-file", "config-file",
       [&] { Write(".aws/config", "[default]\naws_access_key_id = AKIDCONF\naws_secret_access_key = c\n"); }},
      {"custom-process", "process",
       [&] {
         Write(".aws/config",
               "[default]\naws_access_key_id = AKIDCONF\naws_secret_access_key = c\n"
               "credential_process = " +
                   proc + "\n");
       }},
      {"shared-credentials-file", "shared-credentials",
       [&] {
         Write(".aws/credentials",
               "[default]\naws_access_key_id = AKIDCRED\naws_secret_access_key = c\n"
               "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = base-secret\n");
       }},
      {"assume-role-with-web-identity", "web-identity", [&] { UseWebIdentity(); }},
      {"assume-role", "assume-role",
       [&] {
         Write(".aws/config",
               "[default]\naws_access_key_id = AKIDCONF\naws_secret_access_key = c\n"
               "credential_process = " +
                   proc +
                   "\nrole_arn = arn:aws:iam::1:role/r\n"
                   "source_profile = base\n");
       }},
      {"env", "environment",
       [&] {
         vars_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
         vars_["AWS_SECRET_ACCESS_KEY"] = "e";
       }},
  };
  for (auto& c : cases) {
    c.add();
    auto shoal = Resolve();
    ASSERT_TRUE(shoal) << c.shoal_provider << ": " << shoal.error().ToString();
    EXPECT_EQ(shoal->provider->name(), c.shoal_provider);

    // Unset what the case does not set: botocore reads an empty AWS_PROFILE as a profile named "".
    Subprocess::Options o;
    std::vector<std::string> set = {"HOME=" + dir_->path, "AWS_DEFAULT_REGION=us-east-1",
                                    "AWS_CONFIG_FILE=" + dir_->path + "/.aws/config",
                                    "AWS_SHARED_CREDENTIALS_FILE=" + dir_->path + "/.aws/credentials"};
    o.argv = {"/usr/bin/env"};
    for (const char* v :
         {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_EC2_METADATA_DISABLED",
          "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
          "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
          "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_ENDPOINT_URL_STS",
          "AWS_ENDPOINT_URL", "PYTHONPATH"}) {
      if (vars_.contains(v)) {
        set.push_back(std::string(v) + "=" + vars_[v]);
      } else {
        o.argv.insert(o.argv.end(), {"-u", v});
      }
    }
    o.argv.insert(o.argv.end(), set.begin(), set.end());
    o.argv.insert(o.argv.end(), {"/usr/bin/python3", script, aws_.url()});
    o.stderr_to_stdout = true;
    auto py = Subprocess::Start(o);
    ASSERT_TRUE(py) << py.error().ToString();
    auto line = py->WaitForLine("===> ", 60s);
    ASSERT_TRUE(line) << c.botocore_method << ": " << line.error().ToString();
    EXPECT_NE(line->find("===> " + c.botocore_method + " "), std::string::npos)
        << "botocore chose: " << *line << ", Shoal chose " << shoal->provider->name();
  }
}

}  // namespace
}  // namespace shoal::cloud
