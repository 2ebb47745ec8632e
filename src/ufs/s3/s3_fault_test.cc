// Fault tests: the S3 backend against a tiny in-test HTTP server on loopback
// that answers with throttling, errors and truncated bodies on purpose.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "common/config.h"
#include "tests/harness/gcp_stand_in.h"
#include "tests/harness/harness_util.h"
#include "ufs/s3/s3_store.h"
#include "ufs/under_store.h"

namespace shoal {
namespace {

using namespace std::chrono_literals;

struct Request {
  std::string method, target;  // target: path and query as sent
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// Builds a raw HTTP/1.1 response; declared_length < 0 means the body's real size.
std::string Reply(int status, const std::string& body, std::vector<std::string> headers = {},
                  long declared_length = -1) {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " X\r\nConnection: close\r\nContent-Length: " +
                  std::to_string(declared_length < 0 ? static_cast<long>(body.size()) : declared_length) + "\r\n";
  for (auto& h : headers) r += h + "\r\n";
  return r + "\r\n" + body;
}

std::string ErrorXml(const std::string& code) {
  return "<?xml version=\"1.0\"?><Error><Code>" + code + "</Code><Message>test says " + code + "</Message></Error>";
}

using shoal::testing::LoopbackListener;

// One connection at a time, one request per connection: enough for these tests.
class FakeS3 {
 public:
  using Handler = std::function<std::string(const Request&)>;

  explicit FakeS3(Handler h) : handler_(std::move(h)) {
    if (listener_.port() == 0) ADD_FAILURE() << "cannot listen on 127.0.0.1";
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }
  int count() const { return count_.load(); }
  std::vector<Request> requests() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void Serve(int c) {
    std::string in;
    char buf[65536];
    size_t header_end;
    while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    Request r;
    std::string head = in.substr(0, header_end);
    size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    r.method = head.substr(0, sp1);
    r.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos < head.size()) {
      size_t next = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, (next == std::string::npos ? head.size() : next) - pos - 2);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string k = line.substr(0, colon);
        for (auto& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        r.headers[k] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      pos = next;
    }
    size_t want = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    r.body = in.substr(header_end + 4);
    while (r.body.size() < want) {
      ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) return;
      r.body.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard lock(mu_);
      seen_.push_back(r);
    }
    ++count_;
    std::string out = handler_(r);
    for (size_t off = 0; off < out.size();) {
      ssize_t n = ::send(c, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::shutdown(c, SHUT_WR);
  }

  Handler handler_;
  std::atomic<int> count_{0};
  std::mutex mu_;
  std::vector<Request> seen_;
  LoopbackListener listener_{[this](int c) { Serve(c); }};  // last: stops first
};

// The object every GET handler serves: 1000 bytes of a known pattern.
std::string Object() {
  std::string s(1000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

// A correct ranged GET answer for "Range: bytes=a-b".
std::string RangeReply(const Request& r) {
  auto range = r.headers.at("range");
  size_t a = std::stoul(range.substr(6)), b = std::stoul(range.substr(range.find('-') + 1));
  std::string obj = Object();
  b = std::min(b, obj.size() - 1);
  return Reply(206, obj.substr(a, b - a + 1),
               {"Content-Range: bytes " + std::to_string(a) + "-" + std::to_string(b) + "/" + std::to_string(obj.size()),
                "ETag: \"v1\""});
}

std::shared_ptr<UnderStore> Open(const std::string& endpoint, std::map<std::string, std::string> extra = {}) {
  MountConfig m;
  m.path = "/m";
  m.ufs = "s3://bucket/prefix";
  m.options = {{"endpoint", endpoint}, {"access_key_id", "AKIDTEST"}, {"secret_access_key", "s3cr3t-never-shown"},
               {"region", "us-east-1"}, {"retry_base_delay", "5ms"}, {"max_retries", "4"}, {"request_timeout", "20s"}};
  for (auto& [k, v] : extra) m.options[k] = v;
  auto s = OpenUnderStore(m);
  EXPECT_TRUE(s) << s.error().ToString();
  return s ? *s : nullptr;
}

TEST(S3Fault, SlowDownIsRetriedThenSucceeds) {
  std::atomic<int> n{0};
  FakeS3 server([&](const Request& r) {
    if (n++ < 3) return Reply(503, ErrorXml("SlowDown"));
    return RangeReply(r);
  });
  auto store = Open(server.endpoint());
  std::string buf(100, '\0');
  auto got = store->Read("key", 10, std::span<char>(buf.data(), buf.size()));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(*got, 100u);
  EXPECT_EQ(buf, Object().substr(10, 100));
  EXPECT_EQ(server.count(), 4);
  auto reqs = server.requests();
  EXPECT_EQ(reqs[0].target, "/bucket/prefix/key");
  EXPECT_EQ(reqs[0].headers["range"], "bytes=10-109");
  EXPECT_TRUE(reqs[0].headers["authorization"].starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"));
}

TEST(S3Fault, ServerErrorsExhaustRetries) {
  FakeS3 server([&](const Request&) { return Reply(500, ErrorXml("InternalError")); });
  auto store = Open(server.endpoint(), {{"max_retries", "2"}});
  char buf[10];
  auto got = store->Read("key", 0, buf);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), Code::kUnavailable) << got.error().ToString();
  EXPECT_NE(got.error().message().find("InternalError"), std::string::npos);
  EXPECT_NE(got.error().message().find("3 attempts"), std::string::npos);
  EXPECT_EQ(server.count(), 3);
}

TEST(S3Fault, ForbiddenIsPermissionDeniedNamingTheMount) {
  FakeS3 server([&](const Request&) { return Reply(403, ErrorXml("AccessDenied")); });
  auto store = Open(server.endpoint());
  char buf[10];
  auto got = store->Read("train/x.jpg", 0, buf);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), Code::kPermissionDenied);
  const auto& msg = got.error().message();
  EXPECT_NE(msg.find("permission denied by s3://bucket/prefix/train/x.jpg (mount /m): check the credentials"),
            std::string::npos) << msg;
  EXPECT_EQ(msg.find("s3cr3t"), std::string::npos) << "a secret leaked into: " << msg;
  EXPECT_EQ(server.count(), 1);  // not retried

