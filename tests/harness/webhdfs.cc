#include "tests/harness/webhdfs.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/harness/harness_util.h"
#include "ufs/http/http_transport.h"

namespace shoal::testing {

namespace {

// The value after `key=` up to the next space.
std::string Field(const std::string& line, const std::string& key) {
  auto p = line.find(key + "=");
  if (p == std::string::npos) return {};
  p += key.size() + 1;
  return line.substr(p, line.find(' ', p) - p);
}

}  // namespace

const std::string& WebHdfsServer::root_dir() const { return dir_->path; }

std::string WebHdfsServer::Uri(std::string_view path) const {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return "hdfs://" + namenode_ + "/" + std::string(path);
}

Result<WebHdfsServer> WebHdfsServer::Start(const Options& options) {
  WebHdfsServer s;
  auto dir = MakeScratchDir("webhdfs", "the WebHDFS test server");
  if (!dir) return Err(dir.error());
  s.dir_ = std::move(*dir);
  std::string script = SourceDir() + "/tests/webhdfs_server.py";
  if (!std::filesystem::exists(script)) {
    return Err(Code::kNotFound, "WebHDFS test server not found at " + script + ": set SHOAL_SOURCE_DIR to the repo root");
  }
  Subprocess::Options o;
  o.argv = {"/usr/bin/python3", script, "--root", s.dir_->path, "--ls-limit", std::to_string(options.ls_limit)};
  if (!options.deny_user.empty()) o.argv.insert(o.argv.end(), {"--deny-user", options.deny_user});
  o.stderr_to_stdout = true;  // a traceback shows up in the failure message
  auto proc = Subprocess::Start(o);
  if (!proc) return Err(proc.error());
  s.proc_ = std::move(*proc);
  auto line = s.proc_.WaitForLine("webhdfs listening:", std::chrono::seconds(60));
  if (!line) return Err(line.error().WithContext("starting the WebHDFS test server"));
  s.namenode_ = Field(*line, "namenode");
  s.datanode_ = Field(*line, "datanode");
  if (s.namenode_.empty() || s.datanode_.empty()) {
    return Err(Code::kInternal, "cannot parse the WebHDFS test server's line: " + *line);
  }
  return s;
}

namespace {
Result<nlohmann::json> Stats(const std::string& namenode) {
  HttpRequest req;
  req.url = "http://" + namenode + "/debug/stats";
  auto r = PerformHttp(req);
  if (!r) return Err(r.error());
  if (r->status != 200) return Err(Code::kIo, "/debug/stats answered HTTP " + std::to_string(r->status));
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return Err(Code::kIo, "/debug/stats is not JSON: " + r->body);
  return j;
}
}  // namespace

Result<int64_t> WebHdfsServer::Counter(const std::string& name) const {
  auto j = Stats(namenode_);
  if (!j) return Err(j.error());
  if (!j->contains(name)) return Err(Code::kNotFound, "no counter '" + name + "' in /debug/stats");
  return (*j)[name].get<int64_t>();
}

Result<std::string> WebHdfsServer::LastUser() const {
  auto j = Stats(namenode_);
  if (!j) return Err(j.error());
  return j->value("last_user", "");
}

}  // namespace shoal::testing
