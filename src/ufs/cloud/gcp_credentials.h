// Google Application Default Credentials: the OAuth access token a gs://
// mount sends, found the way Google's client libraries find it
// (google-auth's `google.auth.default()`).
//
// Mount option `credentials` picks the provider:
//   auto             (default) the first of, in order:
//                    1. the JSON key file named by option `credentials_file`,
//                       else by $GOOGLE_APPLICATION_CREDENTIALS;
//                    2. gcloud's well-known file,
//                       $CLOUDSDK_CONFIG/application_default_credentials.json,
//                       else ~/.config/gcloud/application_default_credentials.json
//                       (what `gcloud auth application-default login` writes);
//                    3. the GCE/GKE metadata server (Workload Identity) at
//                       $GCE_METADATA_HOST (or $GCE_METADATA_ROOT), default
//                       metadata.google.internal: probed with a short timeout,
//                       since off Google Cloud it is simply absent.
//                    A key file that is set but broken stops the chain (as
//                    google-auth does): it names the file and the field.
//   service-account  a key file of "type": "service_account": an RS256 JWT
//                    signed with its private key, exchanged at its token_uri.
//   authorized-user  a key file of "type": "authorized_user": its refresh token
//                    exchanged at its token_uri (default Google's).
//   metadata         the metadata server only (not a probe: its error is the error).
//   anonymous        no token at all: public buckets.
// The key file of the two named file providers: option `credentials_file`,
// else $GOOGLE_APPLICATION_CREDENTIALS, else the well-known file.
// Option `scopes` (comma- or space-separated) replaces the default scope
// https://www.googleapis.com/auth/devstorage.read_write for service accounts
// and the metadata server; an authorized user's refresh token keeps the scopes
// it was granted with.
//
// HMAC keys (access_key_id/secret_access_key) are not handled here: a mount
// that has them never asks for a token.
//
// Provider names, as operators see them: "service-account",
// "authorized-user", "metadata-server", "anonymous". No message carries a
// secret (private key, refresh token, client secret, access token).
//
// Thread safety: the functions are reentrant; a provider's Fetch() may be
// called from any thread (the CredentialCache calls it one at a time).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "shoal/status.h"
#include "ufs/cloud/credential_cache.h"

namespace shoal::cloud {

// Resolves a gs:// mount's token provider from its options (see above) and
// the environment, with its first token already fetched. kPermissionDenied
// when nothing here has credentials (listing each place looked at); a
// configured provider's own error (naming its file or endpoint) otherwise.
Result<Chosen> ResolveGoogleCredentials(const std::map<std::string, std::string>& options, const Env& env);

// The RS256 JWT assertion for a service-account key (exposed for tests):
// header {"alg":"RS256","typ":"JWT","kid":key_id} (no kid when key_id is
// empty), claims iss, scope (none when empty), aud, iat = now, exp = now + 1 h,
// each part base64url without padding. kInvalidArgument when the key is not a
// PEM RSA private key (the message carries no part of it).
Result<std::string> MakeServiceAccountJwt(std::string_view client_email, std::string_view private_key_pem,
                                          std::string_view key_id, std::string_view scope, std::string_view audience,
                                          WallClock::time_point now);

}  // namespace shoal::cloud
