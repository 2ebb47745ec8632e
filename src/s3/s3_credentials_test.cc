#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "s3/s3_endpoint.h"

namespace shoal::s3 {
namespace {

class CredentialsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-s3-creds-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& text, mode_t mode = 0600) {
    std::string path = dir_ + "/keys";
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(CredentialsFile, ALineNamesItsUserAndGroupsOrTheKeyIsTheUser) {
  std::map<std::string, S3Key> keys;
  auto st = LoadCredentialsFile(Write("# key secret user groups\n"
                                      "AKALICE alice-secret alice ml,vision\n"
                                      "AKBOB bob-secret bob\n"
                                      "AKPLAIN plain-secret\n"),
                                &keys);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys.at("AKALICE").secret, "alice-secret");
  EXPECT_EQ(keys.at("AKALICE").user->user, "alice");
  EXPECT_EQ(keys.at("AKALICE").user->groups, (std::vector<std::string>{"ml", "vision"}));
  EXPECT_EQ(keys.at("AKBOB").user->user, "bob");
  EXPECT_TRUE(keys.at("AKBOB").user->groups.empty());
  EXPECT_EQ(keys.at("AKPLAIN").user->user, "AKPLAIN");
}

TEST_F(CredentialsFile, BadLinesAndOpenModesAreRefusedNamingTheLine) {
  std::map<std::string, S3Key> keys;
  auto loose = LoadCredentialsFile(Write("AK SK\n", 0644), &keys);
  EXPECT_EQ(loose.code(), Code::kPermissionDenied);
  for (const char* bad :
       {"AKONLY\n", "AK S3CRETVALUE al;ice\n", "AK S3CRETVALUE alice ml,a;b\n", "AK S3CRETVALUE alice ml extra\n"}) {
    auto st = LoadCredentialsFile(Write(std::string("# first\n") + bad), &keys);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find(":2:"), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find("S3CRETVALUE"), std::string::npos) << "a secret in a message: " << st.message();
  }
}

}  // namespace
}  // namespace shoal::s3
