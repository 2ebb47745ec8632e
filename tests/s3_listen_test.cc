// The S3 API served by every worker (worker.s3_listen) on a 2-worker cluster
// of real `shoal worker` processes, with real clients (awscli, boto3, curl)
// and raw requests: any node answers for any key (proxy mode), uploads are
// streamed (a 40 MiB single PutObject with the worker's peak RSS bounded, a
// tampered aws-chunked body or a wrong payload hash stores nothing, a stalled
// body is cut off by the body deadline), and redirect mode sends presigned
// reads to the owner with a 307 that curl and boto3-made URLs follow.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "common/sigv4.h"
#include "tests/cli_helpers.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/shoal_cluster.h"
#include "tests/s3_endpoint_raw.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAccessKey = "AKSHOALLISTENTEST";
constexpr const char* kSecretKey = "listen-test-secret-key-0123456789";
constexpr int kKeys = 16;

// A worker's peak resident set (VmHWM), in bytes; -1 if unknown.
int64_t PeakRss(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

class S3ListenTest : public ::testing::Test {
 protected:
  // A 2-worker cluster over a fresh directory, each worker with an S3
  // listener in `mode`; kKeys small files k/NN.bin in the store.
  void StartCluster(const std::string& mode, std::chrono::milliseconds body_read_timeout = std::chrono::seconds(30),
                    WriteMode write_mode = WriteMode::kCacheThrough) {
    dir_ = MakeTempDir("s3listen");
    ASSERT_FALSE(dir_.empty());
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_TRUE(WriteFile(Key(i), RandomBytes(200000 + i, 100 + i)).ok());
    }
    ShoalCluster::Options o;
    o.workers = 2;
    o.mounts = {FileMount(Ufs())};
    o.mounts[0].write_mode = write_mode;
    S3Config s3;
    s3.credentials = {{kAccessKey, kSecretKey}};
    s3.mode = mode;
    s3.staging_dir = dir_ + "/staging";
    o.s3 = s3;
    o.worker = [body_read_timeout](WorkerConfig& w) { w.body_read_timeout = body_read_timeout; };
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    for (size_t i = 0; i < 2; ++i) {
      auto status = cluster_->Get(i, "/v1/status");
      ASSERT_TRUE(status) << status.error().ToString();
      std::smatch m;
      ASSERT_TRUE(std::regex_search(*status, m, std::regex("\"s3_endpoint\":\"([^\"]+)\""))) << *status;
      endpoints_.push_back(m[1]);
    }
    auto client = cluster_->NewClient();
    ASSERT_TRUE(client) << client.error().ToString();
    client_ = std::move(*client);
  }

  void TearDown() override {
    client_.reset();
    cluster_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string Ufs() const { return dir_ + "/ufs"; }
  std::string Key(int i) const {
    char name[32];
    std::snprintf(name, sizeof name, "/k/%02d.bin", i);
    return Ufs() + name;
  }
  // The index of a key k/NN.bin whose bytes worker `w` owns.
  int KeyOwnedBy(size_t w) {
    for (int i = 0; i < kKeys; ++i) {
      char path[32];
      std::snprintf(path, sizeof path, "/data/k/%02d.bin", i);
      auto st = client_->Stat(path);
      if (!st) continue;
      auto owner = client_->OwnerOf(*st, 0);
      if (owner && owner->id == cluster_->workers()[w].id) return i;
    }
    return -1;
  }

  static std::map<std::string, std::string> AwsEnv() {
    return {{"AWS_ACCESS_KEY_ID", kAccessKey},
            {"AWS_SECRET_ACCESS_KEY", kSecretKey},
            {"AWS_DEFAULT_REGION", "us-east-1"},
            {"AWS_CONFIG_FILE", "/dev/null"},
            {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
            {"AWS_EC2_METADATA_DISABLED", "true"},
            {"AWS_PAGER", ""}};
  }
  // Holds (or resumes) every worker's write-back uploads (POST /v1/wb/pause).
  void PauseUploads(bool on) {
    for (const auto& a : cluster_->addresses()) {
      auto r = RunCmd({"/usr/bin/curl", "-sS", "--fail", "-X", "POST",
                       "http://" + a + "/v1/wb/pause?on=" + std::string(on ? "1" : "0")},
                      {});
      ASSERT_EQ(r.exit_code, 0) << r.out;
    }
  }
  Cmd Aws(size_t worker, std::vector<std::string> args) const {
    std::vector<std::string> argv = {"/usr/bin/aws", "--endpoint-url", "http://" + endpoints_[worker]};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCmd(argv, AwsEnv());
  }

  std::string dir_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> client_;
  std::vector<std::string> endpoints_;  // host:port of each worker's S3 listener
};

TEST_F(S3ListenTest, EveryWorkerServesEveryKeyGetAndPut) {
  StartCluster("proxy");
  ASSERT_NE(endpoints_[0], endpoints_[1]);
  for (size_t reader = 0; reader < 2; ++reader) {
    const size_t owner = 1 - reader;
    int k = KeyOwnedBy(owner);
    ASSERT_GE(k, 0) << "no key of the " << kKeys << " is owned by worker " << owner;
    char key[32];
    std::snprintf(key, sizeof key, "k/%02d.bin", k);
    const std::string out = dir_ + "/got-" + std::to_string(reader);
    // Twice: the second read is served from the owner's cache.
    for (int round = 0; round < 2; ++round) {
      auto get = Aws(reader, {"s3api", "get-object", "--bucket", "data", "--key", key, out});
      ASSERT_EQ(get.exit_code, 0) << get.out;
      EXPECT_TRUE(Slurp(out) == Slurp(Key(k))) << "worker " << reader << " served different bytes of " << key;
    }
    // The worker that owns a key serves it too (its own pages, by sendfile).
    auto own = Aws(owner, {"s3api", "get-object", "--bucket", "data", "--key", key, out + ".own"});
    ASSERT_EQ(own.exit_code, 0) << own.out;
    EXPECT_TRUE(Slurp(out + ".own") == Slurp(Key(k)));
  }
  // A PUT through one worker is read back through the other, and is in the store.
  const std::string local = dir_ + "/put.bin";
  ASSERT_TRUE(WriteFile(local, RandomBytes(3 << 20, 7)).ok());
  auto put = Aws(0, {"s3", "cp", "--only-show-errors", local, "s3://data/up/put.bin"});
  ASSERT_EQ(put.exit_code, 0) << put.out;
  EXPECT_TRUE(Slurp(Ufs() + "/up/put.bin") == Slurp(local));
  auto get = Aws(1, {"s3", "cp", "--only-show-errors", "s3://data/up/put.bin", dir_ + "/back.bin"});
  ASSERT_EQ(get.exit_code, 0) << get.out;
  EXPECT_TRUE(Slurp(dir_ + "/back.bin") == Slurp(local));
  auto ls = Aws(1, {"s3", "ls", "s3://data/k/"});
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_EQ(CountLines(ls.out, ".bin"), kKeys) << ls.out;
}

// On a write-back mount the endpoint answers as S3 does while the holders
// keep the object: PutObject's ETag is the MD5 (s3cmd compares them), the
// Content-Type and x-amz-meta-* come back on HEAD, a multipart object's parts
// are readable with ?partNumber, a retried Complete answers the same ETag;
// and the upload takes all of it to the store.
TEST_F(S3ListenTest, WriteBackMountKeepsETagsMetadataAndPartsAsS3Does) {
  StartCluster("proxy", std::chrono::seconds(30), WriteMode::kWriteBack);
  PauseUploads(true);
  const std::string script =
      "import boto3, hashlib, os, sys\n"
      "from botocore.config import Config\n"
      "s3 = boto3.client('s3', endpoint_url=sys.argv[1], config=Config(signature_version='s3v4'))\n"
      "phase = sys.argv[2]\n"
      "def check(ok, what):\n"
      "    if not ok: sys.exit('FAILED: ' + what)\n"
      "body = bytes(range(256)) * 400\n"
      "parts = [os.urandom(5 << 20), os.urandom(1 << 20)] if phase == 'pending' else None\n"
      "if phase == 'pending':\n"
      "    r = s3.put_object(Bucket='data', Key='wb/put.bin', Body=body, ContentType='text/x-shoal',\n"
      "                      Metadata={'k': 'v'}, CacheControl='max-age=60')\n"
      "    check(r['ETag'].strip('\"') == hashlib.md5(body).hexdigest(), 'PutObject ETag %s' % r['ETag'])\n"
      "    open(sys.argv[3] + '/mp.bin', 'wb').write(b''.join(parts))\n"
      "    up = s3.create_multipart_upload(Bucket='data', Key='wb/mp.bin', ContentType='application/x-mp',\n"
      "                                    Metadata={'m': '1'})\n"
      "    done = []\n"
      "    for i, p in enumerate(parts, 1):\n"
      "        e = s3.upload_part(Bucket='data', Key='wb/mp.bin', UploadId=up['UploadId'], PartNumber=i, Body=p)\n"
      "        done.append({'ETag': e['ETag'], 'PartNumber': i})\n"
      "    mp = {'Parts': done}\n"
      "    a = s3.complete_multipart_upload(Bucket='data', Key='wb/mp.bin', UploadId=up['UploadId'], "
      "MultipartUpload=mp)\n"
      "    b = s3.complete_multipart_upload(Bucket='data', Key='wb/mp.bin', UploadId=up['UploadId'], "
      "MultipartUpload=mp)\n"
      "    want = hashlib.md5(b''.join(hashlib.md5(p).digest() for p in parts)).hexdigest() + '-2'\n"
      "    check(a['ETag'] == b['ETag'] and a['ETag'].strip('\"') == want, 'Complete ETags %s %s, want %s' % "
      "(a['ETag'], b['ETag'], want))\n"
      "    open(sys.argv[3] + '/mp.etag', 'w').write(want)\n"
      "    c = s3.copy_object(Bucket='data', Key='wb/copy.bin', CopySource={'Bucket': 'data', 'Key': 'wb/put.bin'},\n"
      "                       CopySourceIfMatch=hashlib.md5(body).hexdigest())\n"
      "    check(c['CopyObjectResult']['ETag'].strip('\"') == hashlib.md5(body).hexdigest(), 'CopyObject ETag %s' % "
      "c)\n"
      "    def put_if(tag):\n"
      "        def add(request, **_):\n"
      "            request.headers['If-Match'] = tag\n"
      "        s3.meta.events.register_first('before-sign.s3.PutObject', add)\n"
      "        try:\n"
      "            return s3.put_object(Bucket='data', Key='wb/cond.bin', Body=b'new')\n"
      "        finally:\n"
      "            s3.meta.events.unregister('before-sign.s3.PutObject', add)\n"
      "    s3.put_object(Bucket='data', Key='wb/cond.bin', Body=b'old')\n"
      "    put_if('\"' + hashlib.md5(b'old').hexdigest() + '\"')\n"
      "    try:\n"
      "        put_if('\"' + hashlib.md5(b'old').hexdigest() + '\"')\n"
      "        check(False, 'If-Match on a replaced pending object was not refused')\n"
      "    except s3.exceptions.ClientError as e:\n"
      "        check(e.response['Error']['Code'] == 'PreconditionFailed', 'If-Match: %s' % e.response['Error'])\n"
      "h = s3.head_object(Bucket='data', Key='wb/copy.bin')\n"
      "check(h['ETag'].strip('\"') == hashlib.md5(body).hexdigest() and h['ContentType'] == 'text/x-shoal',\n"
      "      phase + ' HEAD copy.bin: %s' % h)\n"
      "want_mp = open(sys.argv[3] + '/mp.etag').read()\n"
      "mp_bytes = open(sys.argv[3] + '/mp.bin', 'rb').read()\n"
      "listed = {o['Key']: o['ETag'].strip('\"') for o in s3.list_objects_v2(Bucket='data', "
      "Prefix='wb/')['Contents']}\n"
      "check(listed.get('wb/put.bin') == hashlib.md5(body).hexdigest() and listed.get('wb/mp.bin') == want_mp,\n"
      "      phase + ' listing ETags: %s' % listed)\n"
      "h = s3.head_object(Bucket='data', Key='wb/put.bin')\n"
      "check(h['ContentType'] == 'text/x-shoal' and h['Metadata'] == {'k': 'v'} and h.get('CacheControl') == "
      "'max-age=60',\n"
      "      phase + ' HEAD put.bin: %s %s %s' % (h['ContentType'], h['Metadata'], h.get('CacheControl')))\n"
      "g = s3.get_object(Bucket='data', Key='wb/put.bin')\n"
      "check(g['Body'].read() == body and g['ContentType'] == 'text/x-shoal', phase + ' GET put.bin')\n"
      "h = s3.head_object(Bucket='data', Key='wb/mp.bin')\n"
      "check(h['ContentType'] == 'application/x-mp' and h['Metadata'] == {'m': '1'}, phase + ' HEAD mp.bin: %s' % h)\n"
      "p2 = s3.get_object(Bucket='data', Key='wb/mp.bin', PartNumber=2)\n"
      "check(p2['Body'].read() == mp_bytes[5 << 20:] and p2.get('PartsCount') == 2, phase + ' GET partNumber=2')\n"
      "check(h['ETag'].strip('\"') == want_mp, phase + ' mp.bin ETag %s, want %s' % (h['ETag'], want_mp))\n"
      "h = s3.head_object(Bucket='data', Key='wb/put.bin')\n"
      "check(h['ETag'].strip('\"') == hashlib.md5(body).hexdigest(), phase + ' put.bin ETag %s' % h['ETag'])\n"
      "print('write-back ' + phase + ': ok')\n";
  auto pending = RunCmd({"/usr/bin/python3", "-c", script, "http://" + endpoints_[0], "pending", dir_}, AwsEnv());
  ASSERT_EQ(pending.exit_code, 0) << pending.out;
  EXPECT_NE(pending.out.find("write-back pending: ok"), std::string::npos) << pending.out;
  EXPECT_FALSE(fs::exists(Ufs() + "/wb/put.bin")) << "uploads are paused: the holders have it";
  // s3cmd's default put compares the ETag with the MD5 and uploads again when they differ.
  const std::string local = dir_ + "/s3cmd.bin";
  ASSERT_TRUE(WriteFile(local, RandomBytes(300000, 33)).ok());
  const std::string cfg = dir_ + "/s3cfg";
  ASSERT_TRUE(WriteFile(cfg, "[default]\naccess_key = " + std::string(kAccessKey) + "\nsecret_key = " + kSecretKey +
                                 "\nhost_base = " + endpoints_[1] + "\nhost_bucket = " + endpoints_[1] +
                                 "\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n")
                  .ok());
  auto put = RunCmd({"/usr/bin/s3cmd", "-c", cfg, "put", local, "s3://data/wb/s3cmd.bin"}, {});
  ASSERT_EQ(put.exit_code, 0) << put.out;
  EXPECT_EQ(put.out.find("MD5"), std::string::npos) << put.out;
  // s3cmd sync compares the listing's ETags with its files' MD5: a second
  // sync while the first one's files are still pending finds nothing to do.
  const std::string tree = dir_ + "/tree";
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(WriteFile(tree + "/f" + std::to_string(i), RandomBytes(1000 + 400000 * i, 40 + i)).ok());
  }
  auto sync = RunCmd({"/usr/bin/s3cmd", "-c", cfg, "sync", tree + "/", "s3://data/wb/sync/"}, {});
  ASSERT_EQ(sync.exit_code, 0) << sync.out;
  auto again = RunCmd({"/usr/bin/s3cmd", "-c", cfg, "sync", "--dry-run", tree + "/", "s3://data/wb/sync/"}, {});
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(again.out.find("upload:"), std::string::npos) << "pending files look changed to s3cmd:\n" << again.out;
  EXPECT_FALSE(fs::exists(Ufs() + "/wb/sync/f0")) << "uploads are paused: the holders have it";
  // A streamed (not inline) pending file: HEAD answers the MD5 the holders keep.
  auto md5 = RunCmd({"/usr/bin/md5sum", local}, {});
  ASSERT_EQ(md5.exit_code, 0) << md5.out;
  auto head = Aws(0, {"s3api", "head-object", "--bucket", "data", "--key", "wb/s3cmd.bin"});
  ASSERT_EQ(head.exit_code, 0) << head.out;
  EXPECT_NE(head.out.find("\\\"" + md5.out.substr(0, 32) + "\\\""), std::string::npos) << head.out;
  PauseUploads(false);
  for (const char* name : {"put.bin", "mp.bin", "s3cmd.bin", "copy.bin"}) {
    const std::string f = Ufs() + "/wb/" + name;
    for (int i = 0; i < 400 && !fs::exists(f); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(f)) << name << " was not uploaded";
  }
  EXPECT_TRUE(Slurp(Ufs() + "/wb/mp.bin") == Slurp(dir_ + "/mp.bin"));
  EXPECT_TRUE(Slurp(Ufs() + "/wb/s3cmd.bin") == Slurp(local));
  auto uploaded = RunCmd({"/usr/bin/python3", "-c", script, "http://" + endpoints_[1], "uploaded", dir_}, AwsEnv());
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.out;
  EXPECT_NE(uploaded.out.find("write-back uploaded: ok"), std::string::npos) << uploaded.out;
}

// aws cli and rclone, unchanged, over a write-back mount while the uploads
// are held: each syncs a tree up (aws cli's 20 MiB file in 8 MiB parts), a
// second run of each finds nothing to do (aws s3 sync by size and time,
// rclone by size, MD5 and its x-amz-meta-mtime), `rclone check` finds no
// difference, and once the uploads go the store holds the same bytes.
TEST_F(S3ListenTest, WriteBackMountServesAwsCliAndRcloneSyncsAsS3Does) {
  StartCluster("proxy", std::chrono::seconds(30), WriteMode::kWriteBack);
  PauseUploads(true);
  const std::string tree = dir_ + "/tools";
  ASSERT_TRUE(WriteFile(tree + "/big.bin", RandomBytes(20 << 20, 71)).ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(WriteFile(tree + "/d/f" + std::to_string(i), RandomBytes(100 + 70000 * i, 72 + i)).ok());
  }
  ASSERT_TRUE(WriteFile(tree + "/empty", "").ok());

  auto aws = Aws(0, {"s3", "sync", tree, "s3://data/awswb/"});
  ASSERT_EQ(aws.exit_code, 0) << aws.out;
  auto aws_again = Aws(1, {"s3", "sync", tree, "s3://data/awswb/"});
  ASSERT_EQ(aws_again.exit_code, 0) << aws_again.out;
  EXPECT_EQ(aws_again.out.find("upload:"), std::string::npos) << "aws s3 sync found pending files changed:\n"
                                                              << aws_again.out;

  std::map<std::string, std::string> env = {{"RCLONE_CONFIG_SHOAL_TYPE", "s3"},
                                            {"RCLONE_CONFIG_SHOAL_PROVIDER", "Other"},
                                            {"RCLONE_CONFIG_SHOAL_ACCESS_KEY_ID", kAccessKey},
                                            {"RCLONE_CONFIG_SHOAL_SECRET_ACCESS_KEY", kSecretKey},
                                            {"RCLONE_CONFIG_SHOAL_ENDPOINT", "http://" + endpoints_[0]}};
  auto rclone = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "/usr/bin/rclone", "--config",
                                     "/dev/null",    "-v"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCmd(argv, env);
  };
  auto copy = rclone({"copy", tree, "shoal:data/rcwb"});
  ASSERT_EQ(copy.exit_code, 0) << copy.out;
  auto check = rclone({"check", tree, "shoal:data/rcwb"});
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("0 differences found"), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("hashes could not be checked"), std::string::npos) << "rclone compared sizes only:\n"
                                                                              << check.out;
  auto copy_again = rclone({"copy", tree, "shoal:data/rcwb"});
  ASSERT_EQ(copy_again.exit_code, 0) << copy_again.out;
  EXPECT_EQ(copy_again.out.find("Copied"), std::string::npos) << "rclone copied pending files again:\n"
                                                              << copy_again.out;
  EXPECT_EQ(copy_again.out.find("Updated modification time"), std::string::npos)
      << "rclone found the modification times lost:\n"
      << copy_again.out;
  EXPECT_FALSE(fs::exists(Ufs() + "/rcwb/big.bin")) << "uploads are paused: the holders have it";

  PauseUploads(false);
  for (const char* prefix : {"/awswb/", "/rcwb/"}) {
    for (const char* name : {"big.bin", "d/f0", "d/f3", "empty"}) {
      const std::string f = Ufs() + prefix + name;
      for (int i = 0; i < 600 && !(fs::exists(f) && fs::file_size(f) == fs::file_size(tree + "/" + name)); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll interval
      }
      ASSERT_TRUE(fs::exists(f)) << f << " was not uploaded";
      EXPECT_TRUE(Slurp(f) == Slurp(tree + "/" + name)) << f;
    }
  }
  auto check_uploaded = rclone({"check", tree, "shoal:data/rcwb"});
  EXPECT_EQ(check_uploaded.exit_code, 0) << check_uploaded.out;
  EXPECT_NE(check_uploaded.out.find("0 differences found"), std::string::npos) << check_uploaded.out;
  auto aws_uploaded = Aws(0, {"s3", "sync", tree, "s3://data/awswb/"});
  ASSERT_EQ(aws_uploaded.exit_code, 0) << aws_uploaded.out;
  EXPECT_EQ(aws_uploaded.out.find("upload:"), std::string::npos) << aws_uploaded.out;
}

