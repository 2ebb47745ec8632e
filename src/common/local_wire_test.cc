#include "common/local_wire.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace shoal::local_wire {
namespace {

struct SocketPair {
  int a = -1, b = -1;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    a = fds[0];
    b = fds[1];
  }
  ~SocketPair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

TEST(LocalWire, RequestRoundTrips) {
  Request r;
  r.kind = Kind::kRead;
  r.path = "/data/dir with space/é.bin\n";
  r.version = "\"etag-1\"";
  r.size = 1ull << 40;
  r.offset = 12345;
  r.length = 1 << 20;
  auto d = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->kind, Kind::kRead);
  EXPECT_EQ(d->path, r.path);
  EXPECT_EQ(d->version, r.version);
  EXPECT_EQ(d->size, r.size);
  EXPECT_EQ(d->offset, r.offset);
  EXPECT_EQ(d->length, r.length);
  EXPECT_EQ(d->on_behalf, "");
}

TEST(LocalWire, ARequestCarriesItsEndUserAndAnOverlongOneIsRefused) {
  Request r;
  r.kind = Kind::kOpen;
  r.path = "/data/a";
  r.version = "v";
  r.on_behalf = "carol;groups=ml,vision";
  auto d = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->path, "/data/a");
  EXPECT_EQ(d->version, "v");
  EXPECT_EQ(d->on_behalf, "carol;groups=ml,vision");
  r.on_behalf.assign(kMaxOnBehalf + 1, 'x');
  EXPECT_FALSE(DecodeRequest(EncodeRequest(r)));
  // A head whose lengths add up to more than the record: refused, not read past.
  std::string cut = EncodeRequest(r);
  cut.resize(cut.size() - 1);
  EXPECT_FALSE(DecodeRequest(cut));
}

TEST(LocalWire, ReplyRoundTrips) {
  Reply r;
  r.code = 3;
  r.segments = {{4096, 100, 4000}, {(5ull << 32) + 64, 1 << 20, 60, 1 << 20, 5ull << 32, 77}};
  r.message = "why";
  auto d = DecodeReply(EncodeReply(r));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->code, 3);
  ASSERT_EQ(d->segments.size(), 2u);
  EXPECT_EQ(d->segments[1].data_offset, (5ull << 32) + 64);
  EXPECT_EQ(d->segments[1].page_offset, 5ull << 32);
  EXPECT_EQ(d->segments[1].generation, 77u);
  EXPECT_EQ(d->segments[0].generation, 0u);
  EXPECT_EQ(d->segments[1].length, 1u << 20);
  EXPECT_EQ(d->segments[0].header_len, 4000u);
  EXPECT_EQ(d->segments[1].header_len, 60u);
  EXPECT_EQ(d->segments[1].page_len, 1u << 20);
  EXPECT_EQ(d->segments[0].page_len, 0u);
  EXPECT_EQ(d->message, "why");
}

TEST(LocalWire, ALeaseRoundTrips) {
  Reply r;
  r.epoch = (7ull << 40) + 3;
  r.lease_ns = kMaxLeaseNs;
  auto d = DecodeReply(EncodeReply(r));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->epoch, r.epoch);
  EXPECT_EQ(d->lease_ns, kMaxLeaseNs);
}

TEST(LocalWire, TouchBatchesRoundTrip) {
  std::vector<Touch> in{{"/data/a", 131072, 3}, {"/data/dir with space/é", 0, 1}, {"/data/b", 4 << 20, 1, 64 << 20}};
  std::string bytes = EncodeTouches(in);
  EXPECT_EQ(bytes.size(), EncodedTouchBytes(in[0]) + EncodedTouchBytes(in[1]) + EncodedTouchBytes(in[2]));
  auto d = DecodeTouches(bytes);
  ASSERT_TRUE(d) << d.error().ToString();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].path, "/data/a");
  EXPECT_EQ((*d)[0].length, 131072u);
  EXPECT_EQ((*d)[0].count, 3u);
  EXPECT_EQ((*d)[0].offset, 0u);
  EXPECT_EQ((*d)[1].path, in[1].path);
  EXPECT_EQ((*d)[2].offset, 64u << 20) << "a held read's range";
  EXPECT_EQ((*d)[2].length, 4u << 20);
  EXPECT_TRUE(DecodeTouches("") && DecodeTouches("")->empty());
}

