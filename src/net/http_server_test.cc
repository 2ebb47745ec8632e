// The server's contract, in process and without any Shoal route: routing,
// answers from other threads, heartbeats, body parts, and the answers it gives
// itself when a handler misbehaves.
#include "net/http_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "tests/harness/raw_http.h"

namespace shoal::net {
namespace {

using namespace std::chrono_literals;
using shoal::testing::HttpGet;
using shoal::testing::RawConnection;

// A Responder the test answers through, when it chooses to.
struct Parked {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Responder> responder;

  Responder Take() {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 30s, [&] { return responder.has_value(); });
    Responder r = *responder;
    responder.reset();
    return r;
  }
};

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(Router router, ServerOptions o = {}) {
    o.listen = "127.0.0.1:0";
    o.heartbeat_interval = 20ms;
    o.response_headers = {{"X-Test-Server", "t1"}};
    o.heartbeat_header = "X-Beat";
    o.heartbeat_value = "yes";
    o.unknown_route_hint = "see the test";
    auto s = HttpServer::Bind(o);
    ASSERT_TRUE(s) << s.error().ToString();
    server_ = std::move(*s);
    std::vector<Router> routers;
    routers.push_back(std::move(router));
    server_->Serve(std::move(routers));
  }

  std::optional<RawConnection::Response> Ask(const std::string& request) {
    auto c = RawConnection::Connect(server_->address());
    if (!c || !c->Send(request)) return std::nullopt;
    return c->ReadResponse(30s);
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, RoutesMethodsAndTheServersOwnErrors) {
  Router r;
  r.Add("GET", "/a", [](const HttpRequest& req, Responder res) {
    res.Respond(HttpResponse::Text(200, "a:" + std::string(req.query()), "text/plain"));
  });
  Start(std::move(r));
  auto ok = Ask(HttpGet("/a?x=1"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "a:x=1");
  EXPECT_EQ(ok->Header("X-Test-Server"), "t1");
  // HEAD: the GET route's head, no body; the connection goes on.
  auto head = RawConnection::Connect(server_->address());
  ASSERT_TRUE(head && head->Send("HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(head->ReadUntil("\r\n\r\n", 30s));
  std::string head_only = head->received();
  EXPECT_NE(head_only.find("Content-Length: 2\r\n"), std::string::npos) << head_only;
  ASSERT_TRUE(head->Send(HttpGet("/a")));
  ASSERT_TRUE(head->ReadUntil("a:", 30s));
  EXPECT_TRUE(head->received().substr(head_only.size()).starts_with("HTTP/1.1 200")) << head->received();
  auto wrong = Ask("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  auto unknown = Ask(HttpGet("/nope"));
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_NE(unknown->body.find("unknown route '/nope' (see the test)"), std::string::npos) << unknown->body;
  EXPECT_EQ(unknown->Header("X-Test-Server"), "t1");
  auto garbage = Ask("NOT HTTP\r\n\r\n");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400);
}

TEST_F(HttpServerTest, FallbackTakesEveryOtherPath) {
  Router r;
  r.SetFallback([](const HttpRequest& req, Responder res) {
    res.Respond(HttpResponse::Text(200, std::string(req.path()), "text/plain"));
  });
  Start(std::move(r));
  auto any = Ask(HttpGet("/bucket/some/key?acl"));
  ASSERT_TRUE(any);
  EXPECT_EQ(any->body, "/bucket/some/key");
}

TEST_F(HttpServerTest, HandlersThatDropOrThrowGet500) {
  Router r;
  r.Add("GET", "/drop", [](const HttpRequest&, Responder) {});
  r.Add("GET", "/throw", [](const HttpRequest&, Responder) { throw std::runtime_error("boom"); });
  r.Add("GET", "/badheader", [](const HttpRequest&, Responder res) {
    HttpResponse bad = HttpResponse::Text(200, "x", "text/plain");
    bad.headers.emplace_back("X-Evil", "a\r\nSet-Cookie: b");
    res.Respond(std::move(bad));
  });
  Start(std::move(r));
  for (const char* path : {"/drop", "/throw", "/badheader"}) {
    auto a = Ask(HttpGet(path));
    ASSERT_TRUE(a) << path;
    EXPECT_EQ(a->status, 500) << path;
    EXPECT_EQ(a->head.find("Set-Cookie"), std::string::npos);
  }
}

TEST_F(HttpServerTest, HeartbeatsOnlyForRequestsThatAskAndOnlyUntilTheAnswer) {
  Parked parked;
  Router r;
  r.Add("GET", "/slow", [&](const HttpRequest&, Responder res) {
    std::lock_guard lock(parked.mu);
    parked.responder = res;
    parked.cv.notify_all();
  });
  Start(std::move(r));
  const std::string beat = "HTTP/1.1 102 Processing\r\nX-Test-Server: t1\r\n\r\n";

  auto quiet = RawConnection::Connect(server_->address());
  ASSERT_TRUE(quiet && quiet->Send(HttpGet("/slow")));
  Responder quiet_res = parked.Take();
  auto asking = RawConnection::Connect(server_->address());
  ASSERT_TRUE(asking && asking->Send(HttpGet("/slow", "X-Beat: yes\r\n")));
  Responder asking_res = parked.Take();
  ASSERT_TRUE(asking->ReadUntil(beat, 30s, 3));
  // Answered from another thread.
  std::thread([quiet_res, asking_res] {
    quiet_res.Respond(HttpResponse::Text(200, "q", "text/plain"));
    asking_res.Respond(HttpResponse::Text(200, "a", "text/plain"));
  }).join();
  auto q = quiet->ReadResponse(30s);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->status, 200);
  EXPECT_EQ(q->body, "q");
  std::optional<RawConnection::Response> a;
  while ((a = asking->ReadResponse(30s)) && a->status == 102) {
  }
  ASSERT_TRUE(a);
  EXPECT_EQ(a->body, "a");
  EXPECT_FALSE(asking->ReadUntil(beat, 100ms, 100)) << "heartbeats after the answer";
}

TEST_F(HttpServerTest, BodyPartsAreSentInOrderAndDeferredPartsSpliceIn) {
  char path[] = "/tmp/shoal-net-test-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  ASSERT_EQ(::write(fd, "0123456789", 10), 10);
  auto file = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  std::mutex mu;
  std::function<void()> ready;
  std::condition_variable cv;
  Router r;
  r.Add("GET", "/parts", [&](const HttpRequest&, Responder res) {
    HttpResponse out;
    out.parts.push_back(BodyPart::Bytes("head-"));
    out.parts.push_back(BodyPart::File(*file, 2, 5, file));
    out.parts.push_back(BodyPart::Deferred(
        6,
        [&](BodyPart::Ready go) {
          std::lock_guard lock(mu);
          ready = std::move(go);
          cv.notify_all();
        },
        []() -> Result<std::vector<BodyPart>> {
          std::vector<BodyPart> more;
          more.push_back(BodyPart::Bytes("-de"));
          more.push_back(BodyPart::Bytes("fer"));
          return more;
        }));
    out.parts.push_back(BodyPart::Deferred(
        4, [](BodyPart::Ready go) { go(); },
        []() -> Result<std::vector<BodyPart>> { return Err(Code::kUnavailable, "the store went away"); }));
    res.Respond(std::move(out));
  });
  Start(std::move(r));
  auto c = RawConnection::Connect(server_->address());
  ASSERT_TRUE(c && c->Send(HttpGet("/parts")));
  ASSERT_TRUE(c->ReadUntil("head-23456", 30s));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return ready != nullptr; }));
  }
  ready();  // from this thread
  ASSERT_TRUE(c->ReadUntil("head-23456-defer", 30s));
  // The last part fails after the head: the connection closes short of Content-Length.
  EXPECT_TRUE(c->WaitClosed(30s));
  EXPECT_NE(c->received().find("Content-Length: 20\r\n"), std::string::npos);
  EXPECT_TRUE(c->received().ends_with("head-23456-defer"));
}

