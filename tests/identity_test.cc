// Who is asking, end to end (issue 27 items 8 and 9), against real `shoal
// worker` processes with a cluster key: a client's own token names it; a door
// whose identity is in security.proxy_users names its end user
// (X-Shoal-On-Behalf-Of) and the workers take that user, while any other
// credential may name only itself; a FUSE mount names the calling process's
// user and groups (read as `nobody` through the mount); the S3 endpoint names
// the owner of the access key a request is signed with (aws cli).
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "common/end_user.h"
#include "common/task_pool.h"
#include "security/token.h"
#include "shoal/client.h"
#include "tests/cli_helpers.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/shoal_cluster.h"
#include "tests/s3_endpoint_raw.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kAliceKey = "AKALICEIDENTITY";
constexpr const char* kAliceSecret = "alice-secret-0123456789abcdef";
constexpr const char* kDaveKey = "AKDAVEIDENTITY";
constexpr const char* kDaveSecret = "dave-secret-0123456789abcdef";

class IdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("identity");
    ASSERT_FALSE(dir_.empty());
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);  // `nobody` reaches the mount point under it
    data_ = RandomBytes(300'000, 27);
    // One file per reader: a cold read reaches a worker over TCP, where
    // identities are checked (the short circuit to cached pages does not carry one yet).
    for (const char* name : {"file", "nobody", "root", "bob", "dave"}) {
      ASSERT_TRUE(WriteFile(dir_ + "/ufs/" + name + ".bin", data_).ok());
    }
    key_file_ = dir_ + "/token.key";
    ASSERT_TRUE(security::TokenKeys::CreateKeyFile(key_file_).ok());
    auto keys = security::TokenKeys::Load(key_file_);
    ASSERT_TRUE(keys) << keys.error().ToString();
    keys_ = std::make_shared<security::TokenKeys>(std::move(*keys));

    ShoalCluster::Options o;
    o.workers = 1;
    o.cache_root = dir_ + "/cluster";
    fs::create_directories(o.cache_root);
    o.mounts = {FileMount(dir_ + "/ufs")};
    o.security.token_key_file = key_file_;
    o.security.proxy_users = {"door-svc"};
    // The worker's S3 listener signs in as the door, and serves two users.
    o.client.token_file = TokenFile("door-svc", {});
    S3Config s3;
    s3.users["alice"] = S3User{kAliceKey, kAliceSecret, {"ml", "vision"}};
    s3.users["dave"] = S3User{kDaveKey, kDaveSecret, {}};
    s3.staging_dir = dir_ + "/staging";
    o.s3 = s3;
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    log_ = o.cache_root + "/worker-0.log";
  }

  void TearDown() override {
    for (const auto& mp : mounts_) {
      if (Mounted(mp)) Shoal({"fuse", "--unmount", mp}, 60s);
      if (Mounted(mp)) ::umount2(mp.c_str(), MNT_DETACH);
    }
    cluster_.reset();
    fs::remove_all(dir_);
  }

  // A file holding a token for `user`, for client.token_file.
  std::string TokenFile(const std::string& user, std::vector<std::string> groups) {
    std::string path = dir_ + "/" + user + ".token";
    EXPECT_TRUE(WriteFile(path, keys_->Issue(user, std::move(groups), 1h, security::UnixNow())).ok());
    ::chmod(path.c_str(), 0600);
    return path;
  }

  std::unique_ptr<Client> ClientWithToken(const std::string& token_file) {
    ClientConfig cc;
    cc.token_file = token_file;
    auto c = Client::FromYaml(cluster_->ClientYaml(cc), "identity-test");
    EXPECT_TRUE(c) << c.error().ToString();
    return c ? std::move(*c) : nullptr;
  }

  std::string ConfigWithToken(const std::string& name, const std::string& token_file) {
    ClientConfig cc;
    cc.token_file = token_file;
    std::string path = dir_ + "/" + name + ".yaml";
    EXPECT_TRUE(WriteFile(path, cluster_->ClientYaml(cc)).ok());
    return path;
  }

  // Whether the worker logged serving `who` ("alice (token, via door-svc) groups=ml").
  bool WorkerServed(const std::string& who) {
    return WaitFor([&] { return Slurp(log_).find("serving " + who + " for the first time") != std::string::npos; },
                   20s);
  }

  std::string dir_, data_, key_file_, log_;
  std::shared_ptr<security::TokenKeys> keys_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::vector<std::string> mounts_;
};

