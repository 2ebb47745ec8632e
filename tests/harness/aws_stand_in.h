// Stand-ins for the AWS endpoints that hand out temporary credentials, written
// from AWS's public documentation, on one loopback HTTP server:
//
//   IMDSv2      PUT /latest/api/token (needs X-aws-ec2-metadata-token-ttl-seconds),
//               GET /latest/meta-data/iam/security-credentials/[ROLE]
//               (401 without a valid token; IMDSv1 GETs only when allowed)
//   container   GET /container/creds (ECS and EKS Pod Identity; checks the
//               Authorization header when one is set)
//   STS         POST / Action=AssumeRole (SigV4-signed by a known key: the
//               signature is verified) and Action=AssumeRoleWithWebIdentity
//               (checks the web identity token), answering STS's XML
//   S3          a bucket that only answers requests signed with credentials
//               this stand-in issued, carrying their session token
//               (x-amz-security-token, signed), before they expire: HEAD,
//               ranged GET and ListObjectsV2. Everything else is 403.
//
// Every credential issued is fresh (its own key, secret and token) and lives
// `lifetime`. Each endpoint can fail on demand.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "net/http_server.h"

namespace shoal::testing {

class AwsStandIn {
 public:
  enum class Fault { kNone, kError500, kHang, kGarbage, kExpired };
  enum class Endpoint { kImds, kContainer, kSts };

  AwsStandIn();
  ~AwsStandIn();

  std::string url() const;  // http://127.0.0.1:PORT (IMDS endpoint, STS endpoint and S3 endpoint alike)
  std::string container_url() const { return url() + "/container/creds"; }

  void set_lifetime(std::chrono::seconds s);
  void set_fault(Endpoint e, Fault f);
  void set_allow_imdsv1(bool allow);
  void set_role(std::string role) {
    std::lock_guard l(mu_);
    role_ = std::move(role);
  }
  // The Authorization value the container endpoint demands ("" = none).
  void set_container_token(std::string t) {
    std::lock_guard l(mu_);
    container_token_ = std::move(t);
  }
  // The web identity token AssumeRoleWithWebIdentity accepts.
  void set_web_identity_token(std::string t) {
    std::lock_guard l(mu_);
    web_token_ = std::move(t);
  }
  // A long-lived key STS accepts AssumeRole signatures from (an IAM user's).
  void add_source_key(std::string key, std::string secret) {
    std::lock_guard l(mu_);
    source_keys_[key] = secret;
  }

  void PutObject(const std::string& bucket, const std::string& key, std::string data);

  struct Counts {
    int imds_token_puts = 0, imds_gets = 0, imds_unauthorized = 0;
    int container_gets = 0;
    int assume_role = 0, assume_role_web_identity = 0;
    int s3_ok = 0, s3_refused = 0, s3_expired = 0, s3_no_token = 0;
  };
  Counts counts() const;
  std::string last_role_arn() const;
  std::string last_session_name() const;
  // The key that signed the last AssumeRole ("" when none or not verified).
  std::string last_assume_role_signer() const;
  // The access key a credential fetch last handed out (not a secret: AWS shows key ids).
  std::string last_issued_key() const;

 private:
  struct Issued {
    std::string secret, token;
    std::chrono::system_clock::time_point expires;
  };
  Issued Issue(std::string* key);  // with mu_ held
  bool Hang(Endpoint e);           // applies kHang (outside mu_); true when it hung

  mutable std::mutex mu_;
  std::chrono::seconds lifetime_{3600};
  std::map<Endpoint, Fault> faults_;
  bool allow_v1_ = false;
  std::string role_ = "shoal-node-role";
  std::string container_token_, web_token_ = "web-identity-token";
  std::map<std::string, std::string> source_keys_;
  std::map<std::string, Issued> issued_;
  std::map<std::string, std::string> imds_tokens_;  // token -> unused
  std::map<std::string, std::map<std::string, std::string>> objects_;
  Counts counts_;
  std::string last_role_arn_, last_session_, last_signer_, last_issued_;
  int serial_ = 0;
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace shoal::testing
