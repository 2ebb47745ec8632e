// WebHdfsStore against tests/webhdfs_server.py: the shared conformance suite
// plus checks of the protocol details (datanode redirects, two-step writes,
// user.name, error mapping).
#include "ufs/webhdfs/webhdfs_store.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include "common/config.h"
#include "tests/harness/webhdfs.h"
#include "ufs/conformance_test.h"

namespace shoal {
namespace {

using testing::WebHdfsServer;

// One server for the whole binary, stopped (and its directory removed) at exit.
// Small pages so LISTSTATUS_BATCH paging is exercised.
WebHdfsServer* Server() {
  static std::unique_ptr<WebHdfsServer> server = [] {
    WebHdfsServer::Options o;
    o.ls_limit = 3;
    auto s = WebHdfsServer::Start(o);
    if (!s) ADD_FAILURE() << s.error().ToString();
    return s ? std::make_unique<WebHdfsServer>(std::move(*s)) : nullptr;
  }();
  return server.get();
}

MountConfig Mount(const std::string& path, std::map<std::string, std::string> options = {}) {
  static std::atomic<int> n{0};
  MountConfig m;
  m.path = "/hdfs";
  m.ufs = Server()->Uri(path.empty() ? "t" + std::to_string(n++) + "-" + std::to_string(::getpid()) : path);
  m.options = std::move(options);
  m.options.emplace("user", "tester");
  return m;
}

std::shared_ptr<UnderStore> Open(const MountConfig& m) {
  auto s = OpenUnderStore(m);
  if (!s) ADD_FAILURE() << s.error().ToString();
  return s ? *s : nullptr;
}

std::shared_ptr<UnderStore> MakeFreshWebHdfs() {
  if (!Server()) return nullptr;
  // 4 MiB chunks: the 12 MiB streamed write becomes CREATE + APPENDs.
  return Open(Mount("", {{"write_buffer", "4MiB"}, {"request_timeout", "60s"}}));
}

INSTANTIATE_TEST_SUITE_P(WebHdfs, UnderStoreConformance,
                         ::testing::Values(StoreFactory{.name = "webhdfs",
                                                        .make = MakeFreshWebHdfs,
                                                        .has_rename = true,
                                                        .renames_dirs = true,
                                                        .keeps_modes = true,
                                                        .mtime_granularity_ns = 1'000'000,
                                                        .keeps_ctime = false,
                                                        .version_names_mtime = true}),
                         [](const auto& info) { return info.param.name; });

int64_t Count(const std::string& name) {
  auto v = Server()->Counter(name);
  EXPECT_TRUE(v) << v.error().ToString();
  return v ? *v : -1;
}

TEST(WebHdfsStore, ReadFollowsDatanodeRedirect) {
  auto store = MakeFreshWebHdfs();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Write("f", std::string_view("0123456789")).ok());
  int64_t redirects = Count("open_redirects"), reads = Count("datanode_reads");
  char buf[4];
  auto n = store->Read("f", 3, buf);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(std::string(buf, *n), "3456");
  EXPECT_EQ(Count("open_redirects"), redirects + 1);
  EXPECT_EQ(Count("datanode_reads"), reads + 1);
}

TEST(WebHdfsStore, StreamedWriteIsCreateAppendsRenameAndHiddenUntilClose) {
  auto store = MakeFreshWebHdfs();
  ASSERT_NE(store, nullptr);
  int64_t creates = Count("create_redirects"), appends = Count("append_redirects");
  auto w = store->OpenWriter("dir/big");
  ASSERT_TRUE(w);
  std::string chunk(3 << 20, 'x');
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*w)->Append(chunk).ok());  // 9 MiB: two 4 MiB chunks sent
  EXPECT_EQ(Count("create_redirects"), creates + 1);
  EXPECT_EQ(Count("append_redirects"), appends + 1);
  auto st = store->Stat("dir/big");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound);
  auto listed = store->List("dir/", {});
  ASSERT_TRUE(listed) << listed.error().ToString();
  EXPECT_TRUE(listed->entries.empty()) << "the temporary file must not be listed: " << listed->entries[0].key;
  ASSERT_TRUE((*w)->Close().ok());
  st = store->Stat("dir/big");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->size, 9u << 20);
  EXPECT_EQ(Count("append_redirects"), appends + 2);
}

// The version names the file (its inode id), its time and its length: a
// file rewritten with other bytes of the same length and given back its old
// time (as rsync does) gets a new one.
TEST(WebHdfsStore, VersionNamesTheFileItsTimeAndLength) {
  auto store = MakeFreshWebHdfs();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Write("v", std::string_view("abc")).ok());
  auto st = store->Stat("v");
  ASSERT_TRUE(st);
  EXPECT_GT(st->mtime_ns, 0);
  EXPECT_TRUE(st->etag.ends_with("-" + std::to_string(st->mtime_ns / 1'000'000) + "-3")) << st->etag;
  EXPECT_EQ(st->Version(), st->etag);
  ASSERT_TRUE(store->Write("v", std::string_view("xyz")).ok());
  ASSERT_TRUE(store->SetAttributes("v", {std::nullopt, st->mtime_ns}).ok());
  auto again = store->Stat("v");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->mtime_ns, st->mtime_ns);
  EXPECT_EQ(again->size, st->size);
  EXPECT_NE(again->Version(), st->Version()) << "same time and length, other bytes: another version";
}

