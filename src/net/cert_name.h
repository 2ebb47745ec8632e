// The name a verified TLS client certificate proves, as the server puts it in
// TransportInfo::peer_name and the access check reads it as the user.
#pragma once

#include <openssl/types.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace shoal::net {

inline constexpr size_t kMaxCertificateName = 256;

// The certificate's first URI subject alternative name when it has one, else
// its subject's common name (as UTF-8, whatever string type it was written
// in). "" when that name is unfit for a user name: not 1-256 bytes of UTF-8,
// a control character, a space at either end, or a subject with more than one
// common name (which one would be the user's is anyone's guess). A name is
// taken as written; it is the CA that vouches for it.
std::string CertificateName(X509* cert);

// Whether `name` is fit for a user name taken from a certificate (see above).
bool FitCertificateName(std::string_view name);

}  // namespace shoal::net
