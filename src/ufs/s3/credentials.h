// The AWS shared credentials/config files (profiles), read the way the AWS
// SDKs read them: where an s3:// mount finds its region and endpoint when it
// does not spell them out. The credential chain itself (environment, roles,
// instance metadata, ...) is src/ufs/cloud/aws_credentials.h.
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

}  // namespace shoal::s3