// CREATE, SETPERMISSION and SETTIMES carry what WebHDFS documents: the
// permission in octal (sticky bit kept, setuid and setgid dropped), times in
// milliseconds.
TEST(WebHdfsStore, ModesAreOctalAndTimesMilliseconds) {
  auto store = MakeFreshWebHdfs();
  ASSERT_NE(store, nullptr);
  WriteOptions o;
  o.mode = 04750;
  auto w = store->OpenWriter("m", o);
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->Close().ok()) << "an empty file still gets its CREATE";
  auto st = store->Stat("m");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->mode, 0750u) << std::oct << st->mode;
  ASSERT_TRUE(store->Mkdir("shared").ok());
  ASSERT_TRUE(store->SetAttributes("shared", {01777, 1'700'000'000'123'999'999}).ok());
  st = store->Stat("shared");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->mode, 01777u) << std::oct << st->mode;
  EXPECT_EQ(st->mtime_ns, 1'700'000'000'123'000'000) << "kept to the millisecond";
  // SETTIMES reads -1 as "leave it": no time before 1970 can be set.
  Status before_1970 = store->SetAttributes("shared", {std::nullopt, -1'000'000});
  EXPECT_EQ(before_1970.code(), Code::kInvalidArgument) << before_1970.ToString();
  EXPECT_NE(before_1970.message().find("1970"), std::string::npos) << before_1970.message();
}

// A stand-in namenode on loopback: `answer` gives each request (its head)
// a status line's code and text and a JSON body.
struct OddAnswer {
  std::string status = "200 OK";
  std::string body;
};
std::unique_ptr<testing::LoopbackListener> OddNamenode(std::function<OddAnswer(const std::string& head)> answer) {
  return std::make_unique<testing::LoopbackListener>([answer = std::move(answer)](int fd) {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1) head += c;
    const OddAnswer a = answer(head);
    std::string out = "HTTP/1.1 " + a.status + "\r\nContent-Type: application/json\r\nConnection: close\r\n" +
                      "Content-Length: " + std::to_string(a.body.size()) + "\r\n\r\n" + a.body;
    (void)!::write(fd, out.data(), out.size());
  });
}

// An hdfs:// mount of that namenode, without retries.
std::shared_ptr<UnderStore> OpenOdd(const testing::LoopbackListener& namenode) {
  MountConfig m;
  m.path = "/odd";
  m.ufs = "hdfs://127.0.0.1:" + std::to_string(namenode.port()) + "/data";
  m.options = {{"user", "tester"}, {"max_retries", "0"}};
  return Open(m);
}

// A namenode's JSON is untrusted: fields of the wrong type, and listings of
// the wrong shape, read as absent (a stat of zeros, an empty listing), never
// an exception out of the store or a read past the document.
TEST(WebHdfsStore, AnswersOfTheWrongShapeReadAsAbsentFields) {
  auto namenode = OddNamenode([](const std::string& head) {
    return OddAnswer{"200 OK", head.find("op=GETFILESTATUS") != std::string::npos
                                   ? R"({"FileStatus":{"type":7,"length":"12","fileId":"9","permission":["755"],)"
                                     R"("modificationTime":1.5,"pathSuffix":{}}})"
                                   : R"({"DirectoryListing":{"partialListing":5,"remainingEntries":"many"}})"};
  });
  ASSERT_NE(namenode->port(), 0);
  auto store = OpenOdd(*namenode);
  ASSERT_NE(store, nullptr);
  auto st = store->Stat("f");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_FALSE(st->is_dir);
  EXPECT_EQ(st->size, 0u);
  EXPECT_EQ(st->mtime_ns, 0);
  EXPECT_EQ(st->mode, 0u);
  EXPECT_TRUE(st->etag.empty()) << "no fileId: the version is mtime and size";
  auto listed = store->List("dir/", {});
  ASSERT_TRUE(listed) << listed.error().ToString();
  EXPECT_TRUE(listed->entries.empty());
  EXPECT_TRUE(listed->continuation.empty());
}

