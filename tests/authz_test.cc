// Ranger policies enforced at every door (issue 28), end to end against real
// `shoal` processes: `shoal policy check` from a ServicePolicies file and from
// a running cluster; `shoal up --policies` with tokens in SHOAL_TOKEN, where
// the allowed user's `shoal cat` returns the bytes and the denied user's
// prints nothing, even for bytes another user's read brought into the cache
// (over TCP and on the short circuit), with the denial in the audit file; the
// S3 endpoint (aws cli, AccessDenied); a FUSE mount read as two local users.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "security/token.h"
#include "shoal/client.h"
#include "tests/cli_helpers.h"
#include "tests/harness/file_io.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/ranger_stand_in.h"
#include "tests/harness/raw_http.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;

Json Access(std::initializer_list<const char*> types) {
  Json a = Json::array();
  for (const char* t : types) a.push_back({{"type", t}, {"isAllowed", true}});
  return a;
}

// The review's policy set: an allow item for a group on a recursive path, a
// deny item for one user, a deny policy on a wildcard sub-path with a deny
// exception for one user, and a disabled policy that would allow everything.
std::string ReviewPolicies() {
  Json doc = {{"serviceName", "shoal-hdfs"},
              {"policyVersion", 12},
              {"policies",
               {{{"id", 10},
                 {"name", "ml reads data"},
                 {"isEnabled", true},
                 {"resources", {{"path", {{"values", {"/data"}}, {"isRecursive", true}}}}},
                 {"policyItems", {{{"accesses", Access({"read", "execute"})}, {"groups", {"ml"}}}}},
                 {"denyPolicyItems", {{{"accesses", Access({"read"})}, {"users", {"eve"}}}}}},
                {{"id", 11},
                 {"name", "private runs"},
                 {"resources", {{"path", {{"values", {"/data/train/private*"}}, {"isRecursive", true}}}}},
                 {"denyPolicyItems", {{{"accesses", Access({"read"})}, {"groups", {"public"}}}}},
                 {"denyExceptions", {{{"accesses", Access({"read"})}, {"users", {"boss"}}}}}},
                {{"id", 12},
                 {"name", "everyone (disabled)"},
                 {"isEnabled", false},
                 {"resources", {{"path", {{"values", {"/"}}, {"isRecursive", true}}}}},
                 {"policyItems", {{{"accesses", Access({"read", "write", "execute"})}, {"groups", {"public"}}}}}},
                {{"id", 13},
                 {"name", "local users of the mount"},
                 {"resources", {{"path", {{"values", {"/data/fuse"}}, {"isRecursive", true}}}}},
                 {"policyItems", {{{"accesses", Access({"read", "execute"})}, {"users", {"root"}}}}}},
                // Traversing /data (a FUSE lookup stats it): execute on it, not recursive.
                {{"id", 14},
                 {"name", "root traverses /data"},
                 {"resources", {{"path", {{"values", {"/data"}}, {"isRecursive", false}}}}},
                 {"policyItems", {{{"accesses", Access({"execute"})}, {"users", {"root"}}}}}}}}};
  return doc.dump(2);
}

class AuthzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("authz-e2e");
    ASSERT_FALSE(dir_.empty());
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);  // `nobody` reaches the mount point under it
    data_ = RandomBytes(300'000, 28);
    for (const char* name : {"train/a.bin", "train/b.bin", "train/private-1.bin", "fuse/f.bin"}) {
      ASSERT_TRUE(WriteFile(dir_ + "/ufs/" + name, data_).ok());
    }
    policies_ = dir_ + "/policies.json";
    ASSERT_TRUE(WriteFile(policies_, ReviewPolicies()).ok());
  }
  void TearDown() override {
    for (const auto& mp : mounts_) {
      if (Mounted(mp)) Shoal({"fuse", "--unmount", mp}, 60s);
      if (Mounted(mp)) ::umount2(mp.c_str(), MNT_DETACH);
    }
    cluster_.reset();
    fs::remove_all(dir_);
  }

  // `shoal ARGS` with SHOAL_TOKEN set.
  static testing::Run ShoalAs(const std::string& token, std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "SHOAL_TOKEN=" + token, std::getenv("SHOAL_BIN")};
    argv.insert(argv.end(), args.begin(), args.end());
    return Command(argv);
  }

  std::string Check(const std::string& user, const std::string& groups, const std::string& path) {
    auto r = Shoal({"policy", "check", "--policies", policies_, "--user", user, "--groups", groups, "--path", path,
                    "--access", "read"});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 4) << r.out << r.err;
    return r.out.substr(0, r.out.find(' '));
  }

  // A cluster of real workers enforcing the policies, with tokens, a door
  // identity (the S3 listener and FUSE mounts act as door-svc) and two S3 users.
  void StartCluster() {
    ShoalCluster::Options o = ClusterOptions();
    o.security.proxy_users = {"door-svc"};
    o.authz.policy_file = policies_;
    o.authz.audit_file = dir_ + "/audit/";
    o.authz.admin_groups = {"ops"};
    o.client.token_file = TokenFile("door-svc", {});
    S3Config s3;
    s3.users["alice"] = S3User{"AKALICEAUTHZ", "alice-secret-0123456789", {"ml"}};
    s3.users["eve"] = S3User{"AKEVEAUTHZ", "eve-secret-0123456789", {"ml"}};
    s3.staging_dir = dir_ + "/staging";
    o.s3 = s3;
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
  }

  // Two workers over the test's files, with a cluster key for tokens (keys_).
  ShoalCluster::Options ClusterOptions() {
    key_file_ = dir_ + "/token.key";
    EXPECT_TRUE(security::TokenKeys::CreateKeyFile(key_file_).ok());
    auto keys = security::TokenKeys::Load(key_file_);
    EXPECT_TRUE(keys) << keys.error().ToString();
    if (keys) keys_ = std::make_shared<security::TokenKeys>(std::move(*keys));
    ShoalCluster::Options o;
    o.workers = 2;
    o.cache_root = dir_ + "/cluster";
    fs::create_directories(o.cache_root);
    o.mounts = {FileMount(dir_ + "/ufs")};
    o.security.token_key_file = key_file_;
    return o;
  }

  std::string TokenFile(const std::string& user, std::vector<std::string> groups) {
    std::string path = dir_ + "/" + user + ".token";
    EXPECT_TRUE(WriteFile(path, keys_->Issue(user, std::move(groups), 1h, security::UnixNow())).ok());
    ::chmod(path.c_str(), 0600);
    return path;
  }
  std::string ConfigWithToken(const std::string& name, const std::string& token_file) {
    ClientConfig cc;
    cc.token_file = token_file;
    std::string path = dir_ + "/" + name + ".yaml";
    EXPECT_TRUE(WriteFile(path, cluster_->ClientYaml(cc)).ok());
    return path;
  }
  // Every audit line the workers wrote.
  std::vector<Json> AuditLines() {
    std::vector<Json> out;
    if (!fs::exists(dir_ + "/audit")) return out;
    for (const auto& f : fs::directory_iterator(dir_ + "/audit")) {
      std::istringstream in(Slurp(f.path().string()));
      for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
    }
    return out;
  }
  bool Audited(const std::string& user, const std::string& resource, int result) {
    for (const auto& l : AuditLines()) {
      if (l["reqUser"] == user && l["resource"] == resource && l["result"] == result) return true;
    }
    return false;
  }

  std::string dir_, data_, policies_, key_file_;
  std::shared_ptr<security::TokenKeys> keys_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::vector<std::string> mounts_;
};

