// write_mode: write-back end to end, against real workers (ShoalCluster) and a
// real under-store (file://, and s3rver for the round trip): Close returns
// once the file is journaled on k workers; every client reads the new bytes
// at once; the upload drains into the store byte-exact; a store outage, a
// worker killed with SIGKILL at random times, a worker that cannot write its
// journal and a restart lose nothing acknowledged; bad protocol requests are
// refused. Uploads are held back with the workers' pause knob
// (POST /v1/wb/pause), the store is taken away by replacing its directory.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "client/client_internal.h"
#include "tests/harness/file_io.h"
#include "tests/harness/raw_http.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"
#include "ufs/uri.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kPage = 256 * 1024;  // ShoalCluster's page size

// Compares bytes without printing them (they are binary and may be megabytes).
#define EXPECT_BYTES(got, want)                                                                                \
  do {                                                                                                         \
    const std::string g_ = (got), w_ = (want);                                                                 \
    EXPECT_TRUE(g_ == w_) << #got << ": " << g_.size() << " bytes" << (g_.size() < 300 ? " (" + g_ + ")" : "") \
                          << ", expected " << w_.size() << " bytes";                                           \
  } while (0)

std::string Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

Result<FileStatus> WriteVia(Client& c, const std::string& path, const std::string& data, size_t chunk = 300 * 1024) {
  return WriteFileVia(c, path, data, chunk);
}
std::string ReadVia(Client& c, const std::string& path) { return ReadFileVia(c, path); }
std::string ReadStore(UnderStore& s, const std::string& key) { return ReadStoreObject(s, key); }

// Every cluster here runs with a cluster secret: clients, holders telling
// each other, and the raw requests below all carry it.
const std::string kSecret = "wb-test-secret-0123456789abcdef";

// One request to a worker; the final status and body.
std::pair<int, std::string> Post(const std::string& address, const std::string& target, const std::string& body = "",
                                 const std::string& method = "POST", bool with_secret = true) {
  auto conn = RawConnection::Connect(address);
  if (!conn) return {0, "no connection"};
  conn->Send(method + " " + target + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
             (with_secret ? "\r\nAuthorization: Bearer " + kSecret : std::string()) + "\r\n\r\n" + body);
  for (;;) {
    auto r = conn->ReadResponse(Millis(20'000));
    if (!r) return {0, "no answer"};
    if (r->status >= 200) return {r->status, r->body};
  }
}

class WritebackTest : public ::testing::Test {
 protected:
  void Start(const std::string& kind, int workers = 3, std::function<void(WorkerConfig&)> tune = {}) {
    spdlog::set_level(spdlog::level::warn);  // a fallback to through is logged: show why
    MountConfig m;
    m.path = "/wb";
    m.write_mode = WriteMode::kWriteBack;
    m.write_back_replicas = 2;
    m.ttl = 1h;
    if (kind == "s3" || kind == "s3posix") {
      auto s3 = S3rverProcess::Start();
      ASSERT_TRUE(s3) << s3.error().ToString();
      s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
      ASSERT_TRUE(s3_->CreateBucket("wbk").ok());
      m.ufs = "s3://wbk/data/";
      m.options = s3_->MountOptions();
      m.options["multipart_threshold"] = "5MiB";
      m.options["multipart_part_size"] = "5MiB";
      if (kind == "s3posix") m.options["posix_attributes"] = "true";  // modes kept in user metadata
    } else {
      dir_ = MakeTempDir("wb");
      ASSERT_FALSE(dir_.empty());
      store_dir_ = dir_ + "/store";
      fs::create_directories(store_dir_);
      m.ufs = "file://" + store_dir_ + "/";
    }
    auto s = OpenUnderStore(m);
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = *s;
    ShoalCluster::Options o;
    o.workers = workers;
    o.mounts = {m};
    o.secret = kSecret;
    o.cache_root = cache_root_;
    o.client.down_backoff = 200ms;  // a restarted worker is used again soon
    o.worker = [tune](WorkerConfig& w) {
      w.write_back_takeover = 3s;
      if (tune) tune(w);
    };
    Status started = StartWithTwoClients(o, &cluster_, &writer_, &reader_);
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  void TearDown() override {
    writer_.reset();
    reader_.reset();
    cluster_.reset();
    store_.reset();
    s3_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
    if (!cache_root_.empty()) {
      ::umount2(cache_root_.c_str(), MNT_DETACH);
      fs::remove_all(cache_root_);
    }
  }

  void PauseAll(bool on) {
    for (const auto& a : cluster_->addresses()) {
      auto [code, body] = Post(a, std::string("/v1/wb/pause?on=") + (on ? "1" : "0"));
      ASSERT_EQ(code, 200) << body;
    }
  }

  double Metric(const std::string& name) {
    auto v = cluster_->MetricSum(name);
    return v ? *v : -1;
  }

  // Polls every worker's status until nothing is pending (or the deadline).
  void NewerWriteWinsOverAnOlderUploadInProgress(size_t older_bytes);

  bool Drained(std::chrono::seconds within = 40s) {
    auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      bool empty = true;
      for (size_t i = 0; i < cluster_->workers().size() && empty; ++i) {
        auto body = cluster_->Get(i, "/v1/status");
        empty = body && body->find("\"write_back_pending_files\":0") != std::string::npos;
      }
      if (empty) return true;
      std::this_thread::sleep_for(50ms);  // polling a condition with a deadline
    }
    return false;
  }

  std::unique_ptr<S3rverProcess> s3_;
  std::string dir_, store_dir_;
  std::string cache_root_;  // the workers' disk: "" = the harness's temp dir; else a small tmpfs mounted here
  std::shared_ptr<UnderStore> store_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> writer_;
  std::unique_ptr<Client> reader_;
};

class WritebackRoundTrip : public WritebackTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(WritebackRoundTrip, EverySizeIsAcknowledgedReadAtOnceAndDrainsByteExact) {
  Start(GetParam());
  const std::vector<size_t> sizes = {0, 1, kPage - 1, kPage, kPage + 1, 6 * 1024 * 1024 + 3};
  std::map<std::string, std::string> written;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string path = "/wb/dir/f" + std::to_string(i);
    const std::string data = Bytes(sizes[i], static_cast<uint32_t>(i + 1));
    auto st = WriteVia(*writer_, path, data);
    ASSERT_TRUE(st) << path << ": " << st.error().ToString();
    EXPECT_EQ(st->size, data.size());
    EXPECT_TRUE(st->version.starts_with("wb-")) << st->version;
    // Another client sees the new size and bytes at once (pending or uploaded).
    auto seen = reader_->Stat(path);
    ASSERT_TRUE(seen) << seen.error().ToString();
    EXPECT_EQ(seen->size, data.size());
    EXPECT_BYTES(ReadVia(*reader_, path), data);
    written[path] = data;
  }
  EXPECT_EQ(writer_->stats().write_backs, sizes.size());
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 0u);
  ASSERT_TRUE(Drained());
  for (const auto& [path, data] : written) {
    EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
    auto st = reader_->Stat(path);
    ASSERT_TRUE(st);
    EXPECT_FALSE(st->version.starts_with("wb-")) << "after the upload the store's version is served: " << st->version;
    EXPECT_BYTES(ReadVia(*reader_, path), data);
  }
  EXPECT_GE(Metric("shoal_writeback_uploads_total"), static_cast<double>(sizes.size()));
}

