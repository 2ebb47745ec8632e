// The S3 endpoint with real S3 clients from Debian against `shoal up --s3 0`
// over a local directory: awscli, boto3 (tests/s3_endpoint_boto3.py), s3cmd
// and rclone. Every byte read is compared with the file in the store.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <thread>

#include "common/subprocess.h"
#include "tests/cli_helpers.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/shoal_cluster.h"
#include "tests/s3_endpoint_raw.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kManyKeys = 2500;

// Files under `dir`, relative path -> bytes.
std::map<std::string, std::string> Tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = Slurp(e.path().string());
  }
  return out;
}

class S3EndpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("s3ep"));
    ASSERT_FALSE(dir_->empty());
    const std::string ufs = *dir_ + "/ufs";
    for (int i = 0; i < kManyKeys; ++i) {
      char name[64];
      std::snprintf(name, sizeof name, "%s/many/%05d.txt", ufs.c_str(), i);
      ASSERT_TRUE(WriteFile(name, std::to_string(i)).ok());
    }
    ASSERT_TRUE(WriteFile(ufs + "/big.bin", RandomBytes(20 << 20, 1)).ok());
    ASSERT_TRUE(WriteFile(ufs + "/small.txt", "hello, shoal\n").ok());
    ASSERT_TRUE(WriteFile(ufs + "/odd dir/a b+c&d.txt", RandomBytes(3000, 2)).ok());
    ASSERT_TRUE(WriteFile(ufs + "/tree/a/1.bin", RandomBytes(300000, 3)).ok());
    ASSERT_TRUE(WriteFile(ufs + "/tree/a/b/2.bin", RandomBytes(5 << 20, 4)).ok());
    ASSERT_TRUE(WriteFile(ufs + "/tree/c.txt", "c\n").ok());
    up_ = new Up(LaunchUp({"--ufs", ufs, "--workers", "2", "--state-dir", *dir_ + "/state", "--cache-size", "256MiB",
                           "--page-size", "256KiB", "--shard-size", "4MiB", "--s3", "0"},
                          *dir_ + "/up.err"));
    ASSERT_TRUE(up_->ready) << up_->err();
    std::smatch m;
    const std::string out = up_->proc.output();
    ASSERT_TRUE(std::regex_search(out, m, std::regex("s3: endpoint=(\\S+) access_key=(\\S+) secret_key=(\\S+)")))
        << out;
    endpoint_ = new std::string(m[1]);
    access_key_ = new std::string(m[2]);
    secret_key_ = new std::string(m[3]);
  }
  static void TearDownTestSuite() {
    if (up_) {
      up_->proc.Signal(SIGTERM);
      up_->proc.Wait(std::chrono::seconds(60));
    }
    delete up_;
    if (dir_) fs::remove_all(*dir_);
    for (auto* s : {dir_, endpoint_, access_key_, secret_key_}) delete s;
  }

  void SetUp() override {
    ASSERT_TRUE(up_ && up_->ready) << "shoal up --s3 did not start";
    scratch_ = MakeTempDir("s3ep-out");
    ASSERT_FALSE(scratch_.empty());
  }
  void TearDown() override { fs::remove_all(scratch_); }

  static std::string Ufs() { return *dir_ + "/ufs"; }

  // An s3cmd config for the endpoint, in the test's scratch dir.
  std::string S3cmdConfig() const {
    std::string hostport = endpoint_->substr(std::string("http://").size());
    std::string cfg = scratch_ + "/s3cfg";
    EXPECT_TRUE(WriteFile(cfg, "[default]\naccess_key = " + *access_key_ + "\nsecret_key = " + *secret_key_ +
                                   "\nhost_base = " + hostport + "\nhost_bucket = " + hostport +
                                   "\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n")
                    .ok());
    return cfg;
  }

  // The environment of awscli and boto3: the endpoint's keys, no config
  // files, no instance metadata, no pager.
  static std::map<std::string, std::string> AwsEnv(const std::string& secret = "") {
    return {{"AWS_ACCESS_KEY_ID", *access_key_},
            {"AWS_SECRET_ACCESS_KEY", secret.empty() ? *secret_key_ : secret},
            {"AWS_DEFAULT_REGION", "us-east-1"},
            {"AWS_CONFIG_FILE", "/dev/null"},
            {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
            {"AWS_EC2_METADATA_DISABLED", "true"},
            {"AWS_PAGER", ""}};
  }
  static Cmd Aws(std::vector<std::string> args, const std::string& secret = "") {
    std::vector<std::string> argv = {"/usr/bin/aws", "--endpoint-url", *endpoint_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCmd(argv, AwsEnv(secret));
  }

  static std::string* dir_;
  static Up* up_;
  static std::string* endpoint_;
  static std::string* access_key_;
  static std::string* secret_key_;
  std::string scratch_;
};

std::string* S3EndpointTest::dir_ = nullptr;
Up* S3EndpointTest::up_ = nullptr;
std::string* S3EndpointTest::endpoint_ = nullptr;
std::string* S3EndpointTest::access_key_ = nullptr;
std::string* S3EndpointTest::secret_key_ = nullptr;

TEST_F(S3EndpointTest, AwsCliListsCopiesSyncsAndReadsRanges) {
  auto ls = Aws({"s3", "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_NE(ls.out.find(" data\n"), std::string::npos) << ls.out;

  ls = Aws({"s3", "ls", "s3://data/tree/"});
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_NE(ls.out.find("PRE a/"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find(" 2 c.txt"), std::string::npos) << ls.out;

  ls = Aws({"s3", "ls", "--recursive", "s3://data/tree/"});
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_EQ(CountLines(ls.out, "tree/"), 3) << ls.out;
  EXPECT_NE(ls.out.find(std::to_string(5 << 20) + " tree/a/b/2.bin"), std::string::npos) << ls.out;

  // 20 MiB: awscli fetches it in parallel ranged GETs.
  auto cp = Aws({"s3", "cp", "--only-show-errors", "s3://data/big.bin", scratch_ + "/big.bin"});
  ASSERT_EQ(cp.exit_code, 0) << cp.out;
  EXPECT_TRUE(Slurp(scratch_ + "/big.bin") == Slurp(Ufs() + "/big.bin")) << "aws s3 cp read different bytes";

  auto sync = Aws({"s3", "sync", "--only-show-errors", "s3://data/tree/", scratch_ + "/tree"});
  ASSERT_EQ(sync.exit_code, 0) << sync.out;
  EXPECT_EQ(Tree(scratch_ + "/tree"), Tree(Ufs() + "/tree"));

  auto get = Aws({"s3api", "get-object", "--bucket", "data", "--key", "big.bin", "--range", "bytes=1000000-1000099",
                  scratch_ + "/range.bin"});
  ASSERT_EQ(get.exit_code, 0) << get.out;
  EXPECT_NE(get.out.find("bytes 1000000-1000099/" + std::to_string(20 << 20)), std::string::npos) << get.out;
  EXPECT_TRUE(Slurp(scratch_ + "/range.bin") == Slurp(Ufs() + "/big.bin").substr(1000000, 100));
}

TEST_F(S3EndpointTest, WrongSecretIsSignatureDoesNotMatch) {
  auto ls = Aws({"s3", "ls", "s3://data/"}, "not-the-secret");
  EXPECT_NE(ls.exit_code, 0) << ls.out;
  EXPECT_NE(ls.out.find("SignatureDoesNotMatch"), std::string::npos) << ls.out;
  auto get = Aws({"s3api", "get-object", "--bucket", "data", "--key", "small.txt", scratch_ + "/x"}, "wrong");
  EXPECT_NE(get.exit_code, 0) << get.out;
  EXPECT_NE(get.out.find("SignatureDoesNotMatch"), std::string::npos) << get.out;
  EXPECT_FALSE(fs::exists(scratch_ + "/x") && fs::file_size(scratch_ + "/x") > 0);
}

TEST_F(S3EndpointTest, Boto3PaginationRangesConditionsAndPresignedUrls) {
  const std::string script = SourceDir() + "/tests/s3_endpoint_boto3.py";
  auto env = AwsEnv();
  env["S3_ENDPOINT"] = *endpoint_;
  env["UFS"] = Ufs();
  env["MANY"] = std::to_string(kManyKeys);
  auto r = RunCmd({"/usr/bin/python3", script}, env);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("boto3: ok"), std::string::npos) << r.out;
}

// ETags, metadata, multipart and error codes as SDKs and sync tools rely on
// them (tests/s3_endpoint_semantics.py).
TEST_F(S3EndpointTest, Boto3EtagsMetadataIdempotentCompleteAndCodes) {
  const std::string script = SourceDir() + "/tests/s3_endpoint_semantics.py";
  auto env = AwsEnv();
  env["S3_ENDPOINT"] = *endpoint_;
  env["UFS"] = Ufs();
  auto r = RunCmd({"/usr/bin/python3", script}, env);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("semantics: ok"), std::string::npos) << r.out;
  fs::remove_all(Ufs() + "/same");
  fs::remove_all(Ufs() + "/adir");
}

// s3cmd sync takes equal ETags for equal bytes (and copies locally instead of
// downloading): 16 same-size files touched to one mtime must all arrive
// right, and a second sync must find nothing to do.
TEST_F(S3EndpointTest, S3cmdSyncDownOfSameSizeSameMtimeFiles) {
  const std::string cfg = S3cmdConfig();
  const std::string src = Ufs() + "/twins";
  for (int i = 0; i < 16; ++i) {
    const std::string p = src + "/" + std::to_string(i) + ".bin";
    ASSERT_TRUE(WriteFile(p, RandomBytes(8192, 100 + i)).ok());
    auto touch = RunCmd({"/usr/bin/touch", "-d", "2024-01-02 03:04:05", p}, {});
    ASSERT_EQ(touch.exit_code, 0) << touch.out;
  }
  auto sync =
      RunCmd({"/usr/bin/s3cmd", "-c", cfg, "sync", "--recursive", "s3://data/twins/", scratch_ + "/twins/"}, {});
  ASSERT_EQ(sync.exit_code, 0) << sync.out;
  EXPECT_EQ(Tree(scratch_ + "/twins"), Tree(src)) << sync.out;
  // And up: what s3cmd puts gets the MD5 as ETag (s3cmd compares them), so
  // syncing the same tree back finds every file equal.
  auto up = RunCmd({"/usr/bin/s3cmd", "-c", cfg, "sync", "--recursive", scratch_ + "/twins/", "s3://data/twins2/"}, {});
  ASSERT_EQ(up.exit_code, 0) << up.out;
  EXPECT_EQ(up.out.find("MD5"), std::string::npos) << up.out;
  EXPECT_EQ(Tree(Ufs() + "/twins2"), Tree(src));
  auto again = RunCmd(
      {"/usr/bin/s3cmd", "-c", cfg, "sync", "--recursive", "--dry-run", scratch_ + "/twins/", "s3://data/twins2/"}, {});
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(again.out.find("upload:"), std::string::npos) << "files uploaded through the endpoint look changed:\n"
                                                          << again.out;
  fs::remove_all(src);
  fs::remove_all(Ufs() + "/twins2");
}

TEST_F(S3EndpointTest, S3cmdListsAndGets) {
  const std::string cfg = S3cmdConfig();
  auto ls = RunCmd({"/usr/bin/s3cmd", "-c", cfg, "ls", "s3://data/tree/"}, {});
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_NE(ls.out.find("DIR  s3://data/tree/a/"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("s3://data/tree/c.txt"), std::string::npos) << ls.out;
  auto get =
      RunCmd({"/usr/bin/s3cmd", "-c", cfg, "get", "--force", "s3://data/tree/a/b/2.bin", scratch_ + "/2.bin"}, {});
  ASSERT_EQ(get.exit_code, 0) << get.out;
  EXPECT_TRUE(Slurp(scratch_ + "/2.bin") == Slurp(Ufs() + "/tree/a/b/2.bin"));
  ASSERT_TRUE(WriteFile(scratch_ + "/put.bin", RandomBytes(200000, 10)).ok());
  auto put = RunCmd({"/usr/bin/s3cmd", "-c", cfg, "put", scratch_ + "/put.bin", "s3://data/s3cmdup/put.bin"}, {});
  ASSERT_EQ(put.exit_code, 0) << put.out;
  EXPECT_TRUE(Slurp(Ufs() + "/s3cmdup/put.bin") == Slurp(scratch_ + "/put.bin"));
  fs::remove_all(Ufs() + "/s3cmdup");
}

TEST_F(S3EndpointTest, RcloneCopyAndCheck) {
  std::map<std::string, std::string> env = {{"RCLONE_CONFIG_SHOAL_TYPE", "s3"},
                                            {"RCLONE_CONFIG_SHOAL_PROVIDER", "Other"},
                                            {"RCLONE_CONFIG_SHOAL_ACCESS_KEY_ID", *access_key_},
                                            {"RCLONE_CONFIG_SHOAL_SECRET_ACCESS_KEY", *secret_key_},
                                            {"RCLONE_CONFIG_SHOAL_ENDPOINT", *endpoint_}};
  auto rclone = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "/usr/bin/rclone", "--config", "/dev/null"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCmd(argv, env);
  };
  auto copy = rclone({"copy", "shoal:data/tree", scratch_ + "/tree"});
  ASSERT_EQ(copy.exit_code, 0) << copy.out;
  EXPECT_EQ(Tree(scratch_ + "/tree"), Tree(Ufs() + "/tree"));
  auto check = rclone({"check", "shoal:data/tree", Ufs() + "/tree"});
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("0 differences found"), std::string::npos) << check.out;
  // And up: rclone copy of a local tree into the bucket.
  ASSERT_TRUE(WriteFile(scratch_ + "/rcup/x.bin", RandomBytes(300000, 11)).ok());
  ASSERT_TRUE(WriteFile(scratch_ + "/rcup/d/y.txt", "y\n").ok());
  auto up = rclone({"copy", scratch_ + "/rcup", "shoal:data/rcup"});
  ASSERT_EQ(up.exit_code, 0) << up.out;
  EXPECT_EQ(Tree(Ufs() + "/rcup"), Tree(scratch_ + "/rcup"));
  fs::remove_all(Ufs() + "/rcup");
}

TEST_F(S3EndpointTest, HostileRequestsGetS3ErrorsAndNeverStopTheEndpoint) {
  const std::string host = endpoint_->substr(std::string("http://").size());
  struct Case {
    std::string request;
    int status;
    std::string code;
  };
  std::string many_params = "/data/small.txt?";
  for (int i = 0; i < 100; ++i) many_params += "p" + std::to_string(i) + "=1&";
  std::vector<Case> cases = {
      {SignedRequest("GET", "/data/tree/../../etc/passwd", host, *access_key_, *secret_key_), 400, "InvalidArgument"},
      {SignedRequest("GET", "/data/tree//c.txt", host, *access_key_, *secret_key_), 400, "InvalidArgument"},
      {SignedRequest("GET", "/data/no-such-key", host, *access_key_, *secret_key_), 404, "NoSuchKey"},
      {SignedRequest("GET", "/data/tree/", host, *access_key_, *secret_key_), 404, "NoSuchKey"},
      {SignedRequest("POST", "/data/new.txt", host, *access_key_, *secret_key_), 501, "NotImplemented"},
      {SignedRequest("PUT", "/data/x?uploadId=../../etc&partNumber=1", host, *access_key_, *secret_key_), 404,
       "NoSuchUpload"},
      {SignedRequest("GET", "/data?acl", host, *access_key_, *secret_key_), 501, "NotImplemented"},
      {SignedRequest("GET", "/data?list-type=2&max-keys=x", host, *access_key_, *secret_key_), 400, "InvalidArgument"},
      {SignedRequest("GET", "/data?list-type=2&continuation-token=zz", host, *access_key_, *secret_key_), 400,
       "InvalidArgument"},
      {SignedRequest("GET", "/data/small.txt", host, "AKNOBODY", "x"), 403, "InvalidAccessKeyId"},
      {"GET /data/%zz HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 400, "InvalidURI"},
      {"GET " + many_params + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 400, "InvalidArgument"},
      {"GET /data/small.txt HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: AWS4-HMAC-SHA256 garbage\r\n\r\n", 400,
       "AuthorizationHeaderMalformed"},
      {"GET /data/small.txt HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: AWS AK:sig\r\n\r\n", 400,
       "InvalidRequest"},
      {"GET /data/small.txt?X-Amz-Credential=a HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 400,
       "AuthorizationQueryParametersError"},
      // Anonymous, virtual-hosted: the bucket comes from the Host header, and is not public.
      {"GET /small.txt HTTP/1.1\r\nHost: data.localhost:1\r\n\r\n", 403, "AccessDenied"},
      // Over the most one PUT takes (5 GiB and aws-chunked framing): refused before any byte is read.
      {"PUT /data/x HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 7000000000\r\n\r\n", 413, "EntityTooLarge"},
      {SignedRequest("PUT", "/data/x", host, *access_key_, *secret_key_, {{"Content-Length", "5368709121"}}), 400,
       "EntityTooLarge"},
      {"GET /data/x HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n", 431,
       "RequestHeaderSectionTooLarge"},
  };
  for (const auto& c : cases) {
    auto r = Exchange(host, c.request);
    ASSERT_TRUE(r) << c.request.substr(0, 200);
    EXPECT_EQ(r->status, c.status) << c.request.substr(0, 200) << "\n" << r->body;
    EXPECT_NE(r->body.find("<Code>" + c.code + "</Code>"), std::string::npos) << c.request.substr(0, 200) << "\n"
                                                                              << r->body;
  }
  // A reader that goes away mid-body; then the endpoint still answers.
  ASSERT_TRUE(SendAndHangUp(host, SignedRequest("GET", "/data/big.bin", host, *access_key_, *secret_key_)));
  auto r = Exchange(host, SignedRequest("GET", "/data/small.txt", host, *access_key_, *secret_key_));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello, shoal\n");
}

TEST_F(S3EndpointTest, ChunkedUploadEveryChunkCheckedTamperedStoresNothing) {
  const std::string host = endpoint_->substr(std::string("http://").size());
  std::vector<std::string> chunks = {RandomBytes(65536, 5), RandomBytes(65536, 6), "tail"};
  auto bad = Exchange(host, ChunkedPut("/data/chunked/bad.bin", host, *access_key_, *secret_key_, chunks, true));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 403) << bad->body;
  EXPECT_NE(bad->body.find("<Code>SignatureDoesNotMatch</Code>"), std::string::npos) << bad->body;
  EXPECT_FALSE(fs::exists(Ufs() + "/chunked/bad.bin"));
  auto get = Exchange(host, SignedRequest("GET", "/data/chunked/bad.bin", host, *access_key_, *secret_key_));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 404) << get->body;

  auto good = Exchange(host, ChunkedPut("/data/chunked/good.bin", host, *access_key_, *secret_key_, chunks, false));
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  EXPECT_TRUE(Slurp(Ufs() + "/chunked/good.bin") == chunks[0] + chunks[1] + chunks[2]);
  get = Exchange(host, SignedRequest("GET", "/data/chunked/good.bin", host, *access_key_, *secret_key_));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_TRUE(get->body == chunks[0] + chunks[1] + chunks[2]);
  fs::remove_all(Ufs() + "/chunked");
}

