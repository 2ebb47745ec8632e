#include "s3/s3_endpoint.h"

#include "common/end_user.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "common/sigv4.h"
#include "common/task_pool.h"
#include "s3/s3_auth.h"
#include "s3/s3_common.h"
#include "s3/s3_errors.h"
#include "s3/s3_listing.h"
#include "s3/s3_objects.h"
#include "s3/s3_redirect.h"
#include "s3/s3_request_parse.h"
#include "s3/s3_writes.h"
#include "ufs/http/xml.h"
#include "ufs/uri.h"

namespace shoal::s3 {
namespace {

constexpr size_t kThreads = 16;
constexpr size_t kMaxKeyLength = 1024;
constexpr size_t kMaxWholeBody = 16ull << 20;

bool IsIpHost(std::string_view host) {
  if (host.starts_with('[')) return true;
  return !host.empty() && std::all_of(host.begin(), host.end(),
                                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

// A key maps to a namespace path below the bucket root: no empty, "." or ".."
// segments (a trailing '/' marks a directory key).
S3Result<std::string> KeyPath(const std::string& root, std::string_view key) {
  if (key.size() > kMaxKeyLength) return S3Err(400, "KeyTooLongError", "keys are limited to 1024 bytes");
  std::string_view rest = key;
  if (rest.ends_with('/')) rest.remove_suffix(1);
  size_t segments = 0;
  while (segments <= kMaxKeyLength) {
    auto slash = rest.find('/');
    std::string_view seg = rest.substr(0, slash);
    if (seg.empty() || seg == "." || seg == ".." || seg.find('\0') != std::string_view::npos) {
      return S3Err(400, "InvalidArgument",
                   "key '" + std::string(key) + "' has an empty, '.' or '..' path segment: Shoal maps keys to paths");
    }
    ++segments;
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return (root == "/" ? "" : root) + "/" + std::string(key);
}

std::string Hex(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::optional<std::string> Unhex(std::string_view s) {
  if (s.size() % 2) return std::nullopt;
  std::string out;
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); i += 2) {
    int hi = val(s[i]), lo = val(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace

class S3Endpoint::Impl {
 public:
  Impl(S3Hooks hooks, const S3Config& config, const std::map<std::string, S3Key>& keys,
       std::map<std::string, std::string> buckets)
      : hooks_(std::move(hooks)),
        config_(config),
        buckets_(std::move(buckets)),
        public_(config.public_buckets.begin(), config.public_buckets.end()),
        auth_(Secrets(keys), config.max_clock_skew),
        redirector_(auth_, config.region, hooks_.self_id),
        staging_(!config.staging_dir.empty()
                     ? config.staging_dir
                     : (std::filesystem::temp_directory_path() / ("shoal-s3-uploads-" + std::to_string(::getuid())))
                           .string()),
        pool_(kThreads),
        started_ns_(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count()) {
    for (const auto& [ak, key] : keys) users_[ak] = key.user;
  }

  static std::map<std::string, std::string> Secrets(const std::map<std::string, S3Key>& keys) {
    std::map<std::string, std::string> out;
    for (const auto& [ak, key] : keys) out[ak] = key.secret;
    return out;
  }

  void Handle(const net::HttpRequest& request, net::Responder responder) {
    if (auto res = ServeCached(request)) {
      responder.Respond(std::move(*res));
      return;
    }
    auto req = std::make_shared<net::HttpRequest>(request);
    pool_.Submit([this, req, responder] { responder.Respond(Serve(*req)); });
  }

  // The client, opened on first use; then kept.
  Result<Client*> GetClient() {
    std::lock_guard lock(client_mu_);
    if (client_) return client_;
    auto c = hooks_.client();
    if (!c) return Err(c.error());
    client_ = *c;
    writes_ = std::make_unique<ObjectWrites>(*client_, staging_, metadata_);
    return client_;
  }

  const std::map<std::string, std::string>& buckets() const { return buckets_; }

 private:
  struct Target {
    std::string bucket;  // "" for the service (ListBuckets)
    std::string key;
    std::string resource;  // "/bucket/key" for errors
  };

  // On the server's I/O thread, without blocking: the answer to a GET of an
  // object whose fresh metadata and every requested byte a worker on this host
  // holds (OpenCachedOnly: one short-circuit exchange, which the
  // worker answers at once from its caches, bounded by a short deadline), or
  // nullopt for everything else, which Serve answers on the pool. This saves
  // the hand-off to the pool and back for a warm small object. The request is
  // admitted (parsed, its signature checked) exactly as Serve does it.
  std::optional<net::HttpResponse> ServeCached(const net::HttpRequest& req) {
    if (req.method != "GET" || req.body_stream || config_.mode != "proxy") return std::nullopt;
    Client* client = OpenedClient();
    if (!client) return std::nullopt;
    Target t;
    auto admitted = Admit(req, &t);
    if (!admitted) return Finish(req, t, std::unexpected(admitted.error()));
    ActingFor acting(admitted->user);
    if (!admitted->root || t.key.empty() || t.key.ends_with('/') || UnservedGetSubresource(admitted->query)) {
      return std::nullopt;
    }
    auto path = KeyPath(*admitted->root, t.key);
    if (!path) return Finish(req, t, std::unexpected(path.error()));
    ObjectRequest o{&req, &admitted->query, *path, hooks_.local_pages ? &hooks_.local_pages : nullptr, &metadata_};
    auto res = GetCachedObject(*client, pool_, o);
    if (!res) return std::nullopt;
    return Finish(req, t, std::move(*res));
  }

  net::HttpResponse Serve(net::HttpRequest& req) {
    Target t;
    S3Result<net::HttpResponse> res = S3Err(500, "InternalError", "not served");
    auto client = GetClient();
    if (!client) {
      res = S3Err(503, "ServiceUnavailable",
                  "the S3 endpoint cannot reach the cluster: " + client.error().message() +
                      " (check s3.client_config, cluster.workers or cluster.etcd)");
    } else {
      res = ReadSmallBody(req);
      if (res) res = Dispatch(req, &t);
    }
    return Finish(req, t, std::move(res));
  }

  // The client if it is open already (never opens it: that may block).
  Client* OpenedClient() {
    std::lock_guard lock(client_mu_);
    return client_;
  }

  // The response to send for `res`: errors as S3 XML; a request id on each.
  net::HttpResponse Finish(const net::HttpRequest& req, const Target& t, S3Result<net::HttpResponse> res) {
    std::string id = Hex(std::string_view(reinterpret_cast<const char*>(&started_ns_), 4)) + "-" +
                     std::to_string(next_id_.fetch_add(1));
    if (!res) {
      if (res.error().http_status >= 500) {
        spdlog::warn("s3: {} {}: {} {}", req.method, t.resource, res.error().code, res.error().message);
      }
      return ErrorResponse(res.error(), t.resource, id);
    }
    res->headers.emplace_back("x-amz-request-id", id);
    return std::move(*res);
  }

  // Every body but a PutObject's or UploadPart's is read whole here (XML
  // documents), before the signature check that covers its hash.
  static S3Result<net::HttpResponse> ReadSmallBody(net::HttpRequest& req) {
    if (!req.body_stream) return net::HttpResponse{};
    if (req.method == "PUT" && !req.Header("x-amz-copy-source")) return net::HttpResponse{};
    std::string body;
    for (;;) {
      size_t at = body.size();
      if (at > kMaxWholeBody) {
        return S3Err(400, "EntityTooLarge",
                     "a " + req.method + " body is limited to " + std::to_string(kMaxWholeBody) + " bytes");
      }
      body.resize(at + 256 * 1024);
      auto n = req.body_stream->Read(std::span<char>(body.data() + at, body.size() - at));
      if (!n) return S3Err(400, "IncompleteBody", n.error().message());
      body.resize(at + *n);
      if (*n == 0) break;
    }
    req.body = std::move(body);
    req.body_stream.reset();
    return net::HttpResponse{};
  }

  // A request that may go on: its query, who signed it, and its bucket's
  // root (nullptr for the service itself).
  struct Admitted {
    QueryParams query;
    AuthInfo auth;
    const std::string* root = nullptr;
    std::shared_ptr<const EndUser> user;  // the key's owner; null when anonymous
  };

  // Parses the target into `t`, checks the signature, refuses anonymous
  // requests outside public buckets, and finds the bucket.
  S3Result<Admitted> Admit(const net::HttpRequest& req, Target* t) {
    auto query = ParseQuery(req.query());
    if (!query) return std::unexpected(query.error());
    auto path = PercentDecode(req.path());
    if (!path || !path->starts_with('/')) return S3Err(400, "InvalidURI", "the request path is not a valid URI path");
    std::string_view p(*path);
    p.remove_prefix(1);
    if (auto bucket = VirtualHostBucket(req)) {
      t->bucket = *bucket;
      t->key = std::string(p);
    } else {
      auto slash = p.find('/');
      t->bucket = std::string(p.substr(0, slash));
      if (slash != std::string_view::npos) t->key = std::string(p.substr(slash + 1));
    }
    t->resource = "/" + t->bucket + (t->key.empty() ? "" : "/" + t->key);

    auto auth = auth_.Verify(req, *query, std::chrono::system_clock::now());
    if (!auth) return std::unexpected(auth.error());
    const bool read = req.method == "GET" || req.method == "HEAD";
    if (auth->access_key.empty() && !(read && !t->bucket.empty() && public_.contains(t->bucket))) {
      return S3Err(403, "AccessDenied",
                   "anonymous requests are refused here: sign the request with a key from "
                   "s3.credentials (or list the bucket in s3.public_buckets for anonymous reads)");
    }
    Admitted out{std::move(*query), std::move(*auth), nullptr, nullptr};
    if (auto u = users_.find(out.auth.access_key); u != users_.end()) out.user = u->second;
    if (t->bucket.empty()) return out;
    auto root = buckets_.find(t->bucket);
    if (root == buckets_.end() && req.method == "PUT" && t->key.empty()) {
      return S3Err(501, "NotImplemented",
                   "CreateBucket '" + t->bucket +
                       "': this endpoint does not create buckets; its buckets are the top-level mounts (or "
                       "s3.buckets): add a mount to the config");
    }
    if (root == buckets_.end()) {
      return S3Err(404, "NoSuchBucket",
                   "no bucket '" + t->bucket + "' (the buckets are the top-level mounts, or s3.buckets)");
    }
    out.root = &root->second;
    return out;
  }

  S3Result<net::HttpResponse> Dispatch(const net::HttpRequest& req, Target* t) {
    auto admitted = Admit(req, t);
    if (!admitted) return std::unexpected(admitted.error());
    // The workers are asked for the key's owner (X-Shoal-On-Behalf-Of), not for this endpoint.
    ActingFor acting(admitted->user);
    const QueryParams* query = &admitted->query;
    const AuthInfo* auth = &admitted->auth;
    if (!admitted->root) {
      if (req.method != "GET") return S3Err(405, "MethodNotAllowed", req.method + " is not allowed on the service");
      return ListBuckets();
    }
    WriteRequest w{&req, query, auth, t->bucket, t->key, ""};
    if (t->key.empty()) return BucketOperation(req, *query, t->bucket, *admitted->root, w);
    return ObjectOperation(req, *query, *admitted->root, w);
  }

  std::optional<std::string> VirtualHostBucket(const net::HttpRequest& req) const {
    const std::string* host = req.Header("Host");
    if (!host) return std::nullopt;
    std::string_view h(*host);
    if (IsIpHost(h)) return std::nullopt;
    auto colon = h.rfind(':');
    if (colon != std::string_view::npos) h = h.substr(0, colon);
    auto dot = h.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    std::string label(h.substr(0, dot));
    if (!buckets_.contains(label)) return std::nullopt;
    return label;
  }

  S3Result<net::HttpResponse> ListBuckets() {
    std::string body = "<ListAllMyBucketsResult" + std::string(kS3Xmlns) + "><Owner>" + Tag("ID", "shoal") +
                       Tag("DisplayName", "shoal") + "</Owner><Buckets>";
    for (const auto& [name, path] : buckets_) {
      body += "<Bucket>" + Tag("Name", name) + Tag("CreationDate", IsoDate(started_ns_)) + "</Bucket>";
    }
    body += "</Buckets></ListAllMyBucketsResult>";
    return XmlResponse(200, std::move(body));
  }

  S3Result<net::HttpResponse> BucketOperation(const net::HttpRequest& req, const QueryParams& q,
                                              const std::string& bucket, const std::string& root,
                                              const WriteRequest& w) {
    if (req.method == "POST" && Param(q, "delete")) return writes_->DeleteObjects(w, root);
    if (req.method == "HEAD") {
      net::HttpResponse r;
      r.headers.emplace_back("x-amz-bucket-region", config_.region);
      return r;
    }
    if (req.method == "PUT" && q.empty()) {
      return S3Err(409, "BucketAlreadyOwnedByYou",
                   "the bucket '" + bucket + "' exists: it is the mount " + root + " (buckets are mounts)");
    }
    if (req.method != "GET") {
      return S3Err(501, "NotImplemented", req.method + " on a bucket is not implemented by this endpoint");
    }
    if (Param(q, "location")) {
      std::string region = config_.region == "us-east-1" ? "" : config_.region;
      return XmlResponse(
          200, "<LocationConstraint" + std::string(kS3Xmlns) + ">" + XmlEscape(region) + "</LocationConstraint>");
    }
    if (Param(q, "uploads")) return writes_->ListUploads(bucket, q);
    for (const char* sub : {"acl", "policy", "versioning", "tagging", "cors", "lifecycle", "website", "logging",
                            "notification", "replication", "encryption", "object-lock", "versions", "accelerate",
                            "requestPayment", "ownershipControls", "publicAccessBlock"}) {
      if (Param(q, sub)) {
        return S3Err(501, "NotImplemented", std::string("the bucket subresource ?") + sub + " is not implemented");
      }
    }
    const std::string* list_type = Param(q, "list-type");
    if (list_type && *list_type != "2") return S3Err(400, "InvalidArgument", "list-type must be 2");
    return List(q, bucket, root, list_type != nullptr);
  }

  S3Result<net::HttpResponse> List(const QueryParams& q, const std::string& bucket, const std::string& root, bool v2) {
    ListRequest lr;
    lr.root = root;
    auto get = [&](const char* name) {
      const std::string* v = Param(q, name);
      return v ? *v : std::string();
    };
    lr.prefix = get("prefix");
    lr.delimiter = get("delimiter");
    if (const std::string* mk = Param(q, "max-keys")) {
      if (mk->empty() || mk->size() > 9 ||
          !std::all_of(mk->begin(), mk->end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        return S3Err(400, "InvalidArgument", "max-keys must be a number between 0 and 1000");
      }
      lr.max_keys = std::min<size_t>(1000, std::stoul(*mk));
    }
    const std::string* encoding = Param(q, "encoding-type");
    if (encoding && *encoding != "url") return S3Err(400, "InvalidArgument", "encoding-type must be url");
    auto enc = [&](const std::string& s) { return encoding ? UriEncode(s, true) : s; };
    std::string token, start_after = get("start-after"), marker = get("marker");
    bool token_given = false;
    if (v2) {
      lr.after = start_after;
      if (const std::string* ct = Param(q, "continuation-token"); ct && ct->empty()) {
        token_given = true;  // an empty token starts the listing, as on S3
      } else if (ct) {
        auto key = ct->starts_with("1") ? Unhex(std::string_view(*ct).substr(1)) : std::nullopt;
        if (!key) return S3Err(400, "InvalidArgument", "the continuation-token is not one this endpoint gave out");
        token = *ct;
        token_given = true;
        lr.after = std::max(lr.after, *key);
      }
    } else {
      lr.after = marker;
    }
    auto result = ListObjects(*client_, lr);
    if (!result) return std::unexpected(result.error());

    // v1's Prefix goes back as sent: SDKs decode Marker, NextMarker, Delimiter
    // and keys there but not Prefix (botocore; ceph/s3-tests checks it), unless
    // it holds a character XML 1.0 cannot carry.
    const bool xml_safe = std::none_of(lr.prefix.begin(), lr.prefix.end(), [](char c) {
      auto u = static_cast<unsigned char>(c);
      return u < 0x20 && u != '\t' && u != '\n';  // a raw CR would come back as LF
    });
    std::string body = "<ListBucketResult" + std::string(kS3Xmlns) + ">" + Tag("Name", bucket) +
                       Tag("Prefix", v2 || !xml_safe ? enc(lr.prefix) : lr.prefix);
    if (v2) {
      body += Tag("KeyCount", std::to_string(result->objects.size() + result->common_prefixes.size()));
      if (token_given) body += Tag("ContinuationToken", token);
      if (result->truncated) body += Tag("NextContinuationToken", "1" + Hex(result->last));
      if (!start_after.empty()) body += Tag("StartAfter", enc(start_after));
    } else {
      body += Tag("Marker", enc(marker));
      if (result->truncated) body += Tag("NextMarker", enc(result->last));
    }
    body += Tag("MaxKeys", std::to_string(lr.max_keys));
    if (!lr.delimiter.empty()) body += Tag("Delimiter", enc(lr.delimiter));
    if (encoding) body += Tag("EncodingType", "url");
    body += Tag("IsTruncated", result->truncated ? "true" : "false");
    const bool owner = !v2 || get("fetch-owner") == "true";
    for (const auto& o : result->objects) {
      // A pending write-back file: the ETag its writer gave, from its holders
      // (one stat each, kept for the HEAD that often follows), as HEAD answers.
      std::string etag = ETagOf(o);
      if (o.version.starts_with("wb-")) {
        FileStatus at = o;  // its path is the key here; the metadata is read by namespace path
        if (auto path = KeyPath(root, o.path)) {
          at.path = std::move(*path);
          etag = ETagOf(at, metadata_.Get(*client_, at));
        }
      }
      body += "<Contents>" + Tag("Key", enc(o.path)) + Tag("LastModified", IsoDate(o.mtime_ns)) + Tag("ETag", etag) +
              Tag("Size", std::to_string(o.size)) + Tag("StorageClass", "STANDARD");
      if (owner) body += "<Owner>" + Tag("ID", "shoal") + Tag("DisplayName", "shoal") + "</Owner>";
      body += "</Contents>";
    }
    for (const auto& p : result->common_prefixes)
      body += "<CommonPrefixes>" + Tag("Prefix", enc(p)) + "</CommonPrefixes>";
    body += "</ListBucketResult>";
    return XmlResponse(200, std::move(body));
  }

  S3Result<net::HttpResponse> ObjectOperation(const net::HttpRequest& req, const QueryParams& q,
                                              const std::string& root, WriteRequest w) {
    const std::string& key = w.key;
    auto path = KeyPath(root, key);
    if (!path) return std::unexpected(path.error());
    w.path = *path;
    const bool upload = Param(q, "uploadId") != nullptr;
    if (req.method == "GET" || req.method == "HEAD") {
      if (upload && req.method == "GET") return writes_->ListParts(w);
      if (Param(q, "attributes") && req.method == "GET") return ObjectAttributes(req, *path);
      if (const char* sub = UnservedGetSubresource(q)) {
        return S3Err(501, "NotImplemented", std::string("the object subresource ?") + sub + " is not implemented");
      }
      if (key.ends_with('/')) return S3Err(404, "NoSuchKey", "no object '" + key + "' (a directory)");
      if (config_.mode == "redirect") {
        if (auto st = client_->Stat(*path); st && !st->is_dir) {
          if (auto r = redirector_.For(*client_, req, q, *w.auth, *st)) return std::move(*r);
        }
      }
      ObjectRequest o{&req, &q, *path, hooks_.local_pages ? &hooks_.local_pages : nullptr, &metadata_};
      return GetObject(*client_, pool_, o);
    }
    const std::string* copy_source = req.Header("x-amz-copy-source");
    if (req.method == "PUT") {
      for (const char* sub : {"acl", "tagging", "retention", "legal-hold"}) {
        if (Param(q, sub)) {
          return S3Err(501, "NotImplemented", std::string("the object subresource ?") + sub + " is not implemented");
        }
      }
      if (upload) {
        if (copy_source) {
          auto source = CopySourcePath(*copy_source);
          if (!source) return std::unexpected(source.error());
          return writes_->UploadPartCopy(w, *source);
        }
        return writes_->UploadPart(w);
      }
      if (copy_source) {
        auto source = CopySourcePath(*copy_source);
        if (!source) return std::unexpected(source.error());
        return writes_->Copy(w, *source);
      }
      return writes_->Put(w);
    }
    if (req.method == "DELETE") return upload ? writes_->AbortUpload(w) : writes_->Delete(w);
    if (req.method == "POST") {
      if (Param(q, "uploads")) return writes_->CreateUpload(w);
      if (upload) return writes_->CompleteUpload(w);
    }
    return S3Err(
        501, "NotImplemented",
        req.method + " " + std::string(req.target.substr(0, 200)) + " is not an operation this endpoint implements");
  }

  // GetObjectAttributes: ETag, ObjectSize, StorageClass and ObjectParts'
  // PartsCount (what x-amz-object-attributes asks for of them; no checksums,
  // no per-part list).
  S3Result<net::HttpResponse> ObjectAttributes(const net::HttpRequest& req, const std::string& path) {
    const std::string* asked = req.Header("x-amz-object-attributes");
    if (!asked || asked->empty()) {
      return S3Err(400, "InvalidArgument", "GetObjectAttributes needs x-amz-object-attributes (ETag, ObjectSize, ...)");
    }
    auto st = client_->Stat(path);
    if (!st) return std::unexpected(FromStatus(st.error()));
    if (st->is_dir) return S3Err(404, "NoSuchKey", path + " is a directory, not an object");
    auto wants = [&](std::string_view name) { return asked->find(name) != std::string::npos; };
    std::string body = "<GetObjectAttributesResponse" + std::string(kS3Xmlns) + ">";
    if (wants("ETag")) {
      std::string etag = ETagOf(*st);
      body += Tag("ETag", etag.substr(1, etag.size() - 2));
    }
    if (wants("StorageClass")) body += Tag("StorageClass", "STANDARD");
    if (wants("ObjectSize")) body += Tag("ObjectSize", std::to_string(st->size));
    if (wants("ObjectParts")) {
      // The count a multipart ETag carries ("<md5>-N"); S3 answers none for an object uploaded whole.
      const std::string etag = ETagOf(*st);
      const size_t dash = etag.rfind('-');
      if (dash != std::string::npos) {
        body += "<ObjectParts>" + Tag("PartsCount", etag.substr(dash + 1, etag.size() - dash - 2)) + "</ObjectParts>";
      }
    }
    net::HttpResponse res = XmlResponse(200, body + "</GetObjectAttributesResponse>");
    res.headers.emplace_back("Last-Modified", HttpDate(st->mtime_ns));
    return res;
  }

  // The first object subresource a GET or HEAD names that this endpoint does
  // not serve (an upload's parts are listed by ObjectOperation), or nullptr.
  static const char* UnservedGetSubresource(const QueryParams& q) {
    for (const char* sub : {"acl", "tagging", "uploadId", "attributes", "retention", "legal-hold", "torrent"}) {
      if (Param(q, sub)) return sub;
    }
    return nullptr;
  }

  // x-amz-copy-source: "bucket/key" or "/bucket/key", URL-encoded, maybe "?versionId=".
  S3Result<std::string> CopySourcePath(std::string_view source) const {
    source = source.substr(0, source.find('?'));
    auto decoded = PercentDecode(source);
    if (!decoded) return S3Err(400, "InvalidArgument", "x-amz-copy-source has a malformed %-escape");
    std::string_view s(*decoded);
    if (s.starts_with('/')) s.remove_prefix(1);
    auto slash = s.find('/');
    if (slash == std::string_view::npos || slash + 1 == s.size()) {
      return S3Err(400, "InvalidArgument", "x-amz-copy-source must be bucket/key");
    }
    auto root = buckets_.find(std::string(s.substr(0, slash)));
    if (root == buckets_.end()) {
      return S3Err(404, "NoSuchBucket", "no bucket '" + std::string(s.substr(0, slash)) + "' (x-amz-copy-source)");
    }
    return KeyPath(root->second, s.substr(slash + 1));
  }

  S3Hooks hooks_;
  S3Config config_;
  std::map<std::string, std::string> buckets_;
  std::set<std::string> public_;
  Authenticator auth_;
  std::map<std::string, std::shared_ptr<const EndUser>> users_;  // access key -> its owner
  Redirector redirector_;
  std::string staging_;
  std::mutex client_mu_;
  Client* client_ = nullptr;              // set once by GetClient, then read only
  MetadataCache metadata_;                // before writes_, which uses it
  std::unique_ptr<ObjectWrites> writes_;  // made with client_
  std::atomic<uint64_t> next_id_{1};
  TaskPool pool_;  // last: its threads stop first
  int64_t started_ns_;
};

Status LoadCredentialsFile(const std::string& path, std::map<std::string, S3Key>* keys) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status(Code::kInvalidArgument, "cannot read s3 credentials file '" + path + "': " + std::strerror(errno));
  }
  if (st.st_mode & 077) {
    return Status(Code::kPermissionDenied, "s3 credentials file '" + path + "' is readable by others: chmod 600 it");
  }
  std::ifstream in(path);
  if (!in) return Status(Code::kInvalidArgument, "cannot read s3 credentials file '" + path + "'");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string ak, sk, user, groups, extra;
    if (!(words >> ak) || ak.starts_with('#')) continue;
    auto bad = [&](const std::string& why) {
      return Status(Code::kInvalidArgument, path + ":" + std::to_string(n) + ": " + why);
    };
    if (!(words >> sk)) return bad("expected 'ACCESS_KEY SECRET_KEY [USER [GROUP,GROUP...]]'");
    words >> user >> groups;
    if (words >> extra) return bad("expected 'ACCESS_KEY SECRET_KEY [USER [GROUP,GROUP...]]', then nothing");
    auto u = std::make_shared<EndUser>();
    u->user = user.empty() ? ak : user;
    if (!IsHeaderSafeName(u->user)) return bad("'" + u->user + "' is not a user name (letters, digits, ._@-+=$\\)");
    for (size_t b = 0, e; b < groups.size(); b = e + 1) {
      e = std::min(groups.find(',', b), groups.size());
      if (e == b) continue;
      u->groups.push_back(groups.substr(b, e - b));
      if (!IsHeaderSafeName(u->groups.back())) return bad("'" + u->groups.back() + "' is not a group name");
    }
    (*keys)[ak] = S3Key{sk, std::move(u)};
  }
  return {};
}

S3Endpoint::S3Endpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Endpoint::~S3Endpoint() = default;

Result<std::unique_ptr<S3Endpoint>> S3Endpoint::Create(Client& client, const S3Config& config) {
  SetDoorName("s3");
  std::vector<std::string> mounts;
  for (const auto& m : client.Mounts()) mounts.push_back(m.path);
  S3Hooks hooks;
  hooks.client = [&client]() -> Result<Client*> { return &client; };
  return Create(std::move(hooks), mounts, config);
}

Result<std::unique_ptr<S3Endpoint>> S3Endpoint::Create(S3Hooks hooks, const std::vector<std::string>& mount_paths,
                                                       const S3Config& config) {
  if (config.mode != "proxy" && config.mode != "redirect") {
    return Err(Code::kInvalidArgument, "s3.mode is '" + config.mode + "': give proxy (the default) or redirect");
  }
  std::map<std::string, S3Key> keys;
  for (const auto& [ak, sk] : config.credentials) {
    keys[ak] = S3Key{sk, std::make_shared<const EndUser>(EndUser{ak, {}})};
  }
  if (!config.credentials_file.empty()) SHOAL_RETURN_IF_ERROR(LoadCredentialsFile(config.credentials_file, &keys));
  for (const auto& [name, u] : config.users) {
    if (auto it = keys.find(u.access_key); it != keys.end() && it->second.user->user != name) {
      return Err(Code::kInvalidArgument, "s3.users." + name + ".access_key is also the key of " +
                                             it->second.user->user + " (s3.credentials or s3.credentials_file)");
    }
    keys[u.access_key] = S3Key{u.secret_key, std::make_shared<const EndUser>(EndUser{name, u.groups})};
  }
  std::map<std::string, std::string> buckets = config.buckets;
  if (buckets.empty()) {
    for (const auto& mount_path : mount_paths) {
      std::string_view name(mount_path);
      name.remove_prefix(1);
      if (name.empty() || name.find('/') != std::string_view::npos) continue;  // "/" or nested: use s3.buckets
      buckets[std::string(name)] = mount_path;
    }
  }
  for (const auto& [name, path] : buckets) {
    if (name.empty() || name.find('/') != std::string::npos) {
      return Err(Code::kInvalidArgument, "s3.buckets: bucket name '" + name + "' must be non-empty and have no '/'");
    }
    if (!path.starts_with('/')) {
      return Err(Code::kInvalidArgument,
                 "s3.buckets: bucket '" + name + "' maps to '" + path + "', not a namespace path such as /data");
    }
  }
  for (const auto& b : config.public_buckets) {
    if (!buckets.contains(b)) {
      return Err(Code::kInvalidArgument, "s3.public_buckets names '" + b + "', which is not a bucket");
    }
  }
  if (keys.empty() && config.public_buckets.empty()) {
    return Err(Code::kInvalidArgument,
               "the S3 endpoint has no access key: set s3.credentials or s3.credentials_file (or s3.public_buckets "
               "for anonymous reads)");
  }
  return std::unique_ptr<S3Endpoint>(
      new S3Endpoint(std::make_unique<Impl>(std::move(hooks), config, keys, std::move(buckets))));
}

net::Router S3Endpoint::Routes() {
  net::Router r;
  r.SetFallback([impl = impl_.get()](const net::HttpRequest& req, net::Responder res) { impl->Handle(req, res); });
  // A single PutObject or UploadPart is up to 5 GiB of payload; aws-chunked
  // framing adds under 1% (the payload itself is limited by PayloadReader).
  r.StreamBodies((5ull << 30) + (64ull << 20));
  return r;
}

net::ServerOptions S3Endpoint::ServerOptionsFor(const std::string& listen) {
  net::ServerOptions o;
  o.listen = listen;
  o.settings_prefix = "s3";
  o.error_response = ServerErrorResponse;
  return o;
}

const std::map<std::string, std::string>& S3Endpoint::buckets() const { return impl_->buckets(); }

}  // namespace shoal::s3
