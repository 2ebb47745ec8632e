// Transport security end to end (issue 27), against real processes: `shoal up
// --tls` with its local CA, curl with and without the CA, `shoal cat` over
// TLS, tokens from `shoal token issue`, a client that never handshakes, and
// certificates renewed while clients read.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <thread>

#include "common/config.h"
#include "security/local_ca.h"
#include "shoal/client.h"
#include "tests/cli_helpers.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// curl's answer: "HTTP_CODE" on the last line of out (-w), or its exit code.
Run Curl(std::vector<std::string> args) {
  std::vector<std::string> argv = {"curl", "-sS", "--max-time", "20", "-o", "/dev/stderr", "-w", "%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Command(argv, std::chrono::seconds(60));
}

class TlsUpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("tls");
    ASSERT_FALSE(dir_.empty());
    ufs_ = dir_ + "/ufs";
    state_ = dir_ + "/state";
    data_ = RandomBytes(3 * 1024 * 1024 + 17, 7);
    ASSERT_TRUE(WriteFile(ufs_ + "/big.bin", data_).ok());
    up_ = LaunchUp({"--ufs", ufs_, "--workers", "2", "--state-dir", state_, "--cache-size", "128MiB", "--page-size",
                    "256KiB", "--shard-size", "1MiB", "--tls"},
                   dir_ + "/up.err");
    ASSERT_TRUE(up_.ready) << up_.err();
    auto cfg = LoadConfig(up_.config);
    ASSERT_TRUE(cfg) << cfg.error().ToString();
    ASSERT_EQ(cfg->cluster.workers.size(), 2u);
    worker_ = cfg->cluster.workers[0].address;
    ca_ = state_ + "/tls/ca.pem";
  }
  void TearDown() override {
    up_.proc.Stop();
    fs::remove_all(dir_);
  }

  std::string dir_, ufs_, state_, data_, worker_, ca_;
  Up up_;
};

