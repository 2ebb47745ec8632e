// The worker's authorization check: decisions with the fallback, hidden
// existence, admin groups, the audit trail (before the answer; a full disk
// fails closed or open by config), and policies downloaded from a Ranger
// admin stand-in that serves the REST API (versions, 304, an outage, garbage,
// basic auth) with the last good download kept across restarts.
#include "authz/authorizer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/harness/harness_util.h"
#include "tests/harness/ranger_stand_in.h"

namespace shoal::authz {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;
using shoal::testing::MakeTempDir;
using shoal::testing::RangerStandIn;
using shoal::testing::WaitFor;

Json Doc(int64_t version, const std::string& denied_user) {
  return Json{
      {"serviceName", "shoal"},
      {"policyVersion", version},
      {"policies",
       {{{"id", 1},
         {"name", "ml reads data"},
         {"resources", {{"path", {{"values", {"/data"}}, {"isRecursive", true}}}}},
         {"policyItems",
          {{{"accesses", {{{"type", "read"}, {"isAllowed", true}}, {{"type", "execute"}, {"isAllowed", true}}}},
            {"groups", {"ml"}}}}},
         {"denyPolicyItems", {{{"accesses", {{{"type", "read"}, {"isAllowed", true}}}}, {"users", {denied_user}}}}}},
        {{"id", 2},
         {"name", "writers"},
         {"resources", {{"path", {{"values", {"/data/out"}}, {"isRecursive", true}}}}},
         {"policyItems", {{{"accesses", {{{"type", "write"}, {"isAllowed", true}}}}, {"users", {"wendy"}}}}}}}}};
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Json> AuditLines(const std::string& path) {
  std::vector<Json> out;
  std::istringstream in(ReadAll(path));
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

class AuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = MakeTempDir("authz", "the authorizer test");
    ASSERT_TRUE(d) << d.error().ToString();
    dir_ = *d;
    policy_file_ = dir_ + "/policies.json";
    std::ofstream(policy_file_) << Doc(3, "eve").dump(2);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Authorizer> Start(AuthzConfig c) {
    auto a = Authorizer::Start(c, dir_, "w0");
    EXPECT_TRUE(a) << a.error().ToString();
    return a ? std::move(*a) : nullptr;
  }
  AuthzConfig FileConfig() {
    AuthzConfig c;
    c.policy_file = policy_file_;
    return c;
  }

  static security::Identity User(std::string name, std::vector<std::string> groups) {
    return {std::move(name), std::move(groups), security::Proof::kToken, ""};
  }
  static CheckAnswer Check(Authorizer& a, const security::Identity& who, Need need, std::string_view path) {
    return a.Check({.who = &who,
                    .need = need,
                    .path = path,
                    .door = "cli",
                    .client_address = "127.0.0.1:5",
                    .request_id = "req-1",
                    .action = "test"});
  }

  std::string dir_;
  std::string policy_file_;
};

TEST_F(AuthorizerTest, DecidesEachNeedAndAuditsDenialsOnlyByDefault) {
  auto a = Start(FileConfig());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->version(), 3);
  auto ml = User("alice", {"ml"});
  auto eve = User("eve", {"ml"});
  auto wendy = User("wendy", {});
  EXPECT_TRUE(Check(*a, ml, Need::kReadData, "/data/x").allowed);
  EXPECT_TRUE(Check(*a, ml, Need::kList, "/data").allowed);
  EXPECT_TRUE(Check(*a, ml, Need::kStat, "/data/x").allowed);
  EXPECT_FALSE(Check(*a, ml, Need::kWrite, "/data/x").allowed);
  EXPECT_TRUE(Check(*a, wendy, Need::kWrite, "/data/out/part-0").allowed);
  EXPECT_FALSE(Check(*a, wendy, Need::kReadData, "/data/out/part-0").allowed);
  // Stat: any access to the file itself is enough.
  EXPECT_TRUE(Check(*a, wendy, Need::kStat, "/data/out/part-0").allowed);
  // alice may list /data: she learns she is refused, and by what.
  auto refused = Check(*a, ml, Need::kWrite, "/data/x");
  ASSERT_FALSE(refused.allowed);
  EXPECT_EQ(refused.refusal.code(), Code::kPermissionDenied);
  EXPECT_NE(refused.refusal.message().find("alice may not write /data/x (denied by no policy matched: fallback (deny)"),
            std::string::npos)
      << refused.refusal.message();
  // eve's deny covers reading /data itself: for her /data/x does not exist.
  auto denied = Check(*a, eve, Need::kReadData, "/data/x");
  ASSERT_FALSE(denied.allowed);
  EXPECT_EQ(denied.refusal.code(), Code::kNotFound);

  auto lines = AuditLines(dir_ + "/audit/shoal-audit.log");
  ASSERT_EQ(lines.size(), 4u);  // the four denials, no allow
  const Json& l = lines[3];
  EXPECT_EQ(l["reqUser"], "eve");
  EXPECT_EQ(l["access"], "read");
  EXPECT_EQ(l["resource"], "/data/x");
  EXPECT_EQ(l["result"], 0);
  EXPECT_EQ(l["policy"], 1);
  EXPECT_EQ(l["policyVersion"], 3);
  EXPECT_EQ(l["door"], "cli");
  EXPECT_EQ(l["cliIP"], "127.0.0.1:5");
  EXPECT_EQ(l["id"], "req-1");
  EXPECT_EQ(l["enforcer"], "ranger-acl");
  EXPECT_FALSE(l["evtTime"].get<std::string>().empty());
  EXPECT_EQ(lines[0]["reqUser"], "alice");
  EXPECT_EQ(lines[0]["enforcer"], "shoal-fallback");  // no policy gives ml write
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/audit/shoal-audit.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(AuthorizerTest, AuditAllRecordsAllowsAndAFullDiskFailsClosedOrOpenByConfig) {
  AuthzConfig c = FileConfig();
  c.audit = "all";
  c.audit_file = dir_ + "/all.log";
  {
    auto a = Start(c);
    auto ml = User("alice", {"ml"});
    EXPECT_TRUE(Check(*a, ml, Need::kReadData, "/data/x").allowed);
    auto lines = AuditLines(c.audit_file);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["result"], 1);
  }
  c.audit_file = "/dev/full";  // every write fails with ENOSPC
  auto closed = Start(c);
  auto ml = User("alice", {"ml"});
  auto refused = Check(*closed, ml, Need::kReadData, "/data/x");
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.refusal.code(), Code::kUnavailable);
  EXPECT_NE(refused.refusal.message().find("audit log"), std::string::npos) << refused.refusal.message();
  c.audit_failure = "allow";
  auto open = Start(c);
  EXPECT_TRUE(Check(*open, ml, Need::kReadData, "/data/x").allowed);
}