// Answers no namenode sends, each of which once hung, crashed or escaped:
// an entry named "." made a recursive listing list the same directory
// forever, a page that said more followed without moving on was asked for
// forever, and a RemoteException whose fields were not strings threw out of
// the store. Each is now an error naming what the namenode sent.
TEST(WebHdfsStore, EntriesNoNamenodeSendsAreErrorsNotLoopsOrEscapes) {
  std::atomic<int> listings{0};
  auto namenode = OddNamenode([&](const std::string& head) -> OddAnswer {
    if (head.find("/dot?op=LISTSTATUS_BATCH") != std::string::npos) {
      ++listings;
      return {"200 OK", R"({"DirectoryListing":{"partialListing":{"FileStatuses":{"FileStatus":[)"
                        R"({"pathSuffix":".","type":"DIRECTORY","length":0}]}},"remainingEntries":0}})"};
    }
    if (head.find("/up?op=LISTSTATUS_BATCH") != std::string::npos) {
      return {"200 OK", R"({"DirectoryListing":{"partialListing":{"FileStatuses":{"FileStatus":[)"
                        R"({"pathSuffix":"../../etc","type":"FILE","length":1}]}},"remainingEntries":0}})"};
    }
    if (head.find("/stuck?op=LISTSTATUS_BATCH") != std::string::npos) {
      ++listings;
      return {"200 OK",
              R"({"DirectoryListing":{"partialListing":{"FileStatuses":{"FileStatus":[]}},"remainingEntries":5}})"};
    }
    if (head.find("/negative?op=GETFILESTATUS") != std::string::npos) {
      return {"200 OK", R"({"FileStatus":{"pathSuffix":"","type":"FILE","length":-1}})"};
    }
    return {"404 Not Found", R"({"RemoteException":{"exception":1,"message":["x"]}})"};
  });
  ASSERT_NE(namenode->port(), 0);
  auto store = OpenOdd(*namenode);
  ASSERT_NE(store, nullptr);
  auto expect_error = [](const auto& r, std::string_view says) {
    ASSERT_FALSE(r) << "accepted";
    EXPECT_EQ(r.error().code(), Code::kIo) << r.error().ToString();
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  };
  ListOptions recursive;
  recursive.delimiter = "";
  expect_error(store->List("dot/", recursive), "an entry named '.'");
  EXPECT_EQ(listings.load(), 1) << "the entry was not followed";
  expect_error(store->List("up/", {}), "an entry named '../../etc'");
  expect_error(store->List("stuck/", {}), "does not move past");
  EXPECT_EQ(listings.load(), 2);
  expect_error(store->Stat("negative"), "negative length");
  auto missing = store->Stat("other");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Code::kNotFound) << missing.error().ToString();
}

TEST(WebHdfsStore, SendsConfiguredUserName) {
  auto store = Open(Mount("", {}));
  ASSERT_NE(store, nullptr);
  (void)store->Stat("x");
  auto user = Server()->LastUser();
  ASSERT_TRUE(user) << user.error().ToString();
  EXPECT_EQ(*user, "tester");
}

TEST(WebHdfsStore, AccessControlExceptionIsPermissionDenied) {
  WebHdfsServer::Options o;
  o.deny_user = "mallory";
  auto server = WebHdfsServer::Start(o);
  ASSERT_TRUE(server) << server.error().ToString();
  MountConfig m;
  m.path = "/secure";
  m.ufs = server->Uri("data");
  m.options = {{"user", "mallory"}};
  auto store = Open(m);
  ASSERT_NE(store, nullptr);
  auto st = store->Stat("x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kPermissionDenied) << st.error().ToString();
  EXPECT_NE(st.error().message().find("/secure"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("mallory"), std::string::npos) << st.error().message();
}

TEST(WebHdfsStore, UnreachableNamenodeIsUnavailable) {
  // A port that was free a moment ago: nothing listens there.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  MountConfig m;
  m.path = "/gone";
  m.ufs = "hdfs://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/data";
  m.options = {{"max_retries", "1"}};
  auto store = Open(m);
  ASSERT_NE(store, nullptr);
  auto st = store->Stat("x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kUnavailable) << st.error().ToString();
  EXPECT_NE(st.error().message().find("/gone"), std::string::npos) << st.error().message();
}

TEST(WebHdfsStore, UnknownOptionIsRejected) {
  MountConfig m;
  m.path = "/typo";
  m.ufs = "hdfs://127.0.0.1:1/data";
  m.options = {{"usr", "x"}};
  auto s = OpenUnderStore(m);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), Code::kInvalidArgument);
  EXPECT_NE(s.error().message().find("usr"), std::string::npos);
}

TEST(WebHdfsStore, ListPrefixWithinDirectory) {
  auto store = MakeFreshWebHdfs();
  ASSERT_NE(store, nullptr);
  for (const char* k : {"p/apple", "p/apricot", "p/banana", "p/avocado/x"}) ASSERT_TRUE(store->Write(k, std::string_view("1")).ok());
  ListOptions o;
  o.max_keys = 1;
  std::vector<std::string> keys;
  for (int guard = 0; guard < 20; ++guard) {
    auto page = store->List("p/a", o);
    ASSERT_TRUE(page) << page.error().ToString();
    for (auto& e : page->entries) keys.push_back(e.key + (e.is_dir ? "/" : ""));
    if (page->continuation.empty()) break;
    o.continuation = page->continuation;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"p/apple", "p/apricot", "p/avocado/"}));
}

}  // namespace
}  // namespace shoal
