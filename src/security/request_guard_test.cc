#include "security/request_guard.h"

#include <gtest/gtest.h>

namespace shoal::security {
namespace {

using namespace std::chrono_literals;

net::HttpRequest Request(std::string authorization = "", std::string peer = "") {
  net::HttpRequest r;
  r.method = "GET";
  r.target = "/v1/stat?path=/x";
  if (!authorization.empty()) r.headers.emplace_back("Authorization", std::move(authorization));
  if (!peer.empty()) {
    auto t = std::make_shared<net::TransportInfo>();
    t->tls = true;
    t->peer_name = std::move(peer);
    r.transport = t;
  }
  return r;
}

std::shared_ptr<const TokenKeys> Keys() {
  return std::make_shared<const TokenKeys>(TokenKeys::FromSecrets({std::string(32, 'k')}));
}

TEST(RequestGuard, WithoutSecurityEveryoneIsAnonymousAndAdmitted) {
  RequestGuard g({});
  auto id = g.Admit(Request(), Access::kAdmin);
  ASSERT_TRUE(id);
  EXPECT_TRUE(id->anonymous());
}

TEST(RequestGuard, RequiredRefusesAnonymousButNotHealth) {
  RequestGuard g({.required = true, .tokens = Keys()});
  auto r = g.Admit(Request(), Access::kRead);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().http_status, 401);
  EXPECT_NE(r.error().status.message().find("security.required"), std::string::npos);
  EXPECT_TRUE(g.Admit(Request(), Access::kPublic));
  EXPECT_FALSE(g.Admit(Request(), Access::kMetrics));
}

TEST(RequestGuard, ValidTokenNamesTheUser) {
  auto keys = Keys();
  RequestGuard g({.required = true, .tokens = keys});
  auto id = g.Admit(Request("Bearer " + keys->Issue("alice", {"ml"}, 1h, UnixNow())), Access::kRead);
  ASSERT_TRUE(id);
  EXPECT_EQ(id->user, "alice");
  EXPECT_EQ(id->proof, Proof::kToken);
}

TEST(RequestGuard, BadTokenIsRefusedEvenWhereNoneIsNeeded) {
  auto keys = Keys();
  RequestGuard g({.tokens = keys});
  std::string t = keys->Issue("alice", {}, 1h, UnixNow());
  t.back() = t.back() == 'A' ? 'B' : 'A';
  auto r = g.Admit(Request("Bearer " + t), Access::kRead);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().http_status, 401);
}

TEST(RequestGuard, ClusterSecretStillGuardsAsBefore) {
  std::string secret = "0123456789abcdef0123";
  RequestGuard g({.cluster_secret = secret});
  EXPECT_EQ(g.Admit(Request(), Access::kRead).error().http_status, 403);
  EXPECT_EQ(g.Admit(Request("Bearer wrong-secret-xxxxxxx"), Access::kRead).error().http_status, 403);
  EXPECT_TRUE(g.Admit(Request("Bearer " + secret), Access::kAdmin));
  EXPECT_TRUE(g.Admit(Request(), Access::kMetrics)) << "metrics stay open to scrapers";
}

TEST(RequestGuard, CertificateNameIsTheIdentity) {
  RequestGuard g({.required = true});
  auto id = g.Admit(Request("", "spiffe://shoal/worker-1"), Access::kPeer);
  ASSERT_TRUE(id);
  EXPECT_EQ(id->user, "spiffe://shoal/worker-1");
  EXPECT_EQ(id->proof, Proof::kCertificate);
}

TEST(RequestGuard, OnlyTrustedDoorsActOnBehalfOfOthers) {
  auto keys = Keys();
  RequestGuard g({.tokens = keys, .proxy_users = {"fuse-svc"}});
  auto proxied = Request("Bearer " + keys->Issue("fuse-svc", {}, 1h, UnixNow()));
  proxied.headers.emplace_back(std::string(kOnBehalfHeader), "bob;groups=staff,ml");
  auto id = g.Admit(proxied, Access::kRead);
  ASSERT_TRUE(id);
  EXPECT_EQ(id->user, "bob");
  EXPECT_EQ(id->groups, (std::vector<std::string>{"staff", "ml"}));
  EXPECT_EQ(id->acting_for_by, "fuse-svc");

  auto rogue = Request("Bearer " + keys->Issue("alice", {}, 1h, UnixNow()));
  rogue.headers.emplace_back(std::string(kOnBehalfHeader), "bob");
  auto r = g.Admit(rogue, Access::kRead);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().http_status, 403);
}

TEST(RequestGuard, ACredentialMayNameItselfButGainsNoGroupsByIt) {
  auto keys = Keys();
  RequestGuard g({.tokens = keys, .proxy_users = {"fuse-svc"}});
  auto own = Request("Bearer " + keys->Issue("alice", {"ml"}, 1h, UnixNow()));
  own.headers.emplace_back(std::string(kOnBehalfHeader), "alice;groups=admins");
  auto id = g.Admit(own, Access::kRead);
  ASSERT_TRUE(id) << id.error().status.ToString();
  EXPECT_EQ(id->user, "alice");
  EXPECT_EQ(id->groups, (std::vector<std::string>{"ml"}));
  EXPECT_EQ(id->acting_for_by, "");
}

TEST(RequestGuard, AnonymousMayNameNobodyAndMalformedNamesAre400) {
  auto keys = Keys();
  RequestGuard g({.tokens = keys, .proxy_users = {"fuse-svc"}});
  auto anon = Request();
  anon.headers.emplace_back(std::string(kOnBehalfHeader), "bob");
  auto r = g.Admit(anon, Access::kRead);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().http_status, 403);
  EXPECT_STREQ(r.error().reason, "not_proxy");
  for (const std::string& bad :
       std::vector<std::string>{"", ";groups=a", "bo b", "bob;groups=a b", "bob;roles=x", std::string(300, 'b')}) {
    auto req = Request("Bearer " + keys->Issue("fuse-svc", {}, 1h, UnixNow()));
    req.headers.emplace_back(std::string(kOnBehalfHeader), bad);
    auto refused = g.Admit(req, Access::kRead);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().http_status, 400) << bad;
  }
}

}  // namespace
}  // namespace shoal::security
