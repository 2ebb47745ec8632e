#include "ufs/conformance_test.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "common/config.h"
#include "common/sigv4.h"
#include "tests/harness/harness_util.h"

namespace shoal {

std::string FreshTempDir(const std::string& name) {
  // Removed at exit: a conformance factory has no teardown of its own.
  static struct Dirs {
    std::mutex mu;
    std::vector<std::string> made;
    ~Dirs() {
      std::error_code ec;
      for (const auto& d : made) std::filesystem::remove_all(d, ec);
    }
  } dirs;
  std::string tmpl = "/tmp/shoal-" + name + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return "";
  std::lock_guard lock(dirs.mu);
  dirs.made.push_back(tmpl);
  return tmpl;
}

std::shared_ptr<UnderStore> FreshLocalStore(const std::string& name) {
  const std::string dir = FreshTempDir(name);
  if (dir.empty()) return nullptr;
  MountConfig m;
  m.path = "/t";
  m.ufs = "file://" + dir;
  auto s = OpenUnderStore(m);
  return s ? *s : nullptr;
}

namespace {

using shoal::testing::RandomBytes;

std::string ReadAll(UnderStore& s, const std::string& key, uint64_t off, size_t len) {
  std::string buf(len, '\0');
  auto n = s.Read(key, off, std::span<char>(buf.data(), buf.size()));
  EXPECT_TRUE(n.has_value()) << (n ? "" : n.error().ToString());
  if (!n) return {};
  buf.resize(*n);
  return buf;
}

std::vector<FileInfo> ListAll(UnderStore& s, const std::string& prefix, const std::string& delim, int page) {
  std::vector<FileInfo> out;
  ListOptions o;
  o.delimiter = delim;
  o.max_keys = page;
  for (int guard = 0; guard < 1000; ++guard) {
    auto p = s.List(prefix, o);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().ToString());
    if (!p) break;
    out.insert(out.end(), p->entries.begin(), p->entries.end());
    if (p->continuation.empty()) break;
    o.continuation = p->continuation;
  }
  return out;
}

TEST_P(UnderStoreConformance, WriteStatRead) {
  auto data = RandomBytes(100'000, 1);
  ASSERT_TRUE(store_->Write("a/b/file.bin", data).ok());
  auto st = store_->Stat("a/b/file.bin");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_FALSE(st->is_dir);
  EXPECT_EQ(st->size, data.size());
  EXPECT_FALSE(st->Version().empty());
  EXPECT_EQ(ReadAll(*store_, "a/b/file.bin", 0, data.size()), data);
  EXPECT_EQ(ReadAll(*store_, "a/b/file.bin", 1234, 5000), data.substr(1234, 5000));
  // A read that runs past the end returns the bytes up to the end.
  EXPECT_EQ(ReadAll(*store_, "a/b/file.bin", data.size() - 10, 100), data.substr(data.size() - 10));
}

TEST_P(UnderStoreConformance, MetadataIsKeptWithTheObject) {
  if (!GetParam().keeps_metadata) GTEST_SKIP() << GetParam().name << " keeps no object metadata";
  WriteOptions o;
  o.metadata.content_type = "text/x-shoal; charset=utf-8";
  o.metadata.user = {{"k", "v"}, {"two-words", "a value, with spaces"}};
  o.metadata.headers = {{"cache-control", "max-age=3600, public"},
                        {"content-disposition", "attachment; filename=\"obj.txt\""},
                        {"content-encoding", "identity"},
                        {"content-language", "en-GB"},
                        {"expires", "Thu, 01 Dec 2094 16:00:00 GMT"}};
  auto w = store_->OpenWriter("m/obj.txt", o);
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Append(std::string("abc")).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto m = store_->Metadata("m/obj.txt");
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->content_type, o.metadata.content_type);
  EXPECT_EQ(m->user, o.metadata.user);
  EXPECT_EQ(m->headers, o.metadata.headers) << "the standard headers, in kObjectHeaders' order";
  EXPECT_EQ(ReadAll(*store_, "m/obj.txt", 0, 10), "abc") << "Content-Encoding is kept, never applied";
  ASSERT_TRUE(store_->Write("m/plain.txt", std::string("x")).ok());
  m = store_->Metadata("m/plain.txt");
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_TRUE(m->user.empty());
  EXPECT_TRUE(m->headers.empty());
  m = store_->Metadata("m/none.txt");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code(), Code::kNotFound) << m.error().ToString();
}