TEST_F(TlsUpTest, TheReviewCheck) {
  // `tls: ca=PATH` among the lines `shoal up` printed.
  EXPECT_NE(up_.proc.output().find("tls: ca=" + ca_), std::string::npos) << up_.proc.output();
  struct stat st {};
  ASSERT_EQ(::stat((state_ + "/tls").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  for (const char* key : {"/tls/ca.key", "/tls/worker.key", "/token.key"}) {
    ASSERT_EQ(::stat((state_ + key).c_str(), &st), 0) << key;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << key;
  }

  // Plain HTTP to the TLS port: refused at once, with a line saying why.
  auto t0 = Clock::now();
  auto plain = Curl({"http://" + worker_ + "/health"});
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "a plaintext request must not hang";
  EXPECT_EQ(LastLine(plain.out), "400") << plain.out << plain.err;
  EXPECT_NE(plain.err.find("HTTPS only"), std::string::npos) << plain.err;

  auto good = Curl({"--cacert", ca_, "https://" + worker_ + "/health"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(LastLine(good.out), "200") << good.err;

  auto untrusted = Curl({"https://" + worker_ + "/health"});
  EXPECT_EQ(untrusted.exit_code, 60) << "curl without the CA must fail to verify: " << untrusted.err;

  // The client config `shoal up` wrote reads correct bytes over TLS.
  auto cat = Shoal({"cat", "--config", up_.config, "/data/big.bin"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == data_) << "shoal cat over TLS read different bytes";
  auto status = Shoal({"status", "--config", up_.config});
  EXPECT_EQ(CountLines(status.out, "tls: on, certificate expires"), 2) << status.out;

  // A token: accepted as issued, refused with its last character changed.
  auto issued = Shoal({"token", "issue", "--config", up_.config, "--user", "alice"});
  ASSERT_EQ(issued.exit_code, 0) << issued.err;
  std::string token = LastLine(issued.out);
  ASSERT_EQ(std::count(token.begin(), token.end(), '.'), 2) << token;
  std::string url = "https://" + worker_ + "/v1/stat?path=%2Fdata%2Fbig.bin";
  auto ok = Curl({"--cacert", ca_, "-H", "Authorization: Bearer " + token, url});
  EXPECT_EQ(LastLine(ok.out), "200") << ok.err;
  std::string forged = token;
  // The signature's first character: a whole 6 bits (a changed last one can leave bits that
  // base64url forbids, refused as malformed rather than forged).
  char& first = forged[forged.rfind('.') + 1];
  first = first == 'A' ? 'B' : 'A';
  auto bad = Curl({"--cacert", ca_, "-H", "Authorization: Bearer " + forged, url});
  EXPECT_EQ(LastLine(bad.out), "401") << bad.err;
  EXPECT_NE(bad.err.find("forged"), std::string::npos) << bad.err;

  // SHOAL_TOKEN reaches the workers from any client command.
  auto with_env =
      Command({"env", "SHOAL_TOKEN=" + forged, ShoalBinary(), "stat", "--config", up_.config, "/data/big.bin"});
  EXPECT_NE(with_env.exit_code, 0) << "a forged SHOAL_TOKEN must not be taken as none";
}

TEST_F(TlsUpTest, AClientThatNeverHandshakesIsDroppedAndOthersAreServed) {
  auto colon = worker_.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(worker_.substr(colon + 1))));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    silent.push_back(fd);
  }
  // Others are served while the silent ones wait.
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    auto good = Curl({"--cacert", ca_, "https://" + worker_ + "/health"});
    EXPECT_EQ(LastLine(good.out), "200") << good.err;
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  }
  // TLS garbage: refused, and the worker keeps serving.
  auto garbage = Command({"sh", "-c",
                          "printf '\\026\\003\\001\\000\\005hello' | curl -sS --max-time 5 telnet://" + worker_ +
                              " -o /dev/null; echo done"});
  EXPECT_NE(garbage.out.find("done"), std::string::npos);
  // The handshake deadline (10 s) closes each silent connection: recv sees the end.
  for (int fd : silent) {
    timeval tv{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    EXPECT_LE(::recv(fd, &c, 1, 0), 0) << "a client that never handshakes must be dropped";
    ::close(fd);
  }
  auto good = Curl({"--cacert", ca_, "https://" + worker_ + "/health"});
  EXPECT_EQ(LastLine(good.out), "200") << good.err;
}

// Certificates renewed in place while clients read: new connections get the
// new pair, and not one read fails.
TEST_F(TlsUpTest, RotationDuringReadsFailsNoRead) {
  auto cfg = LoadConfig(up_.config);
  ASSERT_TRUE(cfg);
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, failures{0};
  std::string first_failure;
  std::mutex mu;
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      while (!stop.load()) {
        // A new client each round: new connections, so the renewed pair is used.
        auto c = Client::Open(up_.config);
        if (!c) {
          failures++;
          continue;
        }
        auto f = (*c)->OpenFile("/data/big.bin");
        std::string got(data_.size(), '\0');
        auto n = f ? (*f)->Pread(0, std::span<char>(got.data(), got.size())) : Result<size_t>(Err(f.error()));
        if (!n || *n != data_.size() || got != data_) {
          std::lock_guard lock(mu);
          if (first_failure.empty()) first_failure = n ? "different bytes" : n.error().ToString();
          failures++;
        }
        reads++;
      }
    });
  }
  auto wait_reads = [&](int at_least) {
    auto deadline = Clock::now() + std::chrono::seconds(120);
    while (reads.load() < at_least && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  wait_reads(5);
  // Renew: a new worker certificate from the same CA, written in place.
  std::string before = Slurp(state_ + "/tls/worker.pem");
  ASSERT_TRUE(security::IssueCertificate(state_ + "/tls", "shoal-worker", {"127.0.0.1", "::1", "localhost"}, 30,
                                         state_ + "/tls/worker")
                  .ok());
  ASSERT_NE(before, Slurp(state_ + "/tls/worker.pem"));
  int at_rotation = reads.load();
  // The worker looks at its files at most once a second: poll until it presents the renewed
  // certificate (30 days), the readers going on all the while.
  auto renewed = [](const std::string& out) {
    return out.find("(29 days)") != std::string::npos || out.find("(30 days)") != std::string::npos;
  };
  ::shoal::testing::Run status;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  do {
    status = Shoal({"status", "--config", up_.config});
  } while (!renewed(status.out) && Clock::now() < deadline);
  int at_renewed = reads.load();
  wait_reads(at_renewed + 15);
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;
  EXPECT_GE(reads.load(), at_renewed + 15);
  EXPECT_TRUE(renewed(status.out)) << "the workers still present the old certificate:\n" << status.out;
}

// The S3 endpoint of `shoal up --tls --s3 0` over https, with the tools users
// run: aws cli with --ca-bundle and boto3 with verify=CA read the right
// bytes; without the CA both refuse the certificate.
TEST_F(TlsUpTest, AwsCliAndBoto3ReadOverHttpsWithTheLocalCa) {
  up_.proc.Stop();
  Up up = LaunchUp(
      {"--ufs", ufs_, "--workers", "2", "--state-dir", state_ + "-s3", "--cache-size", "64MiB", "--tls", "--s3", "0"},
      dir_ + "/up-s3.err");
  ASSERT_TRUE(up.ready) << up.err();
  const std::string out = up.proc.output();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(s3: endpoint=(\S+) access_key=(\S+) secret_key=(\S+))"))) << out;
  const std::string endpoint = m[1], key = m[2], secret = m[3];
  ASSERT_EQ(endpoint.rfind("https://", 0), 0u) << endpoint;
  const std::string ca = state_ + "-s3/tls/ca.pem";
  const std::vector<std::string> env = {"env",
                                        "-u",
                                        "AWS_CA_BUNDLE",
                                        "AWS_ACCESS_KEY_ID=" + key,
                                        "AWS_SECRET_ACCESS_KEY=" + secret,
                                        "AWS_DEFAULT_REGION=us-east-1",
                                        "AWS_CONFIG_FILE=/dev/null",
                                        "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                                        "AWS_EC2_METADATA_DISABLED=true",
                                        "AWS_PAGER="};
  auto aws = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = env;
    argv.insert(argv.end(), {"/usr/bin/aws", "--endpoint-url", endpoint});
    argv.insert(argv.end(), args.begin(), args.end());
    return Command(argv, std::chrono::seconds(120));
  };
  auto cp = aws({"--ca-bundle", ca, "s3", "cp", "--only-show-errors", "s3://data/big.bin", dir_ + "/aws.bin"});
  ASSERT_EQ(cp.exit_code, 0) << cp.err;
  EXPECT_TRUE(Slurp(dir_ + "/aws.bin") == data_) << "aws cli read different bytes over https";
  auto untrusted = aws({"s3", "ls", "s3://data/"});
  EXPECT_NE(untrusted.exit_code, 0) << "aws cli trusted the endpoint without the CA";
  EXPECT_NE((untrusted.out + untrusted.err).find("SSL"), std::string::npos) << untrusted.err;

  const std::string script = dir_ + "/boto3_https.py";
  ASSERT_TRUE(WriteFile(script, R"(import sys, boto3, botocore
endpoint, ca, key, secret = sys.argv[1:5]
def client(verify):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1", verify=verify)
body = client(ca).get_object(Bucket="data", Key="big.bin")["Body"].read()
sys.stdout.write("%d\n" % len(body))
try:
    client(True).head_object(Bucket="data", Key="big.bin")
    print("trusted without the CA")
except botocore.exceptions.SSLError:
    print("refused without the CA")
)")
                  .ok());
  std::vector<std::string> py = env;
  py.insert(py.end(), {"/usr/bin/python3", script, endpoint, ca, key, secret});
  auto boto = Command(py, std::chrono::seconds(120));
  ASSERT_EQ(boto.exit_code, 0) << boto.err;
  EXPECT_EQ(boto.out, std::to_string(data_.size()) + "\nrefused without the CA\n") << boto.err;
  up.proc.Stop();
}

