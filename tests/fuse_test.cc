// The FUSE mount end to end: `shoal fuse` over a real cluster (ShoalCluster)
// on an S3 server (s3rver), read with ordinary POSIX calls and tools (cmp,
// tar, fio), and unmounted every way. Skipped only where /dev/fuse is absent.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/cli_helpers.h"
#include "tests/harness/s3rver.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kPage = 256 * 1024;  // ShoalCluster's page and shard sizes
constexpr uint64_t kShard = 4ull << 20;

// The dataset: relative path -> size. Page and shard boundaries, empty and
// one-byte files, names with spaces and unicode, nesting.
const std::map<std::string, uint64_t>& Dataset() {
  static const std::map<std::string, uint64_t> d = {
      {"empty", 0},
      {"one", 1},
      {"page-1", kPage - 1},
      {"page", kPage},
      {"page+1", kPage + 1},
      {"shard-1", kShard - 1},
      {"shard", kShard},
      {"shard+1", kShard + 1},
      {"big.bin", 2 * kShard + 3 * kPage + 17},
      {"with space.bin", 1000},
      {"ünïcødé 数据.bin", 2000},
      {"dir/x.txt", 12},
      {"dir/sub/deep.bin", kPage * 3 + 5},
      {"small/a0", 10'000},
      {"small/a1", 60'000},
      {"small/a2", 130'000},
  };
  return d;
}

std::string Bytes(const std::string& rel, uint64_t size) { return RandomBytes(size, std::hash<std::string>()(rel)); }

// The whole file read with read(2), or "<errno N>".
std::string ReadPosix(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "<errno " + std::to_string(errno) + ">";
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return "<errno " + std::to_string(e) + ">";
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Drops the kernel's cached pages of a file, so the next read goes to the daemon.
void DropPageCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// How many of a file's pages the kernel has cached (mincore over a mapping).
size_t ResidentPages(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return 0;
  struct stat st;
  ::fstat(fd, &st);
  size_t len = static_cast<size_t>(st.st_size);
  void* p = len ? ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  size_t n = 0;
  if (p != MAP_FAILED) {
    std::vector<unsigned char> vec((len + 4095) / 4096);
    if (::mincore(p, len, vec.data()) == 0) {
      for (auto v : vec) n += v & 1;
    }
    ::munmap(p, len);
  }
  ::close(fd);
  return n;
}

// Gone, or a zombie nobody has reaped yet.
bool ProcessGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

template <typename F>
bool Eventually(F f, std::chrono::seconds limit = 30s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

class FuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no usable /dev/fuse on this machine";
    auto s3 = S3rverProcess::Start();
    ASSERT_TRUE(s3) << s3.error().ToString();
    s3_ = std::make_unique<S3rverProcess>(std::move(*s3));
    ASSERT_TRUE(s3_->CreateBucket("fuse").ok());
    auto scratch = MakeScratchDir("fuse-test", "the FUSE test");
    ASSERT_TRUE(scratch) << scratch.error().ToString();
    scratch_ = *scratch;
    src_ = scratch_->path + "/src";
    mnt_ = scratch_->path + "/mnt";
    fs::create_directories(src_);
    fs::create_directories(mnt_);

    auto mount = [&](std::string path, Consistency c, std::string prefix) {
      MountConfig m;
      m.path = std::move(path);
      m.ufs = "s3://fuse/" + prefix;
      m.consistency = c;
      m.ttl = 1h;
      m.options = {{"endpoint", s3_->endpoint()},
                   {"region", "us-east-1"},
                   {"access_key_id", S3rverProcess::kAccessKeyId},
                   {"secret_access_key", S3rverProcess::kSecretAccessKey}};
      return m;
    };
    ShoalCluster::Options o;
    o.workers = 3;
    o.mounts = {mount("/data", Consistency::kTtl, "data/"), mount("/always", Consistency::kAlways, "data/"),
                mount("/ro", Consistency::kImmutable, "data/")};
    o.mounts[2].read_only = true;
    auto ufs = OpenUnderStore(o.mounts[0]);
    ASSERT_TRUE(ufs) << ufs.error().ToString();
    ufs_ = *ufs;
    for (const auto& [rel, size] : Dataset()) Put(rel, Bytes(rel, size));

    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    config_ = scratch_->path + "/shoal.yaml";
    ASSERT_TRUE(WriteFile(config_, cluster_->ClientYaml()).ok());
    ASSERT_NO_FATAL_FAILURE(Mount(mnt_, &pid_));
  }

  void TearDown() override {
    for (auto& [mp, pid] : mounts_) {
      if (Mounted(mp)) Shoal({"fuse", "--unmount", mp}, 60s);
      if (Mounted(mp)) ::umount2(mp.c_str(), MNT_DETACH);
      if (pid > 0 && !Eventually([p = pid] { return ProcessGone(p); }, 10s)) ::kill(pid, SIGKILL);
    }
    cluster_.reset();
    s3_.reset();
  }

  // The object under the three mounts, and the same file in the local source tree.
  void Put(const std::string& rel, const std::string& data) {
    ASSERT_TRUE(ufs_->Write(rel, data).ok()) << rel;
    ASSERT_TRUE(WriteFile(src_ + "/" + rel, data).ok());
  }

  // `shoal fuse MP` in the background; *pid is the daemon's.
  void Mount(const std::string& mp, pid_t* pid, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"fuse", mp, "--config", config_};
    args.insert(args.end(), extra.begin(), extra.end());
    shoal::testing::Run r = Shoal(args, 90s);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    ASSERT_NE(r.out.find("mounted: " + mp), std::string::npos) << r.out;
    auto at = r.out.find("(pid ");
    ASSERT_NE(at, std::string::npos) << r.out;
    *pid = std::stoi(r.out.substr(at + 5));
    log_ = r.out.substr(r.out.find("log ") + 4);
    log_ = log_.substr(0, log_.find(')'));
    mounts_.emplace_back(mp, *pid);
    ASSERT_TRUE(Mounted(mp));
  }

  std::string Daemonlog() const { return Slurp(log_); }

  std::unique_ptr<S3rverProcess> s3_;
  std::shared_ptr<ScratchDir> scratch_;
  std::string src_, mnt_, config_, log_;
  std::shared_ptr<UnderStore> ufs_;
  std::unique_ptr<ShoalCluster> cluster_;
  pid_t pid_ = -1;
  std::vector<std::pair<std::string, pid_t>> mounts_;
};

TEST_F(FuseTest, EveryFileIsTheSameThroughTheMount) {
  for (const auto& [rel, size] : Dataset()) {
    const std::string path = mnt_ + "/data/" + rel;
    std::string got = ReadPosix(path);
    EXPECT_EQ(got.size(), size) << rel << " " << got.substr(0, 40);
    EXPECT_TRUE(got == Bytes(rel, size)) << rel;
    std::string cmd = "cmp -s '" + path + "' '" + src_ + "/" + rel + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << rel;
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), size) << rel;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << rel;
  }
  // The root shows each mount as a directory.
  std::set<std::string> top;
  for (const auto& e : fs::directory_iterator(mnt_)) top.insert(e.path().filename());
  EXPECT_EQ(top, (std::set<std::string>{"always", "data", "ro"}));
  // A missing name is ENOENT; extended attributes are not supported.
  EXPECT_EQ(ReadPosix(mnt_ + "/data/nope"), "<errno " + std::to_string(ENOENT) + ">");
  EXPECT_EQ(::getxattr((mnt_ + "/data/one").c_str(), "user.x", nullptr, 0), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(FuseTest, WalkAndStatEqualTheSource) {
  auto walk = [](const std::string& root) {
    std::map<std::string, std::pair<bool, uint64_t>> out;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      std::string rel = fs::relative(e.path(), root);
      bool dir = e.is_directory();
      out[rel] = {dir, dir ? 0 : e.file_size()};
    }
    return out;
  };
  auto src = walk(src_);
  auto mnt = walk(mnt_ + "/data");
  EXPECT_EQ(src, mnt);
  EXPECT_GE(mnt.size(), Dataset().size());
  // The same walk again, answered from the kernel's caches, is the same.
  EXPECT_EQ(walk(mnt_ + "/data"), src);
}

TEST_F(FuseTest, TarOfTheMountHoldsTheSameBytesAsTheSource) {
  std::string out = scratch_->path + "/untar";
  fs::create_directories(out);
  std::string cmd = "tar cf - -C '" + mnt_ + "/data' . | tar xf - -C '" + out + "' && diff -r '" + src_ + "' '" + out +
                    "' >/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // diff -r would also pass on two empty trees: check one file arrived.
  EXPECT_TRUE(fs::exists(out + "/ünïcødé 数据.bin"));
  EXPECT_EQ(fs::file_size(out + "/big.bin"), Dataset().at("big.bin"));
}

TEST_F(FuseTest, RandomPreadsFromSeveralThreads) {
  const std::string want = Bytes("big.bin", Dataset().at("big.bin"));
  const std::string path = mnt_ + "/data/big.bin";
  std::atomic<int> bad{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      int fd = ::open(path.c_str(), O_RDONLY);
      if (fd < 0) return void(++bad);
      std::mt19937_64 rng(t);
      std::string buf(600 * 1024, '\0');
      for (int i = 0; i < 150; ++i) {
        uint64_t off = rng() % want.size();
        size_t len = 1 + rng() % buf.size();
        if (i % 10 == 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // back to the daemon
        ssize_t n = ::pread(fd, buf.data(), len, static_cast<off_t>(off));
        size_t expect = std::min<uint64_t>(len, want.size() - off);
        if (n != static_cast<ssize_t>(expect) || buf.compare(0, expect, want, off, expect) != 0) ++bad;
        ++done;
      }
      ::close(fd);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(done.load(), 6 * 150);
}

TEST_F(FuseTest, FioSequentialAndRandomReadsVerify) {
  ASSERT_EQ(std::system("command -v fio >/dev/null"), 0) << "fio is missing: run scripts/bootstrap";
  // fio writes files with a checksum in every 4 KiB block; they go to the store.
  std::string local = scratch_->path + "/fio-src";
  fs::create_directories(local);
  const std::string common =
      " --bs=256k --size=24m --nrfiles=3 --verify=crc32c --verify_interval=4k"
      " --filename_format='f.$filenum' ";
  std::string write = "fio --name=w --directory='" + local + "' --rw=write --do_verify=0" + common + ">/dev/null";
  ASSERT_EQ(std::system(write.c_str()), 0) << write;
  for (const auto& e : fs::directory_iterator(local)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), {});
    ASSERT_NO_FATAL_FAILURE(Put("fio/" + e.path().filename().string(), data));
  }
  const std::string dir = mnt_ + "/data/fio";
  const std::string out = scratch_->path + "/fio.out";
  for (std::string job : {"--name=seq --rw=read --numjobs=1", "--name=seq4 --rw=read --numjobs=4",
                          "--name=rnd --rw=randread --bs=4k --numjobs=4"}) {
    // (a later --bs overrides the common one: 4 KiB random reads, each checked)
    std::string cmd = "fio --readonly --directory='" + dir + "'" + common + job + " >'" + out + "' 2>&1";
    int rc = std::system(cmd.c_str());
    std::string report = Slurp(out);
    EXPECT_EQ(rc, 0) << cmd << "\n" << report;
    EXPECT_EQ(report.find("verify failed"), std::string::npos) << report;
    EXPECT_NE(report.find("READ:"), std::string::npos) << report;
  }
}

TEST_F(FuseTest, AWorkerKilledDuringReadsCostsNoError) {
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        for (const auto& [rel, size] : Dataset()) {
          const std::string path = mnt_ + "/data/" + rel;
          DropPageCache(path);  // every pass reads through the daemon
          if (ReadPosix(path) != Bytes(rel, size)) ++errors;
          ++reads;
        }
      }
    });
  }
  ASSERT_TRUE(Eventually([&] { return reads.load() >= 30; }));
  cluster_->Kill(1);
  int at_kill = reads.load();
  EXPECT_TRUE(Eventually([&] { return reads.load() >= at_kill + 100; }, 120s));
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(errors.load(), 0) << Daemonlog();
}