  auto st = store->Stat("train/x.jpg");  // HEAD: 403 without a body
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kPermissionDenied);
}

TEST(S3Fault, ExpiredTokenIsPermissionDenied) {
  FakeS3 server([&](const Request&) { return Reply(400, ErrorXml("ExpiredToken")); });
  auto store = Open(server.endpoint(), {{"session_token", "tok"}});
  auto page = store->List("", {});
  ASSERT_FALSE(page);
  EXPECT_EQ(page.error().code(), Code::kPermissionDenied) << page.error().ToString();
  EXPECT_EQ(server.requests().at(0).headers["x-amz-security-token"], "tok");
}

TEST(S3Fault, TruncatedBodyIsRetried) {
  std::atomic<int> n{0};
  FakeS3 server([&](const Request& r) {
    if (n++ == 0) {  // promises 100 bytes, sends 40, closes
      return Reply(206, Object().substr(0, 40), {"Content-Range: bytes 0-99/1000"}, 100);
    }
    return RangeReply(r);
  });
  auto store = Open(server.endpoint());
  std::string buf(100, '\0');
  auto got = store->Read("key", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(*got, 100u);
  EXPECT_EQ(buf, Object().substr(0, 100));
  EXPECT_EQ(server.count(), 2);
}

TEST(S3Fault, AlwaysTruncatedIsAnErrorNeverData) {
  FakeS3 server([&](const Request&) {
    return Reply(206, Object().substr(0, 40), {"Content-Range: bytes 0-99/1000"}, 100);
  });
  auto store = Open(server.endpoint(), {{"max_retries", "2"}});
  std::string buf(100, '\0');
  auto got = store->Read("key", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_FALSE(got) << "returned " << *got << " bytes of a truncated body";
  EXPECT_EQ(server.count(), 3);
}

TEST(S3Fault, ShortBodyWithHonestLengthIsAnErrorNeverData) {
  // A well-formed response that carries fewer bytes than asked although the
  // object is long enough (a broken proxy or store): kIo, after retries.
  FakeS3 server([&](const Request&) {
    return Reply(206, Object().substr(0, 40), {"Content-Range: bytes 0-39/1000"});
  });
  auto store = Open(server.endpoint(), {{"max_retries", "1"}});
  std::string buf(100, '\0');
  auto got = store->Read("key", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), Code::kIo) << got.error().ToString();
  EXPECT_EQ(server.count(), 2);
}

TEST(S3Fault, ShortReadAtEndOfObjectIsData) {
  FakeS3 server([&](const Request& r) { return RangeReply(r); });
  auto store = Open(server.endpoint());
  std::string buf(100, '\0');
  auto got = store->Read("key", 950, std::span<char>(buf.data(), buf.size()));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(*got, 50u);
  EXPECT_EQ(buf.substr(0, 50), Object().substr(950));
}

// GCS serves an object kept with Content-Encoding: gzip decompressed, whole
// and with the range ignored, to a reader that does not accept gzip (its
// "decompressive transcoding"). Reads ask for the stored bytes and take them
// as they come, Content-Encoding and all: a cached page is the object's bytes.
TEST(S3Fault, ReadsTakeTheStoredBytesOfAGzipEncodedObject) {
  FakeS3 server([&](const Request& r) {
    auto accept = r.headers.find("accept-encoding");
    if (accept == r.headers.end() || accept->second.find("gzip") == std::string::npos) {
      return Reply(200, "the decompressed object, not the stored bytes");
    }
    std::string out = RangeReply(r);
    return out.insert(out.find("\r\n") + 2, "Content-Encoding: gzip\r\n");
  });
  auto store = Open(server.endpoint(), {{"max_retries", "0"}});
  std::string buf(100, '\0');
  auto got = store->Read("key", 10, std::span<char>(buf.data(), buf.size()));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(*got, 100u);
  EXPECT_EQ(buf, Object().substr(10, 100)) << "the bytes as stored, never decoded";
}

TEST(S3Fault, PreconditionFailedIsVersionMismatch) {
  FakeS3 server([&](const Request&) { return Reply(412, ErrorXml("PreconditionFailed")); });
  auto store = Open(server.endpoint());
  char buf[10];
  ReadOptions o;
  o.if_version = "old";
  auto got = store->Read("key", 0, buf, o);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), Code::kVersionMismatch);
  EXPECT_EQ(server.requests().at(0).headers["if-match"], "\"old\"");
}

