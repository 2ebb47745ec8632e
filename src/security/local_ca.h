// A local certificate authority for `shoal up --tls`: a CA kept in the state
// dir (so clients keep trusting it across restarts) and a certificate for the
// workers signed by it, with the SANs clients connect to (127.0.0.1, ::1,
// localhost, and any given). Keys are EC P-256, written mode 0600 in a dir of
// mode 0700. Bring-your-own certificates need none of this: set tls.* keys.
#pragma once

#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal::security {

struct LocalCaFiles {
  std::string ca_cert;      // DIR/ca.pem: what clients trust
  std::string server_cert;  // DIR/worker.pem
  std::string server_key;   // DIR/worker.key
};

// Makes DIR (0700) with the CA (made once, then reused) and a new worker
// certificate valid for `days`, naming `hosts` (IP addresses or DNS names).
Result<LocalCaFiles> MakeLocalCa(const std::string& dir, const std::vector<std::string>& hosts, int days = 365);

// Issues a certificate signed by the CA in DIR for `common_name` (a client's
// identity for mTLS, or a worker's), written to OUT.pem and OUT.key.
Status IssueCertificate(const std::string& dir, const std::string& common_name, const std::vector<std::string>& hosts,
                        int days, const std::string& out_prefix);

}  // namespace shoal::security