TEST_F(AuthzTest, PolicyCheckFromAFileDecidesAsRangerWould) {
  EXPECT_EQ(Check("alice", "ml", "/data/train/a.bin"), "ALLOWED");         // the group's recursive allow
  EXPECT_EQ(Check("eve", "ml", "/data/train/a.bin"), "DENIED");            // the user's deny item
  EXPECT_EQ(Check("alice", "ml", "/data/train/private-1.bin"), "DENIED");  // the wildcard deny policy
  EXPECT_EQ(Check("boss", "ml", "/data/train/private-1.bin"), "ALLOWED");  // its deny exception
  EXPECT_EQ(Check("boss", "", "/data/train/private-1.bin"), "DENIED");     // an exception grants nothing by itself
  EXPECT_EQ(Check("bob", "web", "/data/train/a.bin"), "DENIED");           // the disabled policy takes no part
  auto r = Shoal({"policy", "check", "--policies", policies_, "--user", "eve", "--groups", "ml", "--path",
                  "/data/train/a.bin", "--access", "read"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.out.find("DENIED by policy 10 (ml reads data) [policy version 12]"), std::string::npos) << r.out;
  r = Shoal({"policy", "check", "--policies", policies_, "--user", "bob", "--path", "/data/x", "--access", "read"});
  EXPECT_NE(r.out.find("DENIED by no policy matched: fallback (deny)"), std::string::npos) << r.out;
  r = Shoal({"policy", "check", "--policies", policies_, "--user", "bob", "--path", "/x", "--access", "fly"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown access type 'fly'"), std::string::npos) << r.err;
}

// The review's check: shoal up --policies, tokens from shoal token issue.
TEST_F(AuthzTest, ShoalUpEnforcesPoliciesForTokenUsersAndAuditsTheDenial) {
  const std::string state = dir_ + "/state";
  Up up = LaunchUp({"--ufs", dir_ + "/ufs", "--workers", "1", "--state-dir", state, "--policies", policies_},
                   dir_ + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  auto token = [&](const std::string& user, const std::string& groups) {
    auto r = Shoal({"token", "issue", "--config", up.config, "--user", user, "--groups", groups});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  };
  const std::string alice = token("alice", "ml"), eve = token("eve", "ml");
  // Cold, then warm (the bytes alice's read cached): eve gets neither, on
  // either path (TCP, or the short circuit of a client on the worker's host).
  for (int round = 0; round < 2; ++round) {
    auto a = ShoalAs(alice, {"cat", "--config", up.config, "/data/train/a.bin"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_TRUE(a.out == data_) << "alice read different bytes";
    auto e = ShoalAs(eve, {"cat", "--config", up.config, "/data/train/a.bin"});
    EXPECT_NE(e.exit_code, 0);
    EXPECT_TRUE(e.out.empty()) << e.out.size() << " bytes on eve's stdout";
  }
  // The audit file under the state dir names the denied user.
  bool found = false;
  for (const auto& f : fs::directory_iterator(state + "/audit")) {
    std::istringstream in(Slurp(f.path().string()));
    for (std::string line; std::getline(in, line);) {
      Json j = Json::parse(line);
      if (j["reqUser"] == "eve" && j["result"] == 0 && j["resource"] == "/data/train/a.bin") found = true;
    }
  }
  EXPECT_TRUE(found) << "no audit line for eve under " << state << "/audit";
  // The running cluster explains the same decision (the client config holds the cluster secret).
  auto r = Shoal({"policy", "check", "--config", up.config, "--user", "eve", "--groups", "ml", "--path",
                  "/data/train/a.bin", "--access", "read"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.out.find("DENIED by policy 10 (ml reads data)"), std::string::npos) << r.out;
}

TEST_F(AuthzTest, NativeClientsAreRefusedWithAReasonOrNotFoundAndAdminRoutesNeedAnAdmin) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  const std::string alice = ConfigWithToken("alice", TokenFile("alice", {"ml"}));
  const std::string bob = ConfigWithToken("bob", TokenFile("bob", {"web"}));
  const std::string olga = ConfigWithToken("olga", TokenFile("olga", {"ops"}));
  auto a = Shoal({"cat", "--config", alice, "/data/train/b.bin"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  // alice may list /data/train, so she is told why she may not read a private file.
  auto p = Shoal({"cat", "--config", alice, "/data/train/private-1.bin"});
  EXPECT_EQ(p.exit_code, 4) << p.err;
  EXPECT_NE(p.err.find("alice may not read /data/train/private-1.bin (denied by policy 11 (private runs)"),
            std::string::npos)
      << p.err;
  // bob may not even list /data/train: for him the file does not exist.
  auto b = Shoal({"cat", "--config", bob, "/data/train/b.bin"});
  EXPECT_EQ(b.exit_code, 3) << b.err;
  EXPECT_EQ(b.err.find("denied"), std::string::npos) << b.err;
  auto ls = Shoal({"ls", "--config", bob, "/data/train"});
  EXPECT_NE(ls.exit_code, 0);
  EXPECT_EQ(ls.out.find("a.bin"), std::string::npos) << ls.out;
  // Cache management: write on the path or an admin group.
  auto free_alice = Shoal({"free", "-r", "--config", alice, "/data/train"});
  EXPECT_EQ(free_alice.exit_code, 4) << free_alice.out << free_alice.err;
  auto free_olga = Shoal({"free", "-r", "--config", olga, "/data/train"});
  EXPECT_EQ(free_olga.exit_code, 0) << free_olga.out << free_olga.err;
  // An admin asks the running cluster; a user who is not one is refused.
  auto check = Shoal({"policy", "check", "--config", olga, "--user", "boss", "--groups", "ml", "--path",
                      "/data/train/private-1.bin", "--access", "read"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("ALLOWED by policy 10"), std::string::npos) << check.out;
  auto not_admin =
      Shoal({"policy", "check", "--config", alice, "--user", "boss", "--path", "/data", "--access", "read"});
  EXPECT_EQ(not_admin.exit_code, 4) << not_admin.err;
  EXPECT_TRUE(Audited("alice", "/data/train/private-1.bin", 0));
  EXPECT_TRUE(Audited("bob", "/data/train/b.bin", 0));
  // The refusal names its request, and the audit line has the same id.
  std::smatch id;
  ASSERT_TRUE(std::regex_search(p.err, id, std::regex("\\[request ([0-9a-f]{16})\\]"))) << p.err;
  bool same = false;
  for (const auto& l : AuditLines()) same = same || (l["id"] == id[1].str() && l["reqUser"] == "alice");
  EXPECT_TRUE(same) << "no audit line with id " << id[1];
}

TEST_F(AuthzTest, TheS3EndpointAnswersAccessDeniedToTheDeniedKey) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto status = cluster_->Get(0, "/v1/status");
  ASSERT_TRUE(status) << status.error().ToString();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*status, m, std::regex("\"s3_endpoint\":\"([^\"]+)\""))) << *status;
  const std::string endpoint = m[1];
  auto aws = [&](const char* key, const char* secret, const std::string& out,
                 const std::string& object = "train/a.bin") {
    return Command({"env", std::string("AWS_ACCESS_KEY_ID=") + key, std::string("AWS_SECRET_ACCESS_KEY=") + secret,
                    "AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null",
                    "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
                    "AWS_PAGER=", "/usr/bin/aws", "--endpoint-url", "http://" + endpoint, "s3api", "get-object",
                    "--bucket", "data", "--key", object, out});
  };
  auto a = aws("AKALICEAUTHZ", "alice-secret-0123456789", dir_ + "/by-alice");
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_TRUE(Slurp(dir_ + "/by-alice") == data_);
  auto e = aws("AKEVEAUTHZ", "eve-secret-0123456789", dir_ + "/by-eve");
  EXPECT_NE(e.exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ + "/by-eve") && fs::file_size(dir_ + "/by-eve") > 0);
  // eve may not list /data either (her deny covers read there): NoSuchKey, as S3 says for a hidden key.
  EXPECT_NE((e.out + e.err).find("NoSuchKey"), std::string::npos) << e.out << e.err;
  EXPECT_TRUE(WaitFor([&] { return Audited("eve", "/data/train/a.bin", 0); }, 10s));
  // alice may list /data/train, so a policy's refusal is AccessDenied.
  auto p = aws("AKALICEAUTHZ", "alice-secret-0123456789", dir_ + "/private-by-alice", "train/private-1.bin");
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE((p.out + p.err).find("AccessDenied"), std::string::npos) << p.out << p.err;
  EXPECT_TRUE(WaitFor([&] { return Audited("alice", "/data/train/private-1.bin", 0); }, 10s));
}

// The policy-check route and the labels a client sends are untrusted input:
// missing or bad parameters are 400 before any decision, a non-admin is
// refused before parsing, and an odd X-Shoal-Door or an oversized
// X-Shoal-Request-Id never reaches the audit line as sent.
TEST_F(AuthzTest, ThePolicyCheckRouteAndClientLabelsRefuseGarbage) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  const std::string olga = "Authorization: Bearer " + keys_->Issue("olga", {"ops"}, 1h, security::UnixNow()) + "\r\n";
  const std::string bob = "Authorization: Bearer " + keys_->Issue("bob", {"web"}, 1h, security::UnixNow()) + "\r\n";
  auto ask = [&](const std::string& target, const std::string& headers) {
    auto c = RawConnection::Connect(cluster_->addresses()[0]);
    EXPECT_TRUE(c && c->Send(HttpGet(target, headers)));
    auto r = c ? c->ReadResponse(30s) : std::nullopt;
    EXPECT_TRUE(r.has_value()) << target;
    return r.value_or(RawConnection::Response{});
  };
  const std::string ok = "/v1/policy/check?user=boss&groups=ml&path=%2Fdata%2Ftrain%2Fa.bin&access=read";
  EXPECT_EQ(ask(ok, olga).status, 200);
  EXPECT_EQ(ask(ok, bob).status, 403);  // not an admin: refused before the parameters are looked at
  for (const char* bad : {"/v1/policy/check?user=boss&path=%2Fdata",                            // no access
                          "/v1/policy/check?user=boss&path=%2Fdata&access=fly",                 // unknown access
                          "/v1/policy/check?path=%2Fdata&access=read",                          // no user
                          "/v1/policy/check?user=boss&path=%2Fdata&access=read&groups=%zz"}) {  // bad escape
    auto r = ask(bad, olga);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
  }
  // A huge group list is cut at 256 groups, not refused, and still decides.
  std::string many = ok + "&groups=";
  for (int i = 0; i < 2000; ++i) many += "g" + std::to_string(i) + ",";
  EXPECT_EQ(ask(many, olga).status, 200);
  // bob's refused read with made-up labels: the audit line has a known door and no oversized id.
  const std::string labels = bob + "X-Shoal-Door: <script>\r\nX-Shoal-Request-Id: " + std::string(5000, 'x') + "\r\n";
  auto denied = ask("/v1/open?path=%2Fdata%2Ftrain%2Fa.bin&length=10", labels);
  EXPECT_EQ(denied.status, 404) << denied.body;  // bob may not list /data/train: not found
  EXPECT_EQ(denied.body.find("xxxx"), std::string::npos) << denied.body;
  ASSERT_TRUE(WaitFor([&] { return Audited("bob", "/data/train/a.bin", 0); }, 10s));
  for (const auto& l : AuditLines()) {
    if (l["reqUser"] != "bob" || l["resource"] != "/data/train/a.bin") continue;
    EXPECT_EQ(l["door"], "other");
    EXPECT_LE(l["id"].get<std::string>().size(), 64u);
  }
}

// Policies from Ranger admin (a stand-in serving its REST API), changed while a
// client on the workers' host reads: the change reaches the workers within the
// poll interval, and no read succeeds after it, not even from a lease (an
// answer the client held before the change).
TEST_F(AuthzTest, APolicyChangeDuringReadsTakesEffectWithinThePollInterval) {
  auto doc = [](int64_t version, bool deny_alice) {
    Json p = {{"id", 1},
              {"name", "ml reads data"},
              {"resources", {{"path", {{"values", {"/data"}}, {"isRecursive", true}}}}},
              {"policyItems", {{{"accesses", Access({"read", "execute"})}, {"groups", {"ml"}}}}}};
    if (deny_alice) p["denyPolicyItems"] = {{{"accesses", Access({"read"})}, {"users", {"alice"}}}};
    return Json({{"serviceName", "shoal-hdfs"}, {"policyVersion", version}, {"policies", {p}}}).dump();
  };
  RangerStandIn ranger("shoal-hdfs", "admin", "ranger-pw");
  ranger.Set(RangerStandIn::Mode::kServe, 1, doc(1, false));
  ShoalCluster::Options o = ClusterOptions();
  ASSERT_TRUE(keys_);
  o.authz.ranger_url = ranger.url();
  o.authz.ranger_service = "shoal-hdfs";
  o.authz.ranger_user = "admin";
  o.authz.ranger_password = "ranger-pw";
  o.authz.poll_interval = 1s;
  auto c = ShoalCluster::Start(o);
  ASSERT_TRUE(c) << c.error().ToString();
  cluster_ = std::move(*c);
  ClientConfig cc;
  cc.token_file = TokenFile("alice", {"ml"});
  auto alice = Client::FromYaml(cluster_->ClientYaml(cc), "authz-test");
  ASSERT_TRUE(alice) << alice.error().ToString();
  for (int i = 0; i < 20; ++i) {
    auto got = ReadWholeFile(**alice, "/data/train/a.bin");
    ASSERT_TRUE(got) << got.error().ToString();
    ASSERT_TRUE(*got == data_);
  }
  EXPECT_GT((*alice)->stats().local_read_bytes, 0u) << "the reads did not take the short circuit";
  auto version_sum = [&] { return WorkerMetricSum(cluster_->addresses(), "shoal_authz_policy_version").value_or(-1); };
  ASSERT_EQ(version_sum(), 2.0);  // version 1 on both workers
  ranger.Set(RangerStandIn::Mode::kServe, 2, doc(2, true));
  const auto changed = std::chrono::steady_clock::now();
  // Reads go on until the first refusal; none may succeed once both workers have version 2.
  bool refused = false;
  while (!refused && std::chrono::steady_clock::now() - changed < 30s) {
    auto got = ReadWholeFile(**alice, "/data/train/a.bin");
    refused = !got.has_value();
    if (got) EXPECT_TRUE(*got == data_);
  }
  ASSERT_TRUE(refused) << "alice still reads 30 s after the policy change";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - changed).count();
  std::printf("first refused read %.2f s after the change (poll interval 1 s)\n", seconds);
  ASSERT_TRUE(WaitFor([&] { return version_sum() == 4.0; }, 10s)) << version_sum();
  for (int i = 0; i < 20; ++i) {
    auto got = ReadWholeFile(**alice, "/data/train/a.bin");
    EXPECT_FALSE(got.has_value()) << "read " << i << " after the change succeeded";
  }
  // The workers then ask with the version they have, and get 304.
  EXPECT_TRUE(WaitFor([&] { return ranger.last_known() == "2"; }, 10s));
}

// A FUSE mount acting for its callers: root is allowed /data/fuse, nobody is not.
TEST_F(AuthzTest, AFuseMountIsAuthorizedPerCallingUser) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to read as another user";
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const std::string mp = dir_ + "/mnt";
  fs::create_directories(mp);
  const std::string config = ConfigWithToken("mount", dir_ + "/door-svc.token");
  auto mounted = Shoal({"fuse", mp, "--config", config, "-o", "allow_other"}, 90s);
  ASSERT_EQ(mounted.exit_code, 0) << mounted.out << mounted.err;
  mounts_.push_back(mp);
  auto as_root = Command({"cat", mp + "/data/fuse/f.bin"});
  ASSERT_EQ(as_root.exit_code, 0) << as_root.err;
  EXPECT_TRUE(as_root.out == data_);
  // Right after root's read, its pages are cached (and in the kernel's page cache).
  auto as_nobody =
      Command({"setpriv", "--reuid=" + std::to_string(nobody->pw_uid), "--regid=" + std::to_string(nobody->pw_gid),
               "--init-groups", "cat", mp + "/data/fuse/f.bin"});
  EXPECT_NE(as_nobody.exit_code, 0);
  EXPECT_TRUE(as_nobody.out.empty()) << as_nobody.out.size() << " bytes read by nobody";
  // Refused at its first step the kernel did not have cached: a lookup, or the open.
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const auto& l : AuditLines()) {
          if (l["reqUser"] == "nobody" && l["result"] == 0 && l["door"] == "fuse") return true;
        }
        return false;
      },
      10s));
}

}  // namespace
}  // namespace shoal::testing
