// A stand-in for Apache Ranger admin's policy download, written from its
// public REST API: GET /service/plugins/secure/policies/download/{service}
// with HTTP basic auth, answering 304 when lastKnownVersion is the current
// version, 200 with the ServicePolicies document otherwise. It can also be
// down (503) or send a garbled (half) document. For tests of the policy
// poller (src/authz) and of workers that enforce downloaded policies.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "net/http_server.h"

namespace shoal::testing {

class RangerStandIn {
 public:
  // kSlow: the document, after `slow_for` (longer than the poller waits).
  enum class Mode { kServe, kOutage, kGarbage, kSlow };
  // Serves `service`'s policies to `user`:`password` on a free loopback port.
  RangerStandIn(std::string service, std::string user, std::string password);
  ~RangerStandIn();

  std::string url() const;  // http://127.0.0.1:PORT
  // What the next downloads get: `document` is the ServicePolicies JSON, whose
  // policyVersion should be `version`.
  void Set(Mode mode, int64_t version, std::string document,
           std::chrono::milliseconds slow_for = std::chrono::milliseconds(500));
  // The roles download (RangerRoles JSON of roleVersion `version`); without
  // one, the roles path answers 404.
  void SetRoles(int64_t version, std::string document);
  int requests() const;            // policy downloads asked for, any answer
  std::string last_known() const;  // the lastKnownVersion of the last request

 private:
  mutable std::mutex mu_;
  Mode mode_ = Mode::kOutage;
  int64_t version_ = -1;
  std::string document_;
  std::chrono::milliseconds slow_for_{0};
  int requests_ = 0;
  std::string last_known_;
  int64_t role_version_ = -1;
  std::string roles_document_;
  std::string expected_auth_;
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace shoal::testing