TEST_F(AuthorizerTest, ADeniedUserWhoCannotListTheParentIsToldNotFound) {
  auto a = Start(FileConfig());
  auto bob = User("bob", {"web"});  // no policy for bob anywhere
  auto r = Check(*a, bob, Need::kReadData, "/data/secret/x");
  ASSERT_FALSE(r.allowed);
  EXPECT_EQ(r.refusal.code(), Code::kNotFound);
  EXPECT_EQ(r.refusal.message().find("denied"), std::string::npos) << r.refusal.message();
}

TEST_F(AuthorizerTest, ClusterItselfAdminGroupsAndStatus) {
  AuthzConfig c = FileConfig();
  c.admin_groups = {"ops"};
  c.status_open = false;
  auto a = Start(c);
  security::Identity cluster{"cluster", {}, security::Proof::kClusterSecret, ""};
  EXPECT_TRUE(Check(*a, cluster, Need::kWrite, "/anything").allowed);
  // The same secret acting for an end user is that user.
  security::Identity via{"bob", {}, security::Proof::kClusterSecret, "cluster"};
  EXPECT_FALSE(Check(*a, via, Need::kReadData, "/data/x").allowed);
  auto op = User("olga", {"ops"});
  auto ml = User("alice", {"ml"});
  EXPECT_TRUE(Check(*a, op, Need::kManage, "/data/x").allowed);
  EXPECT_TRUE(Check(*a, op, Need::kAdminOnly, "").allowed);
  EXPECT_TRUE(Check(*a, op, Need::kStatus, "").allowed);
  EXPECT_FALSE(Check(*a, ml, Need::kManage, "/data/x").allowed);
  EXPECT_FALSE(Check(*a, ml, Need::kAdminOnly, "").allowed);
  EXPECT_FALSE(Check(*a, ml, Need::kStatus, "").allowed);
  auto wendy = User("wendy", {});
  EXPECT_TRUE(Check(*a, wendy, Need::kManage, "/data/out/x").allowed);  // write on the path is enough
}