TEST_P(UnderStoreConformance, ReadWithInfoAgreesWithStatAndRead) {
  auto data = RandomBytes(70'000, 11);
  ASSERT_TRUE(store_->Write("rwi/obj", data).ok());
  auto st = store_->Stat("rwi/obj");
  ASSERT_TRUE(st) << st.error().ToString();
  std::string buf(50'000, '\0');
  auto r = store_->ReadWithInfo("rwi/obj", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->bytes, buf.size());
  EXPECT_EQ(buf, data.substr(0, buf.size()));
  EXPECT_FALSE(r->info.is_dir);
  EXPECT_EQ(r->info.size, data.size());
  EXPECT_EQ(r->info.Version(), st->Version());
  // Past the end of a short object: the bytes there are, and the whole size.
  std::string tail(100'000, '\0');
  auto t = store_->ReadWithInfo("rwi/obj", 60'000, std::span<char>(tail.data(), tail.size()));
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->bytes, 10'000u);
  EXPECT_EQ(t->info.size, data.size());
  // An empty object, and a missing key.
  ASSERT_TRUE(store_->Write("rwi/empty", std::string_view()).ok());
  auto e = store_->ReadWithInfo("rwi/empty", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_TRUE(e) << e.error().ToString();
  EXPECT_EQ(e->bytes, 0u);
  EXPECT_EQ(e->info.size, 0u);
  auto m = store_->ReadWithInfo("rwi/missing", 0, std::span<char>(buf.data(), buf.size()));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code(), Code::kNotFound) << m.error().ToString();
}

TEST_P(UnderStoreConformance, EmptyObject) {
  ASSERT_TRUE(store_->Write("empty", std::string_view()).ok());
  auto st = store_->Stat("empty");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->size, 0u);
}

TEST_P(UnderStoreConformance, MissingKeyIsNotFound) {
  auto st = store_->Stat("no/such/key");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound) << st.error().ToString();
  char buf[16];
  auto r = store_->Read("no/such/key", 0, buf);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kNotFound) << r.error().ToString();
}

TEST_P(UnderStoreConformance, DirectoryStat) {
  ASSERT_TRUE(store_->Write("dir/x", std::string_view("x")).ok());
  auto st = store_->Stat("dir");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_TRUE(st->is_dir);
}

TEST_P(UnderStoreConformance, ListWithDelimiterAndPagination) {
  std::set<std::string> files;
  for (int i = 0; i < 7; ++i) {
    std::string k = "list/f" + std::to_string(i);
    ASSERT_TRUE(store_->Write(k, std::string_view("data")).ok());
    files.insert(k);
  }
  ASSERT_TRUE(store_->Write("list/sub/deep", std::string_view("d")).ok());
  auto entries = ListAll(*store_, "list/", "/", 3);
  std::set<std::string> got_files, got_dirs;
  for (auto& e : entries) (e.is_dir ? got_dirs : got_files).insert(e.key);
  EXPECT_EQ(got_files, files);
  EXPECT_EQ(got_dirs, (std::set<std::string>{"list/sub"}));
  for (auto& e : entries) {
    if (!e.is_dir) {
      EXPECT_EQ(e.size, 4u);
    }
  }
  auto all = ListAll(*store_, "list/", "", 2);
  std::set<std::string> keys;
  for (auto& e : all) keys.insert(e.key);
  files.insert("list/sub/deep");
  EXPECT_EQ(keys, files);
}

TEST_P(UnderStoreConformance, ListEmptyPrefix) {
  auto entries = ListAll(*store_, "nothing-here/", "/", 100);
  EXPECT_TRUE(entries.empty());
}

TEST_P(UnderStoreConformance, OverwriteChangesVersion) {
  auto a = RandomBytes(4096, 2), b = RandomBytes(4096, 3);
  ASSERT_TRUE(store_->Write("v", a).ok());
  auto v1 = store_->Stat("v");
  ASSERT_TRUE(v1);
  // Some stores keep mtime at one-second resolution: make sure the version still moves.
  ASSERT_TRUE(store_->Write("v", b).ok());
  auto v2 = store_->Stat("v");
  ASSERT_TRUE(v2);
  EXPECT_EQ(ReadAll(*store_, "v", 0, 4096), b);
  if (v1->Version() != v2->Version()) {
    ReadOptions o;
    o.if_version = v1->Version();
    std::string buf(16, '\0');
    auto r = store_->Read("v", 0, std::span<char>(buf.data(), buf.size()), o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Code::kVersionMismatch) << r.error().ToString();
  }
  ReadOptions ok;
  ok.if_version = v2->Version();
  std::string buf(16, '\0');
  auto r = store_->Read("v", 0, std::span<char>(buf.data(), buf.size()), ok);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(buf, b.substr(0, 16));
}

// chmod and touch through the FUSE mount: a file's and a directory's mode
// and modification time, kept where the store can keep them; a file's
// version stays while its bytes do, so its cached pages stay valid.
TEST_P(UnderStoreConformance, ModesAndTimesAreKeptWhereTheStoreCan) {
  const int64_t kThen = 1'600'000'000'123'456'789;  // 2020-09-13, with nanoseconds
  ASSERT_TRUE(store_->Write("p/f.bin", RandomBytes(5000, 7)).ok());
  ASSERT_TRUE(store_->Mkdir("p/d").ok());
  auto before = store_->Stat("p/f.bin");
  ASSERT_TRUE(before) << before.error().ToString();
  Status st = store_->SetAttributes("p/f.bin", {0751, kThen});
  if (!GetParam().keeps_modes) {
    EXPECT_EQ(st.code(), Code::kNotSupported) << st.ToString();
    EXPECT_EQ(before->mode, 0u) << "a store that keeps no modes shows none";
    return;
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  const int64_t g = GetParam().mtime_granularity_ns;
  auto kept = [g](int64_t t) { return t - t % g; };
  auto after = store_->Stat("p/f.bin");
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(after->mode, 0751u);
  if (GetParam().keeps_ctime) {
    EXPECT_GE(after->ctime_ns, before->ctime_ns) << "the change time moves with a chmod";
    EXPECT_NE(after->ctime_ns, 0);
  } else {
    EXPECT_EQ(after->ctime_ns, 0) << "a store without change times shows none";
  }
  EXPECT_EQ(after->mtime_ns, kept(kThen));
  if (GetParam().version_names_mtime) {
    EXPECT_NE(after->Version(), before->Version()) << "a version that names the mtime moves with a touch";
  } else {
    EXPECT_EQ(after->Version(), before->Version()) << "the bytes did not change: cached pages stay valid";
    EXPECT_EQ(after->etag, before->etag);
  }
  // A new file's mode, where none was asked for: 0644 (under the umask on file://).
  EXPECT_EQ(before->mode & 0733u, 0600u) << std::oct << before->mode;
  // Only the mode, then only the time.
  ASSERT_TRUE(store_->SetAttributes("p/f.bin", {0600, std::nullopt}).ok());
  after = store_->Stat("p/f.bin");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->mode, 0600u);
  EXPECT_EQ(after->mtime_ns, kept(kThen));
  ASSERT_TRUE(store_->SetAttributes("p/f.bin", {std::nullopt, kThen + 1'000'000'000}).ok());
  after = store_->Stat("p/f.bin");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->mode, 0600u);
  EXPECT_EQ(after->mtime_ns, kept(kThen + 1'000'000'000));
  // A listing shows them too.
  auto listed = ListAll(*store_, "p/", "/", 100);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[1].key, "p/f.bin");
  EXPECT_EQ(listed[1].mode, 0600u);
  EXPECT_EQ(listed[1].mtime_ns, kept(kThen + 1'000'000'000));
  EXPECT_EQ(listed[1].Version(), after->Version()) << "a listing and a stat agree on the version";
  // Rewritten without a mode: keeps the one of the file it replaces; with one: that.
  ASSERT_TRUE(store_->Write("p/f.bin", std::string("new bytes")).ok());
  after = store_->Stat("p/f.bin");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->mode, 0600u);
  EXPECT_NE(after->Version(), before->Version());
  WriteOptions o;
  o.mode = 0700;
  auto w = store_->OpenWriter("p/g.sh", o);
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Append(std::string("#!/bin/sh\n")).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto script = store_->Stat("p/g.sh");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->mode, 0700u);
  // A directory.
  ASSERT_TRUE(store_->SetAttributes("p/d", {0700, kThen}).ok());
  auto d = store_->Stat("p/d");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_TRUE(d->is_dir);
  EXPECT_EQ(d->mode, 0700u);
  EXPECT_EQ(d->mtime_ns, kept(kThen));
  // The mount's root keeps the operator's mode: refused, and shown as none.
  EXPECT_EQ(store_->SetAttributes("", {0700, std::nullopt}).code(), Code::kNotSupported);
  auto root = store_->Stat("");
  ASSERT_TRUE(root) << root.error().ToString();
  EXPECT_EQ(root->mode, 0u);
  // Absent.
  st = store_->SetAttributes("p/none", {0644, std::nullopt});
  EXPECT_EQ(st.code(), Code::kNotFound) << st.ToString();
}

// chown through the FUSE mount (as root): a file's and a directory's owner
// and group, kept where the store can keep them; a rewrite keeps the owner
// of the file it replaces.
TEST_P(UnderStoreConformance, OwnersAreKeptWhereTheStoreCan) {
  ASSERT_TRUE(store_->Write("o/f", std::string("mine")).ok());
  auto before = store_->Stat("o/f");
  ASSERT_TRUE(before) << before.error().ToString();
  Status st = store_->SetAttributes("o/f", {.uid = 1234, .gid = 2345});
  if (!GetParam().keeps_owners) {
    EXPECT_EQ(st.code(), Code::kNotSupported) << st.ToString();
    EXPECT_EQ(before->uid, -1) << "a store that keeps no owners shows none";
    return;
  }
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto after = store_->Stat("o/f");
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(after->uid, 1234);
  EXPECT_EQ(after->gid, 2345);
  EXPECT_EQ(after->etag, before->etag) << "the bytes did not change: cached pages stay valid";
  ASSERT_TRUE(store_->SetAttributes("o/f", {.gid = 7}).ok()) << "the group alone";
  after = store_->Stat("o/f");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->uid, 1234);
  EXPECT_EQ(after->gid, 7);
  auto listed = ListAll(*store_, "o/", "/", 10);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].uid, 1234) << "a listing shows them too";
  ASSERT_TRUE(store_->Write("o/f", std::string("rewritten")).ok());
  after = store_->Stat("o/f");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->uid, 1234) << "a rewrite keeps the owner of the file it replaces";
  EXPECT_EQ(after->gid, 7);
  ASSERT_TRUE(store_->Mkdir("o/d").ok());
  ASSERT_TRUE(store_->SetAttributes("o/d", {.uid = 99, .gid = 98}).ok());
  auto d = store_->Stat("o/d");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->uid, 99);
  EXPECT_EQ(d->gid, 98);
  EXPECT_EQ(store_->SetAttributes("o/none", {.uid = 1}).code(), Code::kNotFound);
  // A writer that names the owner (a file created for another user).
  WriteOptions o;
  o.uid = 555;
  o.gid = 556;
  auto w = store_->OpenWriter("o/given", o);
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Append(std::string("theirs")).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto given = store_->Stat("o/given");
  ASSERT_TRUE(given) << given.error().ToString();
  EXPECT_EQ(given->uid, 555);
  EXPECT_EQ(given->gid, 556);
}

