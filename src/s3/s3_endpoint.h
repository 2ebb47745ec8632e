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
// Handlers run on the endpoint's own threads (the client calls block), except
// a GET of an object that a worker on this host holds whole (a cached-only
// open, which never blocks for long): that one is answered on the server's
// I/O thread, saving the hand-off to the pool and back. Request bodies stream (Router::StreamBodies):
// PutObject and UploadPart go to the writer in pieces (s3_payload.h), up to
// 5 GiB each; other bodies (XML documents) are read whole, up to 16 MiB.
//
// In a worker (worker.s3_listen) the endpoint has hooks: the client is opened
// on first use (the membership may be known only once the workers run), the
// worker's own cached pages go out with sendfile, and in redirect mode
// (s3.mode: redirect) a read of a key owned by another worker with an S3
// listener is answered 307 to that worker (s3_redirect.h).
//
// Thread safety: safe from any thread. REQUIRES: the HttpServer serving
// Routes() is stopped before the endpoint is destroyed, and the endpoint is
// destroyed before the Client.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/end_user.h"
#include "net/http_server.h"
#include "shoal/client.h"

namespace shoal::s3 {

// What a worker gives the endpoint that runs inside it.
struct S3Hooks {
  // The client over the cluster: called for each request until it gives one,
  // which is then kept (an error is answered 503 with its message).
  std::function<Result<Client*>()> client;
  // This worker's own cached bytes as zero-copy parts (s3_objects.h); optional.
  std::function<std::vector<net::BodyPart>(const FileStatus& status, uint64_t offset, uint64_t end)> local_pages;
  // This worker's id on the ring (redirect mode never redirects to itself).
  std::string self_id;
};

class S3Endpoint {
 public:
  // Loads the keys (s3.credentials and s3.credentials_file, which must not be
  // readable by group or others) and the bucket table. An endpoint with no key
  // and no public bucket is refused: nobody could use it.
  static Result<std::unique_ptr<S3Endpoint>> Create(Client& client, const S3Config& config);
  // The same inside a worker: `mount_paths` are the top-level mounts of its
  // config (the buckets unless s3.buckets names them).
  static Result<std::unique_ptr<S3Endpoint>> Create(S3Hooks hooks, const std::vector<std::string>& mount_paths,
                                                    const S3Config& config);
  ~S3Endpoint();

  net::Router Routes();
  // Server options for an endpoint listening on `listen`: S3 XML errors.
  static net::ServerOptions ServerOptionsFor(const std::string& listen);

  // bucket -> namespace path
  const std::map<std::string, std::string>& buckets() const;

  class Impl;

 private:
  explicit S3Endpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One access key of the endpoint: its secret, and the user whose requests it
// signs (the workers authorize that user; common/end_user.h).
struct S3Key {
  std::string secret;
  std::shared_ptr<const EndUser> user;
};

// Reads "ACCESS_KEY SECRET_KEY [USER [GROUP,GROUP...]]" lines ('#' comments)
// into `keys` (a line without USER: the user is named as its key); the file
// must be private to its owner (mode 0600 or narrower).
Status LoadCredentialsFile(const std::string& path, std::map<std::string, S3Key>* keys);

}  // namespace shoal::s3
