#include "ufs/cloud/credential_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ufs/cloud/aws_credentials.h"
#include "ufs/cloud/token_http.h"

namespace shoal::cloud {
namespace {

using namespace std::chrono_literals;

// Hands out a new secret per fetch, living `lifetime`; can be told to fail.
class CountingProvider : public Provider {
 public:
  CountingProvider(std::chrono::milliseconds lifetime, std::atomic<int>* fetches, std::atomic<bool>* fail)
      : lifetime_(lifetime), fetches_(fetches), fail_(fail) {}
  std::string name() const override { return "counting"; }
  Result<Secret> Fetch() override {
    int n = ++*fetches_;
    if (fail_ && *fail_) return Err(Code::kUnavailable, "counting: told to fail");
    std::this_thread::sleep_for(20ms);  // a fetch takes time: concurrent readers pile up
    Secret s;
    s.access_key_id = "K" + std::to_string(n);
    s.secret_access_key = "S";
    s.expires = WallClock::now() + lifetime_;
    return s;
  }

 private:
  std::chrono::milliseconds lifetime_;
  std::atomic<int>* fetches_;
  std::atomic<bool>* fail_;
};

TEST(CredentialCache, StaticSecretNeverRefreshes) {
  std::atomic<int> fetches{0};
  class Fixed : public Provider {
   public:
    explicit Fixed(std::atomic<int>* n) : n_(n) {}
    std::string name() const override { return "fixed"; }
    Result<Secret> Fetch() override {
      ++*n_;
      Secret s;
      s.access_key_id = "AK";
      return s;
    }
    std::atomic<int>* n_;
  };
  auto c = CredentialCache::Start(std::make_unique<Fixed>(&fetches), {.mount = "/static-test"});
  ASSERT_TRUE(c) << c.error().ToString();
  for (int i = 0; i < 100; ++i) ASSERT_EQ((*(*c)->Current())->access_key_id, "AK");
  EXPECT_EQ(fetches.load(), 1);
  EXPECT_EQ((*c)->Describe(), "fixed, static");
  bool listed = false;
  for (auto& [mount, info] : RegisteredCredentials()) listed |= mount == "/static-test" && info.provider == "fixed";
  EXPECT_TRUE(listed);
}

TEST(CredentialCache, RefreshesInTheBackgroundAheadOfExpiry) {
  std::atomic<int> fetches{0};
  auto c = CredentialCache::Start(std::make_unique<CountingProvider>(1500ms, &fetches, nullptr),
                                  {.mount = "/bg", .refresh_ahead = 300s, .must_refresh = 30s});
  ASSERT_TRUE(c) << c.error().ToString();
  // Refresh ahead is capped at half the lifetime: a new secret every ~750 ms
  // without any reader asking. Readers only ever see unexpired secrets.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((*c)->info().refreshes < 3 && std::chrono::steady_clock::now() < deadline) {
    auto s = (*c)->Current();
    ASSERT_TRUE(s) << s.error().ToString();
    ASSERT_GT((*s)->expires, WallClock::now());
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GE((*c)->info().refreshes, 3u);
  EXPECT_EQ((*c)->info().failures, 0u);
}

TEST(CredentialCache, ReadersOfAValidSecretNeverFetch) {
  std::atomic<int> fetches{0};
  // Readers of a valid secret never fetch: 8 threads, 1600 reads, 1 fetch.
  auto c = CredentialCache::Start(std::make_unique<CountingProvider>(60'000ms, &fetches, nullptr), {.mount = "/sf"});
  ASSERT_TRUE(c);
  EXPECT_EQ(fetches.load(), 1);
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto s = (*c)->Current();
        if (!s || (*s)->expires <= WallClock::now()) ++bad;
      }
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(fetches.load(), 1);  // a minute-long secret: nobody fetched again
}

TEST(CredentialCache, AFailedRefreshKeepsTheOldSecretThenSaysWhy) {
  std::atomic<int> fetches{0};
  std::atomic<bool> fail{false};
  auto c = CredentialCache::Start(std::make_unique<CountingProvider>(800ms, &fetches, &fail),
                                  {.mount = "/fail", .retry_pause = 50ms});
  ASSERT_TRUE(c);
  fail = true;
  auto first = (*c)->Current();
  ASSERT_TRUE(first);
  auto expires = (*first)->expires;
  // Until expiry, readers keep signing with the old secret...
  while (WallClock::now() + 200ms < expires) {
    auto s = (*c)->Current();
    ASSERT_TRUE(s) << s.error().ToString();
    std::this_thread::sleep_for(20ms);
  }
  // ...and after it, they get an error naming the provider, never an expired secret.
  while (WallClock::now() < expires + 50ms) std::this_thread::sleep_for(20ms);
  auto late = (*c)->Current();
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message().find("counting"), std::string::npos) << late.error().message();
  EXPECT_NE(late.error().message().find("expired"), std::string::npos) << late.error().message();
  EXPECT_GT((*c)->info().failures, 0u);
  // The store comes back: the next reader refreshes.
  fail = false;
  auto again = (*c)->Current();
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_GT((*again)->expires, WallClock::now());
}

TEST(CredentialCache, ChainSaysWhatItTriedAndWhy) {
  std::vector<Candidate> none = {
      {"environment", "AWS_ACCESS_KEY_ID is not set", false, {}},
      {"instance-metadata", "", true, [] {
         return Result<std::unique_ptr<Provider>>(Err(Code::kUnavailable, "http://169.254.169.254 cannot be reached"));
       }}};
  auto r = RunChain("s3 credentials", std::move(none), "Set keys.");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kPermissionDenied);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find("environment: AWS_ACCESS_KEY_ID is not set"), std::string::npos) << m;
  EXPECT_NE(m.find("instance-metadata: http://169.254.169.254 cannot be reached"), std::string::npos) << m;
  EXPECT_NE(m.find("Set keys."), std::string::npos) << m;
}

