#include "ufs/s3/s3_writer.h"

#include <algorithm>
#include <optional>

#include "ufs/http/call_deadline.h"
#include "ufs/s3/s3_xml.h"

namespace shoal::s3 {

Headers UploadHeaders(const S3Settings& s, std::span<const char> body) {
  Headers h;
  if (!s.sign_payload && !body.empty()) h.emplace_back("Content-MD5", Md5Base64(body));
  return h;
}

Headers MetadataHeaders(const ObjectMetadata& m) {
  Headers h;
  if (!m.content_type.empty()) h.emplace_back("Content-Type", m.content_type);
  for (const auto& [k, v] : m.user) h.emplace_back("x-amz-meta-" + k, v);
  for (const auto& [k, v] : m.headers) h.emplace_back(k, v);  // S3 keeps them as they are
  return h;
}

ObjectMetadata MetadataOfHeaders(const std::map<std::string, std::string>& lower_headers) {
  ObjectMetadata m;
  for (const auto& [k, v] : lower_headers) {
    if (k == "content-type") m.content_type = v;
    if (k.starts_with("x-amz-meta-") && k.size() > 11) m.user.emplace_back(k.substr(11), v);
  }
  for (std::string_view name : kObjectHeaders) {
    if (auto it = lower_headers.find(std::string(name)); it != lower_headers.end() && !it->second.empty()) {
      m.headers.emplace_back(name, it->second);
    }
  }
  return m;
}

S3Writer::S3Writer(std::shared_ptr<const S3Client> client, std::string full_key, Headers object_headers)
    : client_(std::move(client)), key_(std::move(full_key)), object_headers_(std::move(object_headers)) {}

S3Writer::~S3Writer() {
  if (state_ == State::kOpen) Abort();
}

Status S3Writer::Fail(Status s) {
  if (failed_.ok()) failed_ = s;
  return s;
}

namespace {
// Objects up to this size grow their buffer as they come.
constexpr size_t kSmallObject = 1 << 20;
}  // namespace

Status S3Writer::Append(std::span<const char> data) {
  if (state_ != State::kOpen) return Status(Code::kInvalidArgument, "append to a closed writer for " + client_->UriOf(key_));
  if (!failed_.ok()) return failed_;
  const auto& s = client_->settings();
  // Data enters the buffer only up to the point where something must be sent,
  // so a huge Append never makes a huge buffer. A part is cut only once more
  // bytes follow it: the final (possibly short) part is Close()'s to send.
  while (!data.empty()) {
    size_t cap = upload_id_.empty() ? std::max<uint64_t>(s.multipart_threshold, s.multipart_part_size + 1)
                                    : s.multipart_part_size + 1;
    size_t take = std::min(data.size(), cap - buffer_.size());
    // Past a small object, the buffer is made its full size at once: grown by
    // doubling, every byte of a part was copied three times more (a fifth of
    // a write-back holder's CPU while it uploads).
    if (buffer_.size() + take > buffer_.capacity() && buffer_.size() + take > kSmallObject) buffer_.reserve(cap);
    buffer_.append(data.data(), take);
    data = data.subspan(take);
    if (buffer_.size() < cap) break;
    if (upload_id_.empty()) SHOAL_RETURN_IF_ERROR(StartMultipart());
    while (buffer_.size() > s.multipart_part_size) {
      // The buffer becomes the part; what follows it starts the next buffer.
      std::string rest(buffer_.data() + s.multipart_part_size, buffer_.size() - s.multipart_part_size);
      buffer_.resize(s.multipart_part_size);
      std::string part = std::move(buffer_);
      buffer_ = std::move(rest);
      SHOAL_RETURN_IF_ERROR(SubmitPart(std::move(part)));
    }
  }
  return {};
}

Status S3Writer::StartMultipart() {
  S3Request r;
  r.method = "POST";
  r.key = key_;
  r.query = {{"uploads", ""}};
  r.headers = object_headers_;
  auto resp = client_->Send(r);
  if (!resp) return Fail(resp.error());
  if (resp->status / 100 != 2) return Fail(client_->ErrorFor(*resp, r));
  auto id = XmlText(resp->body, "UploadId");
  if (!id || id->empty()) {
    return Fail(Status(Code::kIo, "starting a multipart upload of " + client_->UriOf(key_) + " returned no UploadId"));
  }
  upload_id_ = *id;
  return {};
}

Status S3Writer::SubmitPart(std::string data) {
  SHOAL_RETURN_IF_ERROR(WaitParts(static_cast<size_t>(client_->settings().multipart_concurrency) - 1));
  int number = next_part_++;
  auto body = std::make_shared<std::string>(std::move(data));
  auto client = client_;
  std::string key = key_, upload_id = upload_id_;
  auto deadline = CallDeadline::Current();
  inflight_.push_back(
      std::async(std::launch::async, [client, key, upload_id, number, body, deadline]() -> Result<std::string> {
        // The caller's call deadline (CallDeadline) is per thread: carried over to this one.
        std::optional<CallDeadline> bound;
        if (deadline) bound.emplace(*deadline);
        S3Request r;
        r.method = "PUT";
        r.key = key;
        r.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}};
        r.body = std::span<const char>(body->data(), body->size());
        r.headers = UploadHeaders(client->settings(), r.body);
        auto resp = client->Send(r);
        if (!resp) return Err(resp.error());
        if (resp->status / 100 != 2) return Err(client->ErrorFor(*resp, r));
        std::string etag = UnquoteEtag(resp->Header("etag"));
        if (etag.empty()) {
          return Err(Code::kIo, "part " + std::to_string(number) + " of " + client->UriOf(key) + " returned no ETag");
        }
        return etag;
      }));
  return {};
}