TEST(S3Fault, NoSuchBucketNamesTheBucket) {
  FakeS3 server([&](const Request&) { return Reply(404, ErrorXml("NoSuchBucket")); });
  auto store = Open(server.endpoint());
  auto st = store->Stat("some/key");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound);
  EXPECT_NE(st.error().message().find("bucket 'bucket' does not exist"), std::string::npos) << st.error().ToString();
}

TEST(S3Fault, WrongRegionSaysWhichRegion) {
  FakeS3 server([&](const Request&) {
    return Reply(301, "<Error><Code>PermanentRedirect</Code><Region>eu-west-3</Region></Error>");
  });
  auto store = Open(server.endpoint());
  auto page = store->List("", {});
  ASSERT_FALSE(page);
  EXPECT_EQ(page.error().code(), Code::kInvalidArgument);
  EXPECT_NE(page.error().message().find("region: eu-west-3"), std::string::npos) << page.error().ToString();
}

TEST(S3Fault, UnreachableEndpointFailsFastAndNamesIt) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);  // nothing listens on this port now
  std::string endpoint = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto store = Open(endpoint, {{"request_timeout", "3s"}, {"max_retries", "3"}});
  auto start = std::chrono::steady_clock::now();
  auto st = store->Stat("key");
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(st);
  EXPECT_TRUE(st.error().code() == Code::kUnavailable || st.error().code() == Code::kTimeout) << st.error().ToString();
  EXPECT_NE(st.error().message().find(endpoint), std::string::npos) << st.error().ToString();
  EXPECT_LT(elapsed, 10s);
}

TEST(S3Fault, SilentServerHitsTheDeadline) {
  // Accepts connections (via the listen backlog) but never answers.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::string endpoint = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto store = Open(endpoint, {{"request_timeout", "1s"}});
  auto start = std::chrono::steady_clock::now();
  char buf[10];
  auto got = store->Read("key", 0, buf);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ::close(fd);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), Code::kTimeout) << got.error().ToString();
  EXPECT_NE(got.error().message().find(endpoint), std::string::npos) << got.error().ToString();
  EXPECT_GE(elapsed, 900ms);
  EXPECT_LT(elapsed, 8s);
}

TEST(S3Fault, FailedPartAbortsTheMultipartUpload) {
  FakeS3 server([&](const Request& r) {
    if (r.method == "POST" && r.target.find("uploads") != std::string::npos) {
      return Reply(200, "<InitiateMultipartUploadResult><UploadId>UP1</UploadId></InitiateMultipartUploadResult>");
    }
    if (r.method == "PUT") return Reply(403, ErrorXml("AccessDenied"));
    if (r.method == "DELETE") return Reply(204, "");
    return Reply(400, ErrorXml("Unexpected"));
  });
  auto store = Open(server.endpoint(), {{"multipart_threshold", "5MiB"}, {"multipart_part_size", "5MiB"}});
  std::string data(11 << 20, 'x');
  auto st = store->Write("big", data);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kPermissionDenied) << st.ToString();
  bool aborted = false;
  for (auto& r : server.requests()) {
    if (r.method == "DELETE" && r.target.find("uploadId=UP1") != std::string::npos) aborted = true;
    if (r.method == "POST" && r.target.find("uploadId=") != std::string::npos) ADD_FAILURE() << "completed anyway";
  }
  EXPECT_TRUE(aborted);
}