// Workers and store both unreachable: EIO once the client's deadline has
// passed, never a hang; and the daemon carries on once they are back.
TEST_F(FuseTest, UnreachableIsEioAfterTheDeadlineAndTheDaemonSurvivesRestarts) {
  ClientConfig quick;
  quick.timeout = 3s;
  config_ = scratch_->path + "/quick.yaml";
  ASSERT_TRUE(WriteFile(config_, cluster_->ClientYaml(quick)).ok());
  const std::string mp = scratch_->path + "/quick";
  fs::create_directories(mp);
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(Mount(mp, &pid));
  const std::string path = mp + "/data/dir/sub/deep.bin";
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);  // the entry is known; its bytes are not read yet
  for (size_t i = 0; i < 3; ++i) cluster_->Kill(i);
  ASSERT_TRUE(s3_->Freeze());
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ReadPosix(path), "<errno " + std::to_string(EIO) + ">");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 30s);  // bounded by the 3 s deadline (open and read), with room for a loaded machine
  s3_->Thaw();
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(cluster_->Restart(i).ok());
  EXPECT_TRUE(Eventually([&] {
    return ReadPosix(path) == Bytes("dir/sub/deep.bin", Dataset().at("dir/sub/deep.bin"));
  })) << Daemonlog();
  EXPECT_FALSE(ProcessGone(pid));
}

