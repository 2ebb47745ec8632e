// AzuriteProcess: a real Azure Blob service (Azurite's blob server, installed
// by scripts/bootstrap into tools/node_modules) for tests. It listens on
// 127.0.0.1 on a port the kernel picks (--blobPort 0), keeps its data in a
// fresh temporary directory, runs with telemetry disabled, and is stopped
// (with its directory removed) when the object is destroyed.
//
// Azurite checks Shared Key signatures and SAS tokens for the well-known
// development account (kAccount/kKey, public constants). Over HTTPS (a
// certificate for 127.0.0.1) with Options::oauth it also takes Entra ID
// bearer tokens (`--oauth basic`: a JWT's aud, iss, nbf and exp are checked,
// its signature is not).
//
//   auto az = AzuriteProcess::Start();
//   ASSERT_TRUE(az) << az.error().ToString();
//   ASSERT_TRUE(az->CreateContainer("data").ok());
//   mount.ufs = "az://data/prefix";
//   mount.options = {{"endpoint", az->blob_endpoint()}, {"account", kAccount}, {"key", kKey}};
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/subprocess.h"
#include "shoal/status.h"
#include "tests/harness/harness_util.h"

namespace shoal::testing {

class AzuriteProcess {
 public:
  static constexpr const char* kAccount = "devstoreaccount1";
  static constexpr const char* kKey =
      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

  struct Options {
    // HTTPS: PEM files of a certificate naming 127.0.0.1 (subjectAltName
    // IP:127.0.0.1) and its key; the certificate is also the CA the harness trusts.
    std::string tls_cert_file;
    std::string tls_key_file;
    bool oauth = false;  // --oauth basic (needs HTTPS)
    std::chrono::milliseconds startup_timeout = std::chrono::seconds(90);
  };

  // Fails with a message saying to run scripts/bootstrap when Azurite is
  // missing. Looks under $SHOAL_SOURCE_DIR/tools, else the source tree this
  // library was built from.
  static Result<AzuriteProcess> Start(const Options& options);
  static Result<AzuriteProcess> Start(std::chrono::milliseconds startup_timeout = std::chrono::seconds(90)) {
    Options o;
    o.startup_timeout = startup_timeout;
    return Start(o);
  }

  int port() const { return port_; }
  // "http://127.0.0.1:<port>/devstoreaccount1" (path-style, as the emulator
  // expects); https:// with a certificate
  std::string blob_endpoint() const;
  // A connection string for the dev account with BlobEndpoint set.
  std::string connection_string() const;

  // Creates a container (Shared Key); OK if it already exists.
  Status CreateContainer(const std::string& name) const;
  // An account SAS for the dev account, valid for a day.
  Result<std::string> AccountSas(const std::string& permissions = "rwdlac") const;

 private:
  std::shared_ptr<ScratchDir> dir_;  // declared before process_: the server stops before the dir goes
  Subprocess process_;
  int port_ = 0;
  std::string tls_cert_;  // "" over HTTP
};

}  // namespace shoal::testing
