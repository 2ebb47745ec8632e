#include "ufs/webhdfs/webhdfs_client.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/config.h"
#include "common/units.h"
#include "ufs/http/retry.h"
#include "ufs/uri.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

bool Is2xx(long s) { return s >= 200 && s < 300; }
bool IsRedirect(long s) { return s == 307 || s == 302 || s == 303 || s == 301 || s == 308; }
bool IsTransient(long s) { return s == 500 || s == 502 || s == 503 || s == 504 || s == 429; }

// A namenode's answer is untrusted: a field of the wrong type or a missing
// one reads as null (nlohmann's value() and const operator[] would throw or
// assert instead).
const Json& Field(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
std::string Text(const Json& j, const char* key) {
  const Json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}
template <typename T>
T Number(const Json& j, const char* key) {
  const Json& v = Field(j, key);
  return v.is_number_integer() ? v.get<T>() : T{0};
}

Result<HdfsStatus> ParseStatus(const Json& j) {
  HdfsStatus s;
  s.name = Text(j, "pathSuffix");
  if (s.name == "." || s.name == ".." || s.name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    std::string shown = s.name.substr(0, 64);
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    }
    return Err(Code::kIo, "the namenode sent an entry named '" + shown + "', which no HDFS name is");
  }
  s.is_dir = Text(j, "type") == "DIRECTORY";
  const int64_t length = Number<int64_t>(j, "length");
  if (length < 0) {
    return Err(Code::kIo, "the namenode sent '" + s.name.substr(0, 64) + "' with a negative length");
  }
  s.length = static_cast<uint64_t>(length);
  s.mtime_ms = Number<int64_t>(j, "modificationTime");
  s.file_id = Number<uint64_t>(j, "fileId");
  // "644", "1777": octal digits, nothing else; anything else is no permission.
  std::string perm = Text(j, "permission");
  if (!perm.empty() && perm.size() <= 4 && perm.find_first_not_of("01234567") == std::string::npos) {
    uint32_t v = static_cast<uint32_t>(std::strtoul(perm.c_str(), nullptr, 8));
    if (v <= 01777) s.permission = v;
  }
  return s;
}

std::string Octal(uint32_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%o", v);
  return buf;
}

// The options of hdfs:// (WebHDFS) mounts.
constexpr OptionSpec kOptions[] = {
    option::Text("user", "user.name for simple authentication (default: $USER, else shoal)"),
    option::Choice("scheme", "http|https", "of the namenode's HTTP endpoint (http)"),
    option::Duration("request_timeout", 1, "deadline of one call, retries included (60s)"),
    option::Int("max_retries", 0, 100, "retries of 5xx or failed requests (3)"),
    option::Size("write_buffer", 1, option::kNoMax, "a writer sends CREATE/APPEND chunks of this size (8MiB)"),
    option::File("ca_file", "PEM CA bundle for https (default: the system's CAs)"),
};

}  // namespace

Result<HdfsStatus> ParseFileStatusAnswer(std::string_view body) {
  auto j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("FileStatus")) return Err(Code::kIo, "the namenode answered without a FileStatus");
  return ParseStatus(j["FileStatus"]);
}

Result<HdfsBatch> ParseListingAnswer(std::string_view body, bool batch, std::string_view start_after) {
  auto j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const char* top = batch ? "DirectoryListing" : "FileStatuses";
  if (!j.is_object() || !j.contains(top)) return Err(Code::kIo, std::string("the namenode answered without ") + top);
  static const Json kNoEntries = Json::array();
  HdfsBatch out;
  const Json& dl = Field(j, top);
  const Json& entries =
      batch ? Field(Field(Field(dl, "partialListing"), "FileStatuses"), "FileStatus") : Field(dl, "FileStatus");
  for (const auto& e : entries.is_array() ? entries : kNoEntries) {
    auto s = ParseStatus(e);
    if (!s) return Err(s.error());
    if (batch || start_after.empty() || s->name > start_after) out.entries.push_back(std::move(*s));
  }
  if (batch) {
    out.more = Number<int64_t>(dl, "remainingEntries") > 0;
    // The next page starts after this one's last name: a page that would not
    // move on would be asked for again and again.
    if (out.more &&
        (out.entries.empty() || out.entries.back().name.empty() || out.entries.back().name == start_after)) {
      return Err(Code::kIo, "the namenode said more entries follow but its page does not move past '" +
                                std::string(start_after.substr(0, 64)) + "'");
    }
  }
  return out;
}