TEST_F(S3EndpointTest, AwsCliUploadsAndSyncsUp) {
  std::string local = scratch_ + "/up";
  ASSERT_TRUE(WriteFile(local + "/one.bin", RandomBytes(12 << 20, 8)).ok());  // multipart (threshold 8 MiB)
  ASSERT_TRUE(WriteFile(local + "/sub/two.txt", "two\n").ok());
  ASSERT_TRUE(WriteFile(local + "/sub/three.bin", RandomBytes(70000, 9)).ok());
  auto cp = Aws({"s3", "cp", "--only-show-errors", local + "/one.bin", "s3://data/awsup/one.bin"});
  ASSERT_EQ(cp.exit_code, 0) << cp.out;
  EXPECT_TRUE(Slurp(Ufs() + "/awsup/one.bin") == Slurp(local + "/one.bin"));
  auto sync = Aws({"s3", "sync", "--only-show-errors", local, "s3://data/awsup/"});
  ASSERT_EQ(sync.exit_code, 0) << sync.out;
  EXPECT_EQ(Tree(Ufs() + "/awsup"), Tree(local));
  auto rm = Aws({"s3", "rm", "--recursive", "--only-show-errors", "s3://data/awsup/"});
  ASSERT_EQ(rm.exit_code, 0) << rm.out;
  EXPECT_TRUE(Tree(Ufs() + "/awsup").empty());
}

