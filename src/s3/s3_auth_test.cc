// The verifier against requests signed by the under-store's signer, and the
// ways a request can be wrong. (Real clients sign the requests of
// tests/s3_endpoint_test.cc.)
#include "s3/s3_auth.h"

#include <gtest/gtest.h>

#include "common/sigv4.h"

namespace shoal::s3 {
namespace {

using namespace std::chrono_literals;

const auto kNow = std::chrono::system_clock::from_time_t(1715949296);  // 2024-05-17T12:34:56Z
const Credentials kCreds{"AKTEST", "secret/key+1", "", "test"};

Authenticator MakeAuth() { return Authenticator({{"AKTEST", "secret/key+1"}}, 15min); }

net::HttpRequest Signed(std::string method, std::string target, std::string body, const Credentials& creds,
                        std::chrono::system_clock::time_point when, bool sign_payload = true) {
  net::HttpRequest r;
  r.method = method;
  r.target = target;
  r.body = body;
  SigningInput in;
  in.method = method;
  in.host = "127.0.0.1:9000";
  in.canonical_uri = std::string(r.path());
  auto q = r.query();
  while (!q.empty()) {
    auto amp = q.find('&');
    auto item = q.substr(0, amp);
    auto eq = item.find('=');
    in.query.emplace_back(std::string(item.substr(0, eq)),
                          eq == std::string_view::npos ? "" : std::string(item.substr(eq + 1)));
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
  }
  in.payload_hash = sign_payload ? Sha256Hex(body) : std::string(kUnsignedPayload);
  in.region = "us-east-1";
  Headers h;
  SignV4(in, creds, when, h);
  r.headers = h;
  return r;
}

QueryParams NoQuery() { return {}; }

TEST(S3Auth, AcceptsAHeaderSignedRequest) {
  auto r = Signed("GET", "/data/train/x.jpg", "", kCreds, kNow);
  auto info = MakeAuth().Verify(r, NoQuery(), kNow + 1min);
  ASSERT_TRUE(info) << info.error().code << ": " << info.error().message;
  EXPECT_EQ(info->access_key, "AKTEST");
  EXPECT_FALSE(info->streaming);
}

TEST(S3Auth, QueryParametersAreSigned) {
  auto r = Signed("GET", "/data?list-type=2&prefix=a", "", kCreds, kNow);
  QueryParams q{{"list-type", "2"}, {"prefix", "a"}};
  EXPECT_TRUE(MakeAuth().Verify(r, q, kNow));
  QueryParams changed{{"list-type", "2"}, {"prefix", "b"}};
  auto bad = MakeAuth().Verify(r, changed, kNow);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "SignatureDoesNotMatch");
}

TEST(S3Auth, WrongSecretIsSignatureDoesNotMatch) {
  Credentials wrong = kCreds;
  wrong.secret_access_key = "not-the-secret";
  auto e = MakeAuth().Verify(Signed("GET", "/data/x", "", wrong, kNow), NoQuery(), kNow);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().http_status, 403);
  EXPECT_EQ(e.error().code, "SignatureDoesNotMatch");
}

TEST(S3Auth, UnknownKeyClockSkewAndTamperedBody) {
  Credentials other{"AKOTHER", "x", "", "test"};
  auto e = MakeAuth().Verify(Signed("GET", "/data/x", "", other, kNow), NoQuery(), kNow);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "InvalidAccessKeyId");

  e = MakeAuth().Verify(Signed("GET", "/data/x", "", kCreds, kNow), NoQuery(), kNow + 16min);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "RequestTimeTooSkewed");

  auto put = Signed("PUT", "/data/x", "hello", kCreds, kNow);
  EXPECT_TRUE(MakeAuth().Verify(put, NoQuery(), kNow));
  put.body = "hellO";
  e = MakeAuth().Verify(put, NoQuery(), kNow);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "XAmzContentSHA256Mismatch");

  auto unsigned_put = Signed("PUT", "/data/x", "anything", kCreds, kNow, /*sign_payload=*/false);
  EXPECT_TRUE(MakeAuth().Verify(unsigned_put, NoQuery(), kNow));
}

TEST(S3Auth, NoSignatureIsAnonymous) {
  net::HttpRequest r;
  r.method = "GET";
  r.target = "/data/x";
  auto info = MakeAuth().Verify(r, NoQuery(), kNow);
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->access_key.empty());
}

TEST(S3Auth, MalformedAuthorizationIsRefusedWithoutCrashing) {
  for (std::string h : {"", "AWS4-HMAC-SHA256", "AWS4-HMAC-SHA256 Credential=AKTEST", "AWS AKTEST:sig",
                        "AWS4-HMAC-SHA256 Credential=AKTEST/2024/us/s3/aws4_request, SignedHeaders=host, Signature=x",
                        "AWS4-HMAC-SHA256 Credential=/////, SignedHeaders=;;;, Signature="}) {
    net::HttpRequest r;
    r.method = "GET";
    r.target = "/data/x";
    r.headers = {{"Authorization", h}, {"Host", "h"}};
    auto e = MakeAuth().Verify(r, NoQuery(), kNow);
    ASSERT_FALSE(e) << h;
    EXPECT_GE(e.error().http_status, 400) << h;
  }
}

// aws-chunked: each chunk signed over the previous signature.
std::string Chunk(const AuthInfo& a, std::string* prev, std::string_view data) {
  std::string to_sign = "AWS4-HMAC-SHA256-PAYLOAD\n" + a.amz_date + "\n" + a.scope + "\n" + *prev + "\n" +
                        Sha256Hex(std::string_view()) + "\n" + Sha256Hex(data);
  *prev = HmacHex(a.signing_key, to_sign);
  char size[32];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + ";chunk-signature=" + *prev + "\r\n" + std::string(data) + "\r\n";
}

TEST(S3Auth, ChunkedBodyEveryChunkChecked) {
  AuthInfo a;
  a.streaming = true;
  a.amz_date = "20240517T123456Z";
  a.scope = CredentialScope("20240517", "us-east-1", "s3");
  a.signing_key = SigningKey("secret/key+1", "20240517", "us-east-1", "s3");
  a.seed_signature = std::string(64, 'a');
  std::string prev = a.seed_signature;
  std::string body = Chunk(a, &prev, std::string(70000, 'x'));
  body += Chunk(a, &prev, "tail");
  body += Chunk(a, &prev, "");
  auto decoded = Authenticator::DecodeChunked(body, a);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, std::string(70000, 'x') + "tail");

  std::string tampered = body;
  tampered[tampered.find("tail")] = 'T';
  auto e = Authenticator::DecodeChunked(tampered, a);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, "SignatureDoesNotMatch");
  // Truncated, garbage, or a missing final chunk: refused, never read past the end.
  for (std::string b : {body.substr(0, body.size() / 2), std::string("zz;chunk-signature=1\r\n"), std::string("\r\n"),
                        body.substr(0, body.rfind("0;chunk"))}) {
    EXPECT_FALSE(Authenticator::DecodeChunked(b, a));
  }
}

}  // namespace
}  // namespace shoal::s3