RemoteException ParseRemoteException(std::string_view body) {
  auto j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const Json& e = Field(j, "RemoteException");
  return {Text(e, "exception"), Text(e, "message")};
}

bool ParseBooleanAnswer(std::string_view body) {
  auto j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const Json& b = Field(j, "boolean");
  if (b.is_null()) return true;
  return b.is_boolean() && b.get<bool>();
}

OptionTable WebHdfsOptions() { return kOptions; }

Result<WebHdfsSettings> ParseWebHdfsSettings(const std::string& authority, const MountConfig& mount) {
  auto o = MountOptions::Parse("hdfs", kOptions, mount.options);
  if (!o) return Err(o.error());
  // host[:port], the port the namenode's HTTP port.
  auto colon = authority.rfind(':');
  std::string host = authority.substr(0, colon), port = colon == std::string::npos ? "" : authority.substr(colon + 1);
  int port_number = 0;
  bool port_ok = colon == std::string::npos ||
                 (!port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), ::isdigit) &&
                  (port_number = std::stoi(port)) > 0 && port_number < 65536);
  if (host.empty() || !port_ok || authority.find_first_of("@/?# ") != std::string::npos) {
    return Err(Code::kInvalidArgument, "'" + authority + "' is not a namenode host[:port] (the namenode's HTTP port, 9870 by default)");
  }
  WebHdfsSettings s;
  s.authority = authority;
  s.mount_path = mount.path;
  s.uri = mount.ufs;
  const char* env_user = std::getenv("USER");
  s.user = o->has("user") ? o->String("user") : env_user && *env_user ? env_user : "shoal";
  if (o->has("scheme")) s.scheme = o->String("scheme");
  s.request_timeout = o->Duration("request_timeout").value_or(s.request_timeout);
  s.max_retries = static_cast<int>(o->Int("max_retries").value_or(s.max_retries));
  s.write_buffer = o->Size("write_buffer").value_or(s.write_buffer);
  s.ca_file = o->String("ca_file");
  return s;
}

std::string WebHdfsClient::Display(const std::string& path) const { return "hdfs://" + s_.authority + path; }

std::string WebHdfsClient::Url(const std::string& path, const std::string& op,
                               const std::vector<std::pair<std::string, std::string>>& params) const {
  std::string url = s_.scheme + "://" + s_.authority + "/webhdfs/v1" + PercentEncode(path, /*keep_slash=*/true);
  url += "?op=" + op + "&user.name=" + PercentEncode(s_.user, false);
  for (const auto& [k, v] : params) url += "&" + k + "=" + PercentEncode(v, false);
  return url;
}

Result<HttpResponse> WebHdfsClient::Send(HttpRequest req, bool idempotent, Clock::time_point deadline) {
  RetryPolicy policy;  // 50 ms, 100 ms, ... capped at 2 s
  policy.max_retries = s_.max_retries;
  policy.deadline = deadline;
  auto attempt = [&](std::chrono::milliseconds left) {
    req.timeout = std::min(left, s_.request_timeout);
    req.connect_timeout = std::min(req.connect_timeout, req.timeout);
    return PerformHttp(req);
  };
  // A non-idempotent call (APPEND) is never repeated: the first try may have landed.
  auto worth_retrying = [&](const Result<HttpResponse>& r) { return idempotent && (!r || IsTransient(r->status)); };
  auto outcome = RunWithRetries(policy, attempt, worth_retrying);
  if (outcome.out_of_time) {
    return Err(Code::kTimeout, req.method + " " + req.url + " did not succeed within request_timeout=" +
                                   std::to_string(s_.request_timeout.count()) + "ms (" +
                                   std::to_string(outcome.attempts) + " attempts): raise request_timeout or check the server");
  }
  return std::move(*outcome.last);
}

Result<HttpResponse> WebHdfsClient::Perform(const Call& call, bool follow_datanode) {
  auto deadline = Clock::now() + s_.request_timeout;
  HttpRequest nn;
  nn.method = call.method;
  nn.url = Url(call.path, call.op, call.params);
  nn.ca_file = s_.ca_file;
  // Step one of a two-step op carries no data: the namenode only names a datanode.
  if (!follow_datanode) nn.body = call.body;
  nn.body_out = call.body_out;
  auto r = Send(nn, /*idempotent=*/true, deadline);
  if (!r) {
    return Err(r.error().code(), "cannot reach the WebHDFS namenode of " + s_.uri + " (mount " + s_.mount_path +
                                     "): " + r.error().message() +
                                     "; check that it is up and that the URI names its HTTP port");
  }
  if (!follow_datanode || !IsRedirect(r->status)) return r;
  HttpRequest dn;
  dn.method = call.method;
  dn.url = r->Header("location");
  if (dn.url.empty()) return Err(Code::kIo, call.op + " " + Display(call.path) + ": the namenode redirected without a Location");
  dn.ca_file = s_.ca_file;
  dn.body = call.body;
  dn.body_out = call.body_out;
  if (call.method != "GET") dn.headers.emplace_back("Content-Type", "application/octet-stream");
  auto d = Send(dn, call.idempotent, deadline);
  if (!d) {
    return Err(d.error().code(), "cannot reach the WebHDFS datanode for " + call.op + " " + Display(call.path) + ": " +
                                     d.error().message() + "; check that datanodes are reachable from this host");
  }
  return d;
}