TEST_P(UnderStoreConformance, StreamedLargeWrite) {
  auto data = RandomBytes(12 << 20, 4);  // above every backend's multipart threshold in tests
  auto w = store_->OpenWriter("big/object");
  ASSERT_TRUE(w) << w.error().ToString();
  for (size_t off = 0; off < data.size(); off += 1'000'000) {
    size_t n = std::min<size_t>(1'000'000, data.size() - off);
    ASSERT_TRUE((*w)->Append(std::span<const char>(data.data() + off, n)).ok());
  }
  auto st = (*w)->Close();
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto info = store_->Stat("big/object");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->size, data.size());
  EXPECT_EQ(ReadAll(*store_, "big/object", 5'000'000, 3'000'000), data.substr(5'000'000, 3'000'000));
}

TEST_P(UnderStoreConformance, AbortedWriteLeavesNothing) {
  {
    auto w = store_->OpenWriter("aborted");
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->Append(std::string_view("partial")).ok());
    (*w)->Abort();
  }
  auto st = store_->Stat("aborted");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound);
}

// A file's bytes appended as a file (AppendFile: what the S3 endpoint's
// Complete does with staged parts), between Appends: the object holds them in
// order, and with a given ETag (file:// keeps it) that ETag; without one, the
// MD5 of all the bytes, as for Appends.
TEST_P(UnderStoreConformance, AppendFileComposesTheObject) {
  const std::string dir = FreshTempDir("append-file");
  ASSERT_FALSE(dir.empty());
  const auto part = RandomBytes(3 << 20, 7);
  const std::string part_path = dir + "/part";
  {
    std::ofstream out(part_path, std::ios::binary);
    out.write(part.data(), static_cast<std::streamsize>(part.size()));
  }
  const int fd = ::open(part_path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string head = "head:", tail = ":tail";
  const std::string want = head + part.substr(1000, 2 << 20) + tail + part;
  for (const std::string& etag : {std::string(), std::string("0123456789abcdef0123456789abcdef-2")}) {
    WriteOptions o;
    o.etag = etag;
    auto w = store_->OpenWriter("af/obj", o);
    ASSERT_TRUE(w) << w.error().ToString();
    ASSERT_TRUE((*w)->Append(head).ok());
    ASSERT_TRUE((*w)->AppendFile(fd, 1000, 2 << 20).ok());
    ASSERT_TRUE((*w)->Append(tail).ok());
    ASSERT_TRUE((*w)->AppendFile(fd, 0, part.size()).ok());
    auto st = (*w)->Close();
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto info = store_->Stat("af/obj");
    ASSERT_TRUE(info) << info.error().ToString();
    EXPECT_EQ(info->size, want.size());
    EXPECT_EQ(ReadAll(*store_, "af/obj", 0, want.size()), want);
    if (GetParam().name == "posix") {
      EXPECT_EQ(info->etag, etag.empty() ? s3::Md5Hex(want) : etag);
    }
  }
  // Past the file's end: an error, and an aborted writer leaves nothing.
  {
    auto w = store_->OpenWriter("af/short");
    ASSERT_TRUE(w);
    EXPECT_FALSE((*w)->AppendFile(fd, part.size() - 10, 100).ok());
    (*w)->Abort();
  }
  auto gone = store_->Stat("af/short");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), Code::kNotFound);
  ::close(fd);
}

