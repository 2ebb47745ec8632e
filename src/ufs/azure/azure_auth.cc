#include "ufs/azure/azure_auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <strings.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ufs/cloud/azure_credentials.h"
#include "ufs/http/http_transport.h"
#include "ufs/uri.h"

namespace shoal {
namespace {

// Azurite's development account: a documented public constant, not a secret.
constexpr std::string_view kDevAccount = "devstoreaccount1";
constexpr std::string_view kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string StripSlashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// The account an endpoint serves: the first label of a service host name
// (acct.blob.core.windows.net), else the first path segment (emulator style:
// http://127.0.0.1:10000/devstoreaccount1).
std::string AccountFromEndpoint(std::string_view endpoint) {
  auto p = endpoint.find("://");
  std::string_view rest = p == std::string_view::npos ? endpoint : endpoint.substr(p + 3);
  auto slash = rest.find('/');
  std::string_view host = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  if (auto dot = host.find(".blob."); dot != std::string_view::npos) return std::string(host.substr(0, dot));
  return std::string(path.substr(0, path.find('/')));
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

Result<AzureCredentials> ParseConnectionString(std::string_view cs) {
  std::map<std::string, std::string> kv;  // lower-cased keys
  size_t i = 0;
  while (i < cs.size()) {
    size_t j = cs.find(';', i);
    if (j == std::string_view::npos) j = cs.size();
    std::string_view part = Trim(cs.substr(i, j - i));
    i = j + 1;
    if (part.empty()) continue;
    auto eq = part.find('=');
    if (eq == std::string_view::npos) {
      return Err(Code::kInvalidArgument, "malformed Azure connection string: a part has no '=' (expected Key=Value;...)");
    }
    kv[Lower(Trim(part.substr(0, eq)))] = std::string(Trim(part.substr(eq + 1)));
  }
  auto get = [&](const char* k) { auto it = kv.find(k); return it == kv.end() ? std::string() : it->second; };
  AzureCredentials c;
  if (Lower(get("usedevelopmentstorage")) == "true") {
    c.account = kDevAccount;
    c.key = kDevKey;
    c.endpoint = "http://127.0.0.1:10000/" + std::string(kDevAccount);
    return c;
  }
  c.account = get("accountname");
  c.key = get("accountkey");
  c.sas_token = get("sharedaccesssignature");
  if (c.sas_token.starts_with('?')) c.sas_token.erase(0, 1);
  c.endpoint = StripSlashes(get("blobendpoint"));
  if (c.endpoint.empty()) {
    if (c.account.empty()) {
      return Err(Code::kInvalidArgument, "Azure connection string has neither AccountName nor BlobEndpoint");
    }
    std::string proto = get("defaultendpointsprotocol").empty() ? "https" : get("defaultendpointsprotocol");
    std::string suffix = get("endpointsuffix").empty() ? "core.windows.net" : get("endpointsuffix");
    c.endpoint = proto + "://" + c.account + ".blob." + suffix;
  }
  if (c.account.empty()) c.account = AccountFromEndpoint(c.endpoint);
  return c;
}

Result<AzureCredentials> ResolveAzureCredentials(const std::map<std::string, std::string>& options,
                                                 const EnvLookup& env) {
  auto opt = [&](const char* k) { auto it = options.find(k); return it == options.end() ? std::string() : it->second; };
  AzureCredentials c;
  // Where the key and the SAS came from, for messages (never their values).
  std::string key_from = "option key", sas_from = "option sas_token";
  bool from_cs = false;
  if (!opt("connection_string").empty()) {
    from_cs = true;
    key_from = "the AccountKey of option connection_string";
    sas_from = "the SharedAccessSignature of option connection_string";
    auto parsed = ParseConnectionString(opt("connection_string"));
    if (!parsed) return Err(parsed.error().WithContext("option connection_string"));
    c = std::move(*parsed);
  } else if (!opt("account").empty()) {
    c.account = opt("account");
  } else if (auto cs = env("AZURE_STORAGE_CONNECTION_STRING")) {
    from_cs = true;
    key_from = "the AccountKey of AZURE_STORAGE_CONNECTION_STRING";
    sas_from = "the SharedAccessSignature of AZURE_STORAGE_CONNECTION_STRING";
    auto parsed = ParseConnectionString(*cs);
    if (!parsed) return Err(parsed.error().WithContext("AZURE_STORAGE_CONNECTION_STRING"));
    c = std::move(*parsed);
  } else {
    key_from = "AZURE_STORAGE_KEY";
    sas_from = "AZURE_STORAGE_SAS_TOKEN";
    c.account = env("AZURE_STORAGE_ACCOUNT").value_or("");
    c.key = env("AZURE_STORAGE_KEY").value_or("");
    c.sas_token = env("AZURE_STORAGE_SAS_TOKEN").value_or("");
  }
  // Explicit mount options override whatever the connection string or environment said.
  if (!opt("account").empty()) c.account = opt("account");
  c.key_in_connection_string = from_cs && !c.key.empty();
  c.sas_in_connection_string = from_cs && !c.sas_token.empty();
  if (!opt("key").empty()) c.key = opt("key"), key_from = "option key", c.key_in_connection_string = false;
  if (!opt("sas_token").empty()) {
    c.sas_token = opt("sas_token"), sas_from = "option sas_token", c.sas_in_connection_string = false;
  }
  c.key_from = c.key.empty() ? "" : key_from;
  c.sas_from = c.sas_token.empty() ? "" : sas_from;
  if (!opt("endpoint").empty()) c.endpoint = StripSlashes(opt("endpoint"));
  if (c.sas_token.starts_with('?')) c.sas_token.erase(0, 1);

  if (c.endpoint.empty()) {
    if (c.account.empty()) {
      return Err(Code::kInvalidArgument,
                 "no Azure storage account: set the mount option account (or endpoint, or connection_string), or "
                 "AZURE_STORAGE_ACCOUNT / AZURE_STORAGE_CONNECTION_STRING; Entra ID tokens need it too, for the "
                 "blob endpoint URL https://ACCOUNT.blob.core.windows.net");
    }
    c.endpoint = "https://" + c.account + ".blob.core.windows.net";
  }
  if (c.account.empty()) c.account = AccountFromEndpoint(c.endpoint);
  if (!c.key.empty()) {
    if (c.account.empty()) {
      return Err(Code::kInvalidArgument, "an Azure account key needs the account name: set the mount option account");
    }
    auto bytes = Base64Decode(c.key);
    if (!bytes || bytes->empty() || c.key.size() % 4 != 0) {
      return Err(Code::kInvalidArgument, "the Azure account key (" + key_from +
                                             ") is not valid base64: copy it again from the storage account's access keys");
    }
  }
  // A SAS is a query string whose signature is the sig parameter.
  if (!c.sas_token.empty() && !c.sas_token.starts_with("sig=") && c.sas_token.find("&sig=") == std::string::npos) {
    return Err(Code::kInvalidArgument, "the SAS token (" + sas_from +
                                           ") has no sig= parameter: copy the whole token (sv=...&sig=...)");
  }
  if (!c.endpoint.starts_with("http://") && !c.endpoint.starts_with("https://")) {
    return Err(Code::kInvalidArgument, "the Azure blob endpoint '" + c.endpoint + "' must start with http:// or https://");
  }
  return c;
}

namespace {

cloud::Env CloudEnv(const EnvLookup& env) {
  return [env](std::string_view name) { return env(std::string(name)); };
}

bool IsTokenProvider(std::string_view choice) {
  return choice == "client-secret" || choice == "workload-identity" || choice == "managed-identity";
}

// The fixed provider of a shared key or a SAS, named after where it came from.
std::unique_ptr<cloud::Provider> Fixed(const AzureCredentials& c, AzureAuth auth) {
  if (auth == AzureAuth::kAnonymous) return cloud::FixedAzureProvider("anonymous", c.endpoint + ", no credentials");
  bool key = auth == AzureAuth::kSharedKey;
  bool in_cs = key ? c.key_in_connection_string : c.sas_in_connection_string;
  std::string name = in_cs ? "connection-string" : key ? "shared-key" : "sas";
  return cloud::FixedAzureProvider(
      name, "account " + c.account + ", " + (key ? "key from " + c.key_from : "SAS from " + c.sas_from));
}

constexpr const char* kNoKey =
    "no account key (option key or connection_string with AccountKey, or AZURE_STORAGE_KEY / "
    "AZURE_STORAGE_CONNECTION_STRING)";
constexpr const char* kNoSas =
    "no SAS token (option sas_token or connection_string with SharedAccessSignature, or AZURE_STORAGE_SAS_TOKEN / "
    "AZURE_STORAGE_CONNECTION_STRING)";

}  // namespace

Status CheckAzureIdentity(const AzureCredentials& creds, std::string_view choice, const EnvLookup& env) {
  if (choice == "shared-key" && creds.key.empty()) {
    return Status(Code::kInvalidArgument, std::string("credentials: shared-key, but there is ") + kNoKey);
  }
  if (choice == "sas" && creds.sas_token.empty()) {
    return Status(Code::kInvalidArgument, std::string("credentials: sas, but there is ") + kNoSas);
  }
  if (IsTokenProvider(choice)) {
    auto p = cloud::MakeAzureTokenProvider(choice, CloudEnv(env));
    if (!p) return p.error();
  }
  return {};
}

Result<AzureIdentity> ChooseAzureIdentity(const AzureCredentials& creds, std::string_view choice, const EnvLookup& env,
                                          std::string_view uri) {
  if (choice.empty()) choice = "auto";
  if (auto st = CheckAzureIdentity(creds, choice, env); !st.ok()) return Err(st);
  AzureIdentity id;
  if (choice == "shared-key" || choice == "sas" || choice == "anonymous") {
    id.auth = choice == "shared-key" ? AzureAuth::kSharedKey
              : choice == "sas"      ? AzureAuth::kSas
                                     : AzureAuth::kAnonymous;
    id.provider = Fixed(creds, id.auth);
    return id;
  }
  if (IsTokenProvider(choice)) {
    auto chosen = cloud::ResolveAzureTokenCredentials({{"credentials", std::string(choice)}}, CloudEnv(env));
    if (!chosen) return Err(chosen.error().WithContext("Azure credentials for " + std::string(uri)));
    id.auth = AzureAuth::kBearer;
    id.provider = std::move(chosen->provider);
    id.first = std::move(chosen->first);
    return id;
  }
  if (choice != "auto") {
    return Err(Code::kInvalidArgument, "credentials: '" + std::string(choice) + "' is not one of " +
                                           std::string(cloud::kAzureCredentialChoices));
  }
  // auto: what the mount was given first, then Entra ID, in DefaultAzureCredential's order.
  std::vector<cloud::Candidate> chain;
  chain.push_back({"shared-key", creds.key.empty() ? kNoKey : "", false,
                   [&] { return Result<std::unique_ptr<cloud::Provider>>(Fixed(creds, AzureAuth::kSharedKey)); }});
  chain.push_back({"sas", creds.sas_token.empty() ? kNoSas : "", false,
                   [&] { return Result<std::unique_ptr<cloud::Provider>>(Fixed(creds, AzureAuth::kSas)); }});
  for (auto& c : cloud::AzureTokenCandidates(CloudEnv(env))) chain.push_back(std::move(c));
  auto chosen =
      cloud::RunChain("Azure credentials for " + std::string(uri), std::move(chain), cloud::kAzureCredentialAdvice);
  if (!chosen) return Err(chosen.error());
  id.auth = !chosen->first.bearer_token.empty() ? AzureAuth::kBearer
            : !creds.key.empty()                ? AzureAuth::kSharedKey
                                                : AzureAuth::kSas;
  id.provider = std::move(chosen->provider);
  id.first = std::move(chosen->first);
  return id;
}

Result<std::string> Base64Decode(std::string_view in) {
  auto val = [](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return Err(Code::kInvalidArgument, "bad base64 length");
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    int v = val(ch);
    if (v < 0) return Err(Code::kInvalidArgument, "bad base64 character");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string Base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (size_t rest = in.size() - i) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (rest == 2) v |= uint8_t(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string HmacSha256Base64(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), mac, &len);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(mac), len));
}

std::string SharedKeyStringToSign(std::string_view account, std::string_view method, std::string_view url,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  size_t content_length) {
  auto header = [&](std::string_view name) -> std::string {
    for (const auto& [k, v] : headers) {
      if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return std::string(Trim(v));
    }
    return {};
  };
  std::string s(method);
  s += '\n';
  for (const char* h : {"Content-Encoding", "Content-Language"}) s += header(h) + "\n";
  s += (content_length ? std::to_string(content_length) : "") + "\n";
  for (const char* h : {"Content-MD5", "Content-Type", "Date", "If-Modified-Since", "If-Match", "If-None-Match",
                        "If-Unmodified-Since", "Range"}) {
    s += header(h) + "\n";
  }
  // Canonicalized headers: every x-ms-* header, lower-cased, sorted.
  std::vector<std::pair<std::string, std::string>> ms;
  for (const auto& [k, v] : headers) {
    std::string lk = Lower(k);
    if (lk.starts_with("x-ms-")) ms.emplace_back(std::move(lk), std::string(Trim(v)));
  }
  std::sort(ms.begin(), ms.end());
  for (const auto& [k, v] : ms) s += k + ":" + v + "\n";
  // Canonicalized resource: /account/path, then each query parameter decoded, sorted.
  auto scheme = url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  auto slash = rest.find('/');
  std::string_view path_query = slash == std::string_view::npos ? "/" : rest.substr(slash);
  auto q = path_query.find('?');
  s += "/" + std::string(account) + std::string(path_query.substr(0, q));
  if (q != std::string_view::npos) {
    std::map<std::string, std::vector<std::string>> params;
    std::string_view query = path_query.substr(q + 1);
    size_t i = 0;
    while (i <= query.size()) {
      size_t j = query.find('&', i);
      if (j == std::string_view::npos) j = query.size();
      std::string_view part = query.substr(i, j - i);
      i = j + 1;
      if (part.empty()) continue;
      auto eq = part.find('=');
      auto name = PercentDecode(part.substr(0, eq));
      auto value = PercentDecode(eq == std::string_view::npos ? "" : part.substr(eq + 1));
      params[Lower(name.value_or(std::string(part.substr(0, eq))))].push_back(value.value_or(""));
    }
    for (auto& [k, vs] : params) {
      std::sort(vs.begin(), vs.end());
      s += "\n" + k + ":";
      for (size_t n = 0; n < vs.size(); ++n) s += (n ? "," : "") + vs[n];
    }
  }
  return s;
}

void SignSharedKey(HttpRequest& req, std::string_view account, std::string_view key) {
  std::string sts = SharedKeyStringToSign(account, req.method, req.url, req.headers, req.body.size());
  req.headers.emplace_back("Authorization", "SharedKey " + std::string(account) + ":" + HmacSha256Base64(key, sts));
}

std::string HttpDate(std::chrono::system_clock::time_point t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t secs = std::chrono::system_clock::to_time_t(t);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
                kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

int64_t ParseHttpDate(std::string_view s) {
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  char mon[4] = {0};
  int day = 0, year = 0, h = 0, m = 0, sec = 0;
  std::string str(s);
  if (std::sscanf(str.c_str(), "%*3s, %d %3s %d %d:%d:%d", &day, mon, &year, &h, &m, &sec) != 6) return 0;
  auto pos = kMonths.find(mon);
  if (pos == std::string_view::npos || pos % 3) return 0;
  // Years past these overflow the nanoseconds (1678-2262); no store means them.
  if (year < 1900 || year > 2200 || day < 1 || day > 31 || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60) {
    return 0;
  }
  struct tm tm {};
  tm.tm_mday = day;
  tm.tm_mon = static_cast<int>(pos / 3);
  tm.tm_year = year - 1900;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm)) * 1'000'000'000;
}

Result<std::string> MakeAccountSas(std::string_view account, std::string_view key_base64, std::string_view permissions,
                                   std::string_view expiry, std::string_view version) {
  auto key = Base64Decode(key_base64);
  if (!key) return Err(Code::kInvalidArgument, "the Azure account key is not valid base64");
  const std::string services = "b", types = "sco", protocol = "https,http";
  // Fields: account, permissions, services, resource types, start, expiry, IP, protocol, version,
  // and from 2020-12-06 on the encryption scope; each line ends in '\n'.
  std::string sts = std::string(account) + "\n" + std::string(permissions) + "\n" + services + "\n" + types + "\n\n" +
                    std::string(expiry) + "\n\n" + protocol + "\n" + std::string(version) + "\n";
  if (version >= "2020-12-06") sts += "\n";
  std::string sig = HmacSha256Base64(*key, sts);
  return "sv=" + std::string(version) + "&ss=" + services + "&srt=" + types + "&sp=" + std::string(permissions) +
         "&se=" + PercentEncode(expiry, false) + "&spr=" + PercentEncode(protocol, false) + "&sig=" + PercentEncode(sig, false);
}

}  // namespace shoal
