// Where the S3 backend finds its credentials, region and endpoint when the
// mount does not spell them out: the standard AWS environment variables and the
// AWS shared credentials/config files, resolved the way the AWS SDKs do, so a
// mount with just `ufs: s3://bucket/prefix` works on a configured machine.
//
// Not supported: EC2/ECS instance metadata, SSO, credential_process and
// assume-role profiles (they need network calls or external programs).
//
// Secrets never appear in any Status message produced here.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "shoal/status.h"
#include "common/sigv4.h"

namespace shoal::s3 {

// Reads one environment variable; injectable so tests stay hermetic.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
// The process environment (unset and empty variables both read as nullopt).
EnvLookup ProcessEnv();

// An AWS-style INI file: section -> key -> value. Indented lines under a key
// with an empty value form a sub-section stored as "<key>.<subkey>"
// (`s3 =\n  endpoint_url = ...` -> "s3.endpoint_url").
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
IniFile ParseAwsIni(std::string_view text);

// What one named profile says, merged from the credentials file (credentials
// win) and the config file ("[profile name]", or "[default]").
struct Profile {
  bool found = false;
  Credentials creds;         // empty access_key_id when the profile holds no keys
  std::string region;
  std::string endpoint_url;  // "s3.endpoint_url" or else "endpoint_url"
  std::string files;         // the files that were read, for messages
};
// Files: AWS_SHARED_CREDENTIALS_FILE (else ~/.aws/credentials) and
// AWS_CONFIG_FILE (else ~/.aws/config). Missing files are not errors.
Profile LoadProfile(const std::string& name, const EnvLookup& env);

// Credentials for a mount, first match wins:
//   1. options access_key_id + secret_access_key (+ session_token);
//   2. options profile (an error if that profile does not exist);
//   3. s3:// only: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//   4. s3:// only: profile AWS_PROFILE, else "default", from the shared files
//      (an error if AWS_PROFILE names a profile that does not exist);
//   5. none: anonymous (unsigned requests).
// gs:// mounts skip 3 and 4 so AWS keys are never offered to Google.
Result<Credentials> ResolveCredentials(const std::map<std::string, std::string>& options, bool aws_environment,
                                       const EnvLookup& env);

}  // namespace shoal::s3