TEST_F(S3ListenTest, LargeSinglePutIsStreamedWithBoundedMemory) {
  StartCluster("proxy");
  constexpr size_t kSize = 40 << 20;  // over the old 16 MiB body limit
  const std::string local = dir_ + "/big.bin";
  ASSERT_TRUE(WriteFile(local, RandomBytes(kSize, 21)).ok());
  // Warm up the listener (client open, thread pools) before measuring.
  auto ls = Aws(0, {"s3", "ls", "s3://data/"});
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  const int64_t before = PeakRss(cluster_->pid(0));
  ASSERT_GT(before, 0);
  // s3api put-object is one PutObject, never multipart.
  auto put = Aws(0, {"s3api", "put-object", "--bucket", "data", "--key", "big/one.bin", "--body", local});
  ASSERT_EQ(put.exit_code, 0) << put.out;
  const int64_t after = PeakRss(cluster_->pid(0));
  EXPECT_LT(after - before, static_cast<int64_t>(kSize / 2))
      << "the worker's peak RSS grew by " << (after - before) << " bytes for a " << kSize << "-byte PUT";
  EXPECT_TRUE(Slurp(Ufs() + "/big/one.bin") == Slurp(local)) << "the store holds different bytes";
  auto get = Aws(1, {"s3api", "get-object", "--bucket", "data", "--key", "big/one.bin", dir_ + "/back.bin"});
  ASSERT_EQ(get.exit_code, 0) << get.out;
  EXPECT_TRUE(Slurp(dir_ + "/back.bin") == Slurp(local)) << "the round trip changed the bytes";
}

