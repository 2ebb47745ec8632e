// `shoal put / rm / mkdir / rmdir / mv` end to end against real workers: a
// round trip through the CLI, seen at once by `shoal cat` and `shoal ls`
// (whose workers cached the old state), and the exit codes of refusals.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "tests/cli_helpers.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class CliWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("cli-write");
    ASSERT_FALSE(dir_.empty());
    fs::create_directories(dir_ + "/ufs");
    MountConfig data = FileMount(dir_ + "/ufs");
    data.ttl = 1h;  // nothing expires during the test
    MountConfig ro = data;
    ro.path = "/ro";
    ro.read_only = true;
    ShoalCluster::Options o;
    o.workers = 2;
    o.mounts = {data, ro};
    auto c = ShoalCluster::Start(o);
    ASSERT_TRUE(c) << c.error().ToString();
    cluster_ = std::move(*c);
    config_ = dir_ + "/client.yaml";
    ASSERT_TRUE(WriteFile(config_, cluster_->ClientYaml()).ok());
  }
  void TearDown() override {
    cluster_.reset();
    fs::remove_all(dir_);
  }

  shoal::testing::Run Cmd(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--config", config_});
    return Shoal(std::move(args));
  }

  std::string dir_, config_;
  std::unique_ptr<ShoalCluster> cluster_;
};

