#include "tests/s3_endpoint_raw.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "common/sigv4.h"
#include "common/subprocess.h"

namespace shoal::testing {
namespace {

using Clock = std::chrono::steady_clock;

class Socket {
 public:
  explicit Socket(const std::string& address) {
    auto colon = address.rfind(':');
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
    if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return;
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  bool Send(const std::string& bytes) {
    for (size_t done = 0; done < bytes.size();) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Receives more bytes into `in` before the deadline; false on timeout, EOF or error.
  bool Recv(std::string* in, Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in->append(buf, static_cast<size_t>(n));
    return true;
  }

 private:
  int fd_ = -1;
};

}  // namespace

Cmd RunCmd(std::vector<std::string> argv, const std::map<std::string, std::string>& env, std::chrono::seconds timeout) {
  Subprocess::Options o;
  o.argv = std::move(argv);
  o.env = env;
  o.stderr_to_stdout = true;
  Cmd c;
  auto p = Subprocess::Start(o);
  if (!p) {
    c.out = p.error().ToString();
    return c;
  }
  int st = p->Wait(timeout);
  if (st == -1) p->Stop(std::chrono::seconds(5));
  c.exit_code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  c.out = p->output();
  return c;
}

std::optional<RawAnswer> Exchange(const std::string& address, const std::string& request) {
  Socket s(address);
  if (!s.ok() || !s.Send(request)) return std::nullopt;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  std::string in;
  size_t head_end;
  while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
    if (!s.Recv(&in, deadline)) return std::nullopt;
  }
  RawAnswer a;
  a.status = std::stoi(in.substr(9, 3));
  size_t length = 0;
  auto cl = in.find("Content-Length: ");
  if (cl != std::string::npos && cl < head_end) length = std::stoul(in.substr(cl + 16));
  while (in.size() < head_end + 4 + length) {
    if (!s.Recv(&in, deadline)) return std::nullopt;
  }
  a.body = in.substr(head_end + 4, length);
  return a;
}

std::string SignedRequest(const std::string& method, const std::string& target, const std::string& host,
                          const std::string& ak, const std::string& sk, const s3::Headers& extra) {
  s3::SigningInput in;
  in.method = method;
  in.host = host;
  auto q = target.find('?');
  in.canonical_uri = target.substr(0, q);
  for (std::string rest = q == std::string::npos ? "" : target.substr(q + 1); !rest.empty();) {
    auto amp = rest.find('&');
    std::string item = rest.substr(0, amp);
    auto eq = item.find('=');
    in.query.emplace_back(item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
    rest = amp == std::string::npos ? "" : rest.substr(amp + 1);
  }
  in.payload_hash = std::string(s3::kUnsignedPayload);
  in.region = "us-east-1";
  s3::Headers h;
  for (const auto& [k, v] : extra) {
    if (k == "x-amz-content-sha256") {
      in.payload_hash = v;
    } else {
      h.emplace_back(k, v);
    }
  }
  s3::SignV4(in, s3::Credentials{ak, sk, "", "test"}, std::chrono::system_clock::now(), h);
  std::string req = method + " " + target + " HTTP/1.1\r\n";
  for (const auto& [k, v] : h) req += k + ": " + v + "\r\n";
  return req + "\r\n";
}

std::string ChunkedPut(const std::string& target, const std::string& host, const std::string& ak, const std::string& sk,
                       const std::vector<std::string>& chunks, bool tamper, size_t tamper_chunk) {
  const auto now = std::chrono::system_clock::now();
  size_t total = 0;
  for (const auto& c : chunks) total += c.size();
  s3::SigningInput in;
  in.method = "PUT";
  in.host = host;
  in.canonical_uri = target;
  in.payload_hash = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
  in.region = "us-east-1";
  s3::Headers h{{"Content-Encoding", "aws-chunked"}, {"x-amz-decoded-content-length", std::to_string(total)}};
  s3::SignV4(in, s3::Credentials{ak, sk, "", "test"}, now, h);
  std::string auth, amz_date;
  for (const auto& [k, v] : h) {
    if (k == "Authorization") auth = v;
    if (k == "x-amz-date") amz_date = v;
  }
  std::string prev = auth.substr(auth.find("Signature=") + 10);
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = s3::CredentialScope(date, "us-east-1", "s3");
  const std::string& key = s3::SigningKey(sk, date, "us-east-1", "s3");
  std::string body;
  std::vector<std::string> all = chunks;
  all.push_back("");
  size_t tamper_at = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string& c = all[i];
    prev = s3::HmacHex(key, "AWS4-HMAC-SHA256-PAYLOAD\n" + amz_date + "\n" + scope + "\n" + prev + "\n" +
                                s3::Sha256Hex(std::string_view()) + "\n" + s3::Sha256Hex(c));
    char size[32];
    std::snprintf(size, sizeof size, "%zx", c.size());
    body += std::string(size) + ";chunk-signature=" + prev + "\r\n";
    if (i == tamper_chunk) tamper_at = body.size() + c.size() / 2;
    body += c + "\r\n";
  }
  if (tamper) body[tamper_at] ^= 1;
  std::string req = "PUT " + target + " HTTP/1.1\r\n";
  for (const auto& [k, v] : h) req += k + ": " + v + "\r\n";
  return req + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

double SecondsUntilClosed(const std::string& address, const std::string& request, std::chrono::seconds timeout) {
  Socket s(address);
  auto start = Clock::now();
  if (!s.ok() || !s.Send(request)) return -1;
  auto deadline = start + timeout;
  std::string in;
  while (s.Recv(&in, deadline)) {
  }
  if (Clock::now() >= deadline) return -1;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool SendAndHangUp(const std::string& address, const std::string& request) {
  Socket s(address);
  if (!s.ok() || !s.Send(request)) return false;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  std::string in;
  while (in.find("\r\n\r\n") == std::string::npos) {
    if (!s.Recv(&in, deadline)) return false;
  }
  return true;  // the socket closes with the body unread
}

}  // namespace shoal::testing
