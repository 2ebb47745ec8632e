// The client writer and namespace writes (Client::Create/Delete/Mkdir/Rmdir/
// Rename) against real workers and a real under-store, file:// and s3://
// (s3rver): bytes written by one client are read back by another, at once,
// whatever the mount's consistency mode, and every refused or failed write
// leaves nothing behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/harness/file_io.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kPage = 256 * 1024;  // ShoalCluster's page size

// The whole file as read through `c`, or "<error: ...>".
std::string ReadVia(Client& c, const std::string& path) { return ReadFileVia(c, path); }
// Writes `data` in `chunk`-sized Writes and closes.
Result<FileStatus> WriteVia(Client& c, const std::string& path, const std::string& data, size_t chunk = 1 << 20) {
  return WriteFileVia(c, path, data, chunk);
}

std::vector<std::string> Names(Client& c, const std::string& dir) {
  std::vector<std::string> out;
  auto l = c.List(dir);
  if (!l) return {"<error: " + l.error().ToString() + ">"};
  for (auto& e : *l) out.push_back(e.path.substr(e.path.rfind('/') + 1) + (e.is_dir ? "/" : ""));
  return out;
}

class WriterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    MountConfig base;
    if (GetParam() == "s3") {
      auto s3 = S3rverProcess::Start();
      ASSERT_TRUE(s3) << s3.error().ToString();
      s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
      ASSERT_TRUE(s3_->CreateBucket("writes").ok());
      base.ufs = "s3://writes/root/";
      // Small parts, so that a few MiB take the multipart path.
      base.options = s3_->MountOptions();
      base.options["multipart_threshold"] = "5MiB";
      base.options["multipart_part_size"] = "5MiB";
    } else {
      dir_ = MakeTempDir("writer");
      ASSERT_FALSE(dir_.empty());
      base.ufs = "file://" + dir_ + "/";
    }
    auto mount = [&](std::string path, Consistency c, bool read_only = false) {
      MountConfig m = base;
      m.path = std::move(path);
      m.consistency = c;
      m.ttl = 1h;  // nothing expires during a test: every change seen must come from the writes' invalidation
      m.read_only = read_only;
      return m;
    };
    ShoalCluster::Options o;
    o.workers = 3;
    o.mounts = {mount("/data", Consistency::kTtl), mount("/imm", Consistency::kImmutable),
                mount("/ro", Consistency::kTtl, true)};
    auto ufs = OpenUnderStore(o.mounts[0]);
    ASSERT_TRUE(ufs) << ufs.error().ToString();
    ufs_ = *ufs;
    Status started = StartWithTwoClients(o, &cluster_, &writer_, &reader_);
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  void TearDown() override {
    writer_.reset();
    reader_.reset();
    cluster_.reset();
    s3_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::unique_ptr<S3rverProcess> s3_;
  std::string dir_;
  std::shared_ptr<UnderStore> ufs_;
  std::unique_ptr<ShoalCluster> cluster_;
  std::unique_ptr<Client> writer_;  // writes
  std::unique_ptr<Client> reader_;  // another client: it shares only the workers with the writer
};

TEST_P(WriterTest, WrittenBytesReadBackFromAnotherClient) {
  const std::vector<uint64_t> sizes = {0, 1, kPage - 1, kPage, kPage + 1, 12 * 1024 * 1024 + 3};
  for (uint64_t size : sizes) {
    SCOPED_TRACE(size);
    const std::string path = "/data/sizes/f" + std::to_string(size);
    const std::string data = RandomBytes(size, size + 1);
    auto closed = WriteVia(*writer_, path, data, 700 * 1024);
    ASSERT_TRUE(closed) << closed.error().ToString();
    EXPECT_EQ(closed->path, path);
    EXPECT_EQ(closed->size, size);
    EXPECT_FALSE(closed->version.empty());
    auto st = reader_->Stat(path);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->size, size);
    EXPECT_EQ(st->version, closed->version) << "Close returned another version than the store holds";
    EXPECT_TRUE(ReadVia(*reader_, path) == data);
    // And in the under-store itself.
    std::string raw(size + 1, '\0');
    auto n = ufs_->Read("sizes/f" + std::to_string(size), 0, std::span<char>(raw.data(), raw.size()));
    ASSERT_TRUE(n) << n.error().ToString();
    raw.resize(*n);
    EXPECT_TRUE(raw == data);
  }
  // One Write larger than any store's buffer: handed down in pieces.
  const std::string big = RandomBytes(11 * 1024 * 1024, 99);
  auto closed = WriteVia(*writer_, "/data/sizes/one-write", big, big.size());
  ASSERT_TRUE(closed) << closed.error().ToString();
  EXPECT_TRUE(ReadVia(*reader_, "/data/sizes/one-write") == big);
}