// Mutual TLS (tls.client_auth: required) with certificates the harness makes:
// a client certificate of the cluster's CA is the identity, at every door
// (CLI, shoal load, Python, FUSE); no certificate, one of another CA, and an
// expired one are refused at the handshake and counted, and the worker keeps
// serving the good client.
TEST(MtlsTest, AClientCertificateIsTheIdentityAtEveryDoorAndBadOnesAreRefused) {
  std::string dir = MakeTempDir("mtls");
  ASSERT_FALSE(dir.empty());
  std::string data = RandomBytes(900 * 1024 + 5, 21);
  ASSERT_TRUE(WriteFile(dir + "/ufs/f.bin", data).ok());
  const std::string ca_dir = dir + "/ca";
  auto ca = security::MakeLocalCa(ca_dir, {});
  ASSERT_TRUE(ca) << ca.error().ToString();
  ASSERT_TRUE(security::IssueCertificate(ca_dir, "alice", {}, 30, dir + "/alice").ok());
  ASSERT_TRUE(security::IssueCertificate(ca_dir, "old", {}, -1, dir + "/old").ok());
  ASSERT_TRUE(security::MakeLocalCa(dir + "/other-ca", {}));
  ASSERT_TRUE(security::IssueCertificate(dir + "/other-ca", "mallory", {}, 30, dir + "/mallory").ok());

  Config w;
  w.mounts = {FileMount(dir + "/ufs")};
  w.tls.cert_file = ca->server_cert;
  w.tls.key_file = ca->server_key;
  w.tls.ca_file = ca->ca_cert;
  w.tls.client_auth = "required";
  ASSERT_TRUE(WriteFile(dir + "/worker.yaml", ToYaml(w)).ok());
  Subprocess::Options o;
  o.argv = {ShoalBinary(), "worker",      "--config",     dir + "/worker.yaml", "--listen",
            "127.0.0.1:0", "--cache-dir", dir + "/cache", "--cache-size",       "64MiB"};
  o.stderr_file = dir + "/worker.err";
  auto worker = Subprocess::Start(o);
  ASSERT_TRUE(worker) << worker.error().ToString();
  auto line = worker->WaitForLine("listening:", std::chrono::seconds(60));
  ASSERT_TRUE(line) << Slurp(o.stderr_file);
  auto entry = ParseListeningLine(*line);
  ASSERT_TRUE(entry);
  const std::string at = entry->address;

  // alice's client config: the CA, her certificate and key.
  Config c;
  c.mounts = w.mounts;
  c.cluster.workers = {*entry};
  c.client.tls.ca_file = ca->ca_cert;
  c.client.tls.cert_file = dir + "/alice.pem";
  c.client.tls.key_file = dir + "/alice.key";
  const std::string alice = dir + "/alice.yaml";
  ASSERT_TRUE(WriteFile(alice, ToYaml(c)).ok());

  auto who = Shoal({"whoami", "--config", alice});
  ASSERT_EQ(who.exit_code, 0) << who.err;
  EXPECT_NE(who.out.find("alice (certificate)"), std::string::npos) << who.out;
  auto cat = Shoal({"cat", "--config", alice, "/data/f.bin"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == data) << "shoal cat over mTLS read different bytes";
  auto load = Shoal({"load", "--config", alice, "-r", "/data"});
  EXPECT_EQ(load.exit_code, 0) << load.out << load.err;

  // Python: shoal.Client over the same config.
  const std::string python_dir = fs::path(ShoalBinary()).parent_path().string() + "/python";
  auto py = Command({"env", "PYTHONPATH=" + python_dir, "PYTHONDONTWRITEBYTECODE=1", "/usr/bin/python3", "-c",
                     "import sys, shoal; c = shoal.Client(sys.argv[1]); sys.stdout.write(c.whoami()['user'] + ' ');"
                     "sys.stdout.write(str(len(c.read('/data/f.bin'))))",
                     alice});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "alice " + std::to_string(data.size())) << py.err;

  // FUSE: a mount over mTLS reads the same bytes.
  const std::string mnt = dir + "/mnt";
  fs::create_directories(mnt);
  auto mounted = Shoal({"fuse", "--config", alice, mnt}, std::chrono::seconds(60));
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  EXPECT_TRUE(Slurp(mnt + "/data/f.bin") == data) << "the FUSE mount over mTLS read different bytes";
  Shoal({"fuse", "--unmount", mnt}, std::chrono::seconds(60));
  if (Mounted(mnt)) ::umount2(mnt.c_str(), MNT_DETACH);

  // Refused at the handshake: no certificate, another CA's, an expired one; plain config too.
  const std::string url = "https://" + at + "/v1/stat?path=%2Fdata%2Ff.bin";
  auto none = Curl({"--cacert", ca->ca_cert, url});
  EXPECT_NE(none.exit_code, 0) << "served without a client certificate: " << none.out;
  auto other = Curl({"--cacert", ca->ca_cert, "--cert", dir + "/mallory.pem", "--key", dir + "/mallory.key", url});
  EXPECT_NE(other.exit_code, 0) << "served a certificate of another CA: " << other.out;
  auto expired = Curl({"--cacert", ca->ca_cert, "--cert", dir + "/old.pem", "--key", dir + "/old.key", url});
  EXPECT_NE(expired.exit_code, 0) << "served an expired certificate: " << expired.out;
  Config no_cert = c;
  no_cert.client.tls.cert_file.clear();
  no_cert.client.tls.key_file.clear();
  no_cert.client.ufs_fallback = false;
  ASSERT_TRUE(WriteFile(dir + "/nocert.yaml", ToYaml(no_cert)).ok());
  auto refused = Shoal({"cat", "--config", dir + "/nocert.yaml", "/data/f.bin"});
  EXPECT_NE(refused.exit_code, 0) << "a client without a certificate read";

  // Each refusal counted; the good client still served.
  auto metrics = Curl({"--cacert", ca->ca_cert, "--cert", dir + "/alice.pem", "--key", dir + "/alice.key",
                       "https://" + at + "/metrics"});
  EXPECT_EQ(LastLine(metrics.out), "200") << metrics.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics.err, m, std::regex(R"(shoal_tls_handshakes_total\{result="failed"\} (\d+))")))
      << metrics.err;
  EXPECT_GE(std::stoi(m[1]), 3) << "the refused handshakes were not counted";
  worker->Stop(std::chrono::seconds(20));
  fs::remove_all(dir);
}

