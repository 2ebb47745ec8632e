#include "s3/s3_payload.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/sigv4.h"

namespace shoal::s3 {
namespace {

// Raw body bytes read from the stream per step (besides what a chunk needs).
constexpr size_t kRawPiece = 256 * 1024;
constexpr size_t kMaxChunkHeader = 256;

// The MD5 (700 MB/s here, the slowest pass over an upload's bytes) runs on a
// thread of its own, over a copy of each piece of at least this many bytes,
// while the handler's thread writes the piece: two cores instead of one. The
// copy (a tenth of the MD5's cost) keeps the hash independent of what the
// caller does with its buffer after Read.
constexpr size_t kAsyncMd5Min = 256 * 1024;

}  // namespace

struct PayloadReader::State {
  StreamDigest sha{StreamDigest::Kind::kSha256};
  StreamDigest md5{StreamDigest::Kind::kMd5};
  // Each hash is computed only when something needs it: on a loaded machine
  // every pass over the bytes costs upload speed.
  bool check_sha = false;  // x-amz-content-sha256 names the body's hash
  bool want_md5 = false;   // the caller asked for Md5Hex, or Content-MD5 was sent
  std::string md5_hex;
  // aws-chunked: raw bytes read ahead, the current chunk and where we are in it.
  std::string raw;
  size_t raw_at = 0;
  bool raw_eof = false;
  std::string chunk;
  size_t chunk_at = 0;
  bool last_chunk = false;
  std::string prev_signature;
  uint64_t chunks = 0;
  // The MD5 of large pieces, on a thread of the request's own (started at
  // the first one); last, so that it stops before the digest it updates is
  // destroyed.
  class Md5Thread {
   public:
    explicit Md5Thread(StreamDigest& md5) : md5_(md5) {}
    ~Md5Thread() {
      {
        std::lock_guard lock(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      if (thread_.joinable()) thread_.join();
    }
    // Hashes a copy of `piece` on the thread, once the previous piece is done.
    // The copy goes into one buffer kept for the request: no allocation, no
    // fresh pages and no new thread per piece.
    void Submit(std::span<const char> piece) {
      Wait();
      piece_.assign(piece.data(), piece.size());
      {
        std::lock_guard lock(mu_);
        busy_ = true;
        if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
      }
      cv_.notify_all();
    }
    void Wait() {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !busy_; });
    }

   private:
    void Loop() {
      std::unique_lock lock(mu_);
      for (;;) {
        cv_.wait(lock, [this] { return busy_ || stop_; });
        if (!busy_) return;  // stopping, nothing left to hash
        lock.unlock();
        md5_.Update(piece_);
        lock.lock();
        busy_ = false;
        cv_.notify_all();
      }
    }

    StreamDigest& md5_;
    std::string piece_;  // written by Submit while the thread is idle, read by the thread while busy
    std::mutex mu_;
    std::condition_variable cv_;
    bool busy_ = false;
    bool stop_ = false;
    std::thread thread_;
  };
  Md5Thread md5_thread{md5};