TEST_P(WriterTest, OverwriteIsSeenAtOnceOnTtlAndImmutableMounts) {
  for (std::string mount : {"/data", "/imm"}) {
    SCOPED_TRACE(mount);
    const std::string path = mount + "/over/ckpt.bin";
    const std::string a = RandomBytes(3 * kPage + 17, 1), b = RandomBytes(a.size(), 2);
    ASSERT_TRUE(WriteVia(*writer_, path, a));
    // The reader caches the old version: its metadata and its pages.
    ASSERT_TRUE(ReadVia(*reader_, path) == a);
    ASSERT_TRUE(ReadVia(*reader_, path) == a);
    // Same size, new bytes, at once: no stale read on any mode.
    auto closed = WriteVia(*writer_, path, b);
    ASSERT_TRUE(closed) << closed.error().ToString();
    EXPECT_TRUE(ReadVia(*reader_, path) == b);
    auto st = reader_->Stat(path);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->version, closed->version);
    // The writer's own reads, too.
    EXPECT_TRUE(ReadVia(*writer_, path) == b);
  }
}

TEST_P(WriterTest, CreatedFileAppearsInItsParentsListingAtOnce) {
  for (std::string mount : {"/data", "/imm"}) {
    SCOPED_TRACE(mount);
    const std::string dir = mount + "/grow" + mount.substr(1);  // the mounts share a store: one directory each
    ASSERT_TRUE(WriteVia(*writer_, dir + "/a", "1"));
    // Cached by the reader: the listing, and a negative lookup of a path
    // under a directory that does not exist yet.
    ASSERT_EQ(Names(*reader_, dir), (std::vector<std::string>{"a"}));
    ASSERT_FALSE(reader_->Stat(dir + "/new/b"));
    ASSERT_FALSE(reader_->Stat(dir + "/new"));
    ASSERT_TRUE(WriteVia(*writer_, dir + "/new/b", "22"));
    EXPECT_EQ(Names(*reader_, dir), (std::vector<std::string>{"a", "new/"}));
    EXPECT_EQ(Names(*reader_, dir + "/new"), (std::vector<std::string>{"b"}));
    auto st = reader_->Stat(dir + "/new/b");
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->size, 2u);
    auto d = reader_->Stat(dir + "/new");
    ASSERT_TRUE(d) << d.error().ToString();
    EXPECT_TRUE(d->is_dir);
    EXPECT_EQ(ReadVia(*reader_, dir + "/new/b"), "22");
  }
}

TEST_P(WriterTest, NothingIsVisibleBeforeCloseAndAbortLeavesNothing) {
  const std::string data = RandomBytes(7 * 1024 * 1024, 5);  // past the multipart threshold on s3
  {
    auto w = writer_->Create("/data/ab/aborted");
    ASSERT_TRUE(w) << w.error().ToString();
    ASSERT_TRUE((*w)->Write(data).ok());
    EXPECT_FALSE(reader_->Stat("/data/ab/aborted")) << "visible before Close";
    (*w)->Abort();
    EXPECT_EQ((*w)->Write(data).code(), Code::kInvalidArgument);
    auto c = (*w)->Close();
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().message().find("aborted"), std::string::npos) << c.error().ToString();
  }
  {
    auto w = writer_->Create("/data/ab/dropped");
    ASSERT_TRUE(w) << w.error().ToString();
    ASSERT_TRUE((*w)->Write(data).ok());
    // Destroyed without Close: aborted.
  }
  for (auto p : {"/data/ab/aborted", "/data/ab/dropped"}) {
    auto st = reader_->Stat(p);
    ASSERT_FALSE(st) << p;
    EXPECT_EQ(st.error().code(), Code::kNotFound);
  }
  // Nothing under the prefix in the store: no temporaries, no parts.
  auto listed = ufs_->List("ab/", ListOptions{.delimiter = ""});
  ASSERT_TRUE(listed) << listed.error().ToString();
  EXPECT_TRUE(listed->entries.empty()) << listed->entries.front().key;
  if (!dir_.empty() && fs::exists(dir_ + "/ab")) EXPECT_TRUE(fs::is_empty(dir_ + "/ab")) << "a temporary file was left";
}

