#include "ufs/cloud/aws_credentials.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/file_text.h"
#include "common/sigv4.h"
#include "ufs/cloud/token_http.h"
#include "ufs/http/xml.h"
#include "ufs/s3/credentials.h"

extern char** environ;

namespace shoal::cloud {
namespace {

using Options = std::map<std::string, std::string>;
using Section = std::map<std::string, std::string>;

std::string Get(const Section& s, const std::string& key) {
  auto it = s.find(key);
  return it == s.end() ? std::string() : it->second;
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  auto text = ReadFileText(path);
  return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

std::string TrimSpace(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

TokenCall Call(std::string method, std::string url, std::vector<std::pair<std::string, std::string>> headers = {}) {
  TokenCall c;
  c.method = std::move(method);
  c.url = std::move(url);
  c.headers = std::move(headers);
  return c;
}

class StaticProvider : public Provider {
 public:
  StaticProvider(std::string name, std::string detail, Secret s)
      : name_(std::move(name)), detail_(std::move(detail)), secret_(std::move(s)) {}
  std::string name() const override { return name_; }
  std::string detail() const override { return detail_; }
  Result<Secret> Fetch() override { return secret_; }

 private:
  std::string name_, detail_;
  Secret secret_;
};

Status CheckNotExpired(std::string_view who, const Secret& s, WallClock::time_point now) {
  if (s.expiring() && s.expires <= now) {
    return Status(Code::kIo, std::string(who) + ": the credentials handed out expired at " + FormatExpiry(s.expires) +
                                 " (this machine's clock says " + FormatExpiry(now) +
                                 "): check the endpoint and the clock");
  }
  return Status::Ok();
}
Status CheckNotExpired(std::string_view who, const Secret& s) { return CheckNotExpired(who, s, WallClock::now()); }

}  // namespace

Result<Secret> ParseAwsJson(std::string_view who, std::string_view body, const char* token_key) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto str = [&](const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  if (!j.is_object()) {
    return Err(Code::kIo, std::string(who) + ": the answer is not JSON (" + std::to_string(body.size()) + " bytes)");
  }
  if (auto code = str("Code"); !code.empty() && code != "Success") {
    std::string said = code + " " + str("Message");
    if (said.size() > 200) said = said.substr(0, 200) + "...";
    return Err(Code::kUnavailable, std::string(who) + ": the endpoint says Code " + said);
  }
  Secret s;
  s.access_key_id = str("AccessKeyId");
  s.secret_access_key = str("SecretAccessKey");
  s.session_token = str(token_key);
  if (s.access_key_id.empty() || s.secret_access_key.empty()) {
    return Err(Code::kIo, std::string(who) + ": the answer lacks AccessKeyId or SecretAccessKey");
  }
  if (auto st = CheckSecretFields(who, s); !st.ok()) return Err(st);
  if (auto e = str("Expiration"); !e.empty()) {
    auto t = ParseIso8601(e);
    if (!t) {
      if (e.size() > 40) e = e.substr(0, 40) + "...";
      return Err(Code::kIo, std::string(who) + ": Expiration '" + e + "' is not an ISO 8601 time");
    }
    s.expires = *t;
  }
  return s;
}

Result<Secret> ParseProcessOutput(std::string_view who, std::string_view out) {
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (!j.is_object() || !j.contains("Version") || j["Version"] != 1) {
    return Err(Code::kIo, std::string(who) +
                              ": credential_process must print JSON with \"Version\": 1 (see the AWS docs on sourcing "
                              "credentials with an external process)");
  }
  return ParseAwsJson(who, out, "SessionToken");
}

Result<Secret> ParseStsAnswer(std::string_view who, std::string_view body, WallClock::time_point now) {
  Secret s;
  s.access_key_id = XmlText(body, "AccessKeyId").value_or("");
  s.secret_access_key = XmlText(body, "SecretAccessKey").value_or("");
  s.session_token = XmlText(body, "SessionToken").value_or("");
  auto exp = XmlText(body, "Expiration");
  if (s.access_key_id.empty() || s.secret_access_key.empty() || s.session_token.empty() || !exp) {
    return Err(Code::kIo, std::string(who) + ": STS answered without Credentials (" + std::to_string(body.size()) +
                              " bytes that are not an STS answer)");
  }
  if (auto st = CheckSecretFields(who, s); !st.ok()) return Err(st);
  auto t = ParseIso8601(*exp);
  if (!t) {
    if (exp->size() > 40) *exp = exp->substr(0, 40) + "...";
    return Err(Code::kIo, std::string(who) + ": STS Expiration '" + *exp + "' is not an ISO 8601 time");
  }
  s.expires = *t;
  if (auto st = CheckNotExpired(who, s, now); !st.ok()) return Err(st);
  return s;
}

namespace {

// ---- EC2 instance metadata (IMDSv2) ----

class ImdsProvider : public Provider {
 public:
  ImdsProvider(std::string endpoint, bool allow_v1, std::chrono::milliseconds timeout, int attempts)
      : endpoint_(std::move(endpoint)), allow_v1_(allow_v1), timeout_(timeout), attempts_(attempts) {}
  std::string name() const override { return "instance-metadata"; }
  std::string detail() const override { return endpoint_ + (role_.empty() ? "" : ", role " + role_); }

  Result<Secret> Fetch() override {
    std::vector<std::pair<std::string, std::string>> auth;
    TokenCall put = Call("PUT", endpoint_ + "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}});
    put.timeout = timeout_;
    put.attempts = attempts_;
    auto token = CallTokenEndpoint("instance-metadata (IMDSv2 token)", put);
    if (token) {
      auth.emplace_back("X-aws-ec2-metadata-token", TrimSpace(*token));
    } else if (!allow_v1_) {
      return Err(token.error().code(),
                 token.error().message() + " (IMDSv1 is not used unless the mount sets imdsv1: true)");
    }
    const std::string base = endpoint_ + "/latest/meta-data/iam/security-credentials/";
    auto get = [&](const std::string& url) {
      TokenCall c = Call("GET", url, auth);
      c.timeout = timeout_;
      c.attempts = attempts_;
      return CallTokenEndpoint("instance-metadata", c);
    };
    if (role_.empty()) {
      auto roles = get(base);
      if (!roles) {
        if (roles.error().code() == Code::kNotFound) {
          return Err(Code::kNotFound, "instance-metadata: this instance has no IAM role (" + base +
                                          " is empty): attach an instance profile");
        }
        return Err(roles.error());
      }
      std::string r = TrimSpace(*roles);
      r = r.substr(0, r.find('\n'));
      if (r.empty() || r.find_first_of("/?#% ") != std::string::npos) {
        return Err(Code::kNotFound, "instance-metadata: no usable role name at " + base);
      }
      role_ = r;
    }
    auto body = get(base + role_);
    if (!body) {
      if (body.error().code() == Code::kNotFound) role_.clear();  // the role changed: look it up again next time
      return Err(body.error());
    }
    auto s = ParseAwsJson("instance-metadata role " + role_, *body, "Token");
    if (!s) return s;
    if (auto st = CheckNotExpired("instance-metadata", *s); !st.ok()) return Err(st);
    return s;
  }

 private:
  std::string endpoint_;
  bool allow_v1_;
  std::chrono::milliseconds timeout_;
  int attempts_;
  std::string role_;
};

// ---- ECS / EKS Pod Identity container endpoint ----

class ContainerProvider : public Provider {
 public:
  ContainerProvider(std::string url, std::string token, std::string token_file)
      : url_(std::move(url)), token_(std::move(token)), token_file_(std::move(token_file)) {}
  std::string name() const override { return "container"; }
  std::string detail() const override { return url_; }
  Result<Secret> Fetch() override {
    TokenCall c = Call("GET", url_);
    std::string auth = token_;
    if (!token_file_.empty()) {
      auto t = ReadWholeFile(token_file_);
      if (!t) {
        return Err(Code::kNotFound, "container: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE " + token_file_ +
                                        " cannot be read: check the pod's projected token");
      }
      auth = TrimSpace(*t);
    }
    if (auth.find_first_of("\r\n") != std::string::npos) {
      return Err(Code::kInvalidArgument, "container: the authorization token holds a line break");
    }
    if (!auth.empty()) c.headers.emplace_back("Authorization", auth);
    auto body = CallTokenEndpoint("container", c);
    if (!body) return Err(body.error());
    auto s = ParseAwsJson("container " + url_, *body, "Token");
    if (!s) return s;
    if (auto st = CheckNotExpired("container", *s); !st.ok()) return Err(st);
    return s;
  }

 private:
  std::string url_, token_, token_file_;
};

// ---- STS ----

struct StsEndpoint {
  std::string url;     // "https://sts.us-east-1.amazonaws.com" (no trailing '/')
  std::string region;  // for signing
};

std::string HostOf(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  return url.substr(start, url.find('/', start) - start);
}

std::string SessionName(const std::string& given) {
  if (!given.empty()) return given;
  return "shoal-" +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(WallClock::now().time_since_epoch()).count());
}

class WebIdentityProvider : public Provider {
 public:
  WebIdentityProvider(StsEndpoint sts, std::string role_arn, std::string session, std::string token_file)
      : sts_(std::move(sts)),
        role_arn_(std::move(role_arn)),
        session_(std::move(session)),
        token_file_(std::move(token_file)) {}
  std::string name() const override { return "web-identity"; }
  std::string detail() const override { return "role " + role_arn_ + " via " + sts_.url; }
  Result<Secret> Fetch() override {
    auto token = ReadWholeFile(token_file_);  // re-read: the kubelet rotates it
    if (!token || TrimSpace(*token).empty()) {
      return Err(Code::kNotFound, "web-identity: the token file " + token_file_ +
                                      " (AWS_WEB_IDENTITY_TOKEN_FILE) is missing or empty: check the service "
                                      "account's projected volume");
    }
    TokenCall c = Call("POST", sts_.url + "/", {{"Content-Type", "application/x-www-form-urlencoded"}});
    c.body = FormEncode({{"Action", "AssumeRoleWithWebIdentity"},
                         {"Version", "2011-06-15"},
                         {"RoleArn", role_arn_},
                         {"RoleSessionName", SessionName(session_)},
                         {"WebIdentityToken", TrimSpace(*token)}});
    auto body = CallTokenEndpoint("web-identity (STS AssumeRoleWithWebIdentity for " + role_arn_ + ")", c);
    if (!body) return Err(body.error());
    return ParseStsAnswer("web-identity", *body, WallClock::now());
  }

 private:
  StsEndpoint sts_;
  std::string role_arn_, session_, token_file_;
};

class AssumeRoleProvider : public Provider {
 public:
  AssumeRoleProvider(StsEndpoint sts, std::string role_arn, std::string session, std::string external_id,
                     std::string duration, std::unique_ptr<Provider> source, std::string profile)
      : sts_(std::move(sts)),
        role_arn_(std::move(role_arn)),
        session_(std::move(session)),
        external_id_(std::move(external_id)),
        duration_(std::move(duration)),
        source_(std::move(source)),
        profile_(std::move(profile)) {}
  std::string name() const override { return "assume-role"; }
  std::string detail() const override {
    return "profile '" + profile_ + "', role " + role_arn_ + " with " + source_->name() + " keys via " + sts_.url;
  }
  Result<Secret> Fetch() override {
    auto src = source_->Fetch();
    if (!src) return Err(src.error().code(), "assume-role: the source credentials failed: " + src.error().message());
    std::vector<std::pair<std::string, std::string>> form = {{"Action", "AssumeRole"},
                                                             {"Version", "2011-06-15"},
                                                             {"RoleArn", role_arn_},
                                                             {"RoleSessionName", SessionName(session_)}};
    if (!external_id_.empty()) form.emplace_back("ExternalId", external_id_);
    if (!duration_.empty()) form.emplace_back("DurationSeconds", duration_);
    TokenCall c = Call("POST", sts_.url + "/", {{"Content-Type", "application/x-www-form-urlencoded"}});
    c.body = FormEncode(form);
    s3::Credentials keys{src->access_key_id, src->secret_access_key, src->session_token, source_->name()};
    s3::SigningInput in{"POST", HostOf(sts_.url), "/", {}, s3::Sha256Hex(c.body), sts_.region, "sts"};
    s3::Headers signed_headers = c.headers;
    s3::SignV4(in, keys, WallClock::now(), signed_headers);
    c.headers = std::move(signed_headers);
    auto body = CallTokenEndpoint("assume-role (STS AssumeRole for " + role_arn_ + ")", c);
    if (!body) return Err(body.error());
    return ParseStsAnswer("assume-role", *body, WallClock::now());
  }

 private:
  StsEndpoint sts_;
  std::string role_arn_, session_, external_id_, duration_;
  std::unique_ptr<Provider> source_;
  std::string profile_;
};

// ---- credential_process ----

class ProcessProvider : public Provider {
 public:
  ProcessProvider(std::string command, std::string profile)
      : command_(std::move(command)), profile_(std::move(profile)) {}
  std::string name() const override { return "process"; }
  // The command may hold arguments that are secrets: only its program is named.
  std::string detail() const override {
    return "profile '" + profile_ + "' credential_process " + command_.substr(0, command_.find(' '));
  }
  Result<Secret> Fetch() override {
    auto out = Run();
    if (!out) return Err(out.error());
    auto s = ParseProcessOutput("process (profile '" + profile_ + "')", *out);
    if (!s) return s;
    if (auto st = CheckNotExpired("process", *s); !st.ok()) return Err(st);
    return s;
  }

 private:
  Result<std::string> Run() const {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Err(Code::kIo, "process: pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    const char* argv[] = {"/bin/sh", "-c", command_.c_str(), nullptr};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      return Err(Code::kIo, "process: cannot start /bin/sh for credential_process");
    }
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool timed_out = false;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      if (out.size() + n > (1 << 20)) break;  // no credential is a megabyte
      out.append(buf, n);
    }
    ::close(fds[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (timed_out)
      return Err(Code::kTimeout, "process: credential_process of profile '" + profile_ + "' ran over 60 s");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return Err(Code::kPermissionDenied, "process: credential_process of profile '" + profile_ + "' failed (exit " +
                                              std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                              "); run it by hand to see why");
    }
    return out;
  }

  std::string command_, profile_;
};

// ---- the shared files ----

struct SharedFiles {
  s3::IniFile config, credentials;
  std::string config_path, credentials_path;

  // The config file's section of a profile ("[profile x]", "[default]").
  const Section* Config(const std::string& name) const {
    auto it = config.find(name == "default" ? "default" : "profile " + name);
    if (it == config.end() && name == "default") it = config.find("profile default");
    return it == config.end() ? nullptr : &it->second;
  }
  const Section* Credentials(const std::string& name) const {
    auto it = credentials.find(name);
    return it == credentials.end() ? nullptr : &it->second;
  }
  // Both files' keys, the credentials file winning (as botocore merges them).
  Section Merged(const std::string& name) const {
    Section out;
    if (auto* c = Config(name)) out = *c;
    if (auto* c = Credentials(name)) {
      for (auto& [k, v] : *c) out[k] = v;
    }
    return out;
  }
  bool Has(const std::string& name) const { return Config(name) || Credentials(name); }
};

SharedFiles LoadSharedFiles(const Env& env) {
  SharedFiles f;
  auto home = env("HOME");
  f.credentials_path = env("AWS_SHARED_CREDENTIALS_FILE").value_or(home ? *home + "/.aws/credentials" : "");
  f.config_path = env("AWS_CONFIG_FILE").value_or(home ? *home + "/.aws/config" : "");
  if (auto t = f.config_path.empty() ? std::nullopt : ReadWholeFile(f.config_path)) f.config = s3::ParseAwsIni(*t);
  if (auto t = f.credentials_path.empty() ? std::nullopt : ReadWholeFile(f.credentials_path)) {
    f.credentials = s3::ParseAwsIni(*t);
  }
  return f;
}

// Keys written in a section: nullopt when none; an error when half.
Result<std::optional<Secret>> KeysIn(const Section* s, const std::string& where) {
  if (!s) return std::optional<Secret>();
  std::string key = Get(*s, "aws_access_key_id"), secret = Get(*s, "aws_secret_access_key");
  if (key.empty() && secret.empty()) return std::optional<Secret>();
  if (key.empty() || secret.empty()) {
    return Err(Code::kInvalidArgument,
               where + " has only one of aws_access_key_id and aws_secret_access_key: set both");
  }
  Secret out;
  out.access_key_id = key;
  out.secret_access_key = secret;
  out.session_token = Get(*s, "aws_session_token");
  return std::optional<Secret>(std::move(out));
}

class Chain {
 public:
  Chain(const AwsChainOptions& o, const Env& env) : o_(o), env_(env), files_(LoadSharedFiles(env)) {
    auto opt = [&](const char* k) {
      auto it = o.mount_options.find(k);
      return it == o.mount_options.end() ? std::string() : it->second;
    };
    explicit_profile_ = !opt("profile").empty();
    profile_ = explicit_profile_ ? opt("profile") : env("AWS_PROFILE").value_or("default");
    profile_section_ = files_.Merged(profile_);
    sts_option_ = opt("sts_endpoint");
    imdsv1_ = opt("imdsv1") == "true";
    keys_.access_key_id = opt("access_key_id");
    keys_.secret_access_key = opt("secret_access_key");
    keys_.session_token = opt("session_token");
  }

  Result<Chosen> Run(const std::string& which) {
    if (explicit_profile_ || env_("AWS_PROFILE")) {
      if (!files_.Has(profile_)) {
        return Err(Code::kInvalidArgument, "AWS profile '" + profile_ + "' (" +
                                               (explicit_profile_ ? "mount option profile" : "from AWS_PROFILE") +
                                               ") was not found in " + files_.credentials_path + " and " +
                                               files_.config_path + ": check the profile name");
      }
    }
    std::vector<Candidate> all;
    all.push_back(Keys());
    if (!explicit_profile_) all.push_back(Environment());
    all.push_back(AssumeRole());
    all.push_back(WebIdentity());
    all.push_back(SharedCredentials());
    all.push_back(Process());
    all.push_back(ConfigFile());
    all.push_back(Container());
    all.push_back(InstanceMetadata());
    if (which == "anonymous") {
      return Chosen{MakeStaticProvider("anonymous", "unsigned requests", Secret{}), Secret{}};
    }
    if (which.empty() || which == "auto") {
      return RunChain("s3 credentials", std::move(all),
                      "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile in ~/.aws, an IAM role "
                      "(instance profile, IRSA, Pod Identity), or `credentials: anonymous` for a public bucket");
    }
    std::vector<Candidate> one;
    for (auto& c : all) {
      bool match =
          c.name == which ||
          (which == "profile" && (c.name == "shared-credentials" || c.name == "process" || c.name == "config-file"));
      if (match) one.push_back(std::move(c));
    }
    if (one.empty()) {
      return Err(Code::kInvalidArgument, "mount option credentials: '" + which +
                                             "' is not an AWS provider; use one of " + std::string(kAwsProviderNames));
    }
    for (auto& c : one) c.probe = false;  // named: its failure is the answer
    return RunChain("s3 credentials (credentials: " + which + ")", std::move(one),
                    "Configure that provider, or use credentials: auto");
  }

 private:
  std::string ProfileWhere() const {
    return "profile '" + profile_ + "' in " + files_.credentials_path + " or " + files_.config_path;
  }

  Candidate Keys() {
    Candidate c{"keys", "", false, {}};
    if (keys_.access_key_id.empty() && keys_.secret_access_key.empty()) {
      c.not_configured = "no access_key_id in the mount options";
      return c;
    }
    c.make = [this]() -> Result<std::unique_ptr<Provider>> {
      if (keys_.access_key_id.empty() || keys_.secret_access_key.empty()) {
        return Err(Code::kInvalidArgument,
                   "mount options set only one of access_key_id and secret_access_key: set both, or neither");
      }
      return MakeStaticProvider("keys", "mount options, access key " + keys_.access_key_id, keys_);
    };
    return c;
  }

  Candidate Environment() {
    Candidate c{"environment", "", false, {}};
    auto key = env_("AWS_ACCESS_KEY_ID"), secret = env_("AWS_SECRET_ACCESS_KEY");
    if (!key && !secret) {
      c.not_configured = "AWS_ACCESS_KEY_ID is not set";
      return c;
    }
    c.make = [key, secret, this]() -> Result<std::unique_ptr<Provider>> {
      if (!key || !secret) {
        return Err(Code::kInvalidArgument,
                   std::string(key ? "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
                                   : "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not") +
                       ": set both");
      }
      Secret s;
      s.access_key_id = *key;
      s.secret_access_key = *secret;
      s.session_token = env_("AWS_SESSION_TOKEN").value_or(env_("AWS_SECURITY_TOKEN").value_or(""));
      return MakeStaticProvider("environment", "AWS_ACCESS_KEY_ID " + *key, s);
    };
    return c;
  }

  StsEndpoint Sts(const Section& profile) const {
    StsEndpoint e;
    e.region = o_.region.empty() ? "us-east-1" : o_.region;
    if (!sts_option_.empty()) e.url = sts_option_;
    else if (auto v = env_("AWS_ENDPOINT_URL_STS")) e.url = *v;
    else if (auto v2 = env_("AWS_ENDPOINT_URL")) e.url = *v2;
    else if (auto p = Get(profile, "sts.endpoint_url"); !p.empty()) e.url = p;
    else if (auto p2 = Get(profile, "endpoint_url"); !p2.empty()) e.url = p2;
    else e.url = "https://sts." + e.region + ".amazonaws.com";
    while (!e.url.empty() && e.url.back() == '/') e.url.pop_back();
    return e;
  }

  // The keys an assume-role profile signs with.
  Result<std::unique_ptr<Provider>> SourceOf(const std::string& name, const Section& p, int depth) {
    std::string source_profile = Get(p, "source_profile"), source = Get(p, "credential_source");
    if (!source_profile.empty() && !source.empty()) {
      return Err(Code::kInvalidArgument, "AWS profile '" + name +
                                             "' sets both source_profile and credential_source: "
                                             "keep one");
    }
    if (!source.empty()) {
      if (source == "Environment") {
        auto e = Environment();
        if (!e.not_configured.empty())
          return Err(Code::kNotFound, "credential_source Environment: " + e.not_configured);
        return e.make();
      }
      if (source == "Ec2InstanceMetadata") return ImdsFor();
      if (source == "EcsContainer") {
        auto c = Container();
        if (!c.not_configured.empty())
          return Err(Code::kNotFound, "credential_source EcsContainer: " + c.not_configured);
        return c.make();
      }
      return Err(Code::kInvalidArgument, "AWS profile '" + name + "' has credential_source '" + source +
                                             "': use Environment, Ec2InstanceMetadata or EcsContainer");
    }
    if (source_profile.empty()) {
      return Err(Code::kInvalidArgument,
                 "AWS profile '" + name + "' has role_arn but neither source_profile nor credential_source");
    }
    if (!files_.Has(source_profile)) {
      return Err(Code::kInvalidArgument, "AWS profile '" + name + "' names source_profile '" + source_profile +
                                             "', which is in neither " + files_.credentials_path + " nor " +
                                             files_.config_path);
    }
    Section sp = files_.Merged(source_profile);
    if (!Get(sp, "role_arn").empty() && source_profile != name) {
      if (depth >= 4) return Err(Code::kInvalidArgument, "AWS profile '" + name + "': source_profile chain too long");
      return AssumeRoleFor(source_profile, sp, depth + 1);
    }
    auto keys = KeysIn(&sp, "AWS profile '" + source_profile + "'");
    if (!keys) return Err(keys.error());
    if (!*keys) {
      return Err(Code::kInvalidArgument,
                 "AWS profile '" + source_profile + "' (source_profile of '" + name + "') holds no aws_access_key_id");
    }
    return MakeStaticProvider("profile", "profile '" + source_profile + "'", **keys);
  }

  Result<std::unique_ptr<Provider>> AssumeRoleFor(const std::string& name, const Section& p, int depth) {
    auto source = SourceOf(name, p, depth);
    if (!source) return Err(source.error());
    return std::unique_ptr<Provider>(new AssumeRoleProvider(Sts(p), Get(p, "role_arn"), Get(p, "role_session_name"),
                                                            Get(p, "external_id"), Get(p, "duration_seconds"),
                                                            std::move(*source), name));
  }

  Candidate AssumeRole() {
    Candidate c{"assume-role", "", false, {}};
    if (Get(profile_section_, "role_arn").empty() || !Get(profile_section_, "web_identity_token_file").empty()) {
      c.not_configured = "no role_arn with source_profile/credential_source in " + ProfileWhere();
      return c;
    }
    c.make = [this] { return AssumeRoleFor(profile_, profile_section_, 0); };
    return c;
  }

  Candidate WebIdentity() {
    Candidate c{"web-identity", "", false, {}};
    std::string file = env_("AWS_WEB_IDENTITY_TOKEN_FILE").value_or(Get(profile_section_, "web_identity_token_file"));
    std::string role = env_("AWS_ROLE_ARN").value_or(Get(profile_section_, "role_arn"));
    std::string session = env_("AWS_ROLE_SESSION_NAME").value_or(Get(profile_section_, "role_session_name"));
    if (file.empty()) {
      c.not_configured = "AWS_WEB_IDENTITY_TOKEN_FILE is not set";
      return c;
    }
    c.make = [this, file, role, session]() -> Result<std::unique_ptr<Provider>> {
      if (role.empty()) {
        return Err(Code::kInvalidArgument,
                   "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not: set the role "
                   "to assume (IRSA sets both)");
      }
      return std::unique_ptr<Provider>(new WebIdentityProvider(Sts(profile_section_), role, session, file));
    };
    return c;
  }

  Candidate SharedCredentials() {
    Candidate c{"shared-credentials", "", false, {}};
    auto* sec = files_.Credentials(profile_);
    if (!sec || (Get(*sec, "aws_access_key_id").empty() && Get(*sec, "aws_secret_access_key").empty())) {
      c.not_configured = "no keys for profile '" + profile_ + "' in " + files_.credentials_path;
      return c;
    }
    c.make = [this, sec]() -> Result<std::unique_ptr<Provider>> {
      auto keys = KeysIn(sec, "AWS profile '" + profile_ + "' in " + files_.credentials_path);
      if (!keys) return Err(keys.error());
      return MakeStaticProvider("shared-credentials", "profile '" + profile_ + "' in " + files_.credentials_path,
                                **keys);
    };
    return c;
  }

  Candidate Process() {
    Candidate c{"process", "", false, {}};
    auto* sec = files_.Config(profile_);
    std::string cmd = sec ? Get(*sec, "credential_process") : "";
    if (cmd.empty()) {
      c.not_configured = "no credential_process for profile '" + profile_ + "' in " + files_.config_path;
      return c;
    }
    c.make = [this, cmd]() -> Result<std::unique_ptr<Provider>> {
      return std::unique_ptr<Provider>(new ProcessProvider(cmd, profile_));
    };
    return c;
  }

  Candidate ConfigFile() {
    Candidate c{"config-file", "", false, {}};
    auto* sec = files_.Config(profile_);
    if (!sec || (Get(*sec, "aws_access_key_id").empty() && Get(*sec, "aws_secret_access_key").empty())) {
      c.not_configured = "no keys for profile '" + profile_ + "' in " + files_.config_path;
      return c;
    }
    c.make = [this, sec]() -> Result<std::unique_ptr<Provider>> {
      auto keys = KeysIn(sec, "AWS profile '" + profile_ + "' in " + files_.config_path);
      if (!keys) return Err(keys.error());
      return MakeStaticProvider("config-file", "profile '" + profile_ + "' in " + files_.config_path, **keys);
    };
    return c;
  }

  Candidate Container() {
    Candidate c{"container", "", false, {}};
    auto rel = env_("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), full = env_("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (!rel && !full) {
      c.not_configured = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI are not set";
      return c;
    }
    c.make = [this, rel, full]() -> Result<std::unique_ptr<Provider>> {
      if (rel) return std::unique_ptr<Provider>(new ContainerProvider("http://169.254.170.2" + *rel, "", ""));
      // Plain http only to this machine or the ECS/EKS link-local agents.
      std::string host = HostOf(*full);
      host = host.substr(0, host.rfind(':') == std::string::npos || host.back() == ']' ? host.size() : host.rfind(':'));
      bool ok_http = host == "127.0.0.1" || host == "localhost" || host == "[::1]" || host == "169.254.170.2" ||
                     host == "169.254.170.23" || host == "[fd00:ec2::23]" || host.rfind("127.", 0) == 0;
      if (full->rfind("https://", 0) != 0 && !(full->rfind("http://", 0) == 0 && ok_http)) {
        return Err(Code::kInvalidArgument, "AWS_CONTAINER_CREDENTIALS_FULL_URI " + *full +
                                               " must be https, or http to a loopback or the container agent's "
                                               "address (169.254.170.2, 169.254.170.23)");
      }
      return std::unique_ptr<Provider>(
          new ContainerProvider(*full, env_("AWS_CONTAINER_AUTHORIZATION_TOKEN").value_or(""),
                                env_("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").value_or("")));
    };
    return c;
  }

  Result<std::unique_ptr<Provider>> ImdsFor() {
    std::string endpoint = env_("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or("");
    if (endpoint.empty()) {
      auto mode = env_("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE").value_or("IPv4");
      endpoint = (mode == "IPv6" || mode == "ipv6") ? "http://[fd00:ec2::254]" : "http://169.254.169.254";
    }
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    auto timeout = std::chrono::milliseconds(1'000);
    if (auto t = env_("AWS_METADATA_SERVICE_TIMEOUT"); t && t->find_first_not_of("0123456789.") == std::string::npos) {
      timeout = std::chrono::milliseconds(static_cast<int64_t>(std::stod(*t) * 1000));
    }
    int attempts = 1;
    if (auto n = env_("AWS_METADATA_SERVICE_NUM_ATTEMPTS");
        n && n->find_first_not_of("0123456789") == std::string::npos && n->size() < 3) {
      attempts = std::max(1, std::stoi(*n));
    }
    return std::unique_ptr<Provider>(new ImdsProvider(endpoint, imdsv1_, timeout, attempts));
  }

  Candidate InstanceMetadata() {
    Candidate c{"instance-metadata", "", true, {}};
    if (auto d = env_("AWS_EC2_METADATA_DISABLED"); d && (*d == "true" || *d == "TRUE" || *d == "True")) {
      c.not_configured = "AWS_EC2_METADATA_DISABLED is true";
      return c;
    }
    c.make = [this] { return ImdsFor(); };
    return c;
  }

  const AwsChainOptions& o_;
  Env env_;
  SharedFiles files_;
  bool explicit_profile_ = false;
  std::string profile_;
  Section profile_section_;
  std::string sts_option_;
  bool imdsv1_ = false;
  Secret keys_;
};

}  // namespace

std::unique_ptr<Provider> MakeStaticProvider(std::string name, std::string detail, Secret secret) {
  return std::make_unique<StaticProvider>(std::move(name), std::move(detail), std::move(secret));
}

Result<Chosen> ResolveAwsCredentials(const AwsChainOptions& options, const Env& env) {
  auto it = options.mount_options.find("credentials");
  Chain chain(options, env);
  return chain.Run(it == options.mount_options.end() ? std::string() : it->second);
}

}  // namespace shoal::cloud