TEST_F(AuthorizerTest, FallbackAllowAndABadPolicyFileStopsTheStart) {
  AuthzConfig c = FileConfig();
  c.fallback = "allow";
  auto a = Start(c);
  auto bob = User("bob", {});
  EXPECT_TRUE(Check(*a, bob, Need::kReadData, "/elsewhere/x").allowed);
  EXPECT_FALSE(Check(*a, User("eve", {}), Need::kReadData, "/data/x").allowed);  // a deny still denies
  std::ofstream(policy_file_) << "{\"policies\": [";
  auto bad = Authorizer::Start(c, dir_, "w0");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("authz.policy_file"), std::string::npos) << bad.error().ToString();
}

TEST_F(AuthorizerTest, AuditLogRotatesBySize) {
  AuthzConfig c = FileConfig();
  c.audit = "all";
  c.audit_file = dir_ + "/rot/";
  c.audit_max_bytes = 2000;
  c.audit_keep = 2;
  auto a = Start(c);
  auto ml = User("alice", {"ml"});
  for (int i = 0; i < 40; ++i) Check(*a, ml, Need::kReadData, "/data/x" + std::to_string(i));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/rot/w0.log"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/rot/w0.log.1"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/rot/w0.log.2"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/rot/w0.log.3"));
  EXPECT_LE(std::filesystem::file_size(dir_ + "/rot/w0.log"), 2000u);
  for (const auto& line : AuditLines(dir_ + "/rot/w0.log.1")) EXPECT_EQ(line["reqUser"], "alice");
}

TEST_F(AuthorizerTest, PoliciesFromRangerAdminSurviveOutagesGarbageAndRestarts) {
  RangerStandIn ranger("shoal", "admin", "s3cret");
  ranger.Set(RangerStandIn::Mode::kServe, 1, Doc(1, "eve").dump());
  AuthzConfig c;
  c.ranger_url = ranger.url();
  c.ranger_service = "shoal";
  c.ranger_user = "admin";
  c.ranger_password = "s3cret";
  c.poll_interval = 50ms;
  auto a = Start(c);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->version(), 1);  // the first download happens before Start returns
  auto eve = User("eve", {"ml"});
  auto mallory = User("mallory", {"ml"});
  EXPECT_FALSE(Check(*a, eve, Need::kReadData, "/data/x").allowed);
  EXPECT_TRUE(Check(*a, mallory, Need::kReadData, "/data/x").allowed);
  // Unchanged: 304, and the plugin said which version it has.
  ASSERT_TRUE(WaitFor([&] { return ranger.requests() >= 3; }, 10s));
  EXPECT_EQ(ranger.last_known(), "1");
  // A policy change reaches the worker within a poll interval or so.
  ranger.Set(RangerStandIn::Mode::kServe, 2, Doc(2, "mallory").dump());
  ASSERT_TRUE(WaitFor([&] { return a->version() == 2; }, 10s));
  EXPECT_TRUE(Check(*a, eve, Need::kReadData, "/data/x").allowed);
  EXPECT_FALSE(Check(*a, mallory, Need::kReadData, "/data/x").allowed);
  // An outage, a garbled (half) download and one slower than the poller waits change nothing.
  for (auto mode : {RangerStandIn::Mode::kOutage, RangerStandIn::Mode::kGarbage, RangerStandIn::Mode::kSlow}) {
    ranger.Set(mode, 3, Doc(3, "eve").dump());
    int seen = ranger.requests();
    ASSERT_TRUE(WaitFor([&] { return ranger.requests() >= seen + 2; }, 10s));
    EXPECT_EQ(a->version(), 2);
    EXPECT_FALSE(Check(*a, mallory, Need::kReadData, "/data/x").allowed);
  }
  a.reset();
  // A restart while Ranger admin is down uses the last good download, kept on disk.
  ASSERT_TRUE(std::filesystem::exists(dir_ + "/ranger-policies.json"));
  ranger.Set(RangerStandIn::Mode::kOutage, 3, Doc(3, "eve").dump());
  auto again = Start(c);
  EXPECT_EQ(again->version(), 2);
  EXPECT_FALSE(Check(*again, mallory, Need::kReadData, "/data/x").allowed);
  // Wrong credentials: refused by Ranger, the kept policies stay.
  again.reset();
  c.ranger_password = "wrong";
  ranger.Set(RangerStandIn::Mode::kServe, 4, Doc(4, "eve").dump());
  auto wrong = Start(c);
  EXPECT_EQ(wrong->version(), 2);
}