Status S3Writer::WaitParts(size_t keep) {
  while (inflight_.size() > keep) {
    auto etag = inflight_.front().get();
    inflight_.pop_front();
    if (!etag) {
      (void)Fail(etag.error());
    } else {
      etags_.push_back(std::move(*etag));
    }
  }
  return failed_;
}

Status S3Writer::Complete() {
  auto xml = CompleteMultipartXml(etags_);
  S3Request r;
  r.method = "POST";
  r.key = key_;
  r.query = {{"uploadId", upload_id_}};
  r.body = std::span<const char>(xml.data(), xml.size());
  r.headers = UploadHeaders(client_->settings(), r.body);
  // S3 may answer 200 and still report an error in the body.
  auto resp = client_->Send(r, [](const HttpResponse& h) {
    auto e = ParseError(h.body);
    if (e.code.empty()) return Status::Ok();
    return Status(Code::kUnavailable, "CompleteMultipartUpload: " + e.code + ": " + e.message);
  });
  if (!resp) return resp.error();
  if (resp->status / 100 != 2) return client_->ErrorFor(*resp, r);
  return {};
}

Status S3Writer::Close() {
  if (state_ != State::kOpen) return Status(Code::kInvalidArgument, "close of a finished writer for " + client_->UriOf(key_));
  if (!failed_.ok()) {
    Abort();
    return failed_;
  }
  if (upload_id_.empty()) {
    S3Request r;
    r.method = "PUT";
    r.key = key_;
    r.body = std::span<const char>(buffer_.data(), buffer_.size());
    r.headers = UploadHeaders(client_->settings(), r.body);
    r.headers.insert(r.headers.end(), object_headers_.begin(), object_headers_.end());
    auto resp = client_->Send(r);
    Status st = !resp ? resp.error() : resp->status / 100 != 2 ? client_->ErrorFor(*resp, r) : Status::Ok();
    state_ = st.ok() ? State::kClosed : State::kAborted;
    buffer_.clear();
    buffer_.shrink_to_fit();
    return st;
  }
  Status st;
  if (!buffer_.empty()) st = SubmitPart(std::move(buffer_));
  buffer_.clear();
  if (st.ok()) st = WaitParts(0);
  if (st.ok()) st = Complete();
  if (!st.ok()) {
    (void)Fail(st);
    Abort();
    return st;
  }
  state_ = State::kClosed;
  return {};
}

void S3Writer::AbortUpload() {
  S3Request r;
  r.method = "DELETE";
  r.key = key_;
  r.query = {{"uploadId", upload_id_}};
  (void)client_->Send(r);  // best effort: a lifecycle rule cleans up what this misses
}

void S3Writer::Abort() {
  if (state_ == State::kClosed) return;
  state_ = State::kAborted;
  while (!inflight_.empty()) {
    inflight_.front().wait();
    inflight_.pop_front();
  }
  if (!upload_id_.empty()) AbortUpload();
  upload_id_.clear();
  buffer_.clear();
  buffer_.shrink_to_fit();
}

}  // namespace shoal::s3