Status WebHdfsClient::ErrorFor(const HttpResponse& resp, const std::string& what, const std::string& path) const {
  auto [exception, message] = ParseRemoteException(resp.body);
  if (message.size() > 512) message = message.substr(0, 512) + "...";
  std::string detail = "HTTP " + std::to_string(resp.status) + (exception.empty() ? "" : " " + exception) +
                       (message.empty() ? "" : ": " + message);
  if (exception == "FileNotFoundException" || (resp.status == 404 && exception.empty())) {
    return Status(Code::kNotFound, "no such file or directory: " + Display(path) +
                                       (exception.empty() ? " (" + detail + "; is the URI's port the namenode's HTTP port?)" : ""));
  }
  if (exception == "AccessControlException" || exception == "SecurityException" || resp.status == 401) {
    return Status(Code::kPermissionDenied, "permission denied by " + s_.uri + " (mount " + s_.mount_path + ") to user '" +
                                               s_.user + "' for " + what + " " + Display(path) + ": " + detail +
                                               ": check the user option and the HDFS permissions");
  }
  if (exception == "FileAlreadyExistsException") return Status(Code::kAlreadyExists, what + " " + Display(path) + ": " + detail);
  if (exception == "PathIsNotEmptyDirectoryException")
    return Status(Code::kNotEmpty, what + " " + Display(path) + ": " + detail);
  if (exception == "ParentNotDirectoryException")
    return Status(Code::kNotDirectory, what + " " + Display(path) + ": " + detail);
  if (exception == "IllegalArgumentException" || resp.status == 400) {
    return Status(Code::kInvalidArgument, what + " " + Display(path) + " was refused: " + detail);
  }
  if (resp.status >= 500) {
    return Status(Code::kUnavailable, what + " " + Display(path) + " failed after " + std::to_string(s_.max_retries + 1) +
                                          " attempts: " + detail + ": the HDFS cluster is unhealthy; retry later");
  }
  return Status(Code::kIo, what + " " + Display(path) + " failed: " + detail);
}

Result<HdfsStatus> WebHdfsClient::GetFileStatus(const std::string& path) {
  auto r = Perform(Call("GET", path, "GETFILESTATUS"), false);
  if (!r) return Err(r.error());
  if (!Is2xx(r->status)) return Err(ErrorFor(*r, "stat", path));
  auto s = ParseFileStatusAnswer(r->body);
  if (!s) return Err(Code::kIo, "stat " + Display(path) + ": " + s.error().message());
  return s;
}

Result<HdfsBatch> WebHdfsClient::ListBatch(const std::string& path, const std::string& start_after) {
  if (!batch_unsupported_.load(std::memory_order_relaxed)) {
    Call c("GET", path, "LISTSTATUS_BATCH");
    if (!start_after.empty()) c.params.emplace_back("startAfter", start_after);
    auto r = Perform(c, false);
    if (!r) return Err(r.error());
    if (Is2xx(r->status)) {
      auto batch = ParseListingAnswer(r->body, /*batch=*/true, start_after);
      if (!batch) return Err(Code::kIo, "list " + Display(path) + ": " + batch.error().message());
      return batch;
    }
    // Hadoop before 2.8 has no LISTSTATUS_BATCH and refuses the op name.
    if (r->status != 400 || r->body.find("LISTSTATUS_BATCH") == std::string::npos) return Err(ErrorFor(*r, "list", path));
    batch_unsupported_.store(true, std::memory_order_relaxed);
  }
  auto r = Perform(Call("GET", path, "LISTSTATUS"), false);
  if (!r) return Err(r.error());
  if (!Is2xx(r->status)) return Err(ErrorFor(*r, "list", path));
  auto listing = ParseListingAnswer(r->body, /*batch=*/false, start_after);
  if (!listing) return Err(Code::kIo, "list " + Display(path) + ": " + listing.error().message());
  return listing;
}