TEST_P(UnderStoreConformance, Delete) {
  ASSERT_TRUE(store_->Write("del/x", std::string_view("x")).ok());
  ASSERT_TRUE(store_->Delete("del/x").ok());
  auto st = store_->Stat("del/x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), Code::kNotFound);
  EXPECT_TRUE(ListAll(*store_, "del/", "/", 10).empty());
}

TEST_P(UnderStoreConformance, Rename) {
  ASSERT_TRUE(store_->Write("r/from", std::string_view("moved")).ok());
  auto st = store_->Rename("r/from", "r/to");
  if (!GetParam().has_rename) {
    EXPECT_EQ(st.code(), Code::kNotSupported);
    return;
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(*store_, "r/to", 0, 100), "moved");
  EXPECT_FALSE(store_->Stat("r/from"));
}

TEST_P(UnderStoreConformance, RenameReplacesAFileAndKeepsItsCodes) {
  if (!GetParam().has_rename) GTEST_SKIP() << "no rename";
  ASSERT_TRUE(store_->Write("rr/a", std::string_view("new bytes")).ok());
  ASSERT_TRUE(store_->Write("rr/b", std::string_view("old")).ok());
  auto st = store_->Rename("rr/a", "rr/b");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(*store_, "rr/b", 0, 100), "new bytes");
  EXPECT_FALSE(store_->Stat("rr/a"));
  // Into a directory that does not exist yet: it is created (or implied).
  st = store_->Rename("rr/b", "rr/deep/er/c");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(*store_, "rr/deep/er/c", 0, 100), "new bytes");
  EXPECT_EQ(store_->Rename("rr/missing", "rr/x").code(), Code::kNotFound);
  // A file cannot replace a directory.
  ASSERT_TRUE(store_->Write("rr/dir/inside", std::string_view("i")).ok());
  EXPECT_EQ(store_->Rename("rr/deep/er/c", "rr/dir").code(), Code::kIsDirectory);
  EXPECT_EQ(ReadAll(*store_, "rr/deep/er/c", 0, 100), "new bytes");  // nothing lost
}