TEST_F(FuseTest, KernelCachingFollowsTheConsistencyMode) {
  const std::string a = RandomBytes(3 * kPage + 7, 11), b = RandomBytes(a.size(), 12),
                    c = RandomBytes(a.size() * 2, 13);
  ASSERT_NO_FATAL_FAILURE(Put("changing", a));
  const std::string ttl = mnt_ + "/data/changing", always = mnt_ + "/always/changing";
  ASSERT_TRUE(ReadPosix(ttl) == a);
  ASSERT_TRUE(ReadPosix(always) == a);
  // An unchanged version keeps the kernel's pages across opens (keep_cache):
  // a second epoch reads from the page cache.
  EXPECT_EQ(ResidentPages(ttl), (a.size() + 4095) / 4096);
  ASSERT_TRUE(ReadPosix(ttl) == a);
  EXPECT_EQ(ResidentPages(ttl), (a.size() + 4095) / 4096);

  ASSERT_NO_FATAL_FAILURE(Put("changing", b));  // same size, other bytes
  // always: revalidated at open; the old pages are dropped.
  EXPECT_TRUE(ReadPosix(always) == b);
  // ttl (1 h): the old version, from the kernel and the workers, until a refresh.
  EXPECT_TRUE(ReadPosix(ttl) == a);
  auto client = cluster_->NewClient();
  ASSERT_TRUE(client);
  ASSERT_TRUE((*client)->Refresh("/data/changing", false, false).ok());
  EXPECT_TRUE(ReadPosix(ttl) == b);  // the kernel still has the entry cached: the open revalidated

  ASSERT_NO_FATAL_FAILURE(Put("changing", c));  // grows
  EXPECT_TRUE(ReadPosix(always) == c);
  ASSERT_TRUE((*client)->Refresh("/data/changing", false, false).ok());
  EXPECT_TRUE(ReadPosix(ttl) == c);
  struct stat st;
  ASSERT_EQ(::stat(ttl.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), c.size());  // the open dropped the cached size

  // A new name: always sees it at once; ttl caches the negative entry.
  EXPECT_EQ(ReadPosix(mnt_ + "/data/later"), "<errno " + std::to_string(ENOENT) + ">");
  ASSERT_NO_FATAL_FAILURE(Put("later", "x"));
  EXPECT_EQ(ReadPosix(mnt_ + "/always/later"), "x");
}