TEST(S3Fault, MultipartSendsFullPartsThenCompletes) {
  FakeS3 server([&](const Request& r) {
    if (r.method == "POST" && r.target.find("uploads") != std::string::npos) {
      return Reply(200, "<InitiateMultipartUploadResult><UploadId>UP2</UploadId></InitiateMultipartUploadResult>");
    }
    if (r.method == "PUT") {
      auto n = r.target.substr(r.target.find("partNumber=") + 11, 1);
      return Reply(200, "", {"ETag: \"etag" + n + "\""});
    }
    return Reply(200, "<CompleteMultipartUploadResult><ETag>\"x-3\"</ETag></CompleteMultipartUploadResult>");
  });
  auto store = Open(server.endpoint(), {{"multipart_threshold", "5MiB"}, {"multipart_part_size", "5MiB"}});
  std::string data(11 << 20, 'y');
  auto st = store->Write("big", data);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::map<std::string, size_t> part_sizes;
  std::string complete;
  for (auto& r : server.requests()) {
    if (r.method == "PUT") {
      EXPECT_FALSE(r.headers["content-md5"].empty());  // unsigned payload: integrity via Content-MD5
      EXPECT_EQ(r.headers["x-amz-content-sha256"], "UNSIGNED-PAYLOAD");
      part_sizes[r.target.substr(r.target.find("partNumber=") + 11, 1)] = r.body.size();
    }
    if (r.method == "POST" && r.target.find("uploadId=UP2") != std::string::npos) complete = r.body;
  }
  EXPECT_EQ(part_sizes, (std::map<std::string, size_t>{{"1", 5u << 20}, {"2", 5u << 20}, {"3", 1u << 20}}));
  EXPECT_NE(complete.find("<PartNumber>3</PartNumber><ETag>&quot;etag3&quot;</ETag>"), std::string::npos) << complete;
}

TEST(S3Fault, AnonymousRequestsAreUnsigned) {
  FakeS3 server([&](const Request& r) { return RangeReply(r); });
  MountConfig m;
  m.path = "/m";
  m.ufs = "s3://bucket";
  m.options = {{"endpoint", server.endpoint()}, {"credentials", "anonymous"}};
  // Anonymous, even with keys in the environment.
  ::setenv("AWS_SECRET_ACCESS_KEY", "must-not-be-used", 1);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
  ::setenv("AWS_CONFIG_FILE", "/nonexistent", 1);
  auto store = OpenUnderStore(m);
  ASSERT_TRUE(store) << store.error().ToString();
  char buf[10];
  ASSERT_TRUE((*store)->Read("k", 0, buf));
  auto r = server.requests().at(0);
  EXPECT_EQ(r.headers.count("authorization"), 0u);
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  EXPECT_EQ(r.target, "/bucket/k");
}

// A gs:// mount without HMAC keys sends Google's OAuth token, from a
// service-account key file, as a bearer token (no SigV4), and the token is
// one Google's token endpoint (the stand-in) issued.
TEST(S3Fault, GcsWithoutHmacKeysSendsAnOAuthBearerToken) {
  testing::GcpStandIn google;
  auto dir = testing::MakeScratchDir("gcsbearer", "a service-account key file");
  ASSERT_TRUE(dir) << dir.error().ToString();
  const std::string key_file = (*dir)->path + "/sa.json";
  std::ofstream(key_file) << google.ServiceAccountJson();
  FakeS3 server([&](const Request& r) { return RangeReply(r); });
  MountConfig m;
  m.path = "/gcs";
  m.ufs = "gs://bucket/p/";
  m.options = {{"endpoint", server.endpoint()}, {"credentials_file", key_file}};
  auto store = OpenUnderStore(m);
  ASSERT_TRUE(store) << store.error().ToString();
  char buf[10];
  ASSERT_TRUE((*store)->Read("k", 0, buf));
  auto r = server.requests().at(0);
  ASSERT_EQ(r.headers.count("authorization"), 1u);
  const std::string auth = r.headers.at("authorization");
  ASSERT_TRUE(auth.starts_with("Bearer ")) << "not a bearer token";
  EXPECT_TRUE(google.Accepts(auth.substr(7)));
  EXPECT_EQ(r.headers.count("x-amz-date"), 0u);
}

}  // namespace
}  // namespace shoal