TEST_F(S3ListenTest, TamperedChunkOrWrongPayloadHashStoresNothing) {
  StartCluster("proxy");
  const std::string& host = endpoints_[0];
  // Chunks larger than one read of the body, the last one tampered: earlier
  // chunks already went to the writer, which must be aborted.
  std::vector<std::string> chunks = {RandomBytes(3 << 20, 31), RandomBytes(3 << 20, 32), RandomBytes(1 << 20, 33)};
  auto bad = Exchange(host, ChunkedPut("/data/chunked/bad.bin", host, kAccessKey, kSecretKey, chunks, true, 2));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 403) << bad->body;
  EXPECT_NE(bad->body.find("<Code>SignatureDoesNotMatch</Code>"), std::string::npos) << bad->body;
  EXPECT_FALSE(fs::exists(Ufs() + "/chunked/bad.bin"));
  auto get = Exchange(host, SignedRequest("GET", "/data/chunked/bad.bin", host, kAccessKey, kSecretKey));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 404) << get->body;

  auto good = Exchange(host, ChunkedPut("/data/chunked/good.bin", host, kAccessKey, kSecretKey, chunks, false));
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  EXPECT_TRUE(Slurp(Ufs() + "/chunked/good.bin") == chunks[0] + chunks[1] + chunks[2]);

  // A signed payload hash that is not the body's: refused at the end of the
  // body, nothing stored.
  const std::string body = RandomBytes(5 << 20, 34);
  const std::string other_hash = s3::Sha256Hex(std::string_view("not the body"));
  auto wrong = Exchange(
      host, SignedRequest("PUT", "/data/hash/bad.bin", host, kAccessKey, kSecretKey,
                          {{"x-amz-content-sha256", other_hash}, {"Content-Length", std::to_string(body.size())}}) +
                body);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 400) << wrong->body;
  EXPECT_NE(wrong->body.find("<Code>XAmzContentSHA256Mismatch</Code>"), std::string::npos) << wrong->body;
  EXPECT_FALSE(fs::exists(Ufs() + "/hash/bad.bin"));
  auto right = Exchange(host, SignedRequest("PUT", "/data/hash/good.bin", host, kAccessKey, kSecretKey,
                                            {{"x-amz-content-sha256", s3::Sha256Hex(body)},
                                             {"Content-Length", std::to_string(body.size())}}) +
                                  body);
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200) << right->body;
  EXPECT_TRUE(Slurp(Ufs() + "/hash/good.bin") == body);
}

