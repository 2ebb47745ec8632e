// An S3 endpoint serving a cluster: a Client over a config, the endpoint on
// it and the HTTP server it answers on. Used by `shoal s3` and `shoal up --s3`.
#pragma once

#include <memory>
#include <string>

#include "common/config.h"
#include "shoal/status.h"

namespace shoal::cli {

class S3Service {
 public:
  // Opens a client over `config_path` and serves the S3 API on `listen`
  // (over TLS when that config sets tls.cert_file).
  static Result<std::unique_ptr<S3Service>> Start(const std::string& config_path, const S3Config& s3,
                                                  const std::string& listen, bool handle_signals);
  ~S3Service();  // stops the server, then the endpoint, then the client

  const std::string& address() const;
  bool tls() const;  // serves https (the config's tls.cert_file)
  void Wait();  // until stopped (SIGINT/SIGTERM with handle_signals)

  struct State;

 private:
  explicit S3Service(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// A new random key pair, kept in `path` (mode 0600) as "ACCESS_KEY SECRET_KEY";
// an existing file is read back instead.
Result<std::pair<std::string, std::string>> LoadOrMakeS3Keys(const std::string& path);

}  // namespace shoal::cli