// Once the kernel has served a file from its page cache, the next open only
// checks the version (no bytes); a read that does reach the mount (the pages
// were dropped) still gets every byte, and the open after it brings them again.
TEST_F(FuseTest, AnOpenTheKernelServesFetchesNoBytes) {
  const std::string data = RandomBytes(100 * 1024 + 3, 21);
  ASSERT_NO_FATAL_FAILURE(Put("held", data));
  const std::string path = mnt_ + "/data/held";
  auto served = [&] {
    auto a = WorkerMetricSum(cluster_->addresses(), "shoal_short_circuit_bytes_total");
    auto b = WorkerMetricSum(cluster_->addresses(), "shoal_cache_hit_bytes_total");
    return (a ? *a : -1.0) + (b ? *b : -1.0);
  };
  ASSERT_TRUE(ReadPosix(path) == data);  // first open: the kernel had nothing
  ASSERT_TRUE(ReadPosix(path) == data);  // kept pages, no read reached the mount
  const double before = served();
  ASSERT_TRUE(ReadPosix(path) == data);
  EXPECT_EQ(served(), before) << "an open of a file the kernel holds brought its bytes";
  DropPageCache(path);
  ASSERT_TRUE(ReadPosix(path) == data);  // the read reaches the mount and fetches them
  EXPECT_GE(served() - before, static_cast<double>(data.size()));
  DropPageCache(path);
  ASSERT_TRUE(ReadPosix(path) == data);  // the open brings them again
}