TEST_F(CliWriteTest, PutRmMkdirRmdirMvRoundTrip) {
  const std::string big = RandomBytes(9 * 1024 * 1024 + 5, 3);
  ASSERT_TRUE(WriteFile(dir_ + "/local.bin", big).ok());
  auto put = Cmd({"put", dir_ + "/local.bin", "/data/ckpt/model.bin"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_EQ(put.err, "") << "no progress line without a terminal";
  auto cat = Cmd({"cat", "/data/ckpt/model.bin"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_TRUE(cat.out == big);
  EXPECT_TRUE(Slurp(dir_ + "/ufs/ckpt/model.bin") == big) << "not in the under-store";

  // stdin, over the file just read (its workers hold the old version).
  std::string piped =
      "printf 'from stdin' | '" + ShoalBinary() + "' put --config '" + config_ + "' - /data/ckpt/model.bin";
  int rc = std::system(piped.c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << rc;
  EXPECT_EQ(Cmd({"cat", "/data/ckpt/model.bin"}).out, "from stdin");

  // mkdir, ls, mv, rmdir, rm: each seen by the next command at once.
  EXPECT_EQ(Cmd({"ls", "/data/ckpt"}).out, "model.bin\n");
  auto mkdir = Cmd({"mkdir", "/data/ckpt/old", "/data/ckpt/tmp"});
  ASSERT_EQ(mkdir.exit_code, 0) << mkdir.err;
  EXPECT_EQ(Cmd({"ls", "/data/ckpt"}).out, "model.bin\nold/\ntmp/\n");
  auto mv = Cmd({"mv", "/data/ckpt/model.bin", "/data/ckpt/old/model.bin"});
  ASSERT_EQ(mv.exit_code, 0) << mv.err;
  EXPECT_EQ(Cmd({"ls", "/data/ckpt"}).out, "old/\ntmp/\n");
  EXPECT_EQ(Cmd({"cat", "/data/ckpt/old/model.bin"}).out, "from stdin");
  auto rmdir = Cmd({"rmdir", "/data/ckpt/tmp"});
  ASSERT_EQ(rmdir.exit_code, 0) << rmdir.err;
  auto rm = Cmd({"rm", "/data/ckpt/old/model.bin"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(Cmd({"ls", "/data/ckpt"}).out, "old/\n");
  EXPECT_EQ(Cmd({"ls", "/data/ckpt/old"}).out, "");
  EXPECT_FALSE(fs::exists(dir_ + "/ufs/ckpt/old/model.bin"));
}

TEST_F(CliWriteTest, RefusalsAreOneLineWithTheirExitCodes) {
  ASSERT_TRUE(WriteFile(dir_ + "/ufs/keep/file", "keep").ok());
  ASSERT_TRUE(WriteFile(dir_ + "/local", "x").ok());
  auto expect = [](const shoal::testing::Run& r, int code, const std::string& needle) {
    EXPECT_EQ(r.exit_code, code) << r.err;
    EXPECT_TRUE(r.err.starts_with("shoal: error: ")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  };
  // Read-only mount: 4, naming the mount, for every write.
  expect(Cmd({"put", dir_ + "/local", "/ro/keep/new"}), 4, "mount /ro is read-only");
  expect(Cmd({"rm", "/ro/keep/file"}), 4, "mount /ro is read-only");
  expect(Cmd({"mkdir", "/ro/keep/d"}), 4, "mount /ro is read-only");
  expect(Cmd({"rmdir", "/ro/keep"}), 4, "mount /ro is read-only");
  expect(Cmd({"mv", "/ro/keep/file", "/ro/keep/moved"}), 4, "mount /ro is read-only");
  // Missing things: 3.
  expect(Cmd({"rm", "/data/keep/missing"}), 3, "/data/keep/missing");
  expect(Cmd({"put", dir_ + "/no-such-local", "/data/keep/x"}), 3, "no-such-local");
  expect(Cmd({"mv", "/data/keep/missing", "/data/keep/x"}), 3, "/data/keep/missing");
  // The rest: 1, with what to do.
  expect(Cmd({"rmdir", "/data/keep"}), 1, "not empty");
  expect(Cmd({"rm", "/data/keep"}), 1, "rmdir removes an empty one");
  expect(Cmd({"put", "-n", dir_ + "/local", "/data/keep/file"}), 1, "exists");
  expect(Cmd({"put", dir_, "/data/keep/file"}), 2, "is a directory");
  // Nothing changed.
  EXPECT_EQ(Slurp(dir_ + "/ufs/keep/file"), "keep");
  EXPECT_EQ(Cmd({"ls", "/data/keep"}).out, "file\n");
}

}  // namespace
}  // namespace shoal::testing

namespace shoal::testing {
namespace {

// `shoal cp` into Shoal: a file, a directory tree (-r) round trip, the JSON
// lines it prints without a terminal, and exit codes when some files fail.
TEST_F(CliWriteTest, CpUploadsFilesAndTreesAndRoundTrips) {
  const std::string src = dir_ + "/tree";
  std::map<std::string, std::string> files = {{"a.bin", RandomBytes(3 * 1024 * 1024 + 1, 1)},
                                              {"empty", ""},
                                              {"sub/b.txt", "bee"},
                                              {"sub/deeper/c.bin", RandomBytes(300 * 1024, 2)},
                                              {"sub/deeper/d", "d"}};
  for (const auto& [rel, data] : files) {
    fs::create_directories(fs::path(src + "/" + rel).parent_path());
    ASSERT_TRUE(WriteFile(src + "/" + rel, data).ok());
  }
  fs::create_directories(src + "/emptydir");

  // One file, to a path.
  auto one = Cmd({"cp", src + "/a.bin", "/data/one.bin"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(Slurp(dir_ + "/ufs/one.bin") == files["a.bin"]);

  // A tree, into a new directory; JSON lines on stdout (not a terminal).
  auto tree = Cmd({"cp", "-r", "-j", "3", src, "/data/up"});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_EQ(CountLines(tree.out, "\"event\":\"file\""), 5) << tree.out;
  EXPECT_EQ(CountLines(tree.out, "\"event\":\"done\""), 1) << tree.out;
  EXPECT_NE(tree.out.find("\"files_done\":5"), std::string::npos) << tree.out;
  for (const auto& [rel, data] : files) {
    SCOPED_TRACE(rel);
    EXPECT_TRUE(Slurp(dir_ + "/ufs/up/" + rel) == data) << "not in the under-store";
    // And out again through the CLI.
    auto out = Cmd({"cp", "-q", "/data/up/" + rel, dir_ + "/back"});
    ASSERT_EQ(out.exit_code, 0) << out.err;
    EXPECT_TRUE(Slurp(dir_ + "/back") == data);
  }
  EXPECT_TRUE(fs::is_directory(dir_ + "/ufs/up/emptydir"));
  // Into an existing directory: as its own name below it.
  auto again = Cmd({"cp", "-r", "-q", src + "/sub", "/data/up/sub"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Slurp(dir_ + "/ufs/up/sub/sub/b.txt"), "bee");
}

TEST_F(CliWriteTest, CpReportsEachFailureAndExitsNonZero) {
  // A directory without -r: a usage error, nothing written.
  fs::create_directories(dir_ + "/d");
  ASSERT_TRUE(WriteFile(dir_ + "/d/x", "x").ok());
  auto no_r = Cmd({"cp", dir_ + "/d", "/data/d"});
  EXPECT_EQ(no_r.exit_code, 2);
  EXPECT_NE(no_r.err.find("cp -r"), std::string::npos) << no_r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/ufs/d"));

  // A missing source among good ones: the good ones go, the run exits 3.
  auto mixed = Cmd({"cp", "-q", dir_ + "/d/x", dir_ + "/missing", "/data/mixed/"});
  EXPECT_EQ(mixed.exit_code, 3) << mixed.err;
  EXPECT_EQ(CountLines(mixed.err, "shoal: error:"), 1) << mixed.err;
  EXPECT_NE(mixed.err.find("missing"), std::string::npos) << mixed.err;
  EXPECT_EQ(Slurp(dir_ + "/ufs/mixed/x"), "x");

  // A read-only mount: every file fails, each one line, exit 4.
  auto ro = Cmd({"cp", "-r", dir_ + "/d", "/ro/d"});
  EXPECT_EQ(ro.exit_code, 4) << ro.err;
  EXPECT_GE(CountLines(ro.err, "read-only"), 1) << ro.err;
  EXPECT_NE(ro.out.find("\"event\":\"error\""), std::string::npos) << ro.out;
  EXPECT_NE(ro.out.find("\"files_failed\":1"), std::string::npos) << ro.out;

  // Neither side in Shoal.
  auto local = Cmd({"cp", dir_ + "/d/x", dir_ + "/y"});
  EXPECT_EQ(local.exit_code, 2);
  EXPECT_NE(local.err.find("neither"), std::string::npos) << local.err;
}

}  // namespace
}  // namespace shoal::testing