// A warm GET is answered on the endpoint's I/O thread from a cached-only open
// (the worker's cached stat and page, no hand-off to the endpoint's pool):
// the signature is still checked, and an object changed in the store is seen
// once the mount's ttl has passed (ttl=1s here).
TEST(S3EndpointCachedGetTest, WarmGetsComeFromTheWorkersCacheAndSeeChangesAfterTheTtl) {
  const std::string dir = MakeTempDir("s3cached");
  ASSERT_FALSE(dir.empty());
  const std::string v1 = RandomBytes(120 * 1024, 7), v2 = RandomBytes(125 * 1024, 8);
  ASSERT_TRUE(WriteFile(dir + "/ufs/obj.bin", v1).ok());
  Up up = LaunchUp({"--ufs", dir + "/ufs", "--workers", "1", "--state-dir", dir + "/state", "--cache-size", "64MiB",
                    "--consistency", "ttl=1s", "--s3", "0"},
                   dir + "/up.err");
  struct Cleanup {
    Up& up;
    std::string dir;
    ~Cleanup() {
      if (up.proc.running()) {
        up.proc.Signal(SIGTERM);
        up.proc.Wait(std::chrono::seconds(60));
      }
      fs::remove_all(dir);
    }
  } cleanup{up, dir};
  ASSERT_TRUE(up.ready) << up.err();
  std::smatch m;
  const std::string out = up.proc.output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex("s3: endpoint=http://(\\S+) access_key=(\\S+) secret_key=(\\S+)")))
      << out;
  const std::string host = m[1], ak = m[2], sk = m[3];
  auto cfg = LoadConfig(up.config);
  ASSERT_TRUE(cfg) << cfg.error().ToString();
  const std::vector<std::string> worker = {cfg->cluster.workers.at(0).address};
  auto metric = [&](const std::string& kind) {
    auto v = WorkerMetricSum(worker, "shoal_short_circuit_requests_total{kind=\"" + kind + "\"}");
    EXPECT_TRUE(v) << v.error().ToString();
    return v ? *v : -1;
  };
  auto get = [&](const std::string& secret = "") {
    auto r = Exchange(host, SignedRequest("GET", "/data/obj.bin", host, ak, secret.empty() ? sk : secret));
    return r ? *r : RawAnswer{0, "no answer"};
  };
  // The first GET opens the usual way (and finds the worker's short circuit).
  auto r = get();
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(r.body == v1);

  // Warm: a cached-only open answers it, no usual open. The ttl may pass
  // between two requests on a loaded machine (the usual open then serves
  // it): the poll waits for one answered the fast way.
  auto fast_get = [&](const std::string& want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      const double opens0 = metric("open"), cached0 = metric("open_cached");
      auto a = get();
      EXPECT_EQ(a.status, 200) << a.body.substr(0, 300);
      EXPECT_TRUE(a.body == want) << "a GET gave other bytes";
      if (metric("open_cached") - cached0 == 1 && metric("open") == opens0) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
    }
  };
  EXPECT_TRUE(fast_get(v1)) << "no warm GET was answered from a cached-only open";

  // The signature is checked on that path too.
  const double cached0 = metric("open_cached");
  auto bad = get("not-the-secret");
  EXPECT_EQ(bad.status, 403);
  EXPECT_NE(bad.body.find("<Code>SignatureDoesNotMatch</Code>"), std::string::npos) << bad.body;
  EXPECT_EQ(metric("open_cached"), cached0) << "the worker was asked before the signature was checked";

  // Changed in the store: v1 may be served until its stat is 1 s old, then v2.
  ASSERT_TRUE(WriteFile(dir + "/ufs/obj.bin", v2).ok());
  const auto changed = std::chrono::steady_clock::now();
  for (;;) {
    const auto before = std::chrono::steady_clock::now();
    auto a = get();
    ASSERT_EQ(a.status, 200) << a.body.substr(0, 300);
    if (a.body == v2) break;
    ASSERT_TRUE(a.body == v1) << "a GET gave bytes of neither version";
    ASSERT_LT(before - changed, std::chrono::seconds(1)) << "v1 was served past the mount's ttl";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // pacing of the poll
  }
  EXPECT_TRUE(fast_get(v2)) << "no GET of the new version was answered from a cached-only open";
}

}  // namespace
}  // namespace shoal::testing
