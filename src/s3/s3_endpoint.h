// S3Endpoint: the S3 API as a route table on the shared HTTP server
// (net::HttpServer), over the public client API, so every read gets the
// client's routing, short circuit and failover.
//
//   auto client = Client::Open(config_path);
//   auto s3 = s3::S3Endpoint::Create(**client, config.s3);
//   auto server = net::HttpServer::Bind(s3::S3Endpoint::ServerOptionsFor("127.0.0.1:9000"));
//   (*server)->Serve({(*s3)->Routes()});
//
// Buckets are the top-level mounts (/data -> bucket "data") or the
// s3.buckets map; requests are path-style (/bucket/key) or virtual-hosted
// (Host: bucket.example:port). Every request must carry a valid Signature V4
// (s3_auth.h) except reads of a bucket listed in s3.public_buckets.
//
// Handlers run on the endpoint's own threads (the client calls block), never
// on the server's I/O threads.
//
// Thread safety: safe from any thread. REQUIRES: the HttpServer serving
// Routes() is stopped before the endpoint is destroyed, and the endpoint is
// destroyed before the Client.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "net/http_server.h"
#include "shoal/client.h"

namespace shoal::s3 {

class S3Endpoint {
 public:
  // Loads the keys (s3.credentials and s3.credentials_file, which must not be
  // readable by group or others) and the bucket table. An endpoint with no key
  // and no public bucket is refused: nobody could use it.
  static Result<std::unique_ptr<S3Endpoint>> Create(Client& client, const S3Config& config);
  ~S3Endpoint();

  net::Router Routes();
  // Server options for an endpoint listening on `listen`: S3 XML errors, and
  // a body limit for uploads.
  static net::ServerOptions ServerOptionsFor(const std::string& listen);

  // bucket -> namespace path
  const std::map<std::string, std::string>& buckets() const;

  class Impl;

 private:
  explicit S3Endpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads "ACCESS_KEY SECRET_KEY" lines ('#' comments) into `keys`; the file
// must be private to its owner (mode 0600 or narrower).
Status LoadCredentialsFile(const std::string& path, std::map<std::string, std::string>* keys);

}  // namespace shoal::s3
