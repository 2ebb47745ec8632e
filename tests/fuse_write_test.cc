// Writing through the FUSE mount with real programs (Python, rsync, fio, tar,
// cp, git) over `shoal up --ufs DIR --fuse MNT`: the store is a local
// directory, so what reached it is read back with ordinary files.
// Skipped only where /dev/fuse is absent.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include "tests/cli_helpers.h"
#include "tests/harness/harness_util.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "tests/harness/webhdfs.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A file's bytes, or "<absent>".
std::string Contents(const std::string& path) {
  if (!fs::exists(path)) return "<absent>";
  return Slurp(path);
}

// `sh -c CMD`: its exit code, with stdout and stderr in *out.
int Sh(const std::string& cmd, std::string* out = nullptr, std::chrono::seconds timeout = 300s) {
  Run r = Command({"sh", "-c", cmd + " 2>&1"}, timeout);
  if (out) *out = r.out;
  return r.exit_code;
}

// Files of random bytes under `root` (parents made): the i-th holds
// `scale * (seed + i)` bytes made from the seed `seed + i`.
void WriteTree(const std::string& root, std::initializer_list<const char*> rels, uint64_t seed, uint64_t scale) {
  for (const char* rel : rels) {
    ASSERT_TRUE(WriteFile(root + "/" + rel, RandomBytes(scale * seed, seed)).ok()) << rel;
    ++seed;
  }
}

class FuseWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no usable /dev/fuse on this machine";
    auto scratch = MakeScratchDir("fuse-write", "the FUSE write test");
    ASSERT_TRUE(scratch) << scratch.error().ToString();
    scratch_ = *scratch;
    dir_ = scratch_->path;
    store_ = dir_ + "/store";
    mnt_ = dir_ + "/mnt";
    fs::create_directories(store_);
    fs::create_directories(mnt_);
    std::vector<std::string> args = {"--ufs", store_, "--workers", "2", "--state-dir", dir_ + "/state", "--fuse", mnt_};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    up_.emplace(LaunchUp(args, dir_ + "/up.err"));
    ASSERT_TRUE(up_->ready) << up_->err();
    ASSERT_TRUE(Mounted(mnt_));
    data_ = mnt_ + "/data";
  }

  void TearDown() override {
    if (up_ && up_->ready) {
      up_->proc.Signal(SIGINT);  // unmounts, then stops the workers
      if (up_->proc.Wait(60s) == -1) up_->proc.Stop();
    }
    if (!mnt_.empty() && Mounted(mnt_)) ::umount2(mnt_.c_str(), MNT_DETACH);
  }

  std::string FuseLog() const { return Slurp(dir_ + "/state/fuse.log"); }

  std::shared_ptr<ScratchDir> scratch_;
  std::string dir_, store_, mnt_, data_;
  std::optional<Up> up_;
  std::vector<std::string> extra_args_;  // more `shoal up` arguments
};

// Issue 32 item 8: a new file opened for reading and writing.
TEST_F(FuseWriteTest, PythonOpenForReadingAndWritingWritesSeeksAndReadsBack) {
  const std::string script = R"PY(
import os, sys
d = sys.argv[1]
with open(d + "/new", "w+") as f:
    f.write("hello world")
    f.seek(6)
    f.write("WORLD")
    f.seek(0)
    got = f.read()
    assert got == "hello WORLD", got
with open(d + "/new", "r+") as f:  # an existing file, rewritten in place
    assert f.read(5) == "hello"
    f.seek(0)
    f.write("J")
    f.seek(0)
    got = f.read()
    assert got == "Jello WORLD", got
with open(d + "/new", "a") as f:
    f.write("!")
with open(d + "/new") as f:
    got = f.read()
    assert got == "Jello WORLD!", got
fd = os.open(d + "/rdonly-creat", os.O_RDONLY | os.O_CREAT, 0o644)
assert os.read(fd, 10) == b""
os.close(fd)
big = os.urandom(3 << 20)
with open(d + "/big", "w+b") as f:
    f.write(big)
    f.seek(1000)
    f.write(b"x" * 5000)
    f.seek(0)
    got = f.read()
    want = big[:1000] + b"x" * 5000 + big[6000:]
    assert got == want
    f.truncate(2 << 20)
with open(d + "/big.want", "wb") as f:
    f.write(want[: 2 << 20])
print("ok")
)PY";
  ASSERT_TRUE(WriteFile(dir_ + "/t.py", script).ok());
  std::string out;
  ASSERT_EQ(Sh("/usr/bin/python3 '" + dir_ + "/t.py' '" + data_ + "'", &out), 0) << out << FuseLog();
  EXPECT_EQ(Contents(store_ + "/new"), "Jello WORLD!");
  EXPECT_EQ(Contents(store_ + "/rdonly-creat"), "");
  EXPECT_TRUE(Contents(store_ + "/big") == Contents(store_ + "/big.want"));
  EXPECT_EQ(fs::file_size(store_ + "/big"), 2u << 20);
}

// mkstemp's open (O_RDWR | O_CREAT | O_EXCL), written across fsync and close
// of a duplicate: each commit holds what was written until then.
TEST_F(FuseWriteTest, AReadWriteDescriptorCommitsAtEachFsyncAndClose) {
  const std::string path = data_ + "/tmp.XXXXXX";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0) << errno;
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ASSERT_EQ(::fsync(fd), 0) << errno;
  EXPECT_EQ(Contents(store_ + "/tmp.XXXXXX"), "abc");
  int dup = ::dup(fd);
  ASSERT_EQ(::close(dup), 0);
  ASSERT_EQ(::pwrite(fd, "XYZ", 3, 1), 3);  // after a commit: written again
  char buf[8] = {};
  ASSERT_EQ(::pread(fd, buf, sizeof buf, 0), 4);
  EXPECT_EQ(std::string(buf, 4), "aXYZ");
  struct stat st;
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 4);
  ASSERT_EQ(::close(fd), 0) << errno;
  EXPECT_EQ(Contents(store_ + "/tmp.XXXXXX"), "aXYZ");
  // O_EXCL on the existing name: EEXIST.
  EXPECT_EQ(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600), -1);
  EXPECT_EQ(errno, EEXIST);
}