// Roles come from Ranger admin's own roles download: a member change takes
// effect without a new policy version, and survives a restart without Ranger.
TEST_F(AuthorizerTest, RolesFromRangerAdminAreDownloadedApartFromThePolicies) {
  RangerStandIn ranger("shoal", "admin", "s3cret");
  Json doc = {
      {"serviceName", "shoal"},
      {"policyVersion", 9},
      {"policies",
       {{{"id", 1},
         {"name", "readers read"},
         {"resources", {{"path", {{"values", {"/data"}}, {"isRecursive", true}}}}},
         {"policyItems", {{{"accesses", {{{"type", "read"}, {"isAllowed", true}}}}, {"roles", {"readers"}}}}}}}}};
  auto roles = [](int64_t v, const std::string& member) {
    return Json({{"serviceName", "shoal"},
                 {"roleVersion", v},
                 {"rangerRoles", {{{"name", "readers"}, {"users", {{{"name", member}, {"isAdmin", false}}}}}}}})
        .dump();
  };
  ranger.Set(RangerStandIn::Mode::kServe, 9, doc.dump());
  ranger.SetRoles(1, roles(1, "carol"));
  AuthzConfig c;
  c.ranger_url = ranger.url();
  c.ranger_service = "shoal";
  c.ranger_user = "admin";
  c.ranger_password = "s3cret";
  c.poll_interval = 50ms;
  auto a = Start(c);
  auto carol = User("carol", {});
  auto dan = User("dan", {});
  EXPECT_TRUE(Check(*a, carol, Need::kReadData, "/data/x").allowed);
  EXPECT_FALSE(Check(*a, dan, Need::kReadData, "/data/x").allowed);
  ranger.SetRoles(2, roles(2, "dan"));
  ASSERT_TRUE(WaitFor([&] { return Check(*a, dan, Need::kReadData, "/data/x").allowed; }, 10s));
  EXPECT_FALSE(Check(*a, carol, Need::kReadData, "/data/x").allowed);
  EXPECT_EQ(a->version(), 9);
  a.reset();
  ranger.Set(RangerStandIn::Mode::kOutage, 9, doc.dump());
  auto again = Start(c);
  EXPECT_TRUE(Check(*again, dan, Need::kReadData, "/data/x").allowed);  // the kept roles download
  EXPECT_FALSE(Check(*again, carol, Need::kReadData, "/data/x").allowed);
}

TEST_F(AuthorizerTest, NoPoliciesAtAllMeansTheFallbackForEveryone) {
  AuthzConfig c;
  c.ranger_url = "http://127.0.0.1:9";  // nothing listens there
  c.ranger_service = "shoal";
  c.poll_interval = 1h;
  auto a = Start(c);
  EXPECT_EQ(a->version(), -1);
  EXPECT_FALSE(Check(*a, User("alice", {"ml"}), Need::kReadData, "/data/x").allowed);
}

}  // namespace
}  // namespace shoal::authz
