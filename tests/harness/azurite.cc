#include "tests/harness/azurite.h"

#include <stdlib.h>

#include <filesystem>

#include "tests/harness/harness_util.h"
#include "ufs/azure/azure_auth.h"
#include "ufs/http/http_transport.h"

namespace shoal::testing {

Result<AzuriteProcess> AzuriteProcess::Start(const Options& options) {
  std::string bin = SourceDir() + "/tools/node_modules/.bin/azurite-blob";
  if (!std::filesystem::exists(bin)) {
    return Err(Code::kNotFound, "Azurite is not installed (" + bin + " is missing): run scripts/bootstrap");
  }
  AzuriteProcess a;
  auto dir = MakeScratchDir("azurite", "Azurite");
  if (!dir) return Err(dir.error());
  a.dir_ = std::move(*dir);
  Subprocess::Options o;
  o.argv = {bin, "--blobHost", "127.0.0.1", "--blobPort", "0", "--location", a.dir_->path,
            "--silent", "--disableTelemetry", "--skipApiVersionCheck"};
  if (!options.tls_cert_file.empty()) {
    o.argv.insert(o.argv.end(), {"--cert", options.tls_cert_file, "--key", options.tls_key_file});
    a.tls_cert_ = options.tls_cert_file;
  }
  if (options.oauth) {
    if (options.tls_cert_file.empty()) {
      return Err(Code::kInvalidArgument,
                 "Azurite takes bearer tokens only over HTTPS: set tls_cert_file and tls_key_file");
    }
    o.argv.insert(o.argv.end(), {"--oauth", "basic"});
  }
  o.cwd = a.dir_->path;
  o.stderr_to_stdout = true;  // startup errors end up in the failure message
  auto proc = Subprocess::Start(o);
  if (!proc) return Err(proc.error());
  a.process_ = std::move(*proc);
  auto line = a.process_.WaitForLine("successfully listens on", options.startup_timeout);
  if (!line) return Err(line.error().WithContext("starting Azurite"));
  auto colon = line->rfind(':');
  a.port_ = colon == std::string::npos ? 0 : std::atoi(line->c_str() + colon + 1);
  if (a.port_ <= 0) return Err(Code::kInternal, "cannot find Azurite's port in: " + *line);
  return a;
}

std::string AzuriteProcess::blob_endpoint() const {
  return (tls_cert_.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(port_) + "/" + kAccount;
}

std::string AzuriteProcess::connection_string() const {
  return std::string("DefaultEndpointsProtocol=") + (tls_cert_.empty() ? "http" : "https") +
         ";AccountName=" + kAccount + ";AccountKey=" + kKey + ";BlobEndpoint=" + blob_endpoint() + ";";
}

Status AzuriteProcess::CreateContainer(const std::string& name) const {
  auto key = Base64Decode(kKey);
  HttpRequest req;
  req.method = "PUT";
  req.url = blob_endpoint() + "/" + name + "?restype=container";
  req.headers = {{"x-ms-version", "2021-08-06"}, {"x-ms-date", HttpDate(std::chrono::system_clock::now())}};
  req.ca_file = tls_cert_;
  SignSharedKey(req, kAccount, *key);
  auto r = PerformHttp(req);
  if (!r) return r.error();
  if (r->status == 201 || r->status == 409) return {};  // 409: it already exists
  return Status(Code::kIo, "Azurite refused to create container '" + name + "': HTTP " + std::to_string(r->status) +
                               " " + r->body);
}

Result<std::string> AzuriteProcess::AccountSas(const std::string& permissions) const {
  auto expiry = std::chrono::system_clock::now() + std::chrono::hours(24);
  time_t t = std::chrono::system_clock::to_time_t(expiry);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return MakeAccountSas(kAccount, kKey, permissions, buf);
}

}  // namespace shoal::testing