// A route table that streams bodies: the handler's own thread pulls the body
// in pieces (chunked transfer coding undone), 100 Continue goes out when the
// client asked, a body over the table's limit is 413, and a stalled body is
// cut off by body_read_timeout while the handler learns why.
TEST_F(HttpServerTest, StreamedBodiesArriveInPiecesAndStalledOnesAreCutOff) {
  std::mutex mu;
  std::vector<std::thread> readers;
  std::vector<std::string> errors;
  std::condition_variable cv;
  Router r;
  r.StreamBodies(1 << 20);
  r.Add("PUT", "/up", [&](const HttpRequest& req, Responder res) {
    std::lock_guard lock(mu);
    readers.emplace_back([&, stream = req.body_stream, res] {
      std::string got;
      int reads = 0;
      char buf[1000];
      for (;;) {
        auto n = stream->Read(std::span<char>(buf, sizeof buf));
        if (!n) {
          std::lock_guard l(mu);
          errors.push_back(n.error().message());
          cv.notify_all();
          return res.Respond(HttpResponse::Text(400, n.error().message(), "text/plain"));
        }
        if (*n == 0) break;
        ++reads;
        got.append(buf, *n);
      }
      EXPECT_GT(reads, 1);
      res.Respond(HttpResponse::Text(200, got, "text/plain"));
    });
  });
  ServerOptions o;
  o.body_read_timeout = 300ms;
  Start(std::move(r), o);

  // Chunked transfer coding, then a second request on the same connection.
  std::string body(5000, 'x');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 26);
  auto c = RawConnection::Connect(server_->address());
  ASSERT_TRUE(c && c->Send("PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
  ASSERT_TRUE(c->Send("bb8\r\n" + body.substr(0, 3000) + "\r\n7d0\r\n" + body.substr(3000) + "\r\n0\r\n\r\n"));
  auto a = c->ReadResponse(30s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 200);
  EXPECT_TRUE(a->body == body);
  ASSERT_TRUE(c->Send("PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2500\r\n\r\n"));
  auto interim = c->ReadResponse(30s);
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(c->Send(body.substr(0, 2500)));
  a = c->ReadResponse(30s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 200);
  EXPECT_TRUE(a->body == body.substr(0, 2500));

  // Over the table's limit: refused before the handler runs.
  auto big = Ask("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);

  // A body that stalls: the connection is closed, the handler's read fails.
  auto slow = RawConnection::Connect(server_->address());
  ASSERT_TRUE(slow && slow->Send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"));
  EXPECT_TRUE(slow->WaitClosed(30s));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return !errors.empty(); }));
    EXPECT_NE(errors[0].find("body_read_timeout"), std::string::npos) << errors[0];
  }
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mu);
    done.swap(readers);
  }
  for (auto& t : done) t.join();
}