// `shoal up --tls --etcd`: etcd serves https:// with the workers' certificate
// and admits only clients with a certificate of the local CA; the workers and
// the client config reach it with one, and nothing else gets in.
TEST(TlsEtcdTest, UpWithTlsAndEtcdKeepsMembershipOnHttpsWithClientCertificates) {
  if (::access("/usr/bin/etcd", X_OK) != 0) GTEST_SKIP() << "etcd-server is not installed";
  std::string dir = MakeTempDir("tls-etcd");
  ASSERT_FALSE(dir.empty());
  std::string state = dir + "/state";
  std::string data = RandomBytes(700 * 1024 + 3, 11);
  ASSERT_TRUE(WriteFile(dir + "/ufs/a.bin", data).ok());
  Up up = LaunchUp(
      {"--ufs", dir + "/ufs", "--workers", "2", "--state-dir", state, "--cache-size", "64MiB", "--tls", "--etcd"},
      dir + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  auto cfg = LoadConfig(up.config);
  ASSERT_TRUE(cfg) << cfg.error().ToString();
  ASSERT_EQ(cfg->cluster.etcd.endpoints.size(), 1u);
  const std::string etcd = cfg->cluster.etcd.endpoints[0];
  EXPECT_EQ(etcd.rfind("https://", 0), 0u) << etcd;
  const std::string ca = state + "/tls/ca.pem";
  EXPECT_EQ(cfg->cluster.etcd.ca_file, ca);
  ASSERT_FALSE(cfg->cluster.etcd.cert_file.empty());

  auto status = Shoal({"status", "--config", up.config});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("etcd"), std::string::npos) << status.out;
  EXPECT_EQ(CountLines(status.out, "tls: on, certificate expires"), 2) << status.out;
  auto cat = Shoal({"cat", "--config", up.config, "/data/a.bin"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == data) << "read different bytes with membership from etcd over TLS";

  // etcd itself: its CA and a client certificate get an answer; no certificate,
  // or no CA, or plain HTTP, get nothing.
  const std::string range = etcd + "/v3/kv/range";
  const std::string body = R"({"key":"AA=="})";
  auto with_cert = Curl(
      {"--cacert", ca, "--cert", cfg->cluster.etcd.cert_file, "--key", cfg->cluster.etcd.key_file, "-d", body, range});
  EXPECT_EQ(LastLine(with_cert.out), "200") << with_cert.err;
  auto no_cert = Curl({"--cacert", ca, "-d", body, range});
  EXPECT_NE(no_cert.exit_code, 0) << "etcd answered a client without a certificate: " << no_cert.out;
  auto no_ca = Curl({"--cert", cfg->cluster.etcd.cert_file, "--key", cfg->cluster.etcd.key_file, "-d", body, range});
  EXPECT_EQ(no_ca.exit_code, 60) << "curl trusted etcd without the CA: " << no_ca.err;
  std::string plain = etcd;
  plain.replace(0, 5, "http");
  auto in_clear = Curl({"-d", body, plain + "/v3/kv/range"});
  EXPECT_NE(LastLine(in_clear.out), "200") << "etcd answered in clear";

  // A client config without the client certificate: a clear error naming etcd.
  Config no_client_cert = *cfg;
  no_client_cert.cluster.etcd.cert_file.clear();
  no_client_cert.cluster.etcd.key_file.clear();
  ASSERT_TRUE(WriteFile(dir + "/bad.yaml", ToYaml(no_client_cert)).ok());
  auto refused = Shoal({"status", "--config", dir + "/bad.yaml"});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find(etcd), std::string::npos) << refused.err;

  up.proc.Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shoal::testing