// Writes a whole file with write(2) in `chunk`-sized pieces; returns close(2)'s errno (0: OK).
int WritePosix(const std::string& path, const std::string& data, int flags, size_t chunk = 1 << 20,
               bool fsync_first = false) {
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return errno;
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::write(fd, data.data() + done, std::min(chunk, data.size() - done));
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      return e;
    }
    done += static_cast<size_t>(n);
  }
  if (fsync_first && ::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    return e;
  }
  return ::close(fd) == 0 ? 0 : errno;
}

// What the store holds under a key, or "<absent>".
std::string Stored(UnderStore& ufs, const std::string& key) {
  auto info = ufs.Stat(key);
  if (!info) return "<absent>";
  std::string out(info->size, '\0');
  auto n = ufs.Read(key, 0, std::span<char>(out.data(), out.size()), {});
  if (!n) return "<error>";
  return out;
}

TEST_F(FuseTest, NewFilesAreWrittenThroughToTheStore) {
  const std::string big = RandomBytes(3 * kShard + 12345, 21);
  // cp-like: sequential 1 MiB writes, committed at close.
  EXPECT_EQ(WritePosix(mnt_ + "/data/out/new.bin", big, O_WRONLY | O_CREAT | O_TRUNC),
            ENOENT);  // no such directory yet
  ASSERT_EQ(::mkdir((mnt_ + "/data/out").c_str(), 0755), 0) << errno;
  ASSERT_EQ(WritePosix(mnt_ + "/data/out/new.bin", big, O_WRONLY | O_CREAT | O_TRUNC), 0);
  EXPECT_TRUE(Stored(*ufs_, "out/new.bin") == big);
  EXPECT_TRUE(ReadPosix(mnt_ + "/data/out/new.bin") == big);
  DropPageCache(mnt_ + "/data/out/new.bin");
  EXPECT_TRUE(ReadPosix(mnt_ + "/data/out/new.bin") == big);    // from the cluster, not the kernel
  EXPECT_TRUE(ReadPosix(mnt_ + "/always/out/new.bin") == big);  // and through another mount of the store
  // Small odd-sized writes, fsync (the durability point), then close.
  const std::string small = RandomBytes(100'003, 22);
  ASSERT_EQ(WritePosix(mnt_ + "/data/out/small.bin", small, O_WRONLY | O_CREAT | O_EXCL, 4097, true), 0);
  EXPECT_TRUE(Stored(*ufs_, "out/small.bin") == small);
  // O_EXCL on an existing name: EEXIST, nothing changed.
  EXPECT_EQ(WritePosix(mnt_ + "/data/out/small.bin", "x", O_WRONLY | O_CREAT | O_EXCL), EEXIST);
  // O_TRUNC on an existing file: a new file replacing it.
  ASSERT_EQ(WritePosix(mnt_ + "/data/out/small.bin", "replaced", O_WRONLY | O_TRUNC), 0);
  EXPECT_EQ(Stored(*ufs_, "out/small.bin"), "replaced");
  EXPECT_EQ(ReadPosix(mnt_ + "/data/out/small.bin"), "replaced");
  // A shell redirection: open, dup onto stdout, close the first descriptor, then write.
  std::string cmd = "echo hello > '" + mnt_ + "/data/out/echo.txt'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(Stored(*ufs_, "out/echo.txt"), "hello\n");
  // An empty file (committed at the last close).
  ASSERT_EQ(WritePosix(mnt_ + "/data/out/empty", "", O_WRONLY | O_CREAT | O_TRUNC), 0);
  EXPECT_TRUE(Eventually([&] { return Stored(*ufs_, "out/empty").empty(); }));
  struct stat st;
  ASSERT_EQ(::stat((mnt_ + "/data/out/empty").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);

  // rename (S3: a server-side copy and a delete), unlink, rmdir.
  ASSERT_EQ(::rename((mnt_ + "/data/out/echo.txt").c_str(), (mnt_ + "/data/out/moved.txt").c_str()), 0) << errno;
  EXPECT_EQ(Stored(*ufs_, "out/echo.txt"), "<absent>");
  EXPECT_EQ(Stored(*ufs_, "out/moved.txt"), "hello\n");
  EXPECT_EQ(ReadPosix(mnt_ + "/data/out/moved.txt"), "hello\n");
  EXPECT_EQ(ReadPosix(mnt_ + "/data/out/echo.txt"), "<errno " + std::to_string(ENOENT) + ">");
  EXPECT_EQ(::rmdir((mnt_ + "/data/out").c_str()), -1);
  EXPECT_EQ(errno, ENOTEMPTY);
  for (auto f : {"new.bin", "small.bin", "moved.txt", "empty"}) {
    EXPECT_EQ(::unlink((mnt_ + "/data/out/" + f).c_str()), 0) << f << " " << errno;
    EXPECT_EQ(Stored(*ufs_, std::string("out/") + f), "<absent>") << f;
  }
  EXPECT_EQ(::rmdir((mnt_ + "/data/out").c_str()), 0) << errno;
  EXPECT_FALSE(fs::exists(mnt_ + "/data/out"));
  EXPECT_EQ(::unlink((mnt_ + "/data/nope").c_str()), -1);
  EXPECT_EQ(errno, ENOENT);
}

TEST_F(FuseTest, RefusedWritesSayWhyAndChangeNothing) {
  const std::string one = Bytes("one", 1);
  // Read-only mount: EROFS for every write.
  EXPECT_EQ(WritePosix(mnt_ + "/ro/new", "x", O_WRONLY | O_CREAT | O_TRUNC), EROFS);
  EXPECT_EQ(WritePosix(mnt_ + "/ro/one", "x", O_WRONLY | O_TRUNC), EROFS);
  EXPECT_EQ(::mkdir((mnt_ + "/ro/d").c_str(), 0755), -1);
  EXPECT_EQ(errno, EROFS);
  EXPECT_EQ(::unlink((mnt_ + "/ro/one").c_str()), -1);
  EXPECT_EQ(errno, EROFS);
  EXPECT_EQ(::rename((mnt_ + "/ro/one").c_str(), (mnt_ + "/ro/two").c_str()), -1);
  EXPECT_EQ(errno, EROFS);
  EXPECT_EQ(::access((mnt_ + "/ro/one").c_str(), W_OK), -1);
  EXPECT_EQ(errno, EROFS);
  // A write-only file is streamed to the store in order: a write behind its
  // end is EOPNOTSUPP, and nothing is created (tests/fuse_write_test.cc has
  // the read-write opens that may write anywhere).
  int fd = ::open((mnt_ + "/data/behind").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << errno;
  EXPECT_EQ(::write(fd, "abcdef", 6), 6);
  EXPECT_EQ(::pwrite(fd, "xyz", 3, 2), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(::close(fd), -1);  // close reports that the file was not written
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(Stored(*ufs_, "behind"), "<absent>");
  // Writing through a write-only descriptor after its commit (a close of a duplicate).
  fd = ::open((mnt_ + "/data/one").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0) << errno;
  EXPECT_EQ(::write(fd, one.data(), one.size()), 1);
  EXPECT_EQ(::close(::dup(fd)), 0);
  EXPECT_EQ(::write(fd, "more", 4), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(::close(fd), 0);  // the commit's answer: the first byte is written
  EXPECT_TRUE(Stored(*ufs_, "one") == one);
  EXPECT_TRUE(ReadPosix(mnt_ + "/data/one") == one);
  EXPECT_NE(Daemonlog().find("refused: /data/behind"), std::string::npos);  // and the log says why
  EXPECT_NE(Daemonlog().find("refused: /data/one"), std::string::npos);
}

TEST_F(FuseTest, UnmountEveryWayLeavesNoProcess) {
  // shoal fuse --unmount: returns once the daemon has exited.
  shoal::testing::Run r = Shoal({"fuse", "--unmount", mnt_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Mounted(mnt_));
  EXPECT_TRUE(ProcessGone(pid_));
  EXPECT_NE(Daemonlog().find("unmounted"), std::string::npos);

  // fusermount3 -u.
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(Mount(mnt_, &pid));
  EXPECT_EQ(std::system(("fusermount3 -u '" + mnt_ + "'").c_str()), 0);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(pid); }));
  EXPECT_FALSE(Mounted(mnt_));

  // SIGTERM: unmounts and exits.
  ASSERT_NO_FATAL_FAILURE(Mount(mnt_, &pid, {"--path", "/data/dir"}));
  EXPECT_EQ(ReadPosix(mnt_ + "/x.txt"), Bytes("dir/x.txt", 12));  // --path: the subtree at the root
  ::kill(pid, SIGTERM);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(pid) && !Mounted(mnt_); }));

  // --unmount of what is not mounted.
  r = Shoal({"fuse", "--unmount", mnt_});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("not mounted"), std::string::npos) << r.err;
}