Result<size_t> WebHdfsClient::Open(const std::string& path, uint64_t offset, std::span<char> out) {
  Call c("GET", path, "OPEN");
  c.body_out = out;
  c.params = {{"offset", std::to_string(offset)}, {"length", std::to_string(out.size())}};
  auto r = Perform(c, true);
  if (!r) return Err(r.error());
  if (Is2xx(r->status)) {
    if (r->body_out_overflow) {
      return Err(Code::kIo, "read " + Display(path) + ": the datanode sent more than the " + std::to_string(out.size()) +
                                " bytes asked for; refusing the data");
    }
    return r->body_out_size;
  }
  // Past the end of the file HDFS refuses the offset instead of answering empty.
  if (offset > 0 && (r->body.find("out of the range") != std::string::npos || r->body.find("EOF") != std::string::npos)) {
    return size_t{0};
  }
  return Err(ErrorFor(*r, "read", path));
}

Status WebHdfsClient::Create(const std::string& path, std::span<const char> data, uint32_t permission) {
  Call c("PUT", path, "CREATE");
  c.body = data;
  c.params = {{"overwrite", "true"}};
  if (permission != 0) c.params.emplace_back("permission", Octal(permission & 01777));
  auto r = Perform(c, true);
  if (!r) return r.error();
  if (!Is2xx(r->status)) return ErrorFor(*r, "create", path);
  return {};
}

Status WebHdfsClient::Append(const std::string& path, std::span<const char> data) {
  // Not idempotent: a retried APPEND could add the chunk twice.
  Call c("POST", path, "APPEND");
  c.body = data;
  c.idempotent = false;
  auto r = Perform(c, true);
  if (!r) return r.error();
  if (!Is2xx(r->status)) return ErrorFor(*r, "append to", path);
  return {};
}

Status WebHdfsClient::Mkdirs(const std::string& path) {
  auto r = Perform(Call("PUT", path, "MKDIRS"), false);
  if (!r) return r.error();
  if (!Is2xx(r->status)) return ErrorFor(*r, "mkdirs", path);
  if (!ParseBooleanAnswer(r->body))
    return Status(Code::kIo, "mkdirs " + Display(path) + " failed: is a file in the way?");
  return {};
}

Status WebHdfsClient::SetPermission(const std::string& path, uint32_t permission) {
  Call c("PUT", path, "SETPERMISSION");
  c.params = {{"permission", Octal(permission & 01777)}};
  auto r = Perform(c, false);
  if (!r) return r.error();
  if (!Is2xx(r->status)) return ErrorFor(*r, "set the permission of", path);
  return {};
}

Status WebHdfsClient::SetModificationTime(const std::string& path, int64_t mtime_ms) {
  Call c("PUT", path, "SETTIMES");
  c.params = {{"modificationtime", std::to_string(mtime_ms)}, {"accesstime", "-1"}};
  auto r = Perform(c, false);
  if (!r) return r.error();
  if (!Is2xx(r->status)) return ErrorFor(*r, "set the modification time of", path);
  return {};
}

Status WebHdfsClient::Rename(const std::string& from, const std::string& to) {
  Call c("PUT", from, "RENAME");
  c.params = {{"destination", to}, {"renameoptions", "OVERWRITE"}};
  auto r = Perform(c, false);
  if (!r) return r.error();
  if (!Is2xx(r->status)) return ErrorFor(*r, "rename", from);
  if (ParseBooleanAnswer(r->body)) return {};
  // A server that ignores renameoptions refuses to replace: remove the old file and retry once.
  auto del = Delete(to, false);
  if (!del) return del.error();
  c.params.pop_back();
  r = Perform(c, false);
  if (!r) return r.error();
  if (!Is2xx(r->status)) return ErrorFor(*r, "rename", from);
  if (!ParseBooleanAnswer(r->body)) {
    return Status(Code::kIo, "rename " + Display(from) + " to " + to + " was refused: does the source exist?");
  }
  return {};
}

Result<bool> WebHdfsClient::Delete(const std::string& path, bool recursive) {
  Call c("DELETE", path, "DELETE");
  c.params = {{"recursive", recursive ? "true" : "false"}};
  auto r = Perform(c, false);
  if (!r) return Err(r.error());
  if (!Is2xx(r->status)) return Err(ErrorFor(*r, "delete", path));
  return ParseBooleanAnswer(r->body);
}

}  // namespace shoal
