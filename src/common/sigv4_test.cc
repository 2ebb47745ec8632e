// SigV4 against known-good signatures. The expected values were produced
// offline by botocore's S3SigV4Auth (Debian python3-botocore 1.29) with
// gen_sigv4_vectors.py in this directory, which holds the same inputs; rerun
// it with /usr/bin/python3 to regenerate them.
#include "common/sigv4.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>

namespace shoal::s3 {
namespace {

std::chrono::system_clock::time_point FixedTime() {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 4;
  tm.tm_mday = 17;
  tm.tm_hour = 12;
  tm.tm_min = 34;
  tm.tm_sec = 56;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

const Credentials kExample{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", "test"};

std::string HeaderValue(const Headers& h, const std::string& name) {
  for (const auto& [k, v] : h) {
    if (k == name) return v;
  }
  return "<missing>";
}

TEST(S3Sigv4, GetWithQuery) {
  SigningInput in{"GET", "examplebucket.s3.us-east-1.amazonaws.com", "/",
                  {{"list-type", "2"}, {"prefix", "photos/2024 summer/"}, {"delimiter", "/"},
                   {"max-keys", "3"}, {"continuation-token", "abc/def="}},
                  Sha256Hex(std::string_view()), "us-east-1"};
  Headers h;
  SignV4(in, kExample, FixedTime(), h);
  EXPECT_EQ(HeaderValue(h, "x-amz-date"), "20240517T123456Z");
  EXPECT_EQ(HeaderValue(h, "x-amz-content-sha256"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HeaderValue(h, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240517/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=ea1a2196d56c4da71f52f7e822295c26636d4414725d8e66003f7784be2fa954");
  // The query as it goes on the URL is the canonical one.
  EXPECT_EQ(CanonicalQuery(in.query),
            "continuation-token=abc%2Fdef%3D&delimiter=%2F&list-type=2&max-keys=3&prefix=photos%2F2024%20summer%2F");
}

TEST(S3Sigv4, PutSignedPayload) {
  std::string body = "Hello, Shoal!\n";
  SigningInput in{"PUT", "127.0.0.1:9000", "/bucket/dir/hello%20world.txt", {}, Sha256Hex(body), "eu-west-2"};
  Headers h{{"Content-Type", "application/octet-stream"}};
  SignV4(in, kExample, FixedTime(), h);
  EXPECT_EQ(HeaderValue(h, "x-amz-content-sha256"), "8108985524401e6c4a23e3e6245d98470fe90336310d7bb8b10b4de9a0a7f82e");
  EXPECT_EQ(HeaderValue(h, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240517/eu-west-2/s3/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, "
            "Signature=9ad65a9bd3ec63ffc1c99d236169c35931c29c63d3b954e1d1352dd806d39a61");
}

TEST(S3Sigv4, GetRangeUnsignedPayload) {
  SigningInput in{"GET", "s3.eu-central-1.amazonaws.com", "/bucket/train/0001.jpg", {},
                  std::string(kUnsignedPayload), "eu-central-1"};
  Headers h{{"Range", "bytes=100-199"}, {"If-Match", "\"9b2cf535f27731c974343645a3985328\""}};
  SignV4(in, kExample, FixedTime(), h);
  EXPECT_EQ(HeaderValue(h, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_EQ(HeaderValue(h, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240517/eu-central-1/s3/aws4_request, "
            "SignedHeaders=host;if-match;range;x-amz-content-sha256;x-amz-date, "
            "Signature=7c56652a75ad5f854e536d217ae1e43d7a5f95071da82dc8e33f720ccc3c7833");
}

TEST(S3Sigv4, HeadWithSessionToken) {
  Credentials creds{"ASIAEXAMPLE", "secret/with+chars", "FwoGZXIvYXdzEExampleSessionToken//////////wEaDA==", "test"};
  SigningInput in{"HEAD", "bucket.s3.us-west-2.amazonaws.com", "/a/b%2Bc~d", {}, Sha256Hex(std::string_view()),
                  "us-west-2"};
  Headers h;
  SignV4(in, creds, FixedTime(), h);
  EXPECT_EQ(HeaderValue(h, "x-amz-security-token"), creds.session_token);
  EXPECT_EQ(HeaderValue(h, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20240517/us-west-2/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
            "Signature=96e872201525f81dc68825e242c42cacb6be46dc535c1826673a69a52e5e0f91");
}

TEST(S3Sigv4, GcsInitiateMultipart) {
  Credentials creds{"GOOGEXAMPLE", "gcs-hmac-secret", "", "test"};
  SigningInput in{"POST", "storage.googleapis.com", "/bucket/big/object", {{"uploads", ""}},
                  Sha256Hex(std::string_view()), "auto"};
  Headers h;
  SignV4(in, creds, FixedTime(), h);
  EXPECT_EQ(HeaderValue(h, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=GOOGEXAMPLE/20240517/auto/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=729fe8f0ddea0ee7efbaac0029451028389e8ec804db85d3b84c7e40baaa04c9");
}

TEST(S3Sigv4, HashHelpers) {
  EXPECT_EQ(Sha256Hex(std::string_view("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Md5Base64(std::string_view("")), "1B2M2Y8AsgTpgAmY7PhCfg==");
  EXPECT_EQ(Md5Hex(std::string_view("abc")), "900150983cd24fb0d6963f7d28e17f72");
  // RFC 4231 test case 2 (HMAC-SHA256), twice: the per-thread context is reused.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(HmacHex("Jefe", "what do ya want for nothing?"),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  }
}

TEST(S3Sigv4, CanonicalHeadersLowerSortTrimAndJoinRepeatedNames) {
  auto c = CanonicalizeHeaders({{"X-Amz-Meta-B", "  two   words  "},
                                {"Host", "h"},
                                {"x-amz-meta-a", "1"},
                                {"X-AMZ-META-A", "\t2"},
                                {"Empty", ""}});
  EXPECT_EQ(c.block, "empty:\nhost:h\nx-amz-meta-a:1,2\nx-amz-meta-b:two words\n");
  EXPECT_EQ(c.signed_names, "empty;host;x-amz-meta-a;x-amz-meta-b");
}

TEST(S3Sigv4, AmzDateIsUtc) {
  using namespace std::chrono;
  EXPECT_EQ(AmzDate(sys_days{2024y / May / 17} + 12h + 34min + 56s + 789ms), "20240517T123456Z");
  EXPECT_EQ(AmzDate(sys_days{2000y / February / 29}), "20000229T000000Z");
  EXPECT_EQ(AmzDate(sys_days{1999y / December / 31} + 23h + 59min + 59s), "19991231T235959Z");
}

}  // namespace
}  // namespace shoal::s3