// chmod and touch: kept by the directory store and seen by another client
// through the workers' metadata at once (the stat answer carries the mode);
// the version stays, so cached pages stay. An object store keeps neither.
TEST_P(WriterTest, ModeAndTimeAreKeptWhereTheStoreCanAndEveryClientSeesThem) {
  ASSERT_TRUE(WriteVia(*writer_, "/data/attr/file", "some bytes"));
  auto before = reader_->Stat("/data/attr/file");
  ASSERT_TRUE(before) << before.error().ToString();
  const int64_t then = 1'500'000'000'987'654'321;
  Status st = writer_->SetAttributes("/data/attr/file", 0750u, then);
  if (GetParam() != "file") {
    EXPECT_EQ(st.code(), Code::kNotSupported) << st.ToString();
    EXPECT_EQ(before->mode, 0u);
    return;
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto after = reader_->Stat("/data/attr/file");
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(after->mode, 0750u);
  EXPECT_EQ(after->mtime_ns, then);
  EXPECT_EQ(after->version, before->version);
  EXPECT_EQ(ReadVia(*reader_, "/data/attr/file"), "some bytes");
  auto listed = reader_->List("/data/attr");
  ASSERT_TRUE(listed) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].mode, 0750u) << "a listing shows the mode too";
  EXPECT_EQ(writer_->SetAttributes("/data/attr/none", 0600u, std::nullopt).code(), Code::kNotFound);
  EXPECT_EQ(writer_->SetAttributes("/data/attr/file", 010000u, std::nullopt).code(), Code::kInvalidArgument);
}

TEST_P(WriterTest, ReadOnlyMountRefusesEveryWrite) {
  ASSERT_TRUE(WriteVia(*writer_, "/data/ro/file", "x"));  // the same store, through the writable mount
  ASSERT_TRUE(writer_->Mkdir("/data/ro/dir").ok());
  auto expect_ro = [](const Status& st, const char* what) {
    EXPECT_EQ(st.code(), Code::kReadOnly) << what << ": " << st.ToString();
    EXPECT_NE(st.message().find("mount /ro"), std::string::npos) << st.message();
  };
  auto w = writer_->Create("/ro/ro/new");
  ASSERT_FALSE(w);
  expect_ro(w.error(), "create");
  expect_ro(writer_->Delete("/ro/ro/file"), "delete");
  expect_ro(writer_->Mkdir("/ro/ro/newdir"), "mkdir");
  expect_ro(writer_->Rmdir("/ro/ro/dir"), "rmdir");
  expect_ro(writer_->Rename("/ro/ro/file", "/ro/ro/moved"), "rename");
  expect_ro(writer_->SetAttributes("/ro/ro/file", 0600u, std::nullopt), "chmod");
  // Nothing changed.
  EXPECT_EQ(Names(*reader_, "/ro/ro"), (std::vector<std::string>{"dir/", "file"}));
  EXPECT_EQ(ReadVia(*reader_, "/ro/ro/file"), "x");
}