  void Md5(std::span<const char> piece) {
    if (piece.size() < kAsyncMd5Min) {
      md5_thread.Wait();
      md5.Update(piece);
      return;
    }
    md5_thread.Submit(piece);
  }
  void WaitMd5() { md5_thread.Wait(); }
};

PayloadReader::PayloadReader(const net::HttpRequest& http, const AuthInfo& auth, uint64_t max_bytes, bool need_md5)
    : http_(http), auth_(auth), max_bytes_(max_bytes), state_(std::make_unique<State>()) {
  state_->prev_signature = auth.seed_signature;
  const std::string* content = http_.Header("x-amz-content-sha256");
  state_->check_sha =
      content && content->size() == 64 && content->find_first_not_of("0123456789abcdef") == std::string::npos;
  state_->want_md5 = need_md5 || http_.Header("Content-MD5") != nullptr;
}

PayloadReader::~PayloadReader() = default;

std::string PayloadReader::Md5Hex() const { return state_->md5_hex; }

S3Result<size_t> PayloadReader::ReadRaw(std::span<char> out) {
  if (!http_.body_stream) {
    size_t n = std::min<uint64_t>(out.size(), http_.body.size() - whole_at_);
    std::memcpy(out.data(), http_.body.data() + whole_at_, n);
    whole_at_ += n;
    return n;
  }
  auto n = http_.body_stream->Read(out);
  if (!n) {
    if (n.error().code() == Code::kOutOfRange) {
      return S3Err(400, "EntityTooLarge", "the request body is over the largest upload this endpoint takes");
    }
    return S3Err(400, "IncompleteBody", n.error().message());
  }
  return *n;
}

S3Result<size_t> PayloadReader::Read(std::span<char> out) {
  if (finished_ || out.empty()) return size_t{0};
  auto n = auth_.streaming ? ReadChunked(out) : ReadPlain(out);
  if (!n) return n;
  if (*n == 0) {
    auto ok = Finish();
    if (!ok) return std::unexpected(ok.error());
    return size_t{0};
  }
  total_ += *n;
  if (total_ > max_bytes_) {
    return S3Err(400, "EntityTooLarge",
                 "the object is over " + std::to_string(max_bytes_) +
                     " bytes, the most one PutObject or UploadPart takes: use a multipart upload");
  }
  if (state_->check_sha) state_->sha.Update(out.first(*n));
  if (state_->want_md5) state_->Md5(out.first(*n));
  return n;
}

S3Result<std::string> PayloadReader::ReadAll() {
  std::string all;
  for (;;) {
    size_t at = all.size();
    all.resize(at + kRawPiece);
    auto n = Read(std::span<char>(all.data() + at, kRawPiece));
    if (!n) return std::unexpected(n.error());
    all.resize(at + *n);
    if (*n == 0) return all;
  }
}

S3Result<size_t> PayloadReader::ReadPlain(std::span<char> out) {
  // Fills `out` unless the body ends first, so the hashes run over large
  // pieces (the MD5 on its own thread from kAsyncMd5Min) and the writer gets
  // large writes, not whatever few KiB the network had delivered when the
  // handler asked: with those, the MD5 ran on the handler's thread and a
  // 40 MiB PutObject arrived at 200 MB/s.
  size_t got = 0;
  while (got < out.size()) {
    auto n = ReadRaw(out.subspan(got));
    if (!n) return n;
    if (*n == 0) break;
    got += *n;
  }
  return got;
}

S3Result<size_t> PayloadReader::ReadChunked(std::span<char> out) {
  State& s = *state_;
  while (s.chunk_at == s.chunk.size()) {
    if (s.last_chunk) return size_t{0};
    auto more = NextChunk();
    if (!more) return std::unexpected(more.error());
  }
  size_t n = std::min(out.size(), s.chunk.size() - s.chunk_at);
  std::memcpy(out.data(), s.chunk.data() + s.chunk_at, n);
  s.chunk_at += n;
  return n;
}

S3Result<bool> PayloadReader::NextChunk() {
  State& s = *state_;
  // Makes at least `need` unread raw bytes available; false at the end of the body.
  auto fill = [&](size_t need) -> S3Result<bool> {
    if (s.raw_at > 0) {
      s.raw.erase(0, s.raw_at);
      s.raw_at = 0;
    }
    while (s.raw.size() < need) {
      if (s.raw_eof) return false;
      size_t at = s.raw.size();
      size_t piece = std::max(need - at, kRawPiece);
      s.raw.resize(at + piece);
      auto n = ReadRaw(std::span<char>(s.raw.data() + at, piece));
      if (!n) return std::unexpected(n.error());
      s.raw.resize(at + *n);
      if (*n == 0) s.raw_eof = true;
    }
    return true;
  };
  // The chunk header: "SIZE;chunk-signature=SIG\r\n".
  size_t eol;
  for (size_t need = 1;; ++need) {
    auto f = fill(std::min(need, kMaxChunkHeader + 2));
    if (!f) return std::unexpected(f.error());
    eol = s.raw.find("\r\n", s.raw_at);
    if (eol != std::string::npos) break;
    if (!*f) return S3Err(400, "IncompleteBody", "the aws-chunked body ends inside a chunk header");
    if (s.raw.size() - s.raw_at > kMaxChunkHeader) {
      return S3Err(400, "IncompleteBody", "a chunk header of the aws-chunked body is malformed");
    }
    need = s.raw.size() - s.raw_at;  // wait for more than what is here
  }
  std::string_view head(s.raw.data() + s.raw_at, eol - s.raw_at);
  auto semi = head.find(";chunk-signature=");
  if (semi == std::string_view::npos || semi == 0 || semi > 16) {
    return S3Err(400, "IncompleteBody", "a chunk header lacks ';chunk-signature=' (sign every chunk)");
  }
  uint64_t size = 0;
  for (char c : head.substr(0, semi)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return S3Err(400, "IncompleteBody", "a chunk size is not hex");
    size = size * 16 +
           static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
  }
  if (size > kMaxChunk) {
    return S3Err(400, "InvalidArgument",
                 "an aws-chunked chunk of " + std::to_string(size) + " bytes is over the " + std::to_string(kMaxChunk) +
                     " this endpoint takes: send smaller chunks");
  }
  std::string given(head.substr(semi + 17));
  s.raw_at = eol + 2;
  auto f = fill(size + 2);
  if (!f) return std::unexpected(f.error());
  if (!*f) return S3Err(400, "IncompleteBody", "the aws-chunked body ends inside a chunk");
  s.chunk.assign(s.raw.data() + s.raw_at, size);
  s.chunk_at = 0;
  if (s.raw.compare(s.raw_at + size, 2, "\r\n") != 0) {
    return S3Err(400, "IncompleteBody", "a chunk of the aws-chunked body is not followed by CRLF");
  }
  s.raw_at += size + 2;
  std::string sig = ChunkSignature(auth_, s.prev_signature, s.chunk);
  if (!ConstantTimeEqual(sig, given)) {
    s.chunk.clear();
    return S3Err(403, "SignatureDoesNotMatch",
                 "the signature of chunk " + std::to_string(s.chunks) +
                     " of the aws-chunked body does not match: the body was changed; nothing was stored");
  }
  s.prev_signature = std::move(sig);
  ++s.chunks;
  if (size == 0) {
    s.last_chunk = true;
    auto rest = fill(1);
    if (!rest) return std::unexpected(rest.error());
    if (*rest) return S3Err(400, "IncompleteBody", "bytes follow the final chunk of the aws-chunked body");
  }
  return true;
}

S3Result<bool> PayloadReader::Finish() {
  State& s = *state_;
  finished_ = true;
  if (auth_.streaming) {
    if (const std::string* want = http_.Header("x-amz-decoded-content-length");
        want && *want != std::to_string(total_)) {
      return S3Err(400, "IncompleteBody",
                   "the aws-chunked body holds " + std::to_string(total_) +
                       " bytes, not the x-amz-decoded-content-length " + *want + "; nothing was stored");
    }
  }
  if (s.check_sha && !ConstantTimeEqual(HexOf(s.sha.Bytes()), *http_.Header("x-amz-content-sha256"))) {
    return S3Err(400, "XAmzContentSHA256Mismatch",
                 "the body's SHA-256 is not the x-amz-content-sha256 it was signed with; nothing was stored");
  }
  if (!s.want_md5) return true;
  s.WaitMd5();
  std::string md5 = s.md5.Bytes();
  s.md5_hex = HexOf(md5);
  if (const std::string* want = http_.Header("Content-MD5"); want && *want != Base64Of(md5)) {
    return S3Err(400, "BadDigest", "the Content-MD5 you sent does not match the body; nothing was stored");
  }
  return true;
}

}  // namespace shoal::s3