// TakePiece hands over the bytes as the connection read them, after a Read
// that took part of a piece and before the end; pieces handed back are
// reused, and the whole body arrives in order.
TEST_F(HttpServerTest, AStreamedBodyTakenPieceByPieceArrivesWholeAndInOrder) {
  std::vector<std::thread> readers;
  std::mutex mu;
  Router r;
  r.StreamBodies(8 << 20);
  r.Add("PUT", "/up", [&](const HttpRequest& req, Responder res) {
    std::lock_guard lock(mu);
    readers.emplace_back([stream = req.body_stream, res] {
      std::string got(10, '\0');
      auto first = stream->Read(std::span<char>(got.data(), got.size()));  // part of the first piece
      if (!first) return res.Respond(HttpResponse::Text(400, first.error().message(), "text/plain"));
      got.resize(*first);
      int pieces = 0;
      for (;;) {
        auto piece = stream->TakePiece();
        if (!piece) return res.Respond(HttpResponse::Text(400, piece.error().message(), "text/plain"));
        if (piece->empty()) break;
        ++pieces;
        got += *piece;
        stream->ReturnPiece(std::move(*piece));
      }
      res.Respond(HttpResponse::Text(pieces > 0 ? 200 : 500, got, "text/plain"));
    });
  });
  Start(std::move(r));
  std::string body(3 << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 7 + i / 4093) & 0xff);
  for (int round = 0; round < 2; ++round) {  // twice on one connection: the second reuses pieces
    auto c = RawConnection::Connect(server_->address());
    ASSERT_TRUE(c && c->Send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\n\r\n" + body));
    auto a = c->ReadResponse(30s);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 200) << a->body.substr(0, 200);
    EXPECT_TRUE(a->body == body) << "got " << a->body.size() << " bytes of " << body.size();
  }
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mu);
    done.swap(readers);
  }
  for (auto& t : done) t.join();
}

// A request refused before its body was read (an S3 PUT whose If-Match fails):
// the connection closes, but lingers reading what the client still sends, so
// the client sees the answer and then the end of the stream, never a reset
// (which can destroy the answer before the client reads it).
TEST_F(HttpServerTest, ARefusalBeforeTheBodyClosesWithoutAReset) {
  Router r;
  r.StreamBodies(1 << 20);
  r.Add("PUT", "/up", [](const HttpRequest&, Responder res) {
    res.Respond(HttpResponse::Text(404, "no such key", "text/plain"));  // the body is never read
  });
  Start(std::move(r));
  auto c = RawConnection::Connect(server_->address());
  ASSERT_TRUE(c && c->Send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n" + std::string(1000, 'a')));
  auto a = c->ReadResponse(30s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 404);
  // The rest of the body, after the answer (as a client that sends the head
  // and the body in two writes does): the server still reads it.
  ASSERT_TRUE(c->Send(std::string(200'000, 'b')));
  c->ShutdownWrite();
  char buf[256];
  ssize_t n;
  do {
    n = ::recv(c->fd(), buf, sizeof buf, 0);
  } while (n > 0 || (n < 0 && errno == EINTR));
  EXPECT_EQ(n, 0) << "the connection was reset: " << std::strerror(errno);
}

}  // namespace
}  // namespace shoal::net