TEST_P(UnderStoreConformance, RenameDirectory) {
  ASSERT_TRUE(store_->Write("rd/src/f", std::string_view("f")).ok());
  auto st = store_->Rename("rd/src", "rd/dst");
  if (!GetParam().renames_dirs) {
    EXPECT_EQ(st.code(), Code::kNotSupported) << st.ToString();
    EXPECT_EQ(ReadAll(*store_, "rd/src/f", 0, 10), "f");
    return;
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ReadAll(*store_, "rd/dst/f", 0, 10), "f");
  EXPECT_FALSE(store_->Stat("rd/src"));
}

TEST_P(UnderStoreConformance, DeleteCodes) {
  auto missing = store_->Delete("dc/missing");
  EXPECT_EQ(missing.code(), Code::kNotFound) << missing.ToString();
  ASSERT_TRUE(store_->Write("dc/dir/f", std::string_view("f")).ok());
  auto dir = store_->Delete("dc/dir");
  EXPECT_EQ(dir.code(), Code::kIsDirectory) << dir.ToString();
  EXPECT_EQ(ReadAll(*store_, "dc/dir/f", 0, 10), "f");
}

TEST_P(UnderStoreConformance, MkdirAndRmdir) {
  auto st = store_->Mkdir("md/empty");
  ASSERT_TRUE(st.ok()) << st.ToString();
  // An empty directory exists: Stat says so, its parent lists it, it lists nothing.
  auto info = store_->Stat("md/empty");
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_TRUE(info->is_dir);
  auto parent = ListAll(*store_, "md/", "/", 100);
  ASSERT_EQ(parent.size(), 1u);
  EXPECT_EQ(parent[0].key, "md/empty");
  EXPECT_TRUE(parent[0].is_dir);
  EXPECT_TRUE(ListAll(*store_, "md/empty/", "/", 100).empty());
  EXPECT_TRUE(ListAll(*store_, "md/", "", 100).empty()) << "a directory marker listed as a file";
  EXPECT_EQ(store_->Mkdir("md/empty").code(), Code::kAlreadyExists);

  // Missing parents are created (or implied).
  ASSERT_TRUE(store_->Mkdir("md/a/b/c").ok());
  auto b = store_->Stat("md/a/b");
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_TRUE(b->is_dir);

  // Files are not directories.
  ASSERT_TRUE(store_->Write("md/file", std::string_view("x")).ok());
  EXPECT_EQ(store_->Mkdir("md/file").code(), Code::kAlreadyExists);
  EXPECT_EQ(store_->Rmdir("md/file").code(), Code::kNotDirectory);
  EXPECT_EQ(ReadAll(*store_, "md/file", 0, 10), "x");
  EXPECT_EQ(store_->Rmdir("md/nope").code(), Code::kNotFound);

  // Not empty, then empty.
  ASSERT_TRUE(store_->Write("md/empty/x", std::string_view("x")).ok());
  auto full = store_->Rmdir("md/empty");
  EXPECT_EQ(full.code(), Code::kNotEmpty) << full.ToString();
  EXPECT_EQ(ReadAll(*store_, "md/empty/x", 0, 10), "x");
  ASSERT_TRUE(store_->Delete("md/empty/x").ok());
  auto still = store_->Stat("md/empty");
  ASSERT_TRUE(still) << "the directory vanished with its last file: " << still.error().ToString();
  EXPECT_TRUE(still->is_dir);
  st = store_->Rmdir("md/empty");
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto gone = store_->Stat("md/empty");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), Code::kNotFound);

  // A directory with only a subdirectory is not empty.
  EXPECT_EQ(store_->Rmdir("md/a").code(), Code::kNotEmpty);
  ASSERT_TRUE(store_->Rmdir("md/a/b/c").ok());
}