TEST_P(WriterTest, DeleteMkdirRmdirRename) {
  // With a directory marker on object stores, so that /data/ns stays when its last file goes.
  ASSERT_TRUE(writer_->Mkdir("/data/ns").ok());
  ASSERT_TRUE(WriteVia(*writer_, "/data/ns/file", "bytes"));
  ASSERT_EQ(Names(*reader_, "/data/ns"), (std::vector<std::string>{"file"}));
  ASSERT_EQ(ReadVia(*reader_, "/data/ns/file"), "bytes");

  // Delete: gone at once for the reader, which had it cached.
  EXPECT_EQ(writer_->Delete("/data/ns/missing").code(), Code::kNotFound);
  ASSERT_TRUE(writer_->Delete("/data/ns/file").ok());
  auto gone = reader_->Stat("/data/ns/file");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), Code::kNotFound);
  EXPECT_EQ(writer_->Delete("/data/ns/file").code(), Code::kNotFound);

  // Mkdir: an empty directory that Stat and the parent's listing show.
  ASSERT_FALSE(reader_->Stat("/data/ns/d"));
  auto made = writer_->Mkdir("/data/ns/d");
  ASSERT_TRUE(made.ok()) << made.ToString();
  auto d = reader_->Stat("/data/ns/d");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_TRUE(d->is_dir);
  EXPECT_EQ(Names(*reader_, "/data/ns"), (std::vector<std::string>{"d/"}));
  EXPECT_EQ(Names(*reader_, "/data/ns/d"), std::vector<std::string>{});
  EXPECT_EQ(writer_->Mkdir("/data/ns/d").code(), Code::kAlreadyExists);
  EXPECT_EQ(writer_->Delete("/data/ns/d").code(), Code::kIsDirectory);
  auto over = writer_->Create("/data/ns/d");
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), Code::kIsDirectory);

  // Rmdir: refused while not empty, then the directory is gone everywhere.
  ASSERT_TRUE(WriteVia(*writer_, "/data/ns/d/inner", "i"));
  EXPECT_EQ(writer_->Rmdir("/data/ns/d").code(), Code::kNotEmpty);
  EXPECT_EQ(writer_->Rmdir("/data/ns/d/inner").code(), Code::kNotDirectory);
  ASSERT_TRUE(writer_->Delete("/data/ns/d/inner").ok());
  EXPECT_EQ(Names(*reader_, "/data/ns/d"), std::vector<std::string>{});
  auto removed = writer_->Rmdir("/data/ns/d");
  ASSERT_TRUE(removed.ok()) << removed.ToString();
  EXPECT_FALSE(reader_->Stat("/data/ns/d"));
  EXPECT_EQ(Names(*reader_, "/data/ns"), std::vector<std::string>{});
  EXPECT_EQ(writer_->Rmdir("/data/ns/d").code(), Code::kNotFound);

  // Rename: file:// and s3:// (a server-side copy) both rename a file, and
  // replace the target; the reader sees both names change at once.
  ASSERT_TRUE(WriteVia(*writer_, "/data/ns/from", "moved bytes"));
  ASSERT_TRUE(WriteVia(*writer_, "/data/ns/to", "old target"));
  ASSERT_EQ(ReadVia(*reader_, "/data/ns/to"), "old target");
  ASSERT_EQ(Names(*reader_, "/data/ns"), (std::vector<std::string>{"from", "to"}));
  auto renamed = writer_->Rename("/data/ns/from", "/data/ns/to");
  ASSERT_TRUE(renamed.ok()) << renamed.ToString();
  EXPECT_EQ(ReadVia(*reader_, "/data/ns/to"), "moved bytes");
  EXPECT_FALSE(reader_->Stat("/data/ns/from"));
  EXPECT_EQ(Names(*reader_, "/data/ns"), (std::vector<std::string>{"to"}));
  EXPECT_EQ(writer_->Rename("/data/ns/nope", "/data/ns/x").code(), Code::kNotFound);
  EXPECT_EQ(writer_->Rename("/data/ns/to", "/imm/ns/to").code(), Code::kNotSupported);
  // A directory: file:// renames it, and everything under it moves for the reader too.
  ASSERT_TRUE(WriteVia(*writer_, "/data/ns/dir/x", "x"));
  ASSERT_EQ(ReadVia(*reader_, "/data/ns/dir/x"), "x");
  auto dir_renamed = writer_->Rename("/data/ns/dir", "/data/ns/dir2");
  if (GetParam() == "s3") {
    EXPECT_EQ(dir_renamed.code(), Code::kNotSupported) << dir_renamed.ToString();
  } else {
    ASSERT_TRUE(dir_renamed.ok()) << dir_renamed.ToString();
    EXPECT_EQ(ReadVia(*reader_, "/data/ns/dir2/x"), "x");
    EXPECT_FALSE(reader_->Stat("/data/ns/dir/x"));
    EXPECT_FALSE(reader_->Stat("/data/ns/dir"));
  }
}

// A file operation on a directory says kIsDirectory, whether it reads or writes
// (FUSE makes it EISDIR, Python IsADirectoryError).
TEST_P(WriterTest, OpenFileAndCreateOnADirectoryBothSayIsDirectory) {
  ASSERT_TRUE(writer_->Mkdir("/data/od").ok());
  for (const char* dir : {"/data/od", "/data"}) {
    auto opened = reader_->OpenFile(dir);
    ASSERT_FALSE(opened) << dir;
    EXPECT_EQ(opened.error().code(), Code::kIsDirectory) << opened.error().ToString();
    EXPECT_NE(opened.error().message().find(dir), std::string::npos) << opened.error().ToString();
    auto created = writer_->Create(dir);
    ASSERT_FALSE(created) << dir;
    EXPECT_EQ(created.error().code(), Code::kIsDirectory) << created.error().ToString();
  }
}

