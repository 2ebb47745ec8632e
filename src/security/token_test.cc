#include "security/token.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace shoal::security {
namespace {

using namespace std::chrono_literals;

TokenKeys Keys(std::string secret = std::string(32, 'k')) { return TokenKeys::FromSecrets({std::move(secret)}); }

std::string MessageOf(const Result<Identity>& r) { return r ? std::string("accepted") : r.error().message(); }

TEST(Token, IssuedTokenVerifiesWithUserAndGroups) {
  auto keys = Keys();
  std::string t = keys.Issue("alice", {"ml", "vision"}, 24h, 1'000'000);
  auto id = keys.Verify(t, 1'000'001);
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(id->user, "alice");
  EXPECT_EQ(id->groups, (std::vector<std::string>{"ml", "vision"}));
  EXPECT_EQ(id->proof, Proof::kToken);
}

TEST(Token, ChangedLastCharacterIsForged) {
  auto keys = Keys();
  std::string t = keys.Issue("alice", {}, 24h, 1'000'000);
  // Every other character in the last place: never the same token (padding
  // bits of the last character included).
  for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")) {
    if (c == t.back()) continue;
    std::string bad = t;
    bad.back() = c;
    auto r = keys.Verify(bad, 1'000'001);
    ASSERT_FALSE(r) << "accepted a token with its last character changed to " << c;
    EXPECT_TRUE(MessageOf(r).find("forged") != std::string::npos || MessageOf(r).find("malformed") != std::string::npos)
        << MessageOf(r);
  }
}

TEST(Token, ChangedPayloadIsForged) {
  auto keys = Keys();
  std::string t = keys.Issue("alice", {}, 24h, 1'000'000);
  std::string other = keys.Issue("mallory", {}, 24h, 1'000'000);
  // alice's signature on mallory's claims.
  std::string bad = other.substr(0, other.rfind('.')) + t.substr(t.rfind('.'));
  EXPECT_NE(MessageOf(keys.Verify(bad, 1'000'001)).find("forged"), std::string::npos);
}

TEST(Token, ExpiredSaysExpired) {
  auto keys = Keys();
  std::string t = keys.Issue("alice", {}, 60s, 1'000'000);
  EXPECT_TRUE(keys.Verify(t, 1'000'059));
  EXPECT_NE(MessageOf(keys.Verify(t, 1'000'061)).find("expired"), std::string::npos);
}

TEST(Token, OtherClusterSaysAnotherCluster) {
  auto ours = Keys(std::string(32, 'a'));
  auto theirs = Keys(std::string(32, 'b'));
  std::string t = theirs.Issue("alice", {}, 1h, 1'000'000);
  EXPECT_NE(MessageOf(ours.Verify(t, 1'000'001)).find("another cluster"), std::string::npos);
}

TEST(Token, PreviousKeyStillVerifiesAfterRotation) {
  auto old_keys = Keys(std::string(32, 'a'));
  auto rotated = TokenKeys::FromSecrets({std::string(32, 'b'), std::string(32, 'a')});
  std::string t = old_keys.Issue("alice", {}, 1h, 1'000'000);
  EXPECT_TRUE(rotated.Verify(t, 1'000'001));
  EXPECT_NE(rotated.kid(), old_keys.kid());
}

TEST(Token, GarbageAndHugeTokensAreRefusedNotCrashed) {
  auto keys = Keys();
  for (std::string bad : {std::string(""), std::string("a.b.c"), std::string("...."), std::string("e30.e30.e30"),
                          std::string("!!!.???.###"), std::string(kMaxTokenBytes + 1, 'a')}) {
    EXPECT_FALSE(keys.Verify(bad, 1)) << bad.substr(0, 40);
  }
  EXPECT_NE(MessageOf(keys.Verify(std::string(kMaxTokenBytes + 1, 'a'), 1)).find("too large"), std::string::npos);
}

TEST(Token, KeyFileIsMadeMode0600AndLoads) {
  auto dir = std::filesystem::temp_directory_path() / ("shoal-token-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "token.key").string();
  ASSERT_TRUE(TokenKeys::CreateKeyFile(path).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto keys = TokenKeys::Load(path);
  ASSERT_TRUE(keys) << keys.error().message();
  // A second CreateKeyFile keeps the key.
  ASSERT_TRUE(TokenKeys::CreateKeyFile(path).ok());
  auto again = TokenKeys::Load(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->kid(), keys->kid());
  ::chmod(path.c_str(), 0644);
  auto loose = TokenKeys::Load(path);
  ASSERT_FALSE(loose);
  EXPECT_NE(loose.error().message().find("chmod 600"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal::security
