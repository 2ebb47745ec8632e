// AWS credentials for s3:// mounts, found the way the AWS SDKs and the aws cli
// (botocore) find them, so a node or pod that works with the aws cli works
// with Shoal unchanged. `credentials: auto` (the default) walks botocore's
// default chain:
//
//   environment        AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
//   assume-role        the profile has role_arn with source_profile or
//                      credential_source (Environment, Ec2InstanceMetadata,
//                      EcsContainer): STS AssumeRole, signed with the source's keys
//   web-identity       AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
//                      [+ AWS_ROLE_SESSION_NAME], or the profile's
//                      web_identity_token_file + role_arn: STS
//                      AssumeRoleWithWebIdentity (IRSA)
//   shared-credentials keys in the credentials file's profile
//   process            the config profile's credential_process
//   config-file        keys in the config file's profile
//   container          AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (ECS) or
//                      AWS_CONTAINER_CREDENTIALS_FULL_URI with
//                      AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE) (EKS Pod Identity)
//   instance-metadata  EC2 IMDSv2: PUT a session token, then the role's keys;
//                      IMDSv1 only with the mount option imdsv1: true
//
// The profile is the mount option `profile`, else AWS_PROFILE, else
// "default"; a mount option profile skips the environment (as `--profile`
// does). Keys in the mount options come before everything. Endpoints:
// AWS_EC2_METADATA_SERVICE_ENDPOINT (AWS_EC2_METADATA_DISABLED=true turns
// instance metadata off), STS at the mount option sts_endpoint, else
// AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else the profile's
// sts.endpoint_url, else sts.REGION.amazonaws.com.
//
// `credentials:` may also name one provider (`environment`, `assume-role`,
// `web-identity`, `profile` (shared files, incl. process), `container`,
// `instance-metadata`, `keys` (the mount options), `anonymous`).
//
// Thread safety: providers are used by one CredentialCache (one fetch at a time).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "shoal/status.h"
#include "ufs/cloud/credential_cache.h"

namespace shoal::cloud {

struct AwsChainOptions {
  std::map<std::string, std::string> mount_options;
  std::string region;  // the mount's region, for the STS endpoint and signing
};

Result<Chosen> ResolveAwsCredentials(const AwsChainOptions& options, const Env& env);

// The names `credentials:` accepts for s3:// mounts.
inline constexpr std::string_view kAwsProviderNames =
    "auto, keys, environment, assume-role, web-identity, profile, container, instance-metadata, anonymous";

// The answers the AWS providers read, exposed for tests and fuzz/cloud_answers.cc.
// The JSON of the instance-metadata and container endpoints
// (`token_key` "Token") and of credential_process ("SessionToken").
Result<Secret> ParseAwsJson(std::string_view who, std::string_view body, const char* token_key);
// What a credential_process printed: that JSON, with "Version": 1.
Result<Secret> ParseProcessOutput(std::string_view who, std::string_view out);
// STS's AssumeRole / AssumeRoleWithWebIdentity answer (XML): a secret that
// has not expired at `now`.
Result<Secret> ParseStsAnswer(std::string_view who, std::string_view body, WallClock::time_point now);

// A provider of a fixed secret (keys written in a config, anonymous).
std::unique_ptr<Provider> MakeStaticProvider(std::string name, std::string detail, Secret secret);

}  // namespace shoal::cloud