TEST(CredentialCache, Iso8601) {
  auto t = ParseIso8601("2026-12-07T01:02:03Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(FormatExpiry(*t), "2026-12-07T01:02:03Z");
  EXPECT_EQ(FormatExpiry(*ParseIso8601("2026-12-07T01:02:03.123456+00:00")), "2026-12-07T01:02:03Z");
  EXPECT_EQ(FormatExpiry(*ParseIso8601("2026-12-07T03:02:03+02:00")), "2026-12-07T01:02:03Z");
  auto frac = *ParseIso8601("2026-12-07T01:02:03.250Z") - *t;
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(frac).count(), 250);
  EXPECT_FALSE(ParseIso8601("yesterday"));
  EXPECT_FALSE(ParseIso8601("2026-13-07T01:02:03Z"));
  EXPECT_EQ(FormatExpiry(WallClock::time_point::max()), "never");
}

// fuzz/crashes/store_xml/iso8601-year-1012: an S3 listing's LastModified in
// year 1012 overflowed the nanoseconds of system_clock (UBSan: signed
// overflow). Years outside 1900-2200, negative fields and offsets that are
// not digits are malformed.
TEST(CredentialCache, Iso8601OutOfRangeOrMalformedFieldsAreRefused) {
  for (const char* bad :
       {"1012-05-17T12:34:56.250Z", "0001-01-01T00:00:00Z", "-999-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
        "2201-01-01T00:00:00Z", "2024-05-17T-1:34:56Z", "2024-05-17T12:-4:56Z", "2024-05-17T12:34:-6Z",
        "2024-05-17T12:34:56+a0:00", "2024-05-17T12:34:56+24:00", "2024-05-17T12:34:56+00:60"}) {
    EXPECT_FALSE(ParseIso8601(bad)) << bad;
  }
  EXPECT_TRUE(ParseIso8601("1900-01-01T00:00:00Z"));
  EXPECT_TRUE(ParseIso8601("2200-12-31T23:59:59Z"));
  EXPECT_TRUE(ParseIso8601("2024-05-17T12:34:56-05:30"));
}

// Each answer below once read as a secret: a CR LF inside a token went into
// the Authorization or x-amz-security-token header as sent, and a lifetime
// past the clock's range overflowed it (1e300 seconds cast to an integer,
// 10^17 seconds in nanoseconds).
TEST(CredentialAnswers, SecretsUnfitForAHeaderOrBeyondTheClockAreRefusedNamingTheField) {
  const auto now = WallClock::from_time_t(1'796'601'600);
  auto refused = [&](std::string_view body, std::string_view says) {
    auto s = ParseOAuthToken("metadata-server", body, now);
    ASSERT_FALSE(s.has_value()) << body;
    EXPECT_NE(s.error().message().find(says), std::string::npos) << s.error().message();
    EXPECT_EQ(s.error().message().find("X-Evil"), std::string::npos) << "a message quotes the secret";
  };
  refused(R"({"access_token":"t\r\nX-Evil: 1","expires_in":60})", "access token handed out holds a space");
  refused(R"({"access_token":"t X-Evil","expires_in":60})", "access token handed out holds a space");
  refused(R"({"access_token":"t","expires_in":1e300})", "expires_in");
  refused(R"({"access_token":"t","expires_in":"100000000000000000"})", "expires_in");
  refused(R"({"access_token":"t","expires_on":9223372036854775807})", "expires_on");
  refused(R"({"access_token":"t","expires_in":-9223372036854775807})", "expired");
  refused(R"({"access_token":")" + std::string(kMaxSecretField + 1, 'a') + R"("})", "more than any credential");

  auto ok = ParseOAuthToken("metadata-server", R"({"access_token":"ya29.a-b_c","expires_in":3599.9})", now);
  ASSERT_TRUE(ok.has_value()) << ok.error().message();
  EXPECT_EQ(ok->bearer_token, "ya29.a-b_c");
  EXPECT_EQ(ok->expires, now + std::chrono::seconds(3599));

  auto aws = ParseAwsJson("instance-metadata role r",
                          R"({"AccessKeyId":"A","SecretAccessKey":"S","Token":"t\nX-Evil: 1"})", "Token");
  ASSERT_FALSE(aws.has_value());
  EXPECT_NE(aws.error().message().find("instance-metadata role r: the session token"), std::string::npos)
      << aws.error().message();
  auto process = ParseProcessOutput("process", R"({"Version":1,"AccessKeyId":"A\u0000","SecretAccessKey":"S"})");
  ASSERT_FALSE(process.has_value());
  EXPECT_NE(process.error().message().find("access key id"), std::string::npos) << process.error().message();
  auto sts = ParseStsAnswer("web-identity",
                            "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S&#13;&#10;X-Evil: "
                            "1</SecretAccessKey><SessionToken>T</SessionToken><Expiration>2030-01-01T00:00:00Z"
                            "</Expiration></Credentials>",
                            now);
  ASSERT_FALSE(sts.has_value());
  EXPECT_NE(sts.error().message().find("secret access key"), std::string::npos) << sts.error().message();
  auto fine =
      ParseStsAnswer("web-identity",
                     "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S+/=</SecretAccessKey>"
                     "<SessionToken>T</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration></Credentials>",
                     now);
  ASSERT_TRUE(fine.has_value()) << fine.error().message();
  EXPECT_EQ(fine->secret_access_key, "S+/=");
}

}  // namespace
}  // namespace shoal::cloud