TEST_F(IdentityTest, ADoorNamesItsEndUserAndAnyOtherCredentialOnlyItself) {
  auto door = ClientWithToken(TokenFile("door-svc", {}));
  ASSERT_TRUE(door);
  auto self = door->WhoAmI();
  ASSERT_TRUE(self) << self.error().ToString();
  EXPECT_EQ(self->user, "door-svc");
  EXPECT_EQ(self->proof, "token");
  EXPECT_TRUE(self->may_act_for_others);
  {
    ActingFor carol(std::make_shared<EndUser>(EndUser{"carol", {"ml", "bad group"}}));
    auto id = door->WhoAmI();
    ASSERT_TRUE(id) << id.error().ToString();
    EXPECT_EQ(id->user, "carol");
    EXPECT_EQ(id->groups, (std::vector<std::string>{"ml"})) << "a name the header cannot carry is left out";
    EXPECT_EQ(id->via, "door-svc");
    EXPECT_FALSE(id->may_act_for_others) << "an end user never inherits the door's trust";
    // Reads for carol go through (the worker admits the door's word), from the
    // client's own thread pools too.
    auto f = door->OpenFile("/data/file.bin");
    ASSERT_TRUE(f) << f.error().ToString();
    std::string got(data_.size(), '\0');
    auto n = (*f)->Pread(0, std::span<char>(got.data(), got.size()));
    ASSERT_TRUE(n) << n.error().ToString();
    EXPECT_TRUE(got == data_);
    TaskPool pool(1);
    auto from_pool = pool.Submit([&] { return door->WhoAmI(); }).get();
    ASSERT_TRUE(from_pool);
    EXPECT_EQ(from_pool->user, "carol");
  }
  EXPECT_TRUE(WorkerServed("carol (token, via door-svc) groups=ml"));
  // The short circuit (this process runs as the worker's user: SO_PEERCRED)
  // names her too, and a read served there again is not served to another user.
  const std::string me = [] {
    passwd* pw = ::getpwuid(::geteuid());
    return pw ? std::string(pw->pw_name) : std::to_string(::geteuid());
  }();
  EXPECT_TRUE(WorkerServed("carol (peer credentials, via " + me + ") groups=ml")) << Slurp(log_);

  // alice's own token: she may name herself (and gains no group by it), nobody else.
  auto alice = ClientWithToken(TokenFile("alice", {"ml"}));
  ASSERT_TRUE(alice);
  {
    ActingFor as_herself(std::make_shared<EndUser>(EndUser{"alice", {"admins"}}));
    auto id = alice->WhoAmI();
    ASSERT_TRUE(id) << id.error().ToString();
    EXPECT_EQ(id->user, "alice");
    EXPECT_EQ(id->groups, (std::vector<std::string>{"ml"}));
    EXPECT_EQ(id->via, "");
  }
  {
    ActingFor as_carol(std::make_shared<EndUser>(EndUser{"carol", {}}));
    auto id = alice->WhoAmI();
    ASSERT_FALSE(id) << "alice acted for carol as " << id->user;
    EXPECT_EQ(id.error().code(), Code::kPermissionDenied) << id.error().ToString();
    EXPECT_NE(id.error().message().find("security.proxy_users"), std::string::npos) << id.error().ToString();
  }

  // A client without a credential names nobody: the header is not even sent.
  ClientConfig plain;
  auto anon = Client::FromYaml(cluster_->ClientYaml(plain), "anonymous");
  ASSERT_TRUE(anon);
  ActingFor as_carol(std::make_shared<EndUser>(EndUser{"carol", {}}));
  auto id = (*anon)->WhoAmI();
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(id->user, "");
  EXPECT_EQ(id->proof, "none");

  // `shoal whoami` says the same.
  auto who = Shoal({"whoami", "--config", ConfigWithToken("alice", dir_ + "/alice.token")});
  EXPECT_EQ(who.exit_code, 0) << who.err;
  EXPECT_EQ(who.out, "alice (token) groups=ml\n");
  auto json = Shoal({"whoami", "--json", "--config", ConfigWithToken("door", dir_ + "/door-svc.token")});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"may_act_for_others\":true"), std::string::npos) << json.out;
}