TEST_P(UnderStoreConformance, WriteOverADirectoryIsRefused) {
  ASSERT_TRUE(store_->Mkdir("wd/dir").ok());
  auto w = store_->OpenWriter("wd/dir");
  if (w) {  // object stores may accept the open; the writer must not hide the directory
    ASSERT_TRUE((*w)->Append(std::string_view("x")).ok());
    (*w)->Abort();
  } else {
    EXPECT_EQ(w.error().code(), Code::kIsDirectory) << w.error().ToString();
  }
  auto st = store_->Stat("wd/dir");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_TRUE(st->is_dir);
}

}  // namespace

void CheckPosixAttributesInMetadata(UnderStore& store, UnderStore& raw) {
  const int64_t kThen = 1'577'934'245'123'456'789;  // 2020-01-02 03:04:05.123456789
  const std::string bytes = RandomBytes(3000, 11);
  WriteOptions o;
  o.mode = 0750;
  o.metadata.content_type = "text/x-shellscript";
  o.metadata.user = {{"k", "v"}};
  o.uid = 42;  // a file created for another user (FUSE, a root daemon)
  auto w = store.OpenWriter("pa/run.sh", o);
  ASSERT_TRUE(w) << w.error().ToString();
  ASSERT_TRUE((*w)->Append(bytes).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto made = store.Stat("pa/run.sh");
  ASSERT_TRUE(made) << made.error().ToString();
  EXPECT_EQ(made->mode, 0750u) << "a new file keeps the mode it was created with";
  EXPECT_EQ(made->uid, 42) << "and the owner";
  EXPECT_EQ(made->gid, -1) << "and no group until one is given";

  // chmod, touch and chown: each kept, the bytes and metadata stay.
  ASSERT_TRUE(store.SetAttributes("pa/run.sh", {.mode = 0700}).ok());
  auto after = store.Stat("pa/run.sh");
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(after->mode, 0700u);
  EXPECT_EQ(after->mtime_ns, made->mtime_ns) << "a chmod does not move the time shown";
  Status st = store.SetAttributes("pa/run.sh", {.mtime_ns = kThen, .uid = 1234, .gid = 2345});
  ASSERT_TRUE(st.ok()) << st.ToString();
  after = store.Stat("pa/run.sh");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->mode, 0700u);
  EXPECT_EQ(after->mtime_ns, kThen) << "to the nanosecond";
  EXPECT_EQ(after->uid, 1234);
  EXPECT_EQ(after->gid, 2345);
  EXPECT_EQ(after->size, bytes.size());
  std::string back(bytes.size(), '\0');
  auto n = store.Read("pa/run.sh", 0, std::span<char>(back));
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(back, bytes);
  auto read_info = store.ReadWithInfo("pa/run.sh", 0, std::span<char>(back));
  ASSERT_TRUE(read_info) << read_info.error().ToString();
  EXPECT_EQ(read_info->info.mode, 0700u) << "a read's stat agrees with Stat";
  EXPECT_EQ(read_info->info.mtime_ns, kThen);
  EXPECT_EQ(read_info->info.Version(), after->Version());
  auto meta = store.Metadata("pa/run.sh");
  ASSERT_TRUE(meta) << meta.error().ToString();
  EXPECT_EQ(meta->content_type, "text/x-shellscript");
  std::map<std::string, std::string> user(meta->user.begin(), meta->user.end());
  EXPECT_EQ(user["k"], "v") << "the writer's metadata stays";
  // As s3fs and rclone write them, for other tools reading the bucket.
  EXPECT_EQ(user["mode"], std::to_string(0100700));
  EXPECT_EQ(user["uid"], "1234");
  EXPECT_EQ(user["gid"], "2345");
  EXPECT_EQ(user["mtime"], "1577934245.123456789");

  // Without the option the store shows its own time and no mode or owner.
  auto plain = raw.Stat("pa/run.sh");
  ASSERT_TRUE(plain) << plain.error().ToString();
  EXPECT_EQ(plain->mode, 0u);
  EXPECT_EQ(plain->uid, -1);
  EXPECT_NE(plain->mtime_ns, kThen);
  EXPECT_EQ(raw.SetAttributes("pa/run.sh", {.mode = 0600}).code(), Code::kNotSupported);

  // A rename keeps them (the copy keeps the metadata).
  if (Status r = store.Rename("pa/run.sh", "pa/moved.sh"); r.code() != Code::kNotSupported) {
    ASSERT_TRUE(r.ok()) << r.ToString();
    auto moved = store.Stat("pa/moved.sh");
    ASSERT_TRUE(moved) << moved.error().ToString();
    EXPECT_EQ(moved->mode, 0700u);
    EXPECT_EQ(moved->uid, 1234);
    EXPECT_EQ(moved->mtime_ns, kThen);
  }

  // Directories keep none; absent keys are kNotFound.
  ASSERT_TRUE(store.Write("pa/d/x", std::string("x")).ok());
  EXPECT_EQ(store.SetAttributes("pa/d", {.mode = 0700}).code(), Code::kNotSupported);
  EXPECT_EQ(store.SetAttributes("pa/none", {.mode = 0700}).code(), Code::kNotFound);
  EXPECT_EQ(store.SetAttributes("", {.mode = 0700}).code(), Code::kNotSupported);
}

}  // namespace shoal