// What a user other than the mount's owner may do through `-o allow_other`:
// read and list, never write in the owner's name. Runs the checks in a child
// that has dropped to `nobody`; each answers with its errno.
TEST_F(FuseTest, AllowOtherLetsOtherUsersReadButNotWriteAsTheDaemon) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  ASSERT_EQ(::chmod(scratch_->path.c_str(), 0755), 0);  // nobody must reach the mount point
  const std::string mp = scratch_->path + "/mnt-others";
  fs::create_directories(mp);
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(Mount(mp, &pid, {"-o", "allow_other"}));
  EXPECT_NE(Daemonlog().find("allow_other: other users may read"), std::string::npos) << Daemonlog();
  const std::string dir = mp + "/data";

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(99);
    // errno per step, 0 for success: read, list, create, mkdir, unlink, rename, chmod.
    int out[7];
    auto step = [](bool ok) { return ok ? 0 : errno; };
    char buf[1];
    int fd = ::open((dir + "/one").c_str(), O_RDONLY);
    out[0] = step(fd >= 0 && ::read(fd, buf, 1) == 1);
    if (fd >= 0) ::close(fd);
    DIR* d = ::opendir(dir.c_str());
    out[1] = step(d != nullptr);
    if (d) ::closedir(d);
    fd = ::open((dir + "/by-nobody").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    out[2] = step(fd >= 0);
    if (fd >= 0) ::close(fd);
    out[3] = step(::mkdir((dir + "/dir-by-nobody").c_str(), 0755) == 0);
    out[4] = step(::unlink((dir + "/page").c_str()) == 0);
    out[5] = step(::rename((dir + "/one").c_str(), (dir + "/one-renamed").c_str()) == 0);
    out[6] = step(::chmod((dir + "/one").c_str(), 0666) == 0);
    [[maybe_unused]] auto w = ::write(fds[1], out, sizeof out);
    ::_exit(0);
  }
  ::close(fds[1]);
  int got[7] = {-1, -1, -1, -1, -1, -1, -1};
  const auto n = ::read(fds[0], got, sizeof got);
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not become nobody";
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof got));
  EXPECT_EQ(got[0], 0) << "another user reads: " << std::strerror(got[0]);
  EXPECT_EQ(got[1], 0) << "another user lists: " << std::strerror(got[1]);
  EXPECT_EQ(got[2], EACCES) << "create: " << std::strerror(got[2]);
  EXPECT_EQ(got[3], EACCES) << "mkdir: " << std::strerror(got[3]);
  EXPECT_EQ(got[4], EACCES) << "unlink: " << std::strerror(got[4]);
  EXPECT_EQ(got[5], EACCES) << "rename: " << std::strerror(got[5]);
  EXPECT_EQ(got[6], EPERM) << "chmod of the owner's file: " << std::strerror(got[6]);
  // Nothing changed in the store.
  EXPECT_FALSE(ufs_->Stat("by-nobody").has_value());
  EXPECT_TRUE(ufs_->Stat("page").has_value());
  EXPECT_TRUE(ufs_->Stat("one").has_value());
  // The owner (root here) still writes.
  ASSERT_TRUE(WriteFile(dir + "/by-owner", "mine").ok());
  EXPECT_TRUE(Eventually([&] { return ufs_->Stat("by-owner").has_value(); }));
}