// The mount signs in as door-svc; a process of `nobody` reads through it and
// the worker serves `nobody` with its groups, via the mount.
TEST_F(IdentityTest, AFuseMountNamesTheCallingProcessesUser) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to read as another user";
  passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  group* nogroup = ::getgrgid(nobody->pw_gid);
  ASSERT_NE(nogroup, nullptr);
  const std::string nobody_group = nogroup->gr_name;
  const std::string mp = dir_ + "/mnt";
  fs::create_directories(mp);
  const std::string config = ConfigWithToken("mount", dir_ + "/door-svc.token");
  auto mounted = Shoal({"fuse", mp, "--config", config, "-o", "allow_other"}, 90s);
  ASSERT_EQ(mounted.exit_code, 0) << mounted.out << mounted.err;
  mounts_.push_back(mp);
  auto as_nobody =
      Command({"setpriv", "--reuid=" + std::to_string(nobody->pw_uid), "--regid=" + std::to_string(nobody->pw_gid),
               "--init-groups", "cat", mp + "/data/nobody.bin"});
  ASSERT_EQ(as_nobody.exit_code, 0) << as_nobody.err;
  EXPECT_TRUE(as_nobody.out == data_) << "nobody read different bytes through the mount";
  EXPECT_TRUE(WorkerServed("nobody (token, via door-svc) groups=" + nobody_group)) << Slurp(log_);
  // The mount's owner (root) is named too, with its own groups.
  auto as_root = Command({"cat", mp + "/data/root.bin"});
  ASSERT_EQ(as_root.exit_code, 0) << as_root.err;
  EXPECT_TRUE(WorkerServed("root (token, via door-svc) groups=root")) << Slurp(log_);
}

// A mount whose token is not a proxy's makes every request as itself.
TEST_F(IdentityTest, AMountThatMayNotActForOthersReadsAsItself) {
  const std::string mp = dir_ + "/mnt-bob";
  fs::create_directories(mp);
  const std::string config = ConfigWithToken("bob", TokenFile("bob", {"staff"}));
  auto mounted = Shoal({"fuse", mp, "--config", config}, 90s);
  ASSERT_EQ(mounted.exit_code, 0) << mounted.out << mounted.err;
  mounts_.push_back(mp);
  auto cat = Command({"cat", mp + "/data/bob.bin"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == data_);
  EXPECT_TRUE(WorkerServed("bob (token) groups=staff")) << Slurp(log_);
  EXPECT_EQ(Slurp(log_).find("via bob"), std::string::npos);
}

// Each S3 access key's owner is the user the workers serve (aws cli, unchanged).
TEST_F(IdentityTest, TheS3EndpointNamesTheOwnerOfTheSigningKey) {
  auto status = cluster_->Get(0, "/v1/status");
  ASSERT_TRUE(status) << status.error().ToString();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*status, m, std::regex("\"s3_endpoint\":\"([^\"]+)\""))) << *status;
  const std::string endpoint = m[1];
  auto aws = [&](const char* key, const char* secret, const std::string& name, const std::string& out) {
    return RunCmd({"/usr/bin/aws", "--endpoint-url", "http://" + endpoint, "s3", "cp", "s3://data/" + name, out},
                  {{"AWS_ACCESS_KEY_ID", key},
                   {"AWS_SECRET_ACCESS_KEY", secret},
                   {"AWS_DEFAULT_REGION", "us-east-1"},
                   {"AWS_CONFIG_FILE", "/dev/null"},
                   {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
                   {"AWS_EC2_METADATA_DISABLED", "true"},
                   {"AWS_PAGER", ""}});
  };
  auto a = aws(kAliceKey, kAliceSecret, "file.bin", dir_ + "/by-alice");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_TRUE(Slurp(dir_ + "/by-alice") == data_);
  EXPECT_TRUE(WorkerServed("alice (token, via door-svc) groups=ml,vision")) << Slurp(log_);
  auto d = aws(kDaveKey, kDaveSecret, "dave.bin", dir_ + "/by-dave");
  ASSERT_EQ(d.exit_code, 0) << d.out;
  EXPECT_TRUE(WorkerServed("dave (token, via door-svc)")) << Slurp(log_);
  // A wrong secret is refused at the endpoint; the secrets never reach the log.
  auto bad = aws(kAliceKey, "not-her-secret", "file.bin", dir_ + "/by-nobody");
  EXPECT_NE(bad.exit_code, 0) << bad.out;
  // (aws s3 cp asks HeadObject first: a 403 without a body, so no error code to show.)
  EXPECT_NE(bad.out.find("(403)"), std::string::npos) << bad.out;
  EXPECT_EQ(Slurp(log_).find(kAliceSecret), std::string::npos);
}

}  // namespace
}  // namespace shoal::testing