INSTANTIATE_TEST_SUITE_P(Stores, WritebackRoundTrip, ::testing::Values("file", "s3", "s3posix"),
                         [](const auto& info) { return info.param; });

// A file rewritten while its older write is still uploading. The newer write
// must win in the store whichever way it goes: (a) written back, it began
// before the older upload gave the store object a later time, and was
// skipped as "superseded by the store", though that object was the older
// write's; (b) written through (the holders full), it landed in the store
// first and the older upload replaced it. Both lost acknowledged bytes;
// found by `printf a > f && printf b > f` through a write-back FUSE mount.
void WritebackTest::NewerWriteWinsOverAnOlderUploadInProgress(size_t older_bytes) {
  const std::string path = "/wb/rewrite/f";
  const std::string v1 = Bytes(older_bytes, 1), v2 = Bytes(6'000, 2);
  PauseAll(true);
  ASSERT_TRUE(WriteVia(*writer_, path, v1));
  auto w = writer_->Create(path);
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Write(std::span<const char>(v2.data(), v2.size())).ok());
  PauseAll(false);
  // v1's upload has begun once its hidden temporary is in the directory.
  const fs::path dir = fs::path(store_dir_) / "rewrite";
  auto uploading = [&] {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().filename().string().starts_with(".")) return true;
    }
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + 40s;
  while (!uploading() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);  // poll: v1's upload starts
  }
  ASSERT_TRUE(uploading()) << "v1's upload did not start";
  auto st = (*w)->Close();  // committed while v1 is being uploaded
  ASSERT_TRUE(st) << st.error().ToString();
  ASSERT_TRUE(Drained());
  EXPECT_BYTES(ReadStore(*store_, "rewrite/f"), v2);
  EXPECT_BYTES(ReadVia(*reader_, path), v2);
}

TEST_F(WritebackTest, ANewerWriteBackOfAFileIsUploadedThoughAnOlderUploadLandedAfterItBegan) {
  Start("file");
  // 48 MiB: under worker.write_back_max_pending, so v2 is written back too.
  NewerWriteWinsOverAnOlderUploadInProgress(48 << 20);
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 0u);
}

TEST_F(WritebackTest, AWriteThroughOfAFileWaitsForItsOlderUploadAndIsNotReplacedByIt) {
  Start("file");
  // 96 MiB pending: the holders are full, so v2 is written through.
  NewerWriteWinsOverAnOlderUploadInProgress(96 << 20);
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 1u);
}

TEST_F(WritebackTest, ReadYourWritesFromAnotherClientWhileTheUploadIsHeldAndNeverTheOlderBytes) {
  Start("file");
  const std::string path = "/wb/ckpt/model.pt";
  const std::string v1 = Bytes(700 * 1024, 1), v2 = Bytes(900 * 1024 + 5, 2);
  ASSERT_TRUE(WriteVia(*writer_, path, v1));
  ASSERT_TRUE(Drained());
  ASSERT_TRUE(ReadVia(*reader_, path) == v1);  // cached under v1's version now

  PauseAll(true);
  auto st = WriteVia(*writer_, path, v2);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_TRUE(st->version.starts_with("wb-"));
  EXPECT_BYTES(ReadStore(*store_, "ckpt/model.pt"), v1);
  // A third client, a fresh process view: the new size and bytes, not v1's.
  auto third = cluster_->NewClient();
  ASSERT_TRUE(third);
  for (Client* c : {reader_.get(), third->get()}) {
    auto seen = c->Stat(path);
    ASSERT_TRUE(seen) << seen.error().ToString();
    EXPECT_EQ(seen->size, v2.size());
    EXPECT_EQ(seen->version, st->version);
    EXPECT_BYTES(ReadVia(*c, path), v2);
    auto f = c->OpenFile(path, OpenOptions{0});
    ASSERT_TRUE(f);
    std::string mid(1000, '\0');
    auto n = (*f)->Pread(600 * 1024, std::span<char>(mid.data(), mid.size()));
    ASSERT_TRUE(n) << n.error().ToString();
    EXPECT_BYTES(mid, v2.substr(600 * 1024, 1000));
  }
  // A new file in the held state is also visible under its directory from the holders.
  ASSERT_TRUE(WriteVia(*writer_, "/wb/ckpt/new.bin", "fresh"));
  EXPECT_BYTES(ReadVia(*reader_, "/wb/ckpt/new.bin"), "fresh");
  EXPECT_FALSE(store_->Stat("ckpt/new.bin"));

  uint64_t pending = 0;
  for (const auto& w : writer_->ClusterStatus()) pending += w.write_back_pending_files;
  EXPECT_EQ(pending, 4u) << "two files, each on k=2 workers";
  PauseAll(false);
  ASSERT_TRUE(Drained());
  EXPECT_BYTES(ReadStore(*store_, "ckpt/model.pt"), v2);
  EXPECT_BYTES(ReadStore(*store_, "ckpt/new.bin"), "fresh");
  EXPECT_BYTES(ReadVia(*reader_, path), v2);
}

// A pending file may be the only thing in its directories: they appear in
// listings and stats as directories until the upload creates them in the
// store (aws s3 sync and rclone found files under new directories missing
// and uploaded them again; `ls` of such a directory failed).
TEST_F(WritebackTest, DirectoriesOnlyPendingFilesMakeAreListedAndStatedUntilTheUpload) {
  Start("file");
  PauseAll(true);
  ASSERT_TRUE(WriteVia(*writer_, "/wb/new/a/b/deep.bin", "deep"));
  ASSERT_TRUE(WriteVia(*writer_, "/wb/new/top.bin", "top"));
  EXPECT_FALSE(store_->Stat("new"));
  auto names = [&](const std::string& dir) {
    std::vector<std::string> out;
    auto l = reader_->List(dir);
    EXPECT_TRUE(l) << dir << ": " << l.error().ToString();
    for (const auto& e : l.value_or(std::vector<FileStatus>{})) out.push_back(e.path + (e.is_dir ? "/" : ""));
    return out;
  };
  EXPECT_EQ(names("/wb/new"), (std::vector<std::string>{"/wb/new/a/", "/wb/new/top.bin"}));
  EXPECT_EQ(names("/wb/new/a"), (std::vector<std::string>{"/wb/new/a/b/"}));
  EXPECT_EQ(names("/wb/new/a/b"), (std::vector<std::string>{"/wb/new/a/b/deep.bin"}));
  for (const char* dir : {"/wb/new", "/wb/new/a", "/wb/new/a/b"}) {
    auto st = reader_->Stat(dir);
    ASSERT_TRUE(st) << dir << ": " << st.error().ToString();
    EXPECT_TRUE(st->is_dir) << dir;
  }
  auto missing = reader_->Stat("/wb/new/a/nothing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
  EXPECT_FALSE(reader_->Stat("/wb/ne")) << "a prefix of a pending directory's name is not a directory";
  PauseAll(false);
  ASSERT_TRUE(Drained());
  EXPECT_BYTES(ReadStore(*store_, "new/a/b/deep.bin"), "deep");
  EXPECT_EQ(names("/wb/new"), (std::vector<std::string>{"/wb/new/a/", "/wb/new/top.bin"}));
}

// A pending file is in no store yet: a delete of it used to find nothing to
// delete (or the older file) and the upload brought it back, and a rename
// failed for want of a source (rsync's and torch.save's write-then-rename).
// Both now wait for the uploads they touch, then act on the store.
TEST_F(WritebackTest, DeleteAndRenameOfPendingFilesWaitForTheirUploadsAndStick) {
  Start("file");
  ASSERT_TRUE(WriteVia(*writer_, "/wb/mv/old.bin", "older"));
  ASSERT_TRUE(Drained());
  PauseAll(true);
  ASSERT_TRUE(WriteVia(*writer_, "/wb/mv/tmp.part", "renamed bytes"));
  ASSERT_TRUE(WriteVia(*writer_, "/wb/mv/gone.bin", "deleted bytes"));
  ASSERT_TRUE(WriteVia(*writer_, "/wb/mv/old.bin", "newer, pending"));
  ASSERT_TRUE(WriteVia(*writer_, "/wb/mvdir/sub/x.bin", "in a renamed directory"));
  // While the uploads are held, a client that cannot wait long says so (it
  // used to fail at once for want of the source, or delete nothing).
  ClientConfig impatient;
  impatient.timeout = std::chrono::seconds(1);
  auto quick = Client::FromYaml(cluster_->ClientYaml(impatient), "test");
  ASSERT_TRUE(quick) << quick.error().ToString();
  for (Status st : {(*quick)->Rename("/wb/mv/tmp.part", "/wb/mv/final.bin"), (*quick)->Delete("/wb/mv/gone.bin")}) {
    EXPECT_EQ(st.code(), Code::kUnavailable) << st.ToString();
    EXPECT_NE(st.message().find("still waiting for its upload"), std::string::npos) << st.ToString();
  }
  Status renamed, deleted, replaced, dir_renamed;
  std::thread mutator([&] {
    renamed = reader_->Rename("/wb/mv/tmp.part", "/wb/mv/final.bin");
    deleted = reader_->Delete("/wb/mv/gone.bin");
    replaced = reader_->Rename("/wb/mv/final.bin", "/wb/mv/old.bin");  // over a pending write of the target
    dir_renamed = reader_->Rename("/wb/mvdir", "/wb/moved");
  });
  PauseAll(false);
  mutator.join();
  ASSERT_TRUE(renamed.ok()) << renamed.ToString();
  ASSERT_TRUE(deleted.ok()) << deleted.ToString();
  ASSERT_TRUE(replaced.ok()) << replaced.ToString();
  ASSERT_TRUE(dir_renamed.ok()) << dir_renamed.ToString();
  ASSERT_TRUE(Drained());
  EXPECT_BYTES(ReadStore(*store_, "mv/old.bin"), "renamed bytes");
  EXPECT_FALSE(store_->Stat("mv/tmp.part"));
  EXPECT_FALSE(store_->Stat("mv/final.bin"));
  EXPECT_FALSE(store_->Stat("mv/gone.bin")) << "the upload brought a deleted file back";
  EXPECT_FALSE(store_->Stat("mvdir/sub/x.bin"))
      << "a file pending under a renamed directory was uploaded under its old name";
  EXPECT_BYTES(ReadStore(*store_, "moved/sub/x.bin"), "in a renamed directory");
  EXPECT_BYTES(ReadVia(*reader_, "/wb/mv/old.bin"), "renamed bytes");
  EXPECT_FALSE(reader_->Stat("/wb/mv/gone.bin"));
}

// The S3 endpoint's cached-only opens hold the answers workers lease
// (local_wire.h): a write-back the worker acknowledges ends them at once,
// though neither its cached stat nor a page changes until the upload, and
// even when the writer never tells anyone else (here: a raw put, as from a
// client that dies right after its commit).
TEST_F(WritebackTest, AnAcknowledgedWriteEndsEveryHeldCachedOnlyAnswerAtOnce) {
  Start("file", 1);
  const std::string path = "/wb/held/x.bin";
  const std::string v1 = Bytes(120 * 1024, 3), v2 = Bytes(130 * 1024 + 1, 4);
  ASSERT_TRUE(WriteVia(*writer_, path, v1));
  ASSERT_TRUE(Drained());
  ASSERT_TRUE(ReadVia(*reader_, path) == v1);
  Code code = Code::kOk;
  ASSERT_TRUE(ReadWhole(OpenCachedOnly(*reader_, path), &code) == v1) << static_cast<int>(code);
  ASSERT_TRUE(ReadWhole(OpenCachedOnly(*reader_, path)) == v1);  // held by now
  PauseAll(true);
  const std::string me = FormatWorkerEntry(cluster_->workers()[0]);
  auto [status, body] = Post(cluster_->addresses()[0],
                             "/v1/wb/put?id=0123456789abcdef0123456789abcdef&path=" + PercentEncode(path, true) +
                                 "&holders=" + PercentEncode(me, true) + "&size=" + std::to_string(v2.size()) +
                                 "&xxh3=" + std::to_string(XXH3_64bits(v2.data(), v2.size())),
                             v2);
  ASSERT_EQ(status, 200) << body;
  std::string got = ReadWhole(OpenCachedOnly(*reader_, path), &code);
  EXPECT_TRUE(code != Code::kOk || got == v2) << "a held answer outlived an acknowledged write-back";
  EXPECT_BYTES(ReadVia(*reader_, path), v2);
  PauseAll(false);
  ASSERT_TRUE(Drained());
}

TEST_F(WritebackTest, APendingWriteIsReadShortCircuitFromAHolderOnThisHost) {
  Start("file");
  PauseAll(true);  // the write stays pending: only its holders have the bytes
  const std::string path = "/wb/ckpt/shard-0.pt";
  const std::string data = Bytes(3 * 1024 * 1024 + 77, 11);
  auto st = WriteVia(*writer_, path, data);
  ASSERT_TRUE(st) << st.error().ToString();
  ASSERT_TRUE(st->version.starts_with("wb-"));
  const uint64_t local_before = reader_->stats().local_read_bytes;
  EXPECT_BYTES(ReadVia(*reader_, path), data);
  auto f = reader_->OpenFile(path, OpenOptions{0});
  ASSERT_TRUE(f) << f.error().ToString();
  ASSERT_EQ((*f)->status().version, st->version);
  std::string mid(5000, '\0');
  auto n = (*f)->Pread(2 * 1024 * 1024 - 100, std::span<char>(mid.data(), mid.size()));
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_BYTES(mid, data.substr(2 * 1024 * 1024 - 100, 5000));
  // The holders passed their data files over the UNIX socket: no byte over TCP.
  EXPECT_GE(reader_->stats().local_read_bytes - local_before, data.size() + mid.size());
  EXPECT_FALSE(store_->Stat("ckpt/shard-0.pt"));

  // Once uploaded, the same open File still reads the bytes it was opened on.
  PauseAll(false);
  ASSERT_TRUE(Drained());
  n = (*f)->Pread(0, std::span<char>(mid.data(), mid.size()));
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_BYTES(mid, data.substr(0, 5000));
  EXPECT_BYTES(ReadStore(*store_, "ckpt/shard-0.pt"), data);
}

// A restore right after a save: a new client reads every rank's file at
// once. Its first reads wait for the one discovery of each holder's short
// circuit instead of going over TCP meanwhile, and each read of a pending
// file is one exchange with a holder on this host.
TEST_F(WritebackTest, AFreshClientsFirstParallelReadsOfPendingFilesAllGoShortCircuit) {
  Start("file");
  PauseAll(true);
  constexpr int kFiles = 8;
  std::vector<std::string> data;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Bytes(2 * 1024 * 1024 + 1000 * i, 40 + i));
    auto st = WriteVia(*writer_, "/wb/restore/rank-" + std::to_string(i) + ".pt", data.back());
    ASSERT_TRUE(st) << st.error().ToString();
  }
  auto fresh = cluster_->NewClient();
  ASSERT_TRUE(fresh) << fresh.error().ToString();
  std::vector<std::string> got(kFiles);
  std::vector<std::thread> readers;
  for (int i = 0; i < kFiles; ++i) {
    readers.emplace_back([&, i] { got[i] = ReadVia(**fresh, "/wb/restore/rank-" + std::to_string(i) + ".pt"); });
  }
  uint64_t total = 0;
  for (int i = 0; i < kFiles; ++i) {
    readers[i].join();
    EXPECT_BYTES(got[i], data[i]);
    total += data[i].size();
  }
  const ClientStats s = (*fresh)->stats();
  EXPECT_EQ(s.local_read_bytes, total) << "of " << s.worker_read_bytes << " bytes read from workers";
  PauseAll(false);
}

TEST_F(WritebackTest, ALaterWriteOfThePathSupersedesAPendingOneAndTheStoreEndsWithTheNewest) {
  Start("file");
  PauseAll(true);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(WriteVia(*writer_, "/wb/x", "version " + std::to_string(i)));
  EXPECT_BYTES(ReadVia(*reader_, "/wb/x"), "version 4");
  PauseAll(false);
  ASSERT_TRUE(Drained());
  EXPECT_BYTES(ReadStore(*store_, "x"), "version 4");
  EXPECT_GE(Metric("shoal_writeback_superseded_total"), 4.0);
}

TEST_F(WritebackTest, TheStoreDownLosesNothingAndUploadsResumeWithBackoff) {
  Start("file");
  // The store goes away: its root directory is replaced by a plain file.
  const std::string away = dir_ + "/store.away";
  fs::rename(store_dir_, away);
  { std::ofstream(store_dir_) << "not a directory"; }
  std::map<std::string, std::string> written;
  for (int i = 0; i < 6; ++i) {
    const std::string path = "/wb/out/" + std::to_string(i);
    written[path] = Bytes(100 * 1024 * i + 7, static_cast<uint32_t>(i));
    auto st = WriteVia(*writer_, path, written[path]);
    ASSERT_TRUE(st) << st.error().ToString();
  }
  // Failures are retried (backoff), and readers still get the bytes from the holders.
  auto deadline = Clock::now() + 20s;
  while (Metric("shoal_writeback_upload_retries_total") < 2 && Clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  EXPECT_GE(Metric("shoal_writeback_upload_retries_total"), 2.0);
  EXPECT_BYTES(ReadVia(*reader_, "/wb/out/3"), written["/wb/out/3"]);
  fs::remove(store_dir_);
  fs::rename(away, store_dir_);
  ASSERT_TRUE(Drained());
  for (const auto& [path, data] : written) EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
}

TEST_F(WritebackTest, AFailingJournalAndBackpressureFallBackToThroughAndLoseNothingAcknowledged) {
  Start("file", 3, [](WorkerConfig& w) { w.write_back_max_pending = 1 << 20; });
  PauseAll(true);
  std::map<std::string, std::string> written;
  written["/wb/bp/held"] = Bytes(200 * 1024, 5);
  ASSERT_TRUE(WriteVia(*writer_, "/wb/bp/held", written["/wb/bp/held"]));
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 0u);
  // Every worker's journal directory cannot be written (a disk gone bad or
  // full): the write falls back to through; what was held stays held.
  for (size_t i = 0; i < cluster_->workers().size(); ++i) {
    const std::string wb = cluster_->cache_dir(i) + "/writeback";
    fs::rename(wb, wb + ".away");
    std::ofstream(wb) << "x";
  }
  written["/wb/bp/late"] = Bytes(10, 99);
  ASSERT_TRUE(WriteVia(*writer_, "/wb/bp/late", written["/wb/bp/late"]));
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 1u);
  EXPECT_BYTES(ReadStore(*store_, "bp/late"), written["/wb/bp/late"]);
  for (size_t i = 0; i < cluster_->workers().size(); ++i) {
    const std::string wb = cluster_->cache_dir(i) + "/writeback";
    fs::remove(wb);
    fs::rename(wb + ".away", wb);
  }
  EXPECT_BYTES(ReadVia(*reader_, "/wb/bp/held"), written["/wb/bp/held"]);
  // Past 1 MiB pending a worker answers busy: 4 writes of 700 KB on k=2 of
  // 3 workers put at least 3 on one of them, so at least one is written through.
  for (int i = 0; i < 4; ++i) {
    const std::string path = "/wb/bp/" + std::to_string(i);
    written[path] = Bytes(700 * 1024, static_cast<uint32_t>(10 + i));
    ASSERT_TRUE(WriteVia(*writer_, path, written[path]));
  }
  EXPECT_GE(writer_->stats().write_back_fallbacks, 2u);
  EXPECT_GE(Metric("shoal_writeback_busy_total"), 1.0);
  for (int i = 0; i < 4; ++i) {
    const std::string path = "/wb/bp/" + std::to_string(i);
    EXPECT_BYTES(ReadVia(*reader_, path), written[path]);
  }
  PauseAll(false);
  ASSERT_TRUE(Drained());
  for (const auto& [path, data] : written) EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
}

// The workers' disk really fills up (a 4 MiB tmpfs under all three): files
// already acknowledged stay held and reach the store; a file that does not fit
// on its holders' disk falls back to through, is in the store byte-exact, and
// is read back the same.
TEST_F(WritebackTest, ARealFullDiskFallsBackToThroughAndLosesNothingAcknowledged) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  cache_root_ = MakeTempDir("wbfull");
  ASSERT_FALSE(cache_root_.empty());
  if (::mount("tmpfs", cache_root_.c_str(), "tmpfs", 0, "size=4m") != 0) {
    fs::remove_all(cache_root_);
    cache_root_.clear();
    GTEST_SKIP() << "cannot mount tmpfs here";
  }
  Start("file");
  if (HasFatalFailure()) return;  // TearDown unmounts the disk
  PauseAll(true);
  std::map<std::string, std::string> written;
  for (int i = 0; i < 3; ++i) {
    const std::string path = "/wb/full/held" + std::to_string(i);
    written[path] = Bytes(100 * 1024 + i, static_cast<uint32_t>(70 + i));
    ASSERT_TRUE(WriteVia(*writer_, path, written[path]));
  }
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 0u) << "small files fit: written back";
  // Two copies of 6 MiB cannot fit on a 4 MiB disk: the holders hit ENOSPC mid-stream.
  written["/wb/full/big"] = Bytes(6 * 1024 * 1024 + 3, 77);
  auto big = WriteVia(*writer_, "/wb/full/big", written["/wb/full/big"]);
  ASSERT_TRUE(big) << "a full disk must fall back, not fail: " << big.error().ToString();
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 1u);
  EXPECT_FALSE(big->version.starts_with("wb-")) << "written through: the store's version";
  EXPECT_BYTES(ReadStore(*store_, "full/big"), written["/wb/full/big"]);
  for (const auto& [path, data] : written) EXPECT_BYTES(ReadVia(*reader_, path), data);
  PauseAll(false);
  ASSERT_TRUE(Drained());
  for (const auto& [path, data] : written) EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
}

TEST_F(WritebackTest, ARestartedWorkerReplaysItsJournalDropsATornTailAndUnfinishedDataAndUploads) {
  Start("file");
  PauseAll(true);
  std::map<std::string, std::string> written;
  for (int i = 0; i < 5; ++i) {
    const std::string path = "/wb/r/" + std::to_string(i);
    written[path] = Bytes(300 * 1024 + i, static_cast<uint32_t>(20 + i));
    ASSERT_TRUE(WriteVia(*writer_, path, written[path]));
  }
  for (size_t i = 0; i < cluster_->workers().size(); ++i) cluster_->Kill(i);
  // A torn record at the end of each journal and a data file without a commit record.
  for (size_t i = 0; i < cluster_->workers().size(); ++i) {
    const std::string wb = cluster_->cache_dir(i) + "/writeback";
    std::ofstream(wb + "/journal.log", std::ios::app) << std::string("\x40\0\0\0garbage", 11);
    std::ofstream(wb + "/0123456789abcdef0123456789abcdef.data") << "never committed";
  }
  for (size_t i = 0; i < cluster_->workers().size(); ++i) ASSERT_TRUE(cluster_->Restart(i).ok());
  ASSERT_TRUE(Drained());
  for (const auto& [path, data] : written) EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
  for (size_t i = 0; i < cluster_->workers().size(); ++i) {
    EXPECT_FALSE(fs::exists(cluster_->cache_dir(i) + "/writeback/0123456789abcdef0123456789abcdef.data"));
  }
}

// ★ Checkpoints saved while workers are killed with SIGKILL at seeded random
// times and restarted: every acknowledged file ends in the store byte-exact;
// an unacknowledged one is absent or whole.
TEST_F(WritebackTest, CrashTestKillNineDuringACheckpointLosesNothingAcknowledged) {
  Start("file");
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::map<std::string, std::string> acked, unacked;
    std::atomic<bool> writing{true};
    std::thread writer([&] {
      std::mt19937 wr(seed * 7919);
      for (int i = 0; i < 30; ++i) {
        const std::string path = "/wb/ck" + std::to_string(seed) + "/shard" + std::to_string(i);
        std::string data = Bytes(wr() % (900 * 1024), wr());
        auto st = WriteVia(*writer_, path, data, 128 * 1024);
        (st ? acked : unacked)[path] = std::move(data);
      }
      writing = false;
    });
    while (writing) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 250));  // a random moment to crash at
      if (!writing) break;
      const size_t victim = rng() % cluster_->workers().size();
      cluster_->Kill(victim);
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 200));
      ASSERT_TRUE(cluster_->Restart(victim).ok());
    }
    writer.join();
    EXPECT_GT(acked.size(), 20u) << "most writes are acknowledged (write-back or through)";
    ASSERT_TRUE(Drained(50s));
    for (const auto& [path, data] : acked) {
      EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
    }
    for (const auto& [path, data] : unacked) {
      auto info = store_->Stat(path.substr(4));
      if (info) {
        EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
      }
    }
  }
}

// The bytes go to the holders while the file is written, not at Close.
TEST_F(WritebackTest, BytesStreamToTheHoldersDuringTheWritesAndCloseOnlyCommits) {
  Start("file");
  // Whole 4 MiB appends (WritebackStream::kPiece) go before Close; the last, short one waits for it.
  const std::string data = Bytes(12 * 1024 * 1024 + 11, 41);
  auto w = writer_->Create("/wb/stream/big.bin");
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Write(std::span<const char>(data.data(), data.size())).ok());
  // Before Close, k=2 holders receive the bytes (the last piece may wait for Close).
  auto open_bytes = [&] {
    uint64_t sum = 0;
    for (size_t i = 0; i < cluster_->workers().size(); ++i) {
      auto body = cluster_->Get(i, "/v1/status");
      if (!body) continue;
      auto at = body->find("\"write_back_open_bytes\":");
      if (at != std::string::npos) sum += std::stoull(body->substr(at + 24));
    }
    return sum;
  };
  auto deadline = Clock::now() + 30s;
  while (open_bytes() < 2 * (12ull << 20) && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_GE(open_bytes(), 2 * (12ull << 20)) << "the holders got the bytes before Close";
  EXPECT_FALSE(reader_->Stat("/wb/stream/big.bin")) << "nothing is visible before the commit";
  auto st = (*w)->Close();
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_TRUE(st->version.starts_with("wb-")) << st->version;
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 0u);
  EXPECT_BYTES(ReadVia(*reader_, "/wb/stream/big.bin"), data);
  ASSERT_TRUE(Drained());
  EXPECT_BYTES(ReadStore(*store_, "stream/big.bin"), data);
}

// Two of three workers die while a file streams: at least one holder is gone,
// so the write falls back to through from the writer's spill; nothing is lost.
TEST_F(WritebackTest, AHolderThatDiesMidStreamFallsBackToThroughAndLosesNothing) {
  Start("file");
  const std::string data = Bytes(8 * 1024 * 1024 + 5, 43);
  const size_t half = data.size() / 2;
  auto w = writer_->Create("/wb/die/mid.bin");
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Write(std::span<const char>(data.data(), half)).ok());
  cluster_->Kill(0);
  cluster_->Kill(1);
  for (size_t off = half; off < data.size(); off += 512 * 1024) {
    const size_t n = std::min<size_t>(512 * 1024, data.size() - off);
    Status st = (*w)->Write(std::span<const char>(data.data() + off, n));
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  auto st = (*w)->Close();
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 1u);
  EXPECT_EQ(writer_->stats().write_backs, 0u);
  EXPECT_FALSE(st->version.starts_with("wb-")) << "written through: the store's version";
  EXPECT_BYTES(ReadStore(*store_, "die/mid.bin"), data);
  ASSERT_TRUE(cluster_->Restart(0).ok());
  ASSERT_TRUE(cluster_->Restart(1).ok());
  // The surviving or restarted holders dropped their part: nothing is left pending
  // to be uploaded over the file.
  ASSERT_TRUE(Drained());
  EXPECT_BYTES(ReadStore(*store_, "die/mid.bin"), data);
  EXPECT_BYTES(ReadVia(*reader_, "/wb/die/mid.bin"), data);
}

// A file given metadata, an ETag and a mode is written back, not through:
// its holders keep them with its bytes (in the journal, through a restart),
// answer them for the pending version, and upload them with it.
TEST_P(WritebackRoundTrip, MetadataETagAndModeAreKeptWithThePendingWriteAndUploadedWithIt) {
  Start(GetParam());
  const bool file = GetParam() == "file";
  const bool keeps_modes = GetParam() != "s3";  // file://, and s3:// with posix_attributes
  CreateOptions o;
  o.content_type = "application/x-checkpoint";
  o.metadata = {{"epoch", "12"}, {"rank", "3"}};
  o.headers = {{"cache-control", "max-age=60"}};
  o.etag = "0123456789abcdef0123456789abcdef-2";
  o.mode = 0640;
  const std::string small = Bytes(9'000, 61), big = Bytes(6 * 1024 * 1024 + 3, 62);  // a put; a stream
  PauseAll(true);
  std::map<std::string, std::string> version;
  for (const auto& [name, data] : {std::pair{std::string("small"), small}, {"big", big}}) {
    auto w = writer_->Create("/wb/meta/" + name, o);
    ASSERT_TRUE(w) << w.error().ToString();
    ASSERT_TRUE((*w)->Write(std::span<const char>(data.data(), data.size())).ok());
    auto st = (*w)->Close();
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_TRUE(st->version.starts_with("wb-")) << name << " was written through: " << st->version;
    version[name] = st->version;
  }
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 0u);
  auto check_pending = [&](Client& c, const std::string& name) {
    auto st = c.Stat("/wb/meta/" + name);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->version, version[name]);
    EXPECT_EQ(st->mode, keeps_modes ? 0640u : 0u) << name << ": only a store that keeps modes shows one";
    auto m = ReadObjectMetadata(c, "/wb/meta/" + name, st->version);
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_EQ(m->content_type, o.content_type) << name;
    EXPECT_EQ(m->user, o.metadata) << name;
    EXPECT_EQ(m->headers, o.headers) << name;
    EXPECT_EQ(m->etag, o.etag) << name;
  };
  check_pending(*reader_, "small");
  check_pending(*reader_, "big");
  EXPECT_FALSE(store_->Stat("meta/small"));
  // The holders restart with the writes still pending (uploads were held):
  // what they upload then has its options from their journals alone.
  for (size_t i = 0; i < cluster_->workers().size(); ++i) ASSERT_TRUE(cluster_->Restart(i).ok());
  ASSERT_TRUE(Drained());
  for (const auto& [name, data] : {std::pair{std::string("small"), small}, {"big", big}}) {
    SCOPED_TRACE(name);
    EXPECT_BYTES(ReadStore(*store_, "meta/" + name), data);
    auto m = store_->Metadata("meta/" + name);
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_EQ(m->content_type, o.content_type);
    if (GetParam() == "s3posix") {
      // The mode went with the upload, as s3fs keeps it, beside the writer's metadata.
      std::erase_if(m->user, [](const auto& kv) {
        if (kv.first != "mode") return false;
        EXPECT_EQ(kv.second, std::to_string(0100640));
        return true;
      });
    }
    EXPECT_EQ(m->user, o.metadata);
    EXPECT_EQ(m->headers, o.headers);
    auto info = store_->Stat("meta/" + name);
    ASSERT_TRUE(info) << info.error().ToString();
    if (file) EXPECT_EQ(info->etag, o.etag) << "file:// keeps the ETag the writer gave";
    EXPECT_EQ(info->mode, keeps_modes ? 0640u : 0u);
    // After the upload the same answer comes from the store's version.
    auto st = reader_->Stat("/wb/meta/" + name);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_FALSE(st->version.starts_with("wb-")) << st->version;
    auto after = ReadObjectMetadata(*reader_, "/wb/meta/" + name, st->version);
    ASSERT_TRUE(after) << after.error().ToString();
    EXPECT_EQ(after->content_type, o.content_type);
  }
}

// Options a holder must not keep are refused at the door, and nothing is left.
TEST_F(WritebackTest, BadWriteOptionsAreRefusedByTheHolderAndLeaveNothing) {
  Start("file");
  const std::string id(32, 'a');
  const std::string holders = PercentEncode(FormatWorkerEntry(cluster_->workers()[0]), true);
  const std::string sum = std::to_string(XXH3_64bits("x", 1));
  for (const char* attrs : {"%7Bnope", "%7B%22headers%22%3A%5B%5B%22x-evil%22%2C%22v%22%5D%5D%7D", "%5B%5D"}) {
    auto [code, body] = Post(
        cluster_->addresses()[0],
        "/v1/wb/put?id=" + id + "&path=/wb/bad&holders=" + holders + "&size=1&xxh3=" + sum + "&attrs=" + attrs, "x");
    EXPECT_EQ(code, 400) << attrs << ": " << body;
    EXPECT_NE(body.find("write options"), std::string::npos) << body;
  }
  EXPECT_FALSE(reader_->Stat("/wb/bad"));
}

