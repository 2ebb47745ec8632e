#include "security/identity.h"

namespace shoal::security {

std::string_view ProofName(Proof p) {
  switch (p) {
    case Proof::kNone: return "none";
    case Proof::kClusterSecret: return "cluster secret";
    case Proof::kToken: return "token";
    case Proof::kCertificate: return "certificate";
    case Proof::kPeerCredentials: return "peer credentials";
    case Proof::kS3Key: return "s3 key";
  }
  return "?";
}

std::string Identity::ToString() const {
  if (anonymous()) return "anonymous";
  std::string s = (user.empty() ? std::string("?") : user) + " (" + std::string(ProofName(proof));
  if (!acting_for_by.empty()) s += ", via " + acting_for_by;
  return s + ")";
}

}  // namespace shoal::security
