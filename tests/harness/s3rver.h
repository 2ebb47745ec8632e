// S3rverProcess: a real S3 server (s3rver, installed by scripts/bootstrap into
// tools/node_modules) for tests and benchmarks. It listens on 127.0.0.1 on a
// port the kernel picks, keeps its data in a fresh temporary directory, and is
// stopped (with its directory removed) when the object is destroyed.
//
// s3rver accepts anonymous requests and any request signed with access key
// "S3RVER" (kAccessKeyId/kSecretAccessKey); it does not check V4 signatures.
//
//   auto s3 = S3rverProcess::Start();
//   ASSERT_TRUE(s3) << s3.error().ToString();
//   ASSERT_TRUE(s3->CreateBucket("data").ok());
//   mount.options["endpoint"] = s3->endpoint();
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "common/subprocess.h"
#include "shoal/status.h"

namespace shoal::testing {

class S3rverProcess {
 public:
  static constexpr const char* kAccessKeyId = "S3RVER";
  static constexpr const char* kSecretAccessKey = "S3RVER";

  struct Options {
    // PEM files; when both are set s3rver serves HTTPS and endpoint() says so.
    // The certificate must name 127.0.0.1 (subjectAltName IP:127.0.0.1).
    std::string tls_cert_file;
    std::string tls_key_file;
    std::chrono::milliseconds startup_timeout = std::chrono::seconds(60);
  };

  // Fails with a message saying to run scripts/bootstrap when s3rver or node
  // is missing. Looks for tools/node_modules under $SHOAL_SOURCE_DIR, else
  // under the source tree this library was built from.
  static Result<S3rverProcess> Start(const Options& options);
  static Result<S3rverProcess> Start() { return Start(Options{}); }

  S3rverProcess() = default;
  S3rverProcess(S3rverProcess&&) noexcept = default;
  S3rverProcess& operator=(S3rverProcess&& o) noexcept;
  ~S3rverProcess();

  // "http://127.0.0.1:<port>" (https:// with TLS)
  std::string endpoint() const {
    return (tls_cert_.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(port_);
  }
  int port() const { return port_; }
  const std::string& directory() const { return dir_; }

  // Creates a bucket (anonymous PUT); OK if it already exists.
  Status CreateBucket(const std::string& name) const;

  // The options of an s3:// mount on this server: endpoint, region and the accepted keys.
  std::map<std::string, std::string> MountOptions() const {
    return {{"endpoint", endpoint()},
            {"region", "us-east-1"},
            {"access_key_id", kAccessKeyId},
            {"secret_access_key", kSecretAccessKey}};
  }

  // SIGSTOP: a stalled store (connections are accepted by the kernel, no
  // answer comes, nothing is reset). Thaw() (SIGCONT) resumes it; the
  // destructor thaws it first.
  bool Freeze();  // false if it did not stop within 10 s
  void Thaw();

 private:
  void Cleanup();

  Subprocess process_;
  std::string dir_;
  std::string tls_cert_;  // also the CA that CreateBucket trusts
  int port_ = 0;
  bool frozen_ = false;
};

}  // namespace shoal::testing
