#include "tests/harness/s3rver.h"

#include <signal.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>

#include "tests/harness/harness_util.h"
#include "ufs/http/http_transport.h"

namespace shoal::testing {
namespace {

std::string FindS3rverScript() {
  for (const auto& root : SourceRoots()) {
    std::string script = root + "/tools/node_modules/s3rver/bin/s3rver.js";
    if (std::filesystem::exists(script)) return script;
  }
  return {};
}

}  // namespace

Result<S3rverProcess> S3rverProcess::Start(const Options& options) {
  std::string script = FindS3rverScript();
  if (script.empty()) {
    return Err(Code::kNotFound,
               "s3rver is not installed (tools/node_modules/s3rver): run scripts/bootstrap, and set SHOAL_SOURCE_DIR "
               "to the repository root when running tests from elsewhere");
  }
  auto dir = MakeTempDir("s3rver", "s3rver");
  if (!dir) return Err(dir.error());

  S3rverProcess s;
  s.dir_ = std::move(*dir);
  if (!options.tls_key_file.empty()) s.tls_cert_ = options.tls_cert_file;
  Subprocess::Options o;
  // --silent keeps the request log off stdout: nobody drains the pipe after startup.
  // s3rver encrypts ListObjectsV2 continuation tokens with DES, which Node 17+
  // only offers through OpenSSL's legacy provider.
  o.argv = {"node", "--openssl-legacy-provider", script, "--directory", s.dir_, "--address", "127.0.0.1", "--port", "0", "--silent"};
  if (!options.tls_cert_file.empty() && !options.tls_key_file.empty()) {
    o.argv.insert(o.argv.end(), {"--cert", options.tls_cert_file, "--key", options.tls_key_file});
  }
  auto proc = Subprocess::Start(o);
  if (!proc) return Err(proc.error().WithContext("starting s3rver"));
  s.process_ = std::move(*proc);
  auto line = s.process_.WaitForLine("S3rver listening on", options.startup_timeout);
  if (!line) return Err(line.error().WithContext("starting s3rver (is node installed? run scripts/bootstrap)"));
  auto colon = line->rfind(':');
  if (colon != std::string::npos) s.port_ = std::atoi(line->c_str() + colon + 1);
  if (s.port_ <= 0) return Err(Code::kInternal, "cannot parse s3rver's address from '" + *line + "'");
  return s;
}

S3rverProcess& S3rverProcess::operator=(S3rverProcess&& o) noexcept {
  if (this != &o) {
    Cleanup();
    process_ = std::move(o.process_);
    dir_ = std::move(o.dir_);
    tls_cert_ = std::move(o.tls_cert_);
    port_ = o.port_;
    frozen_ = o.frozen_;
    o.dir_.clear();
    o.port_ = 0;
    o.frozen_ = false;
  }
  return *this;
}

S3rverProcess::~S3rverProcess() { Cleanup(); }

bool S3rverProcess::Freeze() {
  frozen_ = true;
  return FreezeProcess(process_.pid());
}

void S3rverProcess::Thaw() {
  if (!frozen_) return;
  ThawProcess(process_.pid());
  frozen_ = false;
}

void S3rverProcess::Cleanup() {
  Thaw();
  if (process_.pid() > 0) process_.Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

Status S3rverProcess::CreateBucket(const std::string& name) const {
  HttpRequest r;
  r.method = "PUT";
  r.url = endpoint() + "/" + name;
  r.timeout = std::chrono::seconds(30);
  r.ca_file = tls_cert_;
  auto resp = PerformHttp(r);
  if (!resp) return resp.error().WithContext("creating bucket " + name + " on s3rver");
  if (resp->status / 100 == 2 || resp->status == 409) return {};
  return Status(Code::kIo, "creating bucket " + name + " on s3rver: HTTP " + std::to_string(resp->status) + ": " +
                               resp->body);
}

}  // namespace shoal::testing
