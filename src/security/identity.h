// Identity: who is asking, and how it was proven. Made at each door (a TLS
// client certificate, a bearer token, the cluster secret, SO_PEERCRED on the
// short-circuit socket, an S3 access key) and carried to the one access
// check, then into the audit line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shoal::security {

enum class Proof {
  kNone,             // nothing presented: anonymous
  kClusterSecret,    // the cluster secret (cluster.secret): one of the cluster's own processes
  kToken,            // a bearer token signed with the cluster key (shoal token issue)
  kCertificate,      // a verified TLS client certificate (subject CN or URI SAN)
  kPeerCredentials,  // SO_PEERCRED on the short-circuit UNIX socket
  kS3Key,            // an S3 access key of s3.users / s3.credentials
};

std::string_view ProofName(Proof p);

struct Identity {
  std::string user;  // "" when anonymous
  std::vector<std::string> groups;
  Proof proof = Proof::kNone;
  // A trusted door (FUSE mount, S3 endpoint) acting for `user`: the door's own identity.
  std::string acting_for_by;

  bool anonymous() const { return proof == Proof::kNone; }
  // "alice (token)", "alice (token, via fuse-svc)", "anonymous".
  std::string ToString() const;
};

}  // namespace shoal::security