TEST_P(WriterTest, NestedMkdirShowsInEveryAncestorsListing) {
  // Cached first: the top directory's listing, and negative lookups below it.
  ASSERT_TRUE(WriteVia(*writer_, "/data/nest/f", "1"));
  ASSERT_EQ(Names(*reader_, "/data/nest"), (std::vector<std::string>{"f"}));
  ASSERT_FALSE(reader_->Stat("/data/nest/d"));
  Status made = writer_->Mkdir("/data/nest/d/sub/deeper");
  if (!made.ok()) {
    // A store that makes one level at a time says which parent is missing.
    ASSERT_EQ(made.code(), Code::kNotFound) << made.ToString();
    ASSERT_TRUE(writer_->Mkdir("/data/nest/d").ok());
    ASSERT_TRUE(writer_->Mkdir("/data/nest/d/sub").ok());
    ASSERT_TRUE(writer_->Mkdir("/data/nest/d/sub/deeper").ok());
  }
  EXPECT_EQ(Names(*reader_, "/data/nest"), (std::vector<std::string>{"d/", "f"}));
  EXPECT_EQ(Names(*reader_, "/data/nest/d"), (std::vector<std::string>{"sub/"}));
  EXPECT_EQ(Names(*reader_, "/data/nest/d/sub"), (std::vector<std::string>{"deeper/"}));
  for (auto p : {"/data/nest/d", "/data/nest/d/sub", "/data/nest/d/sub/deeper"}) {
    auto st = reader_->Stat(p);
    ASSERT_TRUE(st) << p << ": " << st.error().ToString();
    EXPECT_TRUE(st->is_dir) << p;
  }
  EXPECT_TRUE(reader_->List("/data/nest/d/sub/deeper")) << "an empty directory lists as empty";
}

TEST_P(WriterTest, CreateWithoutOverwriteKeepsTheFile) {
  ASSERT_TRUE(WriteVia(*writer_, "/data/keep", "first"));
  auto w = writer_->Create("/data/keep", CreateOptions{.overwrite = false});
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code(), Code::kAlreadyExists);
  EXPECT_EQ(ReadVia(*reader_, "/data/keep"), "first");
}

INSTANTIATE_TEST_SUITE_P(Ufs, WriterTest, ::testing::Values("file", "s3"), [](const auto& info) { return info.param; });

// A store that cannot be reached: every write fails with one clear error
// naming the store, within about client.timeout (the store's own request
// timeout is 60 s), and nothing is left behind.
TEST(WriterStoreDownTest, WritesFailWithinTheDeadline) {
  auto s3 = S3rverProcess::Start();
  ASSERT_TRUE(s3) << s3.error().ToString();
  ASSERT_TRUE(s3->CreateBucket("down").ok());
  MountConfig m;
  m.path = "/data";
  m.ufs = "s3://down/root/";
  m.options = s3->MountOptions();
  ShoalCluster::Options o;
  o.workers = 1;
  o.mounts = {m};
  o.client.timeout = 3s;
  auto cluster = ShoalCluster::Start(o);
  ASSERT_TRUE(cluster) << cluster.error().ToString();
  auto client = (*cluster)->NewClient();
  ASSERT_TRUE(client);
  // A writer opened while the store answers, then the store stalls.
  auto w = (*client)->Create("/data/ckpt");
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Write(std::string_view("some bytes")).ok());
  ASSERT_TRUE(s3->Freeze());
  auto timed = [&](auto f) {
    auto start = std::chrono::steady_clock::now();
    Status st = f();
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_FALSE(st.ok());
    EXPECT_TRUE(st.code() == Code::kTimeout || st.code() == Code::kUnavailable) << st.ToString();
    EXPECT_NE(st.message().find("/data/"), std::string::npos) << st.message();
    EXPECT_LT(took, o.client.timeout + 10s) << st.ToString();
    return st;
  };
  timed([&] {
    auto c = (*w)->Close();
    return c ? Status() : c.error();
  });
  timed([&] {
    auto c = (*client)->Create("/data/other");
    return c ? Status() : c.error();
  });
  timed([&] { return (*client)->Mkdir("/data/dir"); });
  timed([&] { return (*client)->Delete("/data/ckpt"); });
  s3->Thaw();
  // The writes refused before reaching the store left nothing. The Close
  // that timed out had sent its PUT, which the stalled store may still
  // commit once it runs again (as with any object store: a timeout means
  // "unknown"); if so, it holds the whole file, never part of it.
  for (auto p : {"/data/other", "/data/dir"}) {
    auto st = (*client)->Stat(p);
    ASSERT_FALSE(st) << p;
    EXPECT_EQ(st.error().code(), Code::kNotFound) << st.error().ToString();
  }
  auto st = (*client)->Stat("/data/ckpt");
  if (st) {
    EXPECT_EQ(st->size, 10u);
  } else {
    EXPECT_EQ(st.error().code(), Code::kNotFound) << st.error().ToString();
  }
}

}  // namespace
}  // namespace shoal::testing