// git's lock and temporary files: created, maybe left empty, then removed or
// renamed while (or just after) being open.
TEST_F(FuseWriteTest, FilesRemovedOrRenamedWhileOpenForWriting) {
  const std::string lock = data_ + "/config.lock";
  for (int i = 0; i < 3; ++i) {
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
    ASSERT_GE(fd, 0) << "round " << i << ": " << std::strerror(errno);
    ASSERT_EQ(::close(fd), 0);
    // Not in the store yet (an empty new file is committed at its last
    // close); removing it still works, and it is never committed after.
    EXPECT_EQ(::unlink(lock.c_str()), 0) << std::strerror(errno);
  }
  // Written and renamed before the close: the bytes follow the new name.
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0) << errno;
  ASSERT_EQ(::write(fd, "first ", 6), 6);
  ASSERT_EQ(::rename(lock.c_str(), (data_ + "/config").c_str()), 0) << std::strerror(errno);
  ASSERT_EQ(::write(fd, "second", 6), 6);
  ASSERT_EQ(::close(fd), 0);
  EXPECT_EQ(Contents(store_ + "/config"), "first second");
  EXPECT_EQ(Contents(store_ + "/config.lock"), "<absent>");
}

// Issue 32 item 9: every truncate the buffer can express; a no-op always.
TEST_F(FuseWriteTest, TruncatesOfFilesBeingWrittenAndOfStoredFiles) {
  // A write-only new file: ftruncate to its size is a no-op, beyond it zeros.
  int fd = ::open((data_ + "/w").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << errno;
  ASSERT_EQ(::write(fd, "0123456789", 10), 10);
  EXPECT_EQ(::ftruncate(fd, 10), 0) << errno;
  EXPECT_EQ(::ftruncate(fd, 15), 0) << errno;
  ASSERT_EQ(::pwrite(fd, "end", 3, 20), 3);  // a gap ahead: zeros
  ASSERT_EQ(::close(fd), 0) << errno;
  EXPECT_EQ(Contents(store_ + "/w"), std::string("0123456789") + std::string(10, '\0') + "end");

  // fio's layout: created write-only, sized first, then written.
  fd = ::open((data_ + "/layout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << errno;
  ASSERT_EQ(::ftruncate(fd, 1000), 0) << errno;
  ASSERT_EQ(::pwrite(fd, "mid", 3, 500), 3);
  ASSERT_EQ(::close(fd), 0) << errno;
  EXPECT_EQ(Contents(store_ + "/layout"), std::string(500, '\0') + "mid" + std::string(497, '\0'));

  // Read-write: cut and grown before the first close.
  fd = ::open((data_ + "/rw").c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0) << errno;
  ASSERT_EQ(::write(fd, std::string(100, 'a').data(), 100), 100);
  ASSERT_EQ(::ftruncate(fd, 50), 0) << errno;
  ASSERT_EQ(::ftruncate(fd, 80), 0) << errno;
  ASSERT_EQ(::close(fd), 0) << errno;
  EXPECT_EQ(Contents(store_ + "/rw"), std::string(50, 'a') + std::string(30, '\0'));

  // truncate(2) of a stored file: same size (nothing changes), cut, grown.
  ASSERT_TRUE(WriteFile(store_ + "/stored", "stored bytes").ok());
  const auto mtime = fs::last_write_time(store_ + "/stored");
  EXPECT_EQ(::truncate((data_ + "/stored").c_str(), 12), 0) << errno;
  EXPECT_EQ(fs::last_write_time(store_ + "/stored"), mtime);
  EXPECT_EQ(::truncate((data_ + "/stored").c_str(), 6), 0) << errno;
  EXPECT_EQ(Contents(store_ + "/stored"), "stored");
  EXPECT_EQ(::truncate((data_ + "/stored").c_str(), 8), 0) << errno;
  EXPECT_EQ(Contents(store_ + "/stored"), std::string("stored") + std::string(2, '\0'));
  struct stat st;
  ASSERT_EQ(::stat((data_ + "/stored").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8);

  // What a streamed file cannot do: cut below what already went to the store.
  fd = ::open((data_ + "/cut").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << errno;
  ASSERT_EQ(::write(fd, "0123456789", 10), 10);
  EXPECT_EQ(::ftruncate(fd, 5), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(::close(fd), 0);  // the refused cut changed nothing: the ten bytes are written
  EXPECT_EQ(Contents(store_ + "/cut"), "0123456789");
  EXPECT_NE(FuseLog().find("open it O_RDWR"), std::string::npos) << FuseLog();
}

TEST_F(FuseWriteTest, FioWriteJobsVerify) {
  ASSERT_EQ(Sh("command -v fio >/dev/null"), 0) << "fio is missing: run scripts/bootstrap";
  fs::create_directories(store_ + "/fio");
  for (std::string job : {"--name=seq --rw=write", "--name=rnd --rw=randwrite --bs=4k",
                          "--name=rw --rw=randrw --bs=16k --verify_backlog=16"}) {
    std::string out;
    std::string cmd = "fio --directory='" + data_ + "/fio' --size=4m --nrfiles=2 --bs=64k --verify=crc32c " + job;
    EXPECT_EQ(Sh(cmd, &out), 0) << cmd << "\n" << out << FuseLog();
    EXPECT_EQ(out.find("verify failed"), std::string::npos) << out;
    EXPECT_NE(out.find("WRITE:"), std::string::npos) << out;
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(store_ + "/fio")) {
    EXPECT_EQ(e.file_size(), 2u << 20) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 6u);
}

// Issue 32 item 10 and the review's check: rsync in its default mode (a
// temporary file, then rename) and with --inplace.
TEST_F(FuseWriteTest, RsyncCopiesATreeByDefaultAndInPlace) {
  ASSERT_EQ(Sh("command -v rsync >/dev/null"), 0) << "rsync is missing: run scripts/bootstrap";
  const std::string src = dir_ + "/src";
  std::map<std::string, size_t> files = {{"a.bin", 0},           {"b.bin", 1},
                                         {"sub/c.bin", 300'000}, {"sub/deep/d.bin", 3 << 20},
                                         {"with space", 10},     {"ünïcødé", 4096}};
  uint64_t seed = 1;
  for (const auto& [rel, size] : files) ASSERT_TRUE(WriteFile(src + "/" + rel, RandomBytes(size, seed++)).ok());
  std::string out;
  ASSERT_EQ(Sh("rsync -a '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out << FuseLog();
  EXPECT_EQ(Sh("diff -r '" + src + "' '" + store_ + "/rs'", &out), 0) << out;
  // Checksums of every file agree: rsync finds nothing to send.
  ASSERT_EQ(Sh("rsync -ac --dry-run --out-format='%n' '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out;
  EXPECT_EQ(out.find(".bin"), std::string::npos) << out;

  // --inplace: changed files are rewritten where they are, grown and cut.
  ASSERT_TRUE(WriteFile(src + "/sub/c.bin", RandomBytes(200'000, 99)).ok());
  ASSERT_TRUE(WriteFile(src + "/b.bin", RandomBytes(5000, 98)).ok());
  ASSERT_TRUE(WriteFile(src + "/new.bin", RandomBytes(7000, 97)).ok());
  ASSERT_EQ(Sh("rsync -a --inplace '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out << FuseLog();
  EXPECT_EQ(Sh("diff -r '" + src + "' '" + store_ + "/rs'", &out), 0) << out;
  ASSERT_EQ(Sh("rsync -ac --dry-run --out-format='%n' '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out;
  EXPECT_EQ(out.find(".bin"), std::string::npos) << out;
}

// The same rsync runs over `shoal up --write-mode write-back`: files are
// acknowledged from the holders' journals, rsync's renames and its setting of
// times wait for the uploads they touch, and a second rsync finds nothing to
// change (it compares sizes and times, then checksums with -c).
class FuseWriteBackTest : public FuseWriteTest {
 protected:
  FuseWriteBackTest() { extra_args_ = {"--write-mode", "write-back"}; }
};

TEST_F(FuseWriteBackTest, RsyncCopiesATreeOntoAWriteBackMount) {
  ASSERT_EQ(Sh("command -v rsync >/dev/null"), 0) << "rsync is missing: run scripts/bootstrap";
  const std::string src = dir_ + "/src";
  uint64_t seed = 1;
  for (const char* rel : {"a.bin", "sub/c.bin", "sub/deep/d.bin", "with space"}) {
    ASSERT_TRUE(WriteFile(src + "/" + rel, RandomBytes(1000 * seed * seed * seed, seed)).ok());
    ++seed;
  }
  std::string out;
  EXPECT_NE(Slurp(up_->config).find("write_mode: write-back"), std::string::npos) << Slurp(up_->config);
  ASSERT_EQ(Sh("rsync -a '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out << FuseLog();
  ASSERT_EQ(Sh("rsync -ai --dry-run '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out;
  EXPECT_EQ(out.find(">f"), std::string::npos) << "rsync would send files again:\n" << out;
  ASSERT_EQ(Sh("rsync -ac --dry-run --out-format='%n' '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out;
  EXPECT_EQ(out.find(".bin"), std::string::npos) << out;
  for (int i = 0; i < 600 && Sh("diff -r '" + src + "' '" + store_ + "/rs' >/dev/null") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll: the last uploads land
  }
  EXPECT_EQ(Sh("diff -r '" + src + "' '" + store_ + "/rs'", &out), 0) << out;
  EXPECT_EQ(Sh("ls -A '" + store_ + "/rs' | grep -c '^\\.'", &out), 1) << "rsync's temporaries were left: " << out;
}

// "MODE MTIME_NS" of every file and directory under `root` (lstat), by
// relative path; the root itself is left out.
std::map<std::string, std::string> ModesAndTimes(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    struct stat st;
    if (::lstat(e.path().c_str(), &st) != 0) continue;
    out[fs::relative(e.path(), root).string()] =
        std::to_string(st.st_mode & 07777) + " " +
        std::to_string(static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec);
  }
  return out;
}

// Issue 32 items 10 and 12: modes and modification times written through the
// mount are kept by the directory store (so `rsync -a` finds nothing to
// change afterwards, and `default_permissions` checks the real modes), by
// rsync (attributes set on its temporary after the close, then renamed), cp
// -a and tar (set on the open descriptor before the close), chmod, touch and
// open(2)'s mode.
TEST_F(FuseWriteTest, ModesAndTimesAreKeptByRsyncCpTarChmodAndTouch) {
  const std::string src = dir_ + "/modes";
  const std::map<std::string, int> modes = {
      {"run.sh", 0755}, {"secret", 0600}, {"shared", 0664}, {"sub/readonly", 0444}, {"sub/deep/x.bin", 0640}};
  uint64_t seed = 40;
  for (const auto& [rel, mode] : modes) {
    ASSERT_TRUE(WriteFile(src + "/" + rel, RandomBytes(3000 * seed, seed)).ok());
    ++seed;
  }
  std::string out;
  ASSERT_EQ(Sh("cd '" + src +
                   "' && chmod 0755 run.sh && chmod 0600 secret && chmod 0664 shared && chmod 0444 "
                   "sub/readonly && chmod 0640 sub/deep/x.bin && chmod 0750 sub && chmod 0700 sub/deep && "
                   "touch -d '2020-01-02 03:04:05.123456789' run.sh secret sub/deep/x.bin && "
                   "touch -d '2019-05-06 07:08:09.5' shared sub/readonly sub/deep sub",
               &out),
            0)
      << out;
  const auto want = ModesAndTimes(src);

  // rsync -a (default mode): the tree's modes and times, then nothing to change.
  ASSERT_EQ(Sh("rsync -a '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out << FuseLog();
  EXPECT_EQ(ModesAndTimes(store_ + "/rs"), want);
  EXPECT_EQ(ModesAndTimes(data_ + "/rs"), want) << "the mount shows what the store keeps";
  ASSERT_EQ(Sh("rsync -ai --dry-run '" + src + "/' '" + data_ + "/rs/'", &out), 0) << out;
  EXPECT_EQ(out, "") << "rsync -a finds differences after copying";

  // cp -a and tar x set them on the open descriptor before its close.
  ASSERT_EQ(Sh("cp -a '" + src + "' '" + data_ + "/cp'", &out), 0) << out << FuseLog();
  EXPECT_EQ(ModesAndTimes(store_ + "/cp"), want);
  ASSERT_EQ(Sh("tar --format=posix -cf '" + dir_ + "/modes.tar' -C '" + src + "' . && mkdir '" + data_ +
                   "/untar' && tar xpf '" + dir_ + "/modes.tar' -C '" + data_ + "/untar'",
               &out),
            0)
      << out << FuseLog();
  EXPECT_EQ(ModesAndTimes(store_ + "/untar"), want);

  // chmod and touch of stored files and directories; open(2)'s mode.
  ASSERT_EQ(::chmod((data_ + "/rs/shared").c_str(), 0600), 0) << std::strerror(errno);
  ASSERT_EQ(::chmod((data_ + "/rs/sub").c_str(), 0700), 0) << std::strerror(errno);
  struct stat st;
  ASSERT_EQ(::stat((store_ + "/rs/shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat((store_ + "/rs/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(Sh("touch -d '2001-02-03 04:05:06' '" + data_ + "/rs/secret'", &out), 0) << out;
  ASSERT_EQ(::stat((store_ + "/rs/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 981173106) << "touch -d through the mount";
  ASSERT_EQ(::stat((data_ + "/rs/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 981173106);
  struct stat in_store;
  ASSERT_EQ(::stat((store_ + "/rs/secret").c_str(), &in_store), 0);
  EXPECT_EQ(st.st_ctim.tv_sec, in_store.st_ctim.tv_sec) << "the ctime is the store's (the touch's time), not the mtime";
  EXPECT_EQ(st.st_ctim.tv_nsec, in_store.st_ctim.tv_nsec);
  EXPECT_EQ(Slurp(data_ + "/rs/secret"), Slurp(src + "/secret")) << "the bytes stay";
  int fd = ::open((data_ + "/made-0600").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ASSERT_EQ(::close(fd), 0);
  ASSERT_EQ(::stat((store_ + "/made-0600").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::mkdir((data_ + "/dir-0700").c_str(), 0700), 0) << std::strerror(errno);
  ASSERT_EQ(::stat((store_ + "/dir-0700").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // Rewriting a file in place keeps its mode.
  ASSERT_EQ(Sh("printf more >> '" + data_ + "/rs/run.sh'", &out), 0) << out << FuseLog();
  ASSERT_EQ(::stat((store_ + "/rs/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// Issue 32 item 10 on HDFS: WebHDFS keeps modes (CREATE's permission,
// SETPERMISSION) and times to the millisecond (SETTIMES), so `rsync -a` into a
// mount over hdfs:// keeps them and finds nothing to change afterwards, and
// chmod and touch through the mount reach the namenode. Times here are whole
// milliseconds: finer ones are cut (README, "Modes and times").
TEST(FuseWriteHdfsTest, RsyncChmodAndTouchKeepModesAndTimesOnHdfs) {
  if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no usable /dev/fuse on this machine";
  auto hdfs = WebHdfsServer::Start();
  ASSERT_TRUE(hdfs) << hdfs.error().ToString();
  const std::string store = hdfs->root_dir() + "/data";
  fs::create_directories(store);
  auto scratch = MakeScratchDir("fuse-hdfs", "the FUSE write test over WebHDFS");
  ASSERT_TRUE(scratch) << scratch.error().ToString();
  const std::string dir = (*scratch)->path, mnt = dir + "/mnt", data = mnt + "/data";
  fs::create_directories(mnt);
  Up up = LaunchUp({"--ufs", hdfs->Uri("data"), "--workers", "1", "--state-dir", dir + "/state", "--fuse", mnt},
                   dir + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  struct Stop {
    Up& up;
    std::string mnt;
    ~Stop() {
      up.proc.Signal(SIGINT);
      if (up.proc.Wait(60s) == -1) up.proc.Stop();
      if (Mounted(mnt)) ::umount2(mnt.c_str(), MNT_DETACH);
    }
  } stop{up, mnt};
  ASSERT_TRUE(Mounted(mnt));
  auto log = [&] { return Slurp(dir + "/state/fuse.log"); };

  const std::string src = dir + "/modes";
  ASSERT_NO_FATAL_FAILURE(WriteTree(src, {"run.sh", "secret", "shared", "sub/readonly"}, 60, 2000));
  std::string out;
  ASSERT_EQ(Sh("cd '" + src +
                   "' && chmod 0755 run.sh && chmod 0600 secret && chmod 0664 shared && chmod 0444 sub/readonly && "
                   "chmod 0750 sub && touch -d '2020-01-02 03:04:05.123' run.sh secret && "
                   "touch -d '2019-05-06 07:08:09.5' shared sub/readonly sub",
               &out),
            0)
      << out;
  const auto want = ModesAndTimes(src);
  ASSERT_EQ(Sh("rsync -a '" + src + "/' '" + data + "/rs/'", &out), 0) << out << log();
  EXPECT_EQ(ModesAndTimes(store + "/rs"), want) << "what the namenode keeps";
  EXPECT_EQ(ModesAndTimes(data + "/rs"), want) << "the mount shows what the store keeps";
  ASSERT_EQ(Sh("rsync -ai --dry-run '" + src + "/' '" + data + "/rs/'", &out), 0) << out;
  EXPECT_EQ(out, "") << "rsync -a finds differences after copying";

  ASSERT_EQ(::chmod((data + "/rs/shared").c_str(), 0600), 0) << std::strerror(errno);
  struct stat st;
  ASSERT_EQ(::stat((store + "/rs/shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(Sh("touch -d '2001-02-03 04:05:06' '" + data + "/rs/secret'", &out), 0) << out;
  ASSERT_EQ(::stat((store + "/rs/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 981173106) << "touch -d through the mount";
  ASSERT_EQ(::stat((data + "/rs/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 981173106);
  EXPECT_EQ(Slurp(data + "/rs/secret"), Slurp(src + "/secret")) << "the bytes stay";
  // A rewrite keeps the file's mode; a new file gets open(2)'s.
  ASSERT_EQ(Sh("printf more >> '" + data + "/rs/run.sh'", &out), 0) << out << log();
  ASSERT_EQ(::stat((store + "/rs/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  int fd = ::open((data + "/made-0600").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ASSERT_EQ(::close(fd), 0);
  ASSERT_EQ(::stat((store + "/made-0600").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

// Issue 32 item 10: archive and copy tools, and git, write trees into the mount.
TEST_F(FuseWriteTest, TarCpAndGitCloneWriteTreesIntoTheMount) {
  const std::string src = dir_ + "/tree";
  uint64_t seed = 7;
  for (std::string rel : {"a.txt", "sub/b.bin", "sub/deep/c.bin", "with space/d"}) {
    ASSERT_TRUE(WriteFile(src + "/" + rel, RandomBytes(1000 * seed, seed)).ok());
    ++seed;
  }
  std::string out;
  // A sparse file: cp copies its hole as a gap (a seek past the end).
  ASSERT_EQ(Sh("truncate -s 3M '" + src + "/sparse' && printf tail >> '" + src + "/sparse'", &out), 0) << out;
  ASSERT_EQ(Sh("tar cf '" + dir_ + "/tree.tar' -C '" + src + "' .", &out), 0) << out;

  ASSERT_EQ(Sh("mkdir '" + data_ + "/untar' && tar xf '" + dir_ + "/tree.tar' -C '" + data_ + "/untar'", &out), 0)
      << out << FuseLog();
  EXPECT_EQ(Sh("diff -r '" + src + "' '" + store_ + "/untar'", &out), 0) << out;

  ASSERT_EQ(Sh("cp -a '" + src + "' '" + data_ + "/cp'", &out), 0) << out << FuseLog();
  EXPECT_EQ(Sh("diff -r '" + src + "' '" + store_ + "/cp'", &out), 0) << out;

  // git clone: lock files, temporary objects written and read back, renames.
  const std::string repo = dir_ + "/repo";
  ASSERT_EQ(Sh("git init -q '" + repo + "' && cp -a '" + src + "'/. '" + repo + "' && cd '" + repo +
                   "' && git add -A && git -c user.name=t -c user.email=t@t commit -qm one",
               &out),
            0)
      << out;
  ASSERT_EQ(Sh("git clone -q '" + repo + "' '" + data_ + "/clone'", &out), 0) << out << FuseLog();
  EXPECT_EQ(Sh("cd '" + data_ + "/clone' && git fsck --strict && git status --porcelain", &out), 0) << out;
  EXPECT_EQ(out.find(" M "), std::string::npos) << out;
  EXPECT_EQ(Sh("diff -r -x .git '" + src + "' '" + store_ + "/clone'", &out), 0) << out;
}

// Issue 32 item 12: with the daemon running as root, what another user
// creates through `-o allow_other` is theirs (as on a local file system), so
// the kernel's checks (default_permissions) let them write it again, and
// nobody else. The child becomes uid 1234 and answers with an errno per step.
// Run on a mount of `config` over the store directory `store_dir` (`test_dir`:
// the test's own directory). On a write-back mount the chmod, the last step,
// waits for the file's upload, so the store is checked after it the same way.
void OthersOwnWhatTheyCreate(const std::string& test_dir, const std::string& store_dir, const std::string& config) {
  ASSERT_EQ(::chmod(test_dir.c_str(), 0755), 0);  // other users must reach the mount point
  ASSERT_EQ(::chmod(store_dir.c_str(), 0755), 0);
  const std::string theirs = store_dir + "/theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 1234, 1234), 0) << std::strerror(errno);
  const std::string mp = test_dir + "/mnt-owners";
  fs::create_directories(mp);
  auto mounted = Shoal({"fuse", mp, "--config", config, "-o", "allow_other"}, 90s);
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  struct Unmount {
    std::string mp;
    ~Unmount() {
      Shoal({"fuse", "--unmount", mp}, 60s);
      if (Mounted(mp)) ::umount2(mp.c_str(), MNT_DETACH);
    }
  } unmount{mp};
  const std::string dir = mp + "/data/theirs";

  auto as_user = [&](uid_t uid, std::function<void(int*)> steps, int count) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    if (child == 0) {
      ::close(fds[0]);
      if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(99);
      std::vector<int> out(static_cast<size_t>(count), -1);
      steps(out.data());
      [[maybe_unused]] auto w = ::write(fds[1], out.data(), out.size() * sizeof(int));
      ::_exit(0);
    }
    ::close(fds[1]);
    std::vector<int> got(static_cast<size_t>(count), -1);
    const auto n = ::read(fds[0], got.data(), got.size() * sizeof(int));
    ::close(fds[0]);
    int status = 0;
    EXPECT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not become uid " << uid;
    EXPECT_EQ(n, static_cast<ssize_t>(got.size() * sizeof(int)));
    return got;
  };
  auto step = [](bool ok) { return ok ? 0 : errno; };
  // The owner of the directory creates a file and a directory, closes the
  // file, opens it again to rewrite it, and changes its mode.
  auto got = as_user(
      1234,
      [&](int* out) {
        int fd = ::open((dir + "/new").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
        out[0] = step(fd >= 0 && ::write(fd, "first", 5) == 5 && ::close(fd) == 0);
        out[1] = step(::mkdir((dir + "/sub").c_str(), 0750) == 0);
        fd = ::open((dir + "/new").c_str(), O_WRONLY | O_TRUNC);
        out[2] = step(fd >= 0 && ::write(fd, "second", 6) == 6 && ::close(fd) == 0);
        out[3] = step(::chmod((dir + "/new").c_str(), 0600) == 0);
      },
      4);
  EXPECT_EQ(got[0], 0) << "create in their own directory: " << std::strerror(got[0]);
  EXPECT_EQ(got[1], 0) << "mkdir: " << std::strerror(got[1]);
  EXPECT_EQ(got[2], 0) << "rewrite their own file: " << std::strerror(got[2]);
  EXPECT_EQ(got[3], 0) << "chmod their own file: " << std::strerror(got[3]);
  struct stat st;
  ASSERT_EQ(::stat((theirs + "/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u) << "the store's file is theirs";
  EXPECT_EQ(st.st_gid, 1234u);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(Slurp(theirs + "/new"), "second");
  ASSERT_EQ(::stat((theirs + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_EQ(::stat((dir + "/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u) << "the mount shows the store's owner";
  // Another user may neither write it nor create beside it.
  got = as_user(
      4321,
      [&](int* out) {
        int fd = ::open((dir + "/new").c_str(), O_WRONLY | O_TRUNC);
        out[0] = step(fd >= 0);
        if (fd >= 0) ::close(fd);
        fd = ::open((dir + "/other").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
        out[1] = step(fd >= 0);
        if (fd >= 0) ::close(fd);
      },
      2);
  EXPECT_EQ(got[0], EACCES) << std::strerror(got[0]);
  EXPECT_EQ(got[1], EACCES) << std::strerror(got[1]);
  EXPECT_EQ(Slurp(theirs + "/new"), "second");
  EXPECT_FALSE(fs::exists(theirs + "/other"));
}

TEST_F(FuseWriteTest, AllowOtherUsersOwnWhatTheyCreate) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  OthersOwnWhatTheyCreate(dir_, store_, up_->config);
}

// The same on a write-back mount: the owner goes with the pending write
// (its holders keep it in their journals) and the upload gives it to the file.
TEST_F(FuseWriteBackTest, AllowOtherUsersOwnWhatTheyCreate) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  OthersOwnWhatTheyCreate(dir_, store_, up_->config);
}

// "UID:GID" of every file and directory under `root` (lstat), by relative path.
std::map<std::string, std::string> Owners(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    struct stat st;
    if (::lstat(e.path().c_str(), &st) != 0) continue;
    out[fs::relative(e.path(), root).string()] = std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
  }
  return out;
}

// Issue 32 item 10: owners on file://. `rsync -a` as root gives each file its
// source's owner and group (chown on its temporary, then a rename), which
// the store keeps and the mount shows, so a second rsync finds nothing to
// change; chown through the mount reaches the store; a rewrite keeps them.
TEST_F(FuseWriteTest, OwnersAreKeptByRsyncAndChownAsRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving files to other users needs root";
  const std::string src = dir_ + "/owned";
  ASSERT_TRUE(WriteFile(src + "/a.bin", RandomBytes(5000, 1)).ok());
  ASSERT_TRUE(WriteFile(src + "/sub/b.bin", RandomBytes(7000, 2)).ok());
  ASSERT_TRUE(WriteFile(src + "/sub/c", std::string("root's")).ok());
  ASSERT_EQ(::chown((src + "/a.bin").c_str(), 1234, 2345), 0);
  ASSERT_EQ(::chown((src + "/sub/b.bin").c_str(), 4321, 4321), 0);
  ASSERT_EQ(::chown((src + "/sub").c_str(), 1234, 1234), 0);
  const auto want = Owners(src);
  std::string out;
  ASSERT_EQ(Sh("rsync -a '" + src + "/' '" + data_ + "/own/'", &out), 0) << out << FuseLog();
  EXPECT_EQ(Owners(store_ + "/own"), want) << "what the store keeps";
  EXPECT_EQ(Owners(data_ + "/own"), want) << "the mount shows the store's owners";
  ASSERT_EQ(Sh("rsync -ai --dry-run '" + src + "/' '" + data_ + "/own/'", &out), 0) << out;
  EXPECT_EQ(out, "") << "rsync -a finds differences after copying";

  ASSERT_EQ(::chown((data_ + "/own/a.bin").c_str(), 777, 778), 0) << std::strerror(errno);
  struct stat st;
  ASSERT_EQ(::stat((store_ + "/own/a.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 777u);
  EXPECT_EQ(st.st_gid, 778u);
  ASSERT_EQ(::lchown((data_ + "/own/sub").c_str(), static_cast<uid_t>(-1), 5), 0) << std::strerror(errno);
  ASSERT_EQ(::stat((store_ + "/own/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u) << "the group alone";
  EXPECT_EQ(st.st_gid, 5u);
  ASSERT_EQ(Sh("printf more >> '" + data_ + "/own/sub/b.bin'", &out), 0) << out << FuseLog();
  ASSERT_EQ(::stat((store_ + "/own/sub/b.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u) << "a rewrite keeps the file's owner";
  EXPECT_EQ(st.st_size, 7004);
  // What root creates through the mount stays root's (the daemon's user).
  ASSERT_TRUE(WriteFile(data_ + "/own/new", std::string("n")).ok());
  ASSERT_EQ(::stat((store_ + "/own/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
}

// Issue 32 item 10 on an object store: with the mount option
// posix_attributes, modes, owners and times go into each object's user
// metadata as s3fs keeps them, so `rsync -a` into a mount over s3:// keeps
// them and finds nothing to send afterwards, a fresh mount's `ls -l` (from a
// listing, which carries no metadata) shows them, and chmod, touch and chown
// reach the object.
TEST(FuseWriteS3Test, PosixAttributesKeepModesOwnersAndTimesInObjectMetadata) {
  if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no usable /dev/fuse on this machine";
  auto s3 = S3rverProcess::Start();
  ASSERT_TRUE(s3) << s3.error().ToString();
  ASSERT_TRUE(s3->CreateBucket("posix").ok());
  auto scratch = MakeScratchDir("fuse-s3-posix", "the FUSE write test over S3");
  ASSERT_TRUE(scratch) << scratch.error().ToString();
  const std::string dir = (*scratch)->path, mnt = dir + "/mnt", data = mnt + "/data", mnt2 = dir + "/mnt2";
  fs::create_directories(mnt);
  fs::create_directories(mnt2);
  const std::map<std::string, std::string> options = {{"endpoint", s3->endpoint()},
                                                      {"access_key_id", S3rverProcess::kAccessKeyId},
                                                      {"secret_access_key", S3rverProcess::kSecretAccessKey},
                                                      {"posix_attributes", "true"}};
  std::vector<std::string> args = {"--ufs",       "s3://posix/",  "--workers", "1",
                                   "--state-dir", dir + "/state", "--fuse",    mnt};
  for (const auto& [k, v] : options) {
    args.push_back("-o");
    args.push_back(k + "=" + v);
  }
  Up up = LaunchUp(args, dir + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  struct Stop {
    Up& up;
    std::vector<std::string> mounts;
    ~Stop() {
      for (const auto& m : mounts) {
        if (Mounted(m)) Shoal({"fuse", "--unmount", m}, 60s);
        if (Mounted(m)) ::umount2(m.c_str(), MNT_DETACH);
      }
      up.proc.Signal(SIGINT);
      if (up.proc.Wait(60s) == -1) up.proc.Stop();
    }
  } stop{up, {mnt2, mnt}};
  ASSERT_TRUE(Mounted(mnt));
  auto log = [&] { return Slurp(dir + "/state/fuse.log"); };
  MountConfig m;
  m.path = "/data";
  m.ufs = "s3://posix/";
  m.options = options;
  auto store = OpenUnderStore(m);
  ASSERT_TRUE(store) << store.error().ToString();

  // Directories stay 0755 (an object store keeps nothing for a prefix).
  const std::string src = dir + "/modes";
  const bool root = ::geteuid() == 0;
  ASSERT_NO_FATAL_FAILURE(WriteTree(src, {"run.sh", "secret", "sub/readonly", "sub/deep/x.bin"}, 80, 2000));
  std::string out;
  ASSERT_EQ(Sh("cd '" + src +
                   "' && chmod 0755 . sub sub/deep && chmod 0750 run.sh && chmod 0600 secret && chmod 0444 "
                   "sub/readonly && chmod 0640 sub/deep/x.bin && touch -d '2020-01-02 03:04:05.123456789' run.sh "
                   "secret && touch -d '2019-05-06 07:08:09.5' sub/readonly sub/deep/x.bin",
               &out),
            0)
      << out;
  if (root) {
    ASSERT_EQ(Sh("chown 1234:2345 '" + src + "/run.sh' && chown 4321:4321 '" + src + "/sub/readonly'"), 0);
  }
  auto files_only = [](std::map<std::string, std::string> v, const std::string& root_dir) {
    std::erase_if(v, [&](const auto& e) { return fs::is_directory(root_dir + "/" + e.first); });
    return v;
  };
  const auto want = files_only(ModesAndTimes(src), src);
  const auto want_owners = files_only(Owners(src), src);

  ASSERT_EQ(Sh("rsync -a '" + src + "/' '" + data + "/rs/'", &out), 0) << out << log();
  EXPECT_EQ(files_only(ModesAndTimes(data + "/rs"), data + "/rs"), want) << "the mount shows what the objects keep";
  if (root) {
    EXPECT_EQ(files_only(Owners(data + "/rs"), data + "/rs"), want_owners);
  }
  // -O: directories' times are not kept.
  ASSERT_EQ(Sh("rsync -aiO --dry-run '" + src + "/' '" + data + "/rs/'", &out), 0) << out;
  EXPECT_EQ(out, "") << "rsync -a finds differences after copying";
  auto meta = (*store)->Metadata("rs/run.sh");
  ASSERT_TRUE(meta) << meta.error().ToString();
  std::map<std::string, std::string> user(meta->user.begin(), meta->user.end());
  EXPECT_EQ(user["mode"], std::to_string(0100750)) << "as s3fs keeps it";
  EXPECT_EQ(user["mtime"], "1577934245.123456789");
  if (root) {
    EXPECT_EQ(user["uid"], "1234");
  }

  // A fresh mount lists them (a listing carries no metadata: each file is stated).
  auto mounted = Shoal({"fuse", mnt2, "--config", up.config}, 90s);
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  EXPECT_EQ(Sh("ls -l '" + mnt2 + "/data/rs' > /dev/null", &out), 0) << out;  // readdirplus first
  EXPECT_EQ(files_only(ModesAndTimes(mnt2 + "/data/rs"), mnt2 + "/data/rs"), want);
  if (root) {
    EXPECT_EQ(files_only(Owners(mnt2 + "/data/rs"), mnt2 + "/data/rs"), want_owners);
  }

  // chmod, touch and chown through the mount; the bytes stay.
  ASSERT_EQ(::chmod((data + "/rs/secret").c_str(), 0640), 0) << std::strerror(errno);
  ASSERT_EQ(Sh("touch -d '2001-02-03 04:05:06' '" + data + "/rs/secret'", &out), 0) << out;
  if (root) {
    ASSERT_EQ(::chown((data + "/rs/secret").c_str(), 77, 78), 0) << std::strerror(errno);
  }
  auto kept = (*store)->Stat("rs/secret");
  ASSERT_TRUE(kept) << kept.error().ToString();
  EXPECT_EQ(kept->mode, 0640u);
  EXPECT_EQ(kept->mtime_ns, 981173106'000'000'000);
  if (root) {
    EXPECT_EQ(kept->uid, 77);
  }
  EXPECT_EQ(Slurp(data + "/rs/secret"), Slurp(src + "/secret"));
  // A new file keeps open(2)'s mode.
  int fd = ::open((data + "/made-0600").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ASSERT_EQ(::close(fd), 0);
  kept = (*store)->Stat("made-0600");
  ASSERT_TRUE(kept) << kept.error().ToString();
  EXPECT_EQ(kept->mode, 0600u);
}

// Issue 32 item 11: the errno of names and paths too long, and extended
// attributes answered once for the whole mount.
TEST_F(FuseWriteTest, LongNamesAndPathsAreEnametoolongAndXattrsAreNotSupported) {
  const std::string long_name(256, 'n');
  EXPECT_EQ(::open((data_ + "/" + long_name).c_str(), O_WRONLY | O_CREAT, 0644), -1);
  EXPECT_EQ(errno, ENAMETOOLONG);
  struct stat st;
  EXPECT_EQ(::stat((data_ + "/" + long_name).c_str(), &st), -1);
  EXPECT_EQ(errno, ENAMETOOLONG);
  EXPECT_EQ(::mkdir((data_ + "/" + long_name).c_str(), 0755), -1);
  EXPECT_EQ(errno, ENAMETOOLONG);
  const std::string name255(255, 'm');
  int fd = ::open((data_ + "/" + name255).c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0) << errno;  // 255 bytes is fine
  EXPECT_EQ(::write(fd, "x", 1), 1);
  EXPECT_EQ(::close(fd), 0);
  EXPECT_EQ(::rename((data_ + "/" + name255).c_str(), (data_ + "/" + long_name).c_str()), -1);
  EXPECT_EQ(errno, ENAMETOOLONG);
  EXPECT_TRUE(fs::exists(store_ + "/" + name255));

  // Directories nested by relative opens until the namespace path
  // (/data/...) would pass PATH_MAX: that level is ENAMETOOLONG.
  const std::string level(200, 'd');
  int dir = ::open(data_.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0) << errno;
  size_t path_len = std::string("/data").size();
  int depth = 0;
  for (;;) {
    path_len += 1 + level.size();
    int rc = ::mkdirat(dir, level.c_str(), 0755);
    if (path_len > 4095) {
      EXPECT_EQ(rc, -1);
      EXPECT_EQ(errno, ENAMETOOLONG) << "at depth " << depth;
      break;
    }
    ASSERT_EQ(rc, 0) << "at depth " << depth << ": " << std::strerror(errno);
    int next = ::openat(dir, level.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(next, 0) << errno;
    ::close(dir);
    dir = next;
    ++depth;
  }
  ::close(dir);
  EXPECT_EQ(depth, 20);

  // No extended attributes: EOPNOTSUPP, from the daemon once, then from the kernel.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(::getxattr((data_ + "/" + name255).c_str(), "user.x", nullptr, 0), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
    EXPECT_EQ(::listxattr((data_ + "/" + name255).c_str(), nullptr, 0), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
  }
}

}  // namespace
}  // namespace shoal::testing
