// A store behind a private CA, through every door (issue 27 item 4).
//
// s3rver serves HTTPS with a certificate no system CA signed; the mount names
// it with `ca_file`. `shoal up` checks the store with it, and each door then
// reads the right bytes: `shoal cat`, the FUSE mount, the S3 endpoint (aws
// cli), the Python SDK, `shoal load`, and a client whose workers are all
// unreachable, which reads the store itself (client.ufs_fallback) with the
// mount's CA. Without `ca_file` the store is refused at start with an error
// naming it, and the same fallback read fails: the CA is what makes it work.
// `verify_tls: false` is honoured only when the mount says so.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <csignal>
#include <filesystem>
#include <regex>

#include "tests/cli_helpers.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "tests/s3_endpoint_raw.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class StoreCaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("store-ca");
    ASSERT_FALSE(dir_.empty());
    cert_ = dir_ + "/cert.pem";
    // A throwaway self-signed certificate for 127.0.0.1 (its own CA).
    auto gen =
        Command({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir_ + "/key.pem", "-out",
                 cert_, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"});
    ASSERT_EQ(gen.exit_code, 0) << gen.out << gen.err;
    S3rverProcess::Options so;
    so.tls_cert_file = cert_;
    so.tls_key_file = dir_ + "/key.pem";
    auto s3 = S3rverProcess::Start(so);
    ASSERT_TRUE(s3) << s3.error().ToString();
    s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
    ASSERT_TRUE(s3_->endpoint().starts_with("https://"));
    ASSERT_TRUE(s3_->CreateBucket("ca-bucket").ok());
    // The objects, written over TLS with the CA.
    MountConfig m;
    m.path = "/data";
    m.ufs = "s3://ca-bucket/";
    m.options = {{"endpoint", s3_->endpoint()}, {"ca_file", cert_}, {"credentials", "anonymous"}};
    auto store = OpenUnderStore(m);
    ASSERT_TRUE(store) << store.error().ToString();
    for (int i = 0; i < 4; ++i) {
      files_.push_back({"f" + std::to_string(i) + ".bin", RandomBytes(300'000 + 1000 * i, i + 1)});
      ASSERT_TRUE((*store)->Write(files_.back().first, files_.back().second).ok());
    }
  }
  void TearDown() override {
    if (up_) {
      up_->proc.Signal(SIGTERM);
      up_->proc.Wait(60s);
    }
    if (!mnt_.empty() && Mounted(mnt_)) ::umount2(mnt_.c_str(), MNT_DETACH);
    s3_.reset();
    fs::remove_all(dir_);
  }

  // `shoal up` over the bucket with these extra mount options (-o K=V).
  std::unique_ptr<Up> StartUp(const std::vector<std::string>& options, const std::vector<std::string>& more,
                              const std::string& name) {
    std::vector<std::string> args = {"--ufs",        "s3://ca-bucket/",
                                     "--workers",    "2",
                                     "--state-dir",  dir_ + "/state-" + name,
                                     "--cache-size", "64MiB",
                                     "-o",           "endpoint=" + s3_->endpoint(),
                                     "-o",           "credentials=anonymous"};
    for (const auto& o : options) args.insert(args.end(), {"-o", o});
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<Up>(LaunchUp(args, dir_ + "/up-" + name + ".err"));
  }

  std::string dir_, cert_, mnt_;
  std::unique_ptr<S3rverProcess> s3_;
  std::unique_ptr<Up> up_;
  std::vector<std::pair<std::string, std::string>> files_;
};

TEST_F(StoreCaTest, EveryDoorReadsAStoreBehindThePrivateCaOfItsMount) {
  // Without the CA the store check fails at start, naming the store and what to do.
  {
    auto bad = StartUp({}, {}, "no-ca");
    EXPECT_FALSE(bad->ready);
    EXPECT_NE(bad->exit_code, 0);
    EXPECT_NE(bad->err().find(s3_->endpoint()), std::string::npos) << bad->err();
    EXPECT_NE(bad->err().find("-o ca_file=PATH"), std::string::npos) << bad->err();
  }

  mnt_ = dir_ + "/mnt";
  fs::create_directories(mnt_);
  up_ = StartUp({"ca_file=" + cert_}, {"--s3", "0", "--fuse", mnt_}, "ca");
  ASSERT_TRUE(up_->ready) << up_->err();
  const std::string config = up_->config;

  // shoal cat (the C++ client).
  for (const auto& [name, data] : files_) {
    auto cat = Shoal({"cat", "/data/" + name, "--config", config});
    ASSERT_EQ(cat.exit_code, 0) << cat.err;
    EXPECT_TRUE(cat.out == data) << name << ": " << cat.out.size() << " bytes";
  }
  // FUSE.
  ASSERT_TRUE(Mounted(mnt_));
  for (const auto& [name, data] : files_) {
    auto got = Command({"cat", mnt_ + "/data/" + name});
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_TRUE(got.out == data) << name << " through FUSE: " << got.out.size() << " bytes";
  }
  // The S3 endpoint, with the aws cli.
  std::smatch m;
  const std::string out = up_->proc.output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex("s3: endpoint=(\\S+) access_key=(\\S+) secret_key=(\\S+)"))) << out;
  auto aws = RunCmd({"/usr/bin/aws", "--endpoint-url", m[1], "s3", "cp", "s3://data/" + files_[2].first, "-"},
                    {{"AWS_ACCESS_KEY_ID", m[2]},
                     {"AWS_SECRET_ACCESS_KEY", m[3]},
                     {"AWS_DEFAULT_REGION", "us-east-1"},
                     {"AWS_CONFIG_FILE", "/dev/null"},
                     {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
                     {"AWS_EC2_METADATA_DISABLED", "true"}});
  ASSERT_EQ(aws.exit_code, 0) << aws.out;
  EXPECT_TRUE(aws.out.ends_with(files_[2].second)) << "aws s3 cp: " << aws.out.size() << " bytes";
  // The Python SDK.
  const std::string py =
      "import shoal, sys\nc = shoal.Client(sys.argv[1])\n"
      "sys.stdout.buffer.write(c.read('/data/' + sys.argv[2]))\n";
  auto python = RunCmd({"/usr/bin/python3", "-c", py, config, files_[3].first},
                       {{"PYTHONPATH", std::string(SHOAL_BUILD_DIR) + "/python"}, {"PYTHONDONTWRITEBYTECODE", "1"}});
  ASSERT_EQ(python.exit_code, 0) << python.out.substr(0, 2000);
  EXPECT_TRUE(python.out == files_[3].second) << "python: " << python.out.size() << " bytes";
  // shoal load: the workers list and fetch the whole bucket over TLS.
  auto load = Shoal({"load", "/data", "--config", config});
  ASSERT_EQ(load.exit_code, 0) << load.out << load.err;

  // A client whose workers are all unreachable reads the store itself, with the mount's CA.
  const std::string yaml = Slurp(config);
  ASSERT_NE(yaml.find(cert_), std::string::npos) << "the client config carries the mount's ca_file:\n" << yaml;
  const std::string dead = std::regex_replace(yaml, std::regex("@127\\.0\\.0\\.1:[0-9]+"), "@127.0.0.1:1");
  ASSERT_NE(dead, yaml);
  ASSERT_TRUE(WriteFile(dir_ + "/dead.yaml", dead).ok());
  auto fallback = Shoal({"cat", "/data/" + files_[1].first, "--config", dir_ + "/dead.yaml"});
  ASSERT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_TRUE(fallback.out == files_[1].second) << "fallback: " << fallback.out.size() << " bytes";
  // The same without the CA fails on the certificate: the CA is what made it work.
  std::string no_ca = std::regex_replace(dead, std::regex("\\n *ca_file: [^\\n]*"), "");
  ASSERT_EQ(no_ca.find(cert_), std::string::npos) << no_ca;
  ASSERT_TRUE(WriteFile(dir_ + "/no-ca.yaml", no_ca).ok());
  auto refused = Shoal({"cat", "/data/" + files_[1].first, "--config", dir_ + "/no-ca.yaml"}, 60s);
  EXPECT_NE(refused.exit_code, 0) << refused.out.size() << " bytes read without the CA";
  EXPECT_NE(refused.err.find(s3_->endpoint()), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("ca_file"), std::string::npos) << refused.err;
}

TEST_F(StoreCaTest, VerifyTlsOffIsHonouredOnlyWhereTheMountSaysSo) {
  up_ = StartUp({"verify_tls=false"}, {}, "unverified");
  ASSERT_TRUE(up_->ready) << up_->err();
  auto cat = Shoal({"cat", "/data/" + files_[0].first, "--config", up_->config});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == files_[0].second);
  // A value other than a boolean is refused, not read as "off".
  auto bad = StartUp({"verify_tls=no-thanks"}, {}, "bad-value");
  EXPECT_FALSE(bad->ready);
  EXPECT_NE(bad->err().find("verify_tls"), std::string::npos) << bad->err();
}

}  // namespace
}  // namespace shoal::testing
