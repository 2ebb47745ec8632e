// The client library's log messages in a program that embeds it
// (tests/log_probe.cc): never on stdout, which carries the program's data;
// on stderr by default, or to the program's handler, or held back by level;
// and one line per event however many Clients see it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "tests/cli_helpers.h"
#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;

class LibraryLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("library-log");
    data_ = RandomBytes(300 * 1024 + 5, 7);
    ASSERT_TRUE(WriteFile(dir_ + "/ufs/x.bin", data_).ok());
    // A down worker: a port bound and never listened on refuses every
    // connection, and no other process can take it while the test runs.
    down_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(down_, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(down_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(::getsockname(down_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    worker_ = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    config_ = dir_ + "/client.yaml";
    ASSERT_TRUE(WriteFile(config_, "cluster: {workers: [\"" + worker_ + "\"]}\n" +
                                       "mounts: [{path: /data, ufs: \"file://" + dir_ + "/ufs/\"}]\n")
                    .ok());
  }
  void TearDown() override {
    if (down_ >= 0) ::close(down_);
    fs::remove_all(dir_);
  }

  shoal::testing::Run Probe(int clients, const std::string& mode) {
    return Command({SHOAL_LOG_PROBE, config_, "/data/x.bin", std::to_string(clients), mode}, std::chrono::seconds(60));
  }

  std::string Repeated(int times) const {
    std::string all;
    for (int i = 0; i < times; ++i) all += data_;
    return all;
  }

  std::string dir_, data_, config_, worker_;
  int down_ = -1;
};

TEST_F(LibraryLogTest, StdoutCarriesOnlyTheFileAndTheWarningGoesToStderr) {
  auto r = Probe(1, "default");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == data_) << "stdout holds " << r.out.size() << " bytes, not the file's " << data_.size()
                              << "; it starts: " << r.out.substr(0, 200);
  EXPECT_EQ(CountLines(r.err, "[warning] worker " + worker_ + " is down"), 1) << r.err;
}

TEST_F(LibraryLogTest, OneEventSeenByManyClientsIsOneLine) {
  auto r = Probe(12, "default");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == Repeated(12));
  // Each of the twelve clients finds the worker down; the process says so once.
  EXPECT_EQ(CountLines(r.err, "is down"), 1) << r.err;
}

TEST_F(LibraryLogTest, TheProgramsHandlerReceivesTheMessagesInsteadOfStderr) {
  auto r = Probe(5, "handler");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == Repeated(5));
  EXPECT_EQ(CountLines(r.err, "hook: warning: worker " + worker_ + " is down"), 1) << r.err;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(line.starts_with("hook: ")) << "written past the handler: " << line;
  }
}

TEST_F(LibraryLogTest, SetLogLevelHoldsBackWhatIsBelowIt) {
  auto r = Probe(2, "errors-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == Repeated(2));
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace shoal::testing
