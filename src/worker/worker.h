// Worker: a cache node. Serves the worker HTTP/1.1 API (docs/protocol.md), a
// route table on the one HTTP server (net/http_server.h), over a WorkerService,
// with blocking UFS work on a thread pool. Start() ignores SIGPIPE for the
// whole process: a client that leaves mid-answer must not kill its embedder.
//
//   auto w = Worker::Start(config);   // binds config.worker.listen (port 0 picks one)
//   w->address();                     // "127.0.0.1:40123"
//   w->id();                          // "w-6f0c2a9e41d3b7c5" (kept in the cache dir)
//   w->Wait();                        // until Stop() or SIGINT/SIGTERM (with handle_signals)
#pragma once

#include <memory>
#include <string>

#include "common/config.h"
#include "shoal/status.h"

namespace shoal {

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> Start(const Config& config, bool handle_signals = false);
  ~Worker();

  const std::string& address() const;
  // The worker's identity on the ring (worker.id, or the one kept in its cache dir).
  const std::string& id() const;
  // Where it serves the S3 API (worker.s3_listen), "" when it does not.
  const std::string& s3_address() const;
  void Stop();
  void Wait();

  class Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal
