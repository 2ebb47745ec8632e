// Bearer tokens: JWTs (RFC 7519) signed with HS256 under the cluster key, so
// that any JWT tool can read them. `shoal token issue` makes them; workers
// check them on every request that presents one.
//
//   header  {"alg":"HS256","typ":"JWT","kid":KID}   KID: the key's fingerprint
//   payload {"sub":USER,"groups":[...],"iss":"shoal","iat":T,"exp":T}
//
// The key file holds 32 random bytes as 64 hex digits and must be mode 0600.
// Rotation with an overlap: sign with the new key, and keep accepting the old
// one (security.previous_token_key_files) until its tokens have expired.
//
// Verify says which check failed, in one line: a token from another cluster
// (its kid names no key of this one), forged (the signature does not match),
// expired, malformed or too large. A bad credential is never taken as none.
//
// Thread safety: a TokenKeys is immutable once loaded.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "security/identity.h"
#include "shoal/status.h"

namespace shoal::security {

// A token longer than this is refused without being parsed.
inline constexpr size_t kMaxTokenBytes = 4096;

class TokenKeys {
 public:
  // Writes a new random key to `path` (mode 0600, created exclusively: an
  // existing file is kept and this is OK).
  static Status CreateKeyFile(const std::string& path);
  // The signing key from `key_file`, and the keys still accepted from `previous`.
  static Result<TokenKeys> Load(const std::string& key_file, const std::vector<std::string>& previous = {});
  // For tests: keys given as raw bytes.
  static TokenKeys FromSecrets(std::vector<std::string> secrets);

  // A token for `user` in `groups`, valid for `ttl` from `now` (Unix seconds).
  std::string Issue(std::string_view user, const std::vector<std::string>& groups, std::chrono::seconds ttl,
                    int64_t now) const;
  // The identity a token proves at `now`, or kPermissionDenied saying why not.
  Result<Identity> Verify(std::string_view token, int64_t now) const;

  // The fingerprint of the signing key (the kid of the tokens it signs).
  const std::string& kid() const { return keys_.front().kid; }

 private:
  struct Key {
    std::string secret;
    std::string kid;
  };
  std::vector<Key> keys_;  // [0] signs; all verify
};

// The user and groups a token names, NOT verified: for a client that names
// itself where only its own host's users can hear it (the short-circuit
// socket), never for a decision of its own. nullopt when malformed.
std::optional<Identity> TokenClaims(std::string_view token);

// True when `bearer` has the shape of a JWT (three base64url parts).
bool LooksLikeToken(std::string_view bearer);

int64_t UnixNow();

}  // namespace shoal::security
