#include "tests/harness/aws_stand_in.h"

#include <stdexcept>
#include <thread>

#include "common/sigv4.h"
#include "s3/s3_auth.h"
#include "s3/s3_request_parse.h"
#include "ufs/cloud/credential_cache.h"
#include "ufs/cloud/token_http.h"
#include "ufs/http/xml.h"
#include "ufs/uri.h"

namespace shoal::testing {
namespace {

using Clock = std::chrono::system_clock;

net::HttpResponse Answer(int status, std::string body, std::string_view type = "text/plain") {
  return net::HttpResponse::Text(status, std::move(body), type);
}

std::string Iso(Clock::time_point t) { return cloud::FormatExpiry(t); }

std::string StsXml(const std::string& action, const std::string& key, const std::string& secret,
                   const std::string& token, Clock::time_point expires) {
  return "<" + action + "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" + action +
         "Result><Credentials><AccessKeyId>" + key + "</AccessKeyId><SecretAccessKey>" + secret +
         "</SecretAccessKey><SessionToken>" + token + "</SessionToken><Expiration>" + Iso(expires) +
         "</Expiration></Credentials><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn>"
         "</AssumedRoleUser></" +
         action + "Result><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></" + action + "Response>";
}

std::string StsError(const std::string& code, const std::string& message) {
  return "<ErrorResponse><Error><Type>Sender</Type><Code>" + code + "</Code><Message>" + message +
         "</Message></Error></ErrorResponse>";
}

// SigV4 as STS checks it (service "sts", a form body hashed into the
// signature): the access key that signed `req`, or "" when the signature is
// missing or does not match `keys`.
std::string VerifyStsSignature(const net::HttpRequest& req, const std::map<std::string, std::string>& keys) {
  const std::string* auth = req.Header("Authorization");
  const std::string* date = req.Header("x-amz-date");
  if (!auth || !date || !auth->starts_with("AWS4-HMAC-SHA256 ")) return "";
  auto field = [&](std::string_view name) {
    auto at = auth->find(name);
    if (at == std::string::npos) return std::string();
    at += name.size();
    return auth->substr(at, auth->find_first_of(", ", at) - at);
  };
  std::string credential = field("Credential="), signed_names = field("SignedHeaders="), given = field("Signature=");
  // KEY/DATE/REGION/sts/aws4_request
  std::vector<std::string> parts;
  for (size_t pos = 0, slash; pos <= credential.size(); pos = slash + 1) {
    slash = credential.find('/', pos);
    if (slash == std::string::npos) slash = credential.size();
    parts.push_back(credential.substr(pos, slash - pos));
  }
  if (parts.size() != 5 || parts[3] != "sts" || !keys.contains(parts[0])) return "";
  s3::Headers signed_headers;
  for (size_t pos = 0, semi; pos <= signed_names.size(); pos = semi + 1) {
    semi = signed_names.find(';', pos);
    if (semi == std::string::npos) semi = signed_names.size();
    std::string name = signed_names.substr(pos, semi - pos);
    const std::string* v = req.Header(name);
    if (!v) return "";
    signed_headers.emplace_back(name, *v);
  }
  auto canonical = s3::CanonicalizeHeaders(signed_headers);
  std::string request = s3::CanonicalRequest(req.method, "/", "", canonical, s3::Sha256Hex(req.body));
  std::string scope = s3::CredentialScope(parts[1], parts[2], "sts");
  std::string want = s3::HmacHex(s3::SigningKey(keys.at(parts[0]), parts[1], parts[2], "sts"),
                                 s3::StringToSign(*date, scope, request));
  return s3::ConstantTimeEqual(want, given) ? parts[0] : "";
}

}  // namespace

AwsStandIn::Issued AwsStandIn::Issue(std::string* key) {
  ++serial_;
  *key = "ASIASTANDIN" + std::to_string(100000 + serial_);
  Issued i{"secret-" + std::to_string(serial_) + "-standin", "token-" + std::to_string(serial_) + "-standin",
           Clock::now() + lifetime_};
  if (faults_[Endpoint::kImds] == Fault::kExpired || faults_[Endpoint::kSts] == Fault::kExpired ||
      faults_[Endpoint::kContainer] == Fault::kExpired) {
    i.expires = Clock::now() - std::chrono::hours(1);
  }
  issued_[*key] = i;
  last_issued_ = *key;
  return i;
}

bool AwsStandIn::Hang(Endpoint e) {
  {
    std::lock_guard l(mu_);
    if (faults_[e] != Fault::kHang) return false;
  }
  // Longer than any caller here waits; the caller gives up first.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  return true;
}

AwsStandIn::AwsStandIn() {
  net::Router r;
  // Handlers may sleep (kHang) or verify signatures: they run on their own threads.
  auto async = [](auto fn) {
    return [fn](const net::HttpRequest& req, net::Responder res) {
      std::thread([fn, req, res]() mutable { res.Respond(fn(req)); }).detach();
    };
  };
  auto fault_answer = [this](Endpoint e) -> std::optional<net::HttpResponse> {
    if (Hang(e)) return Answer(503, "late");
    std::lock_guard l(mu_);
    if (faults_[e] == Fault::kError500) return Answer(500, "{\"Code\":\"InternalError\"}", "application/json");
    if (faults_[e] == Fault::kGarbage) return Answer(200, "<<not a credential>>", "text/plain");
    return std::nullopt;
  };

  r.Add("PUT", "/latest/api/token", async([this, fault_answer](const net::HttpRequest& req) {
          if (auto f = fault_answer(Endpoint::kImds)) return *f;
          std::lock_guard l(mu_);
          const std::string* ttl = req.Header("X-aws-ec2-metadata-token-ttl-seconds");
          if (!ttl) return Answer(400, "missing X-aws-ec2-metadata-token-ttl-seconds");
          ++counts_.imds_token_puts;
          std::string token = "imds-session-" + std::to_string(++serial_);
          imds_tokens_[token] = *ttl;
          return Answer(200, token);
        }));
  auto imds_get = async([this, fault_answer](const net::HttpRequest& req) {
    if (auto f = fault_answer(Endpoint::kImds)) return *f;
    std::lock_guard l(mu_);
    const std::string* token = req.Header("X-aws-ec2-metadata-token");
    if ((!token && !allow_v1_) || (token && !imds_tokens_.contains(*token))) {
      ++counts_.imds_unauthorized;
      return Answer(401, "");
    }
    ++counts_.imds_gets;
    std::string base = "/latest/meta-data/iam/security-credentials/";
    std::string path(req.path());
    if (path == base) return Answer(200, role_ + "\n");
    if (path != base + role_) return Answer(404, "not found");
    std::string key;
    Issued i = Issue(&key);
    return Answer(200,
                  "{\"Code\":\"Success\",\"LastUpdated\":\"" + Iso(Clock::now()) +
                      "\",\"Type\":\"AWS-HMAC\",\"AccessKeyId\":\"" + key + "\",\"SecretAccessKey\":\"" + i.secret +
                      "\",\"Token\":\"" + i.token + "\",\"Expiration\":\"" + Iso(i.expires) + "\"}",
                  "application/json");
  });
  r.Add("GET", "/latest/meta-data/iam/security-credentials/", imds_get);
  const std::string imds_prefix = "/latest/meta-data/";
  r.Add("GET", "/container/creds", async([this, fault_answer](const net::HttpRequest& req) {
          if (auto f = fault_answer(Endpoint::kContainer)) return *f;
          std::lock_guard l(mu_);
          const std::string* auth = req.Header("Authorization");
          if (!container_token_.empty() && (!auth || *auth != container_token_)) {
            return Answer(401, "{\"code\":\"AccessDenied\",\"message\":\"bad authorization token\"}",
                          "application/json");
          }
          ++counts_.container_gets;
          std::string key;
          Issued i = Issue(&key);
          return Answer(200,
                        "{\"AccessKeyId\":\"" + key + "\",\"SecretAccessKey\":\"" + i.secret + "\",\"Token\":\"" +
                            i.token + "\",\"Expiration\":\"" + Iso(i.expires) + "\"}",
                        "application/json");
        }));
  r.Add("POST", "/", async([this, fault_answer](const net::HttpRequest& req) {
          if (auto f = fault_answer(Endpoint::kSts)) return *f;
          auto form = cloud::FormDecode(req.body);
          std::lock_guard l(mu_);
          const std::string action = form["Action"];
          last_role_arn_ = form["RoleArn"];
          last_session_ = form["RoleSessionName"];
          if (form["Version"] != "2011-06-15" || last_role_arn_.empty() || last_session_.empty()) {
            return Answer(400, StsError("ValidationError", "Version, RoleArn and RoleSessionName are required"));
          }
          if (action == "AssumeRoleWithWebIdentity") {
            if (form["WebIdentityToken"] != web_token_) {
              return Answer(400, StsError("InvalidIdentityToken", "the web identity token is not valid"));
            }
            ++counts_.assume_role_web_identity;
          } else if (action == "AssumeRole") {
            auto signer = VerifyStsSignature(req, source_keys_);
            if (signer.empty()) return Answer(403, StsError("SignatureDoesNotMatch", "the signature does not match"));
            last_signer_ = signer;
            ++counts_.assume_role;
          } else {
            return Answer(400, StsError("InvalidAction", "unknown action"));
          }
          std::string key;
          Issued i = Issue(&key);
          return Answer(200, StsXml(action, key, i.secret, i.token, i.expires), "text/xml");
        }));

  // S3: everything else.
  auto s3_answer = async([this](const net::HttpRequest& req) -> net::HttpResponse {
    std::lock_guard l(mu_);
    // Only credentials issued here, with their token, before they expire.
    const std::string* authz = req.Header("Authorization");
    std::string key;
    if (authz) {
      auto at = authz->find("Credential=");
      if (at != std::string::npos) key = authz->substr(at + 11, authz->find('/', at) - at - 11);
    }
    auto issued = issued_.find(key);
    if (issued == issued_.end()) {
      ++counts_.s3_refused;
      return Answer(403, "<Error><Code>InvalidAccessKeyId</Code><Message>unknown key</Message></Error>",
                    "application/xml");
    }
    const std::string* token = req.Header("x-amz-security-token");
    if (!token || *token != issued->second.token || authz->find("x-amz-security-token") == std::string::npos) {
      ++counts_.s3_no_token;
      return Answer(400,
                    "<Error><Code>InvalidToken</Code><Message>session token missing or unsigned</Message>"
                    "</Error>",
                    "application/xml");
    }
    if (Clock::now() >= issued->second.expires) {
      ++counts_.s3_expired;
      return Answer(400, "<Error><Code>ExpiredToken</Code><Message>expired</Message></Error>", "application/xml");
    }
    s3::Authenticator auth({{key, issued->second.secret}}, std::chrono::minutes(15));
    auto query = s3::ParseQuery(req.query());
    if (!query) return Answer(400, "bad query");
    auto who = auth.Verify(req, *query, Clock::now());
    if (!who || who->access_key != key) {
      ++counts_.s3_refused;
      return Answer(403,
                    "<Error><Code>SignatureDoesNotMatch</Code><Message>" +
                        (who ? std::string("anonymous") : who.error().message) + "</Message></Error>",
                    "application/xml");
    }
    ++counts_.s3_ok;
    std::string path = PercentDecode(req.path()).value_or(std::string(req.path()));
    auto slash = path.find('/', 1);
    std::string bucket = path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    std::string object = slash == std::string::npos ? "" : path.substr(slash + 1);
    auto b = objects_.find(bucket);
    if (b == objects_.end()) {
      return Answer(404, "<Error><Code>NoSuchBucket</Code><Message>no bucket</Message></Error>", "application/xml");
    }
    if (object.empty()) {
      const std::string* prefix = s3::Param(*query, "prefix");
      const std::string* delim = s3::Param(*query, "delimiter");
      std::string p = prefix ? *prefix : "", d = delim ? *delim : "";
      std::string xml = "<ListBucketResult><Name>" + bucket + "</Name><IsTruncated>false</IsTruncated>";
      std::string last_common;
      for (auto& [k, v] : b->second) {
        if (!k.starts_with(p)) continue;
        if (!d.empty()) {
          auto at = k.find(d, p.size());
          if (at != std::string::npos) {
            std::string common = k.substr(0, at + d.size());
            if (common != last_common)
              xml += "<CommonPrefixes><Prefix>" + XmlEscape(common) + "</Prefix></CommonPrefixes>";
            last_common = common;
            continue;
          }
        }
        xml += "<Contents><Key>" + XmlEscape(k) + "</Key><Size>" + std::to_string(v.size()) + "</Size><ETag>\"e" +
               std::to_string(v.size()) +
               "\"</ETag><LastModified>2026-01-01T00:00:00.000Z"
               "</LastModified></Contents>";
      }
      return Answer(200, xml + "</ListBucketResult>", "application/xml");
    }
    auto o = b->second.find(object);
    if (o == b->second.end()) {
      return Answer(404, "<Error><Code>NoSuchKey</Code><Message>no key</Message></Error>", "application/xml");
    }
    const std::string& data = o->second;
    net::HttpResponse resp;
    resp.headers = {{"ETag", "\"e" + std::to_string(data.size()) + "\""},
                    {"Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT"},
                    {"Content-Type", "application/octet-stream"}};
    uint64_t first = 0, last = data.empty() ? 0 : data.size() - 1;
    if (const std::string* range = req.Header("Range"); range && range->starts_with("bytes=")) {
      auto dash = range->find('-');
      first = std::stoull(range->substr(6, dash - 6));
      if (dash + 1 < range->size()) last = std::min<uint64_t>(last, std::stoull(range->substr(dash + 1)));
      if (first >= data.size()) return Answer(416, "");
      resp.status = 206;
      resp.headers.emplace_back("Content-Range", "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                                                     std::to_string(data.size()));
    }
    if (req.method == "HEAD") {
      resp.headers.emplace_back("Content-Length", std::to_string(data.size()));
      return resp;
    }
    resp.body = data.empty() ? "" : data.substr(first, last - first + 1);
    return resp;
  });
  r.SetFallback([imds_get, s3_answer, imds_prefix](const net::HttpRequest& req, net::Responder res) {
    if (req.method == "GET" && req.path().starts_with(imds_prefix)) return imds_get(req, std::move(res));
    s3_answer(req, std::move(res));
  });

  auto s = net::HttpServer::Bind({});
  if (!s) throw std::runtime_error("the AWS stand-in cannot listen: " + s.error().ToString());
  server_ = std::move(*s);
  std::vector<net::Router> routers;
  routers.push_back(std::move(r));
  server_->Serve(std::move(routers));
}

AwsStandIn::~AwsStandIn() { server_.reset(); }

std::string AwsStandIn::url() const { return "http://" + server_->address(); }

void AwsStandIn::set_lifetime(std::chrono::seconds s) {
  std::lock_guard l(mu_);
  lifetime_ = s;
}
void AwsStandIn::set_fault(Endpoint e, Fault f) {
  std::lock_guard l(mu_);
  faults_[e] = f;
}
void AwsStandIn::set_allow_imdsv1(bool allow) {
  std::lock_guard l(mu_);
  allow_v1_ = allow;
}
void AwsStandIn::PutObject(const std::string& bucket, const std::string& key, std::string data) {
  std::lock_guard l(mu_);
  objects_[bucket][key] = std::move(data);
}
AwsStandIn::Counts AwsStandIn::counts() const {
  std::lock_guard l(mu_);
  return counts_;
}
std::string AwsStandIn::last_role_arn() const {
  std::lock_guard l(mu_);
  return last_role_arn_;
}
std::string AwsStandIn::last_session_name() const {
  std::lock_guard l(mu_);
  return last_session_;
}
std::string AwsStandIn::last_assume_role_signer() const {
  std::lock_guard l(mu_);
  return last_signer_;
}
std::string AwsStandIn::last_issued_key() const {
  std::lock_guard l(mu_);
  return last_issued_;
}

}  // namespace shoal::testing