TEST(LocalWire, MalformedTouchBatchesAreRejected) {
  std::string one = EncodeTouches({{"/data/a", 1, 1}});
  EXPECT_FALSE(DecodeTouches(one.substr(0, one.size() - 1)));  // short of its path
  EXPECT_FALSE(DecodeTouches(one + "x"));                       // a partial entry after it
  EXPECT_FALSE(DecodeTouches(EncodeTouches({{"", 1, 1}})));      // no path
  EXPECT_FALSE(DecodeTouches(EncodeTouches({{"/data/a", 1, 0}})));  // no reads
  std::string huge = one;
  huge[0] = '\xff';  // a path length past the record
  huge[1] = '\xff';
  EXPECT_FALSE(DecodeTouches(huge));
  std::vector<Touch> many(kMaxTouches + 1, Touch{"/p", 1, 1});
  EXPECT_FALSE(DecodeTouches(EncodeTouches(many)));
  many.pop_back();
  EXPECT_TRUE(DecodeTouches(EncodeTouches(many)));
}

TEST(LocalWire, MalformedRecordsAreRejected) {
  EXPECT_FALSE(DecodeRequest(""));
  EXPECT_FALSE(DecodeRequest("garbage that is long enough to be a header, but wrong magic"));
  Request r;
  r.path = "/p";
  std::string bytes = EncodeRequest(r);
  EXPECT_FALSE(DecodeRequest(bytes.substr(0, bytes.size() - 1)));  // short of its path
  EXPECT_FALSE(DecodeRequest(bytes + "x"));                         // trailing bytes
  std::string kind = bytes;
  kind[4] = 9;  // unknown kind
  EXPECT_FALSE(DecodeRequest(kind));

  Reply rep;
  rep.segments.resize(kMaxSegments + 1);
  auto d = DecodeReply(EncodeReply(rep));
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message().find("short-circuit"), std::string::npos) << d.error().message();
}

TEST(LocalWire, RecordsCarryFileDescriptors) {
  SocketPair sp;
  char path[] = "/tmp/shoal-wire-test.XXXXXX";
  int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  ::unlink(path);
  ASSERT_EQ(::write(file, "page bytes", 10), 10);

  int fds[] = {file, file};
  ASSERT_TRUE(SendRecord(sp.a, "hello", fds).ok());
  ::close(file);  // the receiver's copies stay valid

  std::string got;
  std::vector<int> received;
  ASSERT_TRUE(RecvRecord(sp.b, &got, &received).ok());
  EXPECT_EQ(got, "hello");
  ASSERT_EQ(received.size(), 2u);
  char buf[10];
  EXPECT_EQ(::pread(received[0], buf, sizeof buf, 0), 10);
  EXPECT_EQ(std::string(buf, 10), "page bytes");
  for (int fd : received) ::close(fd);
}

TEST(LocalWire, ClosedPeerAndTimeoutAreReported) {
  SocketPair sp;
  timeval tv{0, 50'000};
  ASSERT_EQ(::setsockopt(sp.b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  std::string got;
  std::vector<int> fds;
  auto st = RecvRecord(sp.b, &got, &fds);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.ToString();
  ::close(sp.a);
  sp.a = -1;
  st = RecvRecord(sp.b, &got, &fds);
  EXPECT_EQ(st.code(), Code::kUnavailable) << st.ToString();
  EXPECT_FALSE(SendRecord(sp.b, "x", {}).ok());
}

}  // namespace
}  // namespace shoal::local_wire