TEST_F(S3ListenTest, StalledBodyIsCutOffAndTheWorkerServesOthers) {
  StartCluster("proxy", std::chrono::milliseconds(1500));
  const std::string& host = endpoints_[0];
  // A PUT that promises 1 MiB and sends 10 bytes, then nothing.
  const std::string stalled =
      SignedRequest("PUT", "/data/slow/x.bin", host, kAccessKey, kSecretKey, {{"Content-Length", "1048576"}}) +
      "0123456789";
  std::vector<double> took(4, -2);
  std::vector<std::thread> slow;
  for (size_t i = 0; i < took.size(); ++i) {
    slow.emplace_back([&, i] { took[i] = SecondsUntilClosed(host, stalled, std::chrono::seconds(60)); });
  }
  // Meanwhile the worker answers others.
  auto get = Exchange(host, SignedRequest("GET", "/data/k/00.bin", host, kAccessKey, kSecretKey));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200) << get->body;
  EXPECT_TRUE(get->body == Slurp(Key(0)));
  for (auto& t : slow) t.join();
  for (double t : took) {
    EXPECT_GE(t, 0) << "a stalled body still held its connection after 60 s";
    EXPECT_GE(t, 1.0) << "cut off before the body deadline";
  }
  EXPECT_FALSE(fs::exists(Ufs() + "/slow/x.bin"));
  auto again = Exchange(host, SignedRequest("GET", "/data/k/01.bin", host, kAccessKey, kSecretKey));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  auto closed = cluster_->MetricSum("shoal_http_connections_closed_total{reason=\"body_timeout\"}");
  ASSERT_TRUE(closed) << closed.error().ToString();
  EXPECT_GE(*closed, static_cast<double>(took.size()));
}

