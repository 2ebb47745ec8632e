// The option tables of the backends: parsing and messages (MountOptions),
// ValidateMount's checks of names and credentials' shape, and the README's
// option tables against the code's.
#include "ufs/mount_options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/config.h"
#include "tests/harness/harness_util.h"
#include "ufs/under_store.h"

namespace shoal {
namespace {

constexpr OptionSpec kTable[] = {
    option::Text("endpoint", "where"),
    option::Secret("secret", "a secret"),
    option::Bool("path_style", "style"),
    option::Int("max_retries", 0, 100, "retries"),
    option::Size("part_size", 5ll << 20, 5ll << 30, "parts"),
    option::Duration("request_timeout", 1, "deadline"),
    option::Choice("payload_signing", "unsigned|signed", "signing"),
    option::File("ca_file", "CAs"),
};

Status ParseError(std::map<std::string, std::string> options) {
  auto o = MountOptions::Parse("s3", kTable, options);
  return o ? Status() : o.error();
}

TEST(MountOptions, UnknownNameListsTheOptionsAndSuggestsTheNearest) {
  auto typo = ParseError({{"endpiont", "http://x"}});
  EXPECT_EQ(typo.code(), Code::kInvalidArgument);
  EXPECT_EQ(typo.message(),
            "unknown s3:// option 'endpiont'; did you mean 'endpoint'? (s3:// options: endpoint, secret, path_style, "
            "max_retries, part_size, request_timeout, payload_signing, ca_file)");
  EXPECT_EQ(NearestOptionName("max_retry", kTable), "max_retries");
  EXPECT_EQ(NearestOptionName("bogus_key", kTable), "") << "no suggestion for a name unlike every option";
  auto far = ParseError({{"bogus_key", "1"}});
  EXPECT_EQ(far.message().find("did you mean"), std::string::npos) << far.message();
  EXPECT_NE(far.message().find("'bogus_key'"), std::string::npos) << far.message();

  auto none = MountOptions::Parse("file", {}, {{"bogus_key", "1"}});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message(), "unknown file:// option 'bogus_key' (file:// mounts take no options)");
}

TEST(MountOptions, ValuesAreCheckedByKind) {
  EXPECT_EQ(ParseError({{"max_retries", "abc"}}).message(), "option max_retries='abc': expected a whole number from 0 to 100");
  EXPECT_FALSE(ParseError({{"max_retries", "101"}}).ok());
  EXPECT_FALSE(ParseError({{"max_retries", "3x"}}).ok());
  EXPECT_EQ(ParseError({{"path_style", "maybe"}}).message(), "option path_style='maybe': expected true or false");
  EXPECT_EQ(ParseError({{"part_size", "1MiB"}}).message(), "option part_size='1MiB': must be from 5MiB to 5GiB");
  EXPECT_FALSE(ParseError({{"part_size", "lots"}}).ok());
  EXPECT_EQ(ParseError({{"request_timeout", "0s"}}).message(), "option request_timeout='0s': must be at least 1ms");
  EXPECT_FALSE(ParseError({{"request_timeout", "soon"}}).ok());
  EXPECT_EQ(ParseError({{"payload_signing", "maybe"}}).message(),
            "option payload_signing='maybe': expected unsigned or signed");
  EXPECT_NE(ParseError({{"ca_file", "/no/such/ca.pem"}}).message().find("cannot read it"), std::string::npos);
  EXPECT_EQ(ParseError({{"endpoint", ""}}).message(), "option endpoint is empty: give a value or leave it out");
  auto secret = ParseError({{"secret", "abc\ndef"}});
  EXPECT_FALSE(secret.ok());
  EXPECT_EQ(secret.message().find("abc"), std::string::npos) << "a secret's value is never repeated: " << secret.message();

  auto o = MountOptions::Parse("s3", kTable,
                               {{"max_retries", "7"}, {"path_style", "yes"}, {"part_size", "8MiB"},
                                {"request_timeout", "1.5s"}, {"payload_signing", "signed"}, {"endpoint", "h:1"}});
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->Int("max_retries"), 7);
  EXPECT_EQ(o->Bool("path_style"), true);
  EXPECT_EQ(o->Size("part_size"), 8ull << 20);
  EXPECT_EQ(o->Duration("request_timeout"), std::chrono::milliseconds(1500));
  EXPECT_EQ(o->String("payload_signing"), "signed");
  EXPECT_EQ(o->String("endpoint"), "h:1");
  EXPECT_FALSE(o->has("secret"));
  EXPECT_EQ(o->Int("missing_int_is_unset"), std::nullopt);
}

Status Validate(const std::string& ufs, std::map<std::string, std::string> options = {}) {
  MountConfig m;
  m.path = "/data";
  m.ufs = ufs;
  m.options = std::move(options);
  return ValidateMount(m);
}

// A well-formed key (base64 of 64 bytes), not any account's.
const std::string kKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

