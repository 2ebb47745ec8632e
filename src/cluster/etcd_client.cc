#include "cluster/etcd_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/units.h"

namespace shoal {
namespace {

using Json = nlohmann::json;

// etcd's gateway writes 64-bit integers as JSON strings; accept numbers too.
int64_t Int(const Json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return ec == std::errc() && end == text.data() + text.size() ? v : 0;
  }
  return 0;
}

bool Bool(const Json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// j[name] when it is an object, else an empty object.
const Json& Object(const Json& j, const char* name) {
  static const Json kEmpty = Json::object();
  auto it = j.find(name);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

std::string Str(const Json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

struct Transfer {
  std::string body;
  bool too_big = false;
  // For a stream: called with each complete line; false stops the transfer.
  std::function<bool(std::string_view)> on_line;
  const std::atomic<bool>* stop = nullptr;
  bool stopped = false;
};

size_t OnData(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (t->body.size() + len > EtcdClient::kMaxBody) {
    t->too_big = true;
    return 0;
  }
  t->body.append(data, len);
  if (t->on_line) {
    size_t nl;
    while ((nl = t->body.find('\n')) != std::string::npos) {
      bool go_on = t->on_line(std::string_view(t->body).substr(0, nl));
      t->body.erase(0, nl + 1);
      if (!go_on) {
        t->stopped = true;
        return 0;
      }
    }
  }
  return len;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->stop && t->stop->load()) {
    t->stopped = true;
    return 1;
  }
  return 0;
}

struct Easy {
  CURL* h = curl_easy_init();
  curl_slist* headers = nullptr;
  ~Easy() {
    if (headers) curl_slist_free_all(headers);
    if (h) curl_easy_cleanup(h);
  }
};

// One POST. `total` bounds the whole transfer.
CURLcode Post(const std::string& url, const std::string& body, std::chrono::milliseconds total,
              std::chrono::milliseconds connect, const EtcdClient::Tls& tls, Transfer* t, long* http_status) {
  Easy e;
  if (!e.h) return CURLE_FAILED_INIT;
  if (!tls.ca_file.empty()) curl_easy_setopt(e.h, CURLOPT_CAINFO, tls.ca_file.c_str());
  if (!tls.cert_file.empty()) {
    curl_easy_setopt(e.h, CURLOPT_SSLCERT, tls.cert_file.c_str());
    curl_easy_setopt(e.h, CURLOPT_SSLKEY, tls.key_file.c_str());
  }
  e.headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(e.h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e.h, CURLOPT_HTTPHEADER, e.headers);
  curl_easy_setopt(e.h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(e.h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(e.h, CURLOPT_TIMEOUT_MS, static_cast<long>(total.count()));
  curl_easy_setopt(e.h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect.count()));
  curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e.h, CURLOPT_PROXY, "");  // etcd is reached directly, never through a proxy
  curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(e.h, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e.h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e.h, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(e.h, CURLOPT_XFERINFODATA, t);
  CURLcode rc = curl_easy_perform(e.h);
  curl_easy_getinfo(e.h, CURLINFO_RESPONSE_CODE, http_status);
  return rc;
}

std::string Excerpt(std::string_view body) {
  std::string s(body.substr(0, 200));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return s;
}

}  // namespace

std::string EtcdClient::ErrorText(std::string_view body) {
  auto j = Json::parse(body, nullptr, false);
  if (j.is_object()) {
    std::string m = Str(j, "message");
    if (m.empty()) m = Str(j, "error");
    if (!m.empty()) return Excerpt(m);
  }
  return Excerpt(body);
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, std::chrono::milliseconds timeout, Tls tls)
    : endpoints_(std::move(endpoints)), timeout_(timeout), tls_(std::move(tls)) {}

EtcdClient::EtcdClient(const EtcdConfig& config)
    : EtcdClient(config.endpoints, config.timeout, Tls{config.ca_file, config.cert_file, config.key_file}) {}

std::string EtcdClient::Base64Encode(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> EtcdClient::Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0 || in.size() > kMaxBody) return Err(Code::kCorruption, "etcd sent malformed base64");
  std::string out(in.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return Err(Code::kCorruption, "etcd sent malformed base64");
  size_t len = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the padding as bytes.
  if (in.ends_with("==")) len -= 2;
  else if (in.ends_with("=")) len -= 1;
  out.resize(len);
  return out;
}

std::string EtcdClient::PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(end.back());
    if (c < 0xff) {
      ++c;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Result<std::string> EtcdClient::Call(std::string_view path, const std::string& body, std::string_view what) {
  if (endpoints_.empty())
    return Err(Code::kInvalidArgument, std::string(what) + ": no etcd endpoints configured (cluster.etcd.endpoints)");
  std::string failures;
  for (const auto& ep : endpoints_) {
    Transfer t;
    long status = 0;
    auto connect = std::min(timeout_, std::chrono::milliseconds(2000));
    CURLcode rc = Post(ep + "/v3/" + std::string(path), body, timeout_, connect, tls_, &t, &status);
    std::string why;
    if (t.too_big) {
      why = "answer larger than " + FormatSize(kMaxBody);
    } else if (rc != CURLE_OK) {
      why = curl_easy_strerror(rc);
      if (rc == CURLE_OPERATION_TIMEDOUT)
        why += " (no answer within cluster.etcd.timeout, " + FormatDuration(timeout_) + ")";
    } else if (status == 200) {
      return std::move(t.body);
    } else {
      // An answer from etcd itself (a bad request, a lost lease): final, not an endpoint failure.
      return Err(status == 404 ? Code::kNotFound : Code::kInvalidArgument,
                 std::string(what) + ": etcd at " + ep + " answered HTTP " + std::to_string(status) + ": " +
                     ErrorText(t.body));
    }
    if (!failures.empty()) failures += "; ";
    failures += ep + ": " + why;
  }
  return Err(Code::kUnavailable, std::string(what) + ": cannot reach etcd (" + failures +
                                     "): check that etcd runs and cluster.etcd.endpoints names it");
}

Result<int64_t> EtcdClient::GrantLease(std::chrono::seconds ttl) {
  auto body = Call("lease/grant", Json{{"TTL", std::max<int64_t>(1, ttl.count())}}.dump(), "granting an etcd lease");
  if (!body) return Err(body.error());
  return ParseLeaseGrant(*body);
}

Result<int64_t> EtcdClient::ParseLeaseGrant(std::string_view body) {
  auto j = Json::parse(body, nullptr, false);
  int64_t id = j.is_object() ? Int(j, "ID") : 0;
  if (id == 0) return Err(Code::kUnavailable, "granting an etcd lease: unexpected answer '" + Excerpt(body) + "'");
  return id;
}

Result<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  auto body = Call("lease/keepalive", Json{{"ID", std::to_string(lease)}}.dump(), "renewing etcd lease");
  if (!body) return Err(body.error());
  return ParseKeepAlive(*body);
}

Result<int64_t> EtcdClient::ParseKeepAlive(std::string_view body) {
  // One stream message: {"result": {"ID": .., "TTL": ..}}; no TTL when the lease is gone.
  const std::string_view first = body.substr(0, body.find('\n'));
  auto j = Json::parse(first, nullptr, false);
  if (!j.is_object()) return Err(Code::kUnavailable, "renewing etcd lease: unexpected answer '" + Excerpt(body) + "'");
  if (j.contains("error")) return Err(Code::kUnavailable, "renewing etcd lease: " + ErrorText(first));
  const Json& r = j.contains("result") && j["result"].is_object() ? j["result"] : j;
  return std::max<int64_t>(0, Int(r, "TTL"));
}

Status EtcdClient::RevokeLease(int64_t lease) {
  auto body = Call("lease/revoke", Json{{"ID", std::to_string(lease)}}.dump(), "revoking etcd lease");
  return body ? Status() : body.error();
}

Status EtcdClient::Put(std::string_view key, std::string_view value, int64_t lease) {
  Json j{{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) j["lease"] = std::to_string(lease);
  auto body = Call("kv/put", j.dump(), "writing etcd key " + std::string(key));
  return body ? Status() : body.error();
}

Status EtcdClient::Delete(std::string_view key) {
  auto body = Call("kv/deleterange", Json{{"key", Base64Encode(key)}}.dump(), "deleting etcd key " + std::string(key));
  return body ? Status() : body.error();
}

namespace {

Result<EtcdClient::KeyValue> ParseKv(const Json& kv) {
  if (!kv.is_object()) return Err(Code::kCorruption, "etcd sent a key-value that is not an object");
  EtcdClient::KeyValue out;
  auto k = EtcdClient::Base64Decode(Str(kv, "key"));
  if (!k) return Err(k.error());
  auto v = EtcdClient::Base64Decode(Str(kv, "value"));
  if (!v) return Err(v.error());
  out.key = std::move(*k);
  out.value = std::move(*v);
  out.mod_revision = Int(kv, "mod_revision");
  return out;
}

}  // namespace

Result<EtcdClient::RangeResult> EtcdClient::RangePrefix(std::string_view prefix) {
  Json req{{"key", Base64Encode(prefix)}, {"range_end", Base64Encode(PrefixEnd(prefix))}};
  auto body = Call("kv/range", req.dump(), "reading etcd prefix " + std::string(prefix));
  if (!body) return Err(body.error());
  auto r = ParseRange(*body);
  if (!r) return Err(r.error().WithContext("reading etcd prefix " + std::string(prefix)));
  return r;
}

Result<EtcdClient::RangeResult> EtcdClient::ParseRange(std::string_view body) {
  auto j = Json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("header")) {
    return Err(Code::kUnavailable, "unexpected answer '" + Excerpt(body) + "'");
  }
  RangeResult out;
  out.revision = Int(Object(j, "header"), "revision");
  auto kvs = j.find("kvs");
  if (kvs != j.end() && kvs->is_array()) {
    for (const auto& kv : *kvs) {
      auto parsed = ParseKv(kv);
      if (!parsed) return Err(parsed.error());
      out.kvs.push_back(std::move(*parsed));
    }
  }
  return out;
}

EtcdClient::WatchMessage EtcdClient::ParseWatchLine(std::string_view line, int64_t start_revision) {
  WatchMessage m;
  auto j = Json::parse(line, nullptr, false);
  if (!j.is_object()) {
    m.stop = Status(Code::kUnavailable, "etcd watch sent an unexpected line '" + Excerpt(line) + "'");
    return m;
  }
  if (j.contains("error")) {
    m.stop = Status(Code::kUnavailable, "etcd watch failed: " + ErrorText(line));
    return m;
  }
  const Json& r = j.contains("result") && j["result"].is_object() ? j["result"] : j;
  if (int64_t compacted = Int(r, "compact_revision"); compacted > 0) {
    m.stop = Status(Code::kOutOfRange, "etcd compacted revision " + std::to_string(start_revision) + " away (now " +
                                           std::to_string(compacted) + ")");
    return m;
  }
  if (Bool(r, "canceled")) {
    m.stop = Status(Code::kUnavailable, "etcd canceled the watch: " + Excerpt(Str(r, "cancel_reason")));
    return m;
  }
  m.created = Bool(r, "created");
  m.revision = Int(Object(r, "header"), "revision");
  auto events = r.find("events");
  if (events != r.end() && events->is_array()) {
    for (const auto& e : *events) {
      if (!e.is_object() || !e.contains("kv")) continue;
      auto kv = ParseKv(e["kv"]);
      if (!kv) {
        m.stop = kv.error().WithContext("etcd watch");
        m.events.clear();
        return m;
      }
      m.events.push_back({Str(e, "type") == "DELETE", std::move(*kv)});
    }
  }
  return m;
}

Status EtcdClient::Watch(std::string_view prefix, int64_t start_revision, std::chrono::milliseconds max_duration,
                         const std::atomic<bool>& stop,
                         const std::function<void(const std::vector<Event>&, int64_t)>& on_events) {
  if (endpoints_.empty())
    return Status(Code::kInvalidArgument, "no etcd endpoints configured (cluster.etcd.endpoints)");
  Json create{{"key", Base64Encode(prefix)}, {"range_end", Base64Encode(PrefixEnd(prefix))}};
  if (start_revision > 0) create["start_revision"] = std::to_string(start_revision);
  const std::string req = Json{{"create_request", create}}.dump();
  std::string failures;
  for (const auto& ep : endpoints_) {
    Transfer t;
    t.stop = &stop;
    Status stream_error;
    bool created = false;
    t.on_line = [&](std::string_view line) {
      auto m = ParseWatchLine(line, start_revision);
      if (!m.stop.ok()) {
        stream_error = std::move(m.stop);
        return false;
      }
      created |= m.created;
      if (!m.events.empty() || m.revision > 0) on_events(m.events, m.revision);
      return true;
    };
    long status = 0;
    auto connect = std::min(timeout_, std::chrono::milliseconds(2000));
    CURLcode rc = Post(ep + "/v3/watch", req, max_duration, connect, tls_, &t, &status);
    if (!stream_error.ok()) return stream_error;
    if (t.stopped) return {};
    if (rc == CURLE_OPERATION_TIMEDOUT && created) return {};  // the round ended; watch again
    std::string why = t.too_big        ? "a line longer than " + FormatSize(kMaxBody)
                      : rc != CURLE_OK ? std::string(curl_easy_strerror(rc))
                      : status != 200  ? "HTTP " + std::to_string(status) + ": " + ErrorText(t.body)
                                       : "the stream ended";
    if (created && rc == CURLE_OK) return {};  // etcd closed a good stream: watch again
    if (!failures.empty()) failures += "; ";
    failures += ep + ": " + why;
  }
  return Status(Code::kUnavailable, "watching etcd prefix " + std::string(prefix) + ": " + failures);
}

}  // namespace shoal