TEST_F(S3ListenTest, RedirectModeSendsPresignedReadsToTheOwner) {
  StartCluster("redirect");
  int k = KeyOwnedBy(1);
  ASSERT_GE(k, 0);
  char key[32];
  std::snprintf(key, sizeof key, "k/%02d.bin", k);
  // awscli presigns for worker 0, which does not own the key.
  auto presign = Aws(0, {"s3", "presign", std::string("s3://data/") + key, "--expires-in", "300"});
  ASSERT_EQ(presign.exit_code, 0) << presign.out;
  std::string url = presign.out.substr(0, presign.out.find('\n'));
  auto head = RunCmd({"/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", url}, {});
  ASSERT_EQ(head.exit_code, 0) << head.out;
  EXPECT_TRUE(head.out.starts_with("307 http://" + endpoints_[1] + "/data/")) << head.out;
  EXPECT_NE(head.out.find("X-Amz-Signature="), std::string::npos) << head.out;
  auto follow = RunCmd({"/usr/bin/curl", "-sS", "-L", "--fail", "-o", dir_ + "/curl.bin", url}, {});
  ASSERT_EQ(follow.exit_code, 0) << follow.out;
  EXPECT_TRUE(Slurp(dir_ + "/curl.bin") == Slurp(Key(k))) << "curl -L read different bytes";

  // boto3 presigns; Python's urllib follows the 307.
  const std::string script =
      "import boto3, os, sys, urllib.request\n"
      "from botocore.config import Config\n"
      "s3 = boto3.client('s3', endpoint_url=sys.argv[1], config=Config(signature_version='s3v4'))\n"
      "url = s3.generate_presigned_url('get_object', Params={'Bucket': 'data', 'Key': sys.argv[2]}, ExpiresIn=300)\n"
      "with urllib.request.urlopen(url) as r:\n"
      "    body = r.read()\n"
      "    assert r.url.startswith(sys.argv[3]), r.url\n"
      "assert body == open(sys.argv[4], 'rb').read(), 'different bytes'\n"
      "print('boto3 redirect: ok')\n";
  auto py = RunCmd(
      {"/usr/bin/python3", "-c", script, "http://" + endpoints_[0], key, "http://" + endpoints_[1] + "/", Key(k)},
      AwsEnv());
  EXPECT_EQ(py.exit_code, 0) << py.out;
  EXPECT_NE(py.out.find("boto3 redirect: ok"), std::string::npos) << py.out;

  // Header-signed requests (SDKs do not follow a redirect to another host) are proxied.
  auto get = Aws(0, {"s3api", "get-object", "--bucket", "data", "--key", key, dir_ + "/aws.bin"});
  ASSERT_EQ(get.exit_code, 0) << get.out;
  EXPECT_TRUE(Slurp(dir_ + "/aws.bin") == Slurp(Key(k)));
  // A key worker 0 owns is served by worker 0 itself.
  int own = KeyOwnedBy(0);
  ASSERT_GE(own, 0);
  std::snprintf(key, sizeof key, "k/%02d.bin", own);
  presign = Aws(0, {"s3", "presign", std::string("s3://data/") + key});
  ASSERT_EQ(presign.exit_code, 0) << presign.out;
  url = presign.out.substr(0, presign.out.find('\n'));
  auto direct = RunCmd({"/usr/bin/curl", "-sS", "-o", dir_ + "/own.bin", "-w", "%{http_code}", url}, {});
  ASSERT_EQ(direct.exit_code, 0) << direct.out;
  EXPECT_EQ(direct.out, "200");
  EXPECT_TRUE(Slurp(dir_ + "/own.bin") == Slurp(Key(own)));
}

}  // namespace
}  // namespace shoal::testing