// After the upload the primary keeps the bytes cached under the store's
// version: reading the file again costs the store nothing. (Here the workers
// know no ring, so only files of one shard; peer_fetch_test covers more.)
TEST_P(WritebackRoundTrip, ARestoreAfterTheUploadIsACacheHitAndReadsNoStoreBytes) {
  Start(GetParam());
  const std::string small = Bytes(10'000, 51), big = Bytes(3 * 1024 * 1024 + 17, 52);  // one shard (4 MiB)
  ASSERT_TRUE(WriteVia(*writer_, "/wb/restore/small", small));
  ASSERT_TRUE(WriteVia(*writer_, "/wb/restore/big", big));
  ASSERT_TRUE(Drained());
  const double before = Metric("shoal_ufs_read_bytes_total");
  ASSERT_GE(before, 0);
  for (const auto& [path, data] : {std::pair{std::string("/wb/restore/small"), small}, {"/wb/restore/big", big}}) {
    auto st = reader_->Stat(path);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_FALSE(st->version.starts_with("wb-")) << "uploaded: " << st->version;
    EXPECT_BYTES(ReadVia(*reader_, path), data);
  }
  EXPECT_EQ(Metric("shoal_ufs_read_bytes_total"), before) << "the restore was served from the cache";
}

// A small file comes in one put whose journal record carries its bytes: a
// holder killed before its data file reached the disk still has them.
TEST_F(WritebackTest, ASmallPutSurvivesAKillFromItsJournalRecordAlone) {
  Start("file");
  PauseAll(true);
  std::map<std::string, std::string> written;
  for (int i = 0; i < 4; ++i) {
    const std::string path = "/wb/put/" + std::to_string(i);
    written[path] = Bytes(5'000 + 1000 * i, static_cast<uint32_t>(60 + i));
    ASSERT_TRUE(WriteVia(*writer_, path, written[path]));
  }
  EXPECT_EQ(writer_->stats().write_back_fallbacks, 0u);
  for (size_t i = 0; i < cluster_->workers().size(); ++i) cluster_->Kill(i);
  // The data files are gone (as if never flushed): only the journal has the bytes.
  for (size_t i = 0; i < cluster_->workers().size(); ++i) {
    for (const auto& e : fs::directory_iterator(cluster_->cache_dir(i) + "/writeback")) {
      if (e.path().extension() == ".data") fs::remove(e.path());
    }
  }
  for (size_t i = 0; i < cluster_->workers().size(); ++i) ASSERT_TRUE(cluster_->Restart(i).ok());
  for (const auto& [path, data] : written) EXPECT_BYTES(ReadVia(*reader_, path), data);
  ASSERT_TRUE(Drained());
  for (const auto& [path, data] : written) EXPECT_BYTES(ReadStore(*store_, path.substr(4)), data);
}

TEST_F(WritebackTest, BadRequestsAreRefusedAndLeaveNothing) {
  Start("file", 1);
  const std::string a = cluster_->addresses()[0];
  const std::string me = FormatWorkerEntry(cluster_->workers()[0]);
  const std::string id = "00112233445566778899aabbccddeeff";
  const std::string holders = "&holders=" + PercentEncode(me, true);
  auto expect = [&](const std::string& target, const std::string& body, int code, const std::string& words) {
    auto [got, text] = Post(a, target, body);
    EXPECT_EQ(got, code) << target << ": " << text;
    EXPECT_NE(text.find(words), std::string::npos) << target << ": " << text;
  };
  expect("/v1/wb/begin?id=XYZ&path=/wb/a" + holders, "", 400, "32 lowercase hex");
  expect("/v1/wb/begin?id=" + id + "&path=/wb/a&holders=" + PercentEncode("w-x@127.0.0.1:1", true), "", 400,
         "does not name this worker");
  expect("/v1/wb/begin?id=" + id + "&path=/nomount/a" + holders, "", 404, "");
  expect("/v1/wb/append?id=" + id + "&offset=0", "abc", 404, "not open");
  expect("/v1/wb/begin?id=" + id + "&path=/wb/a" + holders, "", 200, id);
  expect("/v1/wb/begin?id=" + id + "&path=/wb/a" + holders, "", 409, "already in use");
  expect("/v1/wb/append?id=" + id + "&offset=5", "abc", 400, "in order");
  expect("/v1/wb/append?id=" + id + "&offset=0", "abc", 200, "");
  expect("/v1/wb/append?id=" + id, "abc", 400, "offset");
  expect("/v1/wb/commit?id=" + id + "&size=4&xxh3=1", "", 400, "3 were received");
  expect("/v1/wb/commit?id=" + id + "&size=3&xxh3=1", "", 400, "checksum");
  expect("/v1/wb/abort?id=" + id, "", 200, "aborted");
  const std::string put = "/v1/wb/put?id=" + std::string(id.rbegin(), id.rend()) + "&path=/wb/p" + holders;
  expect(put + "&size=3&xxh3=1", "abc", 400, "checksum");
  expect(put + "&size=4&xxh3=1", "abc", 400, "3 were received");
  expect(put + "&xxh3=1", "abc", 400, "size");
  expect(put + "&size=" + std::to_string(600 << 10) + "&xxh3=1", std::string(600 << 10, 'x'), 400, "at most");
  EXPECT_FALSE(reader_->Stat("/wb/p")) << "nothing of a refused put is visible";
  EXPECT_FALSE(reader_->Stat("/wb/a")) << "nothing of a refused write is visible";
  EXPECT_EQ(Post(a, "/v1/read?path=/wb/a&version=wb-" + id + "&size=3&offset=0&length=3", "", "GET").first, 412);
  // Without the cluster secret no write-back route takes anything.
  EXPECT_EQ(Post(a, "/v1/wb/begin?id=" + id + "x&path=/wb/b&holders=" + cluster_->workers()[0].id, "", "POST", false)
                .first,
            403);
  EXPECT_EQ(Post(a, "/v1/wb/pause?on=1", "", "POST", false).first, 403);
  EXPECT_FALSE(fs::exists(cluster_->cache_dir(0) + "/writeback/" + id + ".data"));
}

}  // namespace
}  // namespace shoal::testing