TEST(ValidateMount, BucketAndContainerNamesFollowTheProvidersRules) {
  const std::map<std::string, std::string> keys = {{"access_key_id", "AK"}, {"secret_access_key", "SK"}};
  EXPECT_TRUE(Validate("s3://my-bucket.v2/p/", keys).ok());
  EXPECT_TRUE(Validate("s3://Legacy_Bucket/p/", keys).ok()) << "us-east-1 names from before 2018";
  auto bad = Validate("s3://Bad_Bucket!/p/", keys);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_NE(bad.message().find("invalid S3 bucket name 'Bad_Bucket!'"), std::string::npos) << bad.message();
  EXPECT_FALSE(Validate("s3://ab/", keys).ok());
  EXPECT_FALSE(Validate("s3://192.168.1.1/", keys).ok());
  EXPECT_FALSE(Validate("s3://a..b/", keys).ok());
  EXPECT_FALSE(Validate("s3://-bucket/", keys).ok());
  EXPECT_TRUE(Validate("gs://my_bucket/", keys).ok());
  EXPECT_NE(Validate("gs://google-data/", keys).message().find("invalid GCS bucket name"), std::string::npos);

  const std::map<std::string, std::string> az = {{"account", "devstoreaccount1"}, {"key", kKey}};
  EXPECT_TRUE(Validate("az://my-container/p/", az).ok());
  EXPECT_TRUE(Validate("az://$root/", az).ok());
  for (const char* c : {"az://My-Container/", "az://ab/", "az://a--b/", "az://ctr-/", "az://c_t_r/"}) {
    auto st = Validate(c, az);
    EXPECT_NE(st.message().find("invalid Azure container name"), std::string::npos) << c << ": " << st.message();
  }
  EXPECT_NE(Validate("az://ctr/", {{"account", "My_Account"}, {"key", kKey}}).message().find("storage account name"),
            std::string::npos);

  EXPECT_TRUE(Validate("hdfs://namenode:9870/data/").ok());
  EXPECT_TRUE(Validate("hdfs://namenode/data/").ok());
  EXPECT_FALSE(Validate("hdfs://namenode:port/data/").ok());
  EXPECT_FALSE(Validate("hdfs://namenode:99999/data/").ok());
}

TEST(ValidateMount, CredentialsHaveTheirShape) {
  auto notb64 = Validate("az://ctr/", {{"account", "acct"}, {"key", "not-base64!"}});
  EXPECT_EQ(notb64.code(), Code::kInvalidArgument);
  EXPECT_NE(notb64.message().find("not valid base64"), std::string::npos) << notb64.message();
  EXPECT_EQ(notb64.message().find("not-base64!"), std::string::npos) << "the key is never repeated";
  EXPECT_FALSE(Validate("az://ctr/", {{"account", "acct"}, {"key", "abc"}}).ok()) << "unpadded base64";
  auto sas = Validate("az://ctr/", {{"account", "acct"}, {"sas_token", "sv=2021-08-06&sp=r"}});
  EXPECT_NE(sas.message().find("no sig= parameter"), std::string::npos) << sas.message();
  EXPECT_TRUE(Validate("az://ctr/", {{"account", "acct"}, {"sas_token", "?sv=2021-08-06&sp=r&sig=abc%3D"}}).ok());
  EXPECT_FALSE(Validate("az://ctr/", {{"account", "acct"}, {"key", kKey}, {"endpoint", "ftp://x"}}).ok());

  auto half = Validate("s3://bucket/", {{"access_key_id", "AK"}});
  EXPECT_NE(half.message().find("set both, or neither"), std::string::npos) << half.message();
  auto token = Validate("s3://bucket/", {{"session_token", "tok"}});
  EXPECT_NE(token.message().find("session_token needs access_key_id"), std::string::npos) << token.message();
  auto both = Validate("s3://bucket/", {{"profile", "p"}, {"access_key_id", "AK"}, {"secret_access_key", "SK"}});
  EXPECT_NE(both.message().find("use the keys or the profile"), std::string::npos) << both.message();
  auto space = Validate("s3://bucket/", {{"access_key_id", "AK "}, {"secret_access_key", "SK"}});
  EXPECT_NE(space.message().find("contains a space"), std::string::npos) << space.message();

  EXPECT_EQ(Validate("file:///srv/data/", {{"bogus_key", "1"}}).message(),
            "unknown file:// option 'bogus_key' (file:// mounts take no options)");
  auto scheme = Validate("ftp://x/y");
  EXPECT_EQ(scheme.code(), Code::kInvalidArgument);
}

// README.md lists each backend's options as the table its code declares:
// when this fails, paste the expected table into the README.
TEST(MountOptions, ReadmeListsEveryBackendsOptions) {
  std::ifstream in(testing::SourceDir() + "/README.md");
  ASSERT_TRUE(in) << "cannot read README.md under " << testing::SourceDir();
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  for (const char* scheme : {"s3", "az", "hdfs"}) {
    auto table = MountOptionTable(scheme);
    ASSERT_TRUE(table) << scheme;
    std::string expected = OptionTableMarkdown(*table);
    EXPECT_NE(readme.find(expected), std::string::npos)
        << "README.md's option table for " << scheme << ":// is out of date; it should read:\n" << expected;
  }
  EXPECT_TRUE(MountOptionTable("file")->empty());
}

}  // namespace
}  // namespace shoal
