// The S3 endpoint's aws-chunked body reader (s3/s3_payload.h, PayloadReader:
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD uploads), fed whole or through a body
// stream that hands out fuzz-chosen pieces, read into fuzz-chosen buffers.
// The first byte picks a mode:
//   0: the rest is the body as sent;
//   1: the rest describes chunks, which the harness signs with the real chain
//      (ChunkSignature) and frames; the reader must return exactly their bytes;
//   2: as 1, then one byte of the framed body is changed: the reader must
//      fail, or return exactly the original bytes (never a byte nobody signed).
#include <algorithm>

#include "common/sigv4.h"
#include "fuzz_check.h"
#include "s3/s3_auth.h"
#include "s3/s3_payload.h"

namespace {

using namespace shoal;

const s3::AuthInfo& Auth() {
  static const s3::AuthInfo a = [] {
    s3::AuthInfo i;
    i.access_key = "AKIDEXAMPLE";
    i.streaming = true;
    i.signing_key = s3::SigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20240517", "us-east-1", "s3");
    i.scope = s3::CredentialScope("20240517", "us-east-1", "s3");
    i.amz_date = "20240517T120000Z";
    i.seed_signature = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
    return i;
  }();
  return a;
}

// A body stream that hands out the body in pieces of the given sizes (cycled).
class Pieces : public net::BodyReader {
 public:
  Pieces(std::string body, std::string sizes) : body_(std::move(body)), sizes_(std::move(sizes)) {}
  Result<size_t> Read(std::span<char> out) override {
    size_t want = sizes_.empty() ? out.size() : 1 + static_cast<uint8_t>(sizes_[turn_++ % sizes_.size()]) * 37;
    size_t n = std::min({want, out.size(), body_.size() - at_});
    std::copy_n(body_.data() + at_, n, out.data());
    at_ += n;
    return n;
  }

 private:
  std::string body_, sizes_;
  size_t at_ = 0, turn_ = 0;
};

// Reads the whole payload through buffers of the sizes `bufs` gives; the bytes or the error.
// Every read but the last returns a byte at least, and the payload is no
// longer than the raw body: more reads than that is a reader that never ends.
// (A fixed bound of 100,000 reads was below a valid 130 KB payload read a
// byte at a time: the long run's one "finding" of this harness.)
s3::S3Result<std::string> ReadAll(const net::HttpRequest& req, std::string_view bufs, size_t body_size) {
  s3::PayloadReader reader(req, Auth(), 1 << 20);
  std::string out;
  for (size_t turn = 0; turn <= body_size + 1; ++turn) {
    size_t len = bufs.empty() ? 4096 : 1 + static_cast<uint8_t>(bufs[turn % bufs.size()]) * 17;
    std::string buf(len, '\0');
    auto n = reader.Read(std::span<char>(buf.data(), buf.size()));
    if (!n) return std::unexpected(n.error());
    if (*n == 0) return out;
    FUZZ_CHECK(*n <= len, "Read returned %zu bytes into a %zu-byte buffer", *n, len);
    out.append(buf.data(), *n);
  }
  FUZZ_CHECK(false, "the reader did not end");
  return out;
}

std::string Hex(uint64_t v, bool upper) {
  static const char* lo = "0123456789abcdef";
  static const char* up = "0123456789ABCDEF";
  std::string s;
  do {
    s.insert(s.begin(), (upper ? up : lo)[v % 16]);
    v /= 16;
  } while (v);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  const int mode = in.Byte() % 3;
  const bool streamed = in.Byte() & 1;
  std::string stream_sizes(in.Bytes(8)), buf_sizes(in.Bytes(8));
  net::HttpRequest req;
  req.method = "PUT";
  req.target = "/bucket/key";
  std::string body, payload;
  if (mode == 0) {
    body = std::string(in.rest());
  } else {
    // Chunks: a length byte (times a fuzz-chosen unit), the bytes cycled from the input.
    const size_t unit = 1 + in.Byte() % 64;
    std::string_view fill = in.Bytes(255);
    std::string prev = Auth().seed_signature;
    for (int c = 0; c < 9; ++c) {
      size_t len = c == 8 ? 0 : static_cast<size_t>(in.Byte()) * unit;
      if (in.empty()) len = 0;
      std::string chunk(len, 'x');
      for (size_t i = 0; i < len && !fill.empty(); ++i) chunk[i] = fill[i % fill.size()];
      std::string sig = s3::ChunkSignature(Auth(), prev, chunk);
      body += Hex(len, c & 1) + ";chunk-signature=" + sig + "\r\n" + chunk + "\r\n";
      payload += chunk;
      prev = sig;
      if (len == 0) break;
    }
    req.headers.emplace_back("x-amz-decoded-content-length", std::to_string(payload.size()));
    if (mode == 2) {
      size_t at = in.Below(body.size() - 1);
      body[at] = static_cast<char>(body[at] ^ (1 + in.Byte() % 255));
    }
  }
  if (streamed) {
    req.body_stream = std::make_shared<Pieces>(body, stream_sizes);
  } else {
    req.body = body;
  }
  auto got = ReadAll(req, buf_sizes, body.size());
  if (mode == 1) {
    FUZZ_CHECK(got.has_value(), "a correctly signed body was refused: %s %s", got ? "" : got.error().code.c_str(),
               got ? "" : got.error().message.c_str());
    FUZZ_CHECK(*got == payload, "a correctly signed body read back as %zu other bytes", got->size());
  }
  if (mode == 2 && got) FUZZ_CHECK(*got == payload, "a changed body was accepted with bytes nobody signed");
  return 0;
}