TEST_F(FuseTest, ClearErrorsForBadMountpoints) {
  shoal::testing::Run r = Shoal({"fuse", scratch_->path + "/missing", "--config", config_});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  r = Shoal({"fuse", config_, "--config", config_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;
  r = Shoal({"fuse", mnt_, "--config", config_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already mounted"), std::string::npos) << r.err;
  std::string other = scratch_->path + "/other";
  fs::create_directories(other);
  r = Shoal({"fuse", other, "--config", config_, "--path", "/elsewhere"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("outside every mount"), std::string::npos) << r.err;
  r = Shoal({"fuse", other, "--config", config_, "-o", "no_such_option"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no_such_option"), std::string::npos) << r.err;
  EXPECT_FALSE(Mounted(other));
}

// shoal up --fuse: one command starts the workers and mounts; SIGINT (Ctrl-C)
// unmounts before the workers stop.
TEST(UpFuseTest, UpMountsAndCtrlCUnmounts) {
  if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no usable /dev/fuse on this machine";
  auto scratch = MakeScratchDir("up-fuse", "the shoal up --fuse test");
  ASSERT_TRUE(scratch) << scratch.error().ToString();
  const std::string dir = scratch->get()->path, src = dir + "/src", mnt = dir + "/mnt";
  fs::create_directories(mnt);
  const std::string data = RandomBytes(700'000, 5);
  ASSERT_TRUE(WriteFile(src + "/train/x.bin", data).ok());
  Up up = LaunchUp({"--ufs", src, "--workers", "2", "--state-dir", dir + "/state", "--fuse", mnt}, dir + "/up.err");
  ASSERT_TRUE(up.ready) << up.err();
  EXPECT_NE(up.proc.output().find("fuse: " + mnt), std::string::npos) << up.proc.output();
  EXPECT_TRUE(Mounted(mnt));
  EXPECT_TRUE(ReadPosix(mnt + "/data/train/x.bin") == data);
  up.proc.Signal(SIGINT);
  int st = up.proc.Wait(60s);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st << up.err();
  EXPECT_FALSE(Mounted(mnt));
  if (Mounted(mnt)) ::umount2(mnt.c_str(), MNT_DETACH);

  // A mount point that cannot be used stops `shoal up` before any worker starts.
  Up bad = LaunchUp({"--ufs", src, "--state-dir", dir + "/state", "--fuse", dir + "/missing"}, dir + "/bad.err");
  EXPECT_FALSE(bad.ready);
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.err().find("--fuse"), std::string::npos) << bad.err();
}

}  // namespace
}  // namespace shoal::testing
