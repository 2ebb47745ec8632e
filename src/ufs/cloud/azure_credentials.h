// Microsoft Entra ID bearer tokens for Azure Storage, fetched the way
// azure-identity's DefaultAzureCredential gets them (without its developer
// tools), in this order:
//
//   client-secret      AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_CLIENT_SECRET:
//                      POST {authority}/{tenant}/oauth2/v2.0/token
//                      (grant_type=client_credentials)
//   workload-identity  AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_FEDERATED_TOKEN_FILE
//                      (AKS): the same endpoint with the file as client_assertion,
//                      re-read at every fetch (the kubelet rotates it)
//   managed-identity   IDENTITY_ENDPOINT + IDENTITY_HEADER (App Service, Functions,
//                      Arc; api-version 2019-08-01), else instance metadata at
//                      AZURE_POD_IDENTITY_AUTHORITY_HOST (http://169.254.169.254);
//                      AZURE_CLIENT_ID picks a user-assigned identity
//
// The authority is AZURE_AUTHORITY_HOST (https://login.microsoftonline.com).
// Every token is for https://storage.azure.com. Instance metadata is a probe:
// off Azure it is absent, so the chain asks it once with a 1 s limit and moves
// on. Names are what operators read in `shoal status`; details name tenant,
// client id and endpoint, never a secret, and so do all messages.
//
// Thread safety: Fetch() is called by one CredentialCache at a time;
// everything else is reentrant.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"
#include "ufs/cloud/credential_cache.h"

namespace shoal::cloud {

// What an az:// mount's option `credentials` may say.
inline constexpr std::string_view kAzureCredentialChoices =
    "auto|shared-key|sas|client-secret|workload-identity|managed-identity|anonymous";

// The three Entra ID providers above as chain candidates, in precedence
// order, each saying why it does not apply when it does not.
std::vector<Candidate> AzureTokenCandidates(const Env& env);

// One Entra ID provider by name ("client-secret", "workload-identity",
// "managed-identity"), configured from `env` without any request;
// kInvalidArgument naming the variables that are missing.
Result<std::unique_ptr<Provider>> MakeAzureTokenProvider(std::string_view name, const Env& env);

// options["credentials"]: "auto" (the default) runs the chain above, a
// provider's name uses only that one. The chosen provider and its first token.
Result<Chosen> ResolveAzureTokenCredentials(const std::map<std::string, std::string>& options, const Env& env);

// A provider of credentials that never change (a shared key, a SAS, none):
// Fetch() gives an empty Secret that never expires, so such mounts show in a
// CredentialCache like every other; the client keeps signing with its key.
std::unique_ptr<Provider> FixedAzureProvider(std::string name, std::string detail);

// What to do when no Azure credentials are found (the chain's last words).
inline constexpr std::string_view kAzureCredentialAdvice =
    "Set the mount option key, sas_token or connection_string (or AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, "
    "AZURE_STORAGE_CONNECTION_STRING); or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET for a service "
    "principal; or run on AKS with workload identity, or on an Azure VM with a managed identity; or set "
    "credentials: anonymous for a public container";

}  // namespace shoal::cloud
