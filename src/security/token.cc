#include "security/token.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace shoal::security {
namespace {

using Json = nlohmann::json;

std::string ModeText(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::string Base64Url(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

// Strict: only the canonical encoding of some bytes decodes (a changed
// padding bit in the last character is not the same token).
bool FromBase64Url(std::string_view in, std::string* out) {
  if (in.size() % 4 == 1) return false;
  std::string b(in);
  for (char& c : b) {
    if (c == '-') {
      c = '+';
    } else if (c == '_') {
      c = '/';
    } else if (!std::isalnum(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  size_t pad = (4 - b.size() % 4) % 4;
  b.append(pad, '=');
  std::string raw(b.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                          reinterpret_cast<const unsigned char*>(b.data()), static_cast<int>(b.size()));
  if (n < 0 || static_cast<size_t>(n) < pad) return false;
  raw.resize(static_cast<size_t>(n) - pad);
  if (Base64Url(raw) != in) return false;
  *out = std::move(raw);
  return true;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

std::string Fingerprint(std::string_view secret) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), d);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  return out;
}

Status Refused(const std::string& why) { return Status(Code::kPermissionDenied, "token refused: " + why); }

Result<std::string> ReadKeyFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Err(Code::kInvalidArgument, "token key file " + path + ": " + std::strerror(errno) +
                                           " (security.token_key_file; make one with `shoal token keygen --out " +
                                           path + "`)");
  }
  if ((st.st_mode & 077) != 0) {
    return Err(Code::kInvalidArgument, "token key file " + path + " is readable by others (mode " +
                                           ModeText(st.st_mode) + "): chmod 600 " + path);
  }
  std::ifstream in(path);
  std::string hex;
  in >> hex;
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Err(Code::kInvalidArgument,
               "token key file " + path + " does not hold 64 hex digits (make a new one with `shoal token keygen`)");
  }
  std::string raw;
  for (size_t i = 0; i < 64; i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return raw;
}

}  // namespace

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool LooksLikeToken(std::string_view bearer) {
  auto a = bearer.find('.');
  if (a == std::string_view::npos) return false;
  auto b = bearer.find('.', a + 1);
  return b != std::string_view::npos && bearer.find('.', b + 1) == std::string_view::npos;
}

Status TokenKeys::CreateKeyFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) return {};
  if (fd < 0) return Status(Code::kIo, "cannot create token key file " + path + ": " + std::strerror(errno));
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) {
    ::close(fd);
    return Status(Code::kInternal, "no random bytes for a token key (OpenSSL RAND_bytes failed)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : raw) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  hex += "\n";
  bool ok = ::write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok) return Status(Code::kIo, "cannot write token key file " + path + ": " + std::strerror(errno));
  return {};
}

Result<TokenKeys> TokenKeys::Load(const std::string& key_file, const std::vector<std::string>& previous) {
  std::vector<std::string> secrets;
  for (const auto& path : std::vector<std::string>{key_file}) {
    auto s = ReadKeyFile(path);
    if (!s) return Err(s.error());
    secrets.push_back(std::move(*s));
  }
  for (const auto& path : previous) {
    auto s = ReadKeyFile(path);
    if (!s) return Err(s.error());
    secrets.push_back(std::move(*s));
  }
  return FromSecrets(std::move(secrets));
}

TokenKeys TokenKeys::FromSecrets(std::vector<std::string> secrets) {
  TokenKeys k;
  for (auto& s : secrets) {
    std::string kid = Fingerprint(s);
    k.keys_.push_back({std::move(s), std::move(kid)});
  }
  return k;
}

std::string TokenKeys::Issue(std::string_view user, const std::vector<std::string>& groups, std::chrono::seconds ttl,
                             int64_t now) const {
  Json header{{"alg", "HS256"}, {"typ", "JWT"}, {"kid", kid()}};
  Json payload{{"sub", std::string(user)}, {"iss", "shoal"}, {"iat", now}, {"exp", now + ttl.count()}};
  if (!groups.empty()) payload["groups"] = groups;
  std::string signing = Base64Url(header.dump()) + "." + Base64Url(payload.dump());
  return signing + "." + Base64Url(Hmac(keys_.front().secret, signing));
}

namespace {

// The three parts of a JWT, decoded; `b` is where the signature's '.' is.
// "" when well formed, else why not.
std::string SplitToken(std::string_view token, std::string* header_text, std::string* payload_text,
                       std::string* signature, size_t* b) {
  auto a = token.find('.');
  *b = a == std::string_view::npos ? a : token.find('.', a + 1);
  if (*b == std::string_view::npos || token.find('.', *b + 1) != std::string_view::npos) {
    return "malformed (a token is three base64url parts joined by '.'; issue one with `shoal token issue`)";
  }
  if (!FromBase64Url(token.substr(0, a), header_text) ||
      !FromBase64Url(token.substr(a + 1, *b - a - 1), payload_text) ||
      !FromBase64Url(token.substr(*b + 1), signature)) {
    return "malformed (a part is not base64url): it was changed or cut; issue a new one with `shoal token issue`";
  }
  return "";
}

// The sub and groups claims of a payload.
void ClaimsInto(const Json& payload, Identity* id) {
  id->user = payload.value("sub", "");
  if (payload.contains("groups") && payload["groups"].is_array()) {
    for (const auto& g : payload["groups"]) {
      if (g.is_string() && id->groups.size() < 256) id->groups.push_back(g.get<std::string>());
    }
  }
}

}  // namespace

std::optional<Identity> TokenClaims(std::string_view token) {
  if (token.size() > kMaxTokenBytes) return std::nullopt;
  std::string header_text, payload_text, signature;
  size_t b = 0;
  if (!SplitToken(token, &header_text, &payload_text, &signature, &b).empty()) return std::nullopt;
  Json payload = Json::parse(payload_text, nullptr, false);
  if (!payload.is_object()) return std::nullopt;
  Identity id;
  id.proof = Proof::kToken;
  ClaimsInto(payload, &id);
  if (id.user.empty()) return std::nullopt;
  return id;
}

Result<Identity> TokenKeys::Verify(std::string_view token, int64_t now) const {
  if (token.size() > kMaxTokenBytes) {
    return Err(Refused("too large (" + std::to_string(token.size()) + " bytes; the limit is " +
                       std::to_string(kMaxTokenBytes) + ")"));
  }
  std::string header_text, payload_text, signature;
  size_t b = 0;
  if (auto why = SplitToken(token, &header_text, &payload_text, &signature, &b); !why.empty()) {
    return Err(Refused(why));
  }
  Json header = Json::parse(header_text, nullptr, false);
  Json payload = Json::parse(payload_text, nullptr, false);
  if (!header.is_object() || !payload.is_object()) return Err(Refused("malformed (its header or payload is not JSON)"));
  if (header.value("alg", "") != "HS256") {
    return Err(Refused("algorithm '" + header.value("alg", "") + "' is not accepted (only HS256)"));
  }
  std::string kid = header.value("kid", "");
  const Key* key = nullptr;
  for (const auto& k : keys_) {
    if (k.kid == kid) key = &k;
  }
  if (key == nullptr) {
    return Err(Refused("issued by another cluster (signed with key " + (kid.empty() ? std::string("?") : kid) +
                       "; this cluster's key is " + this->kid() + ")"));
  }
  std::string expected = Hmac(key->secret, token.substr(0, b));
  if (signature.size() != expected.size() || CRYPTO_memcmp(signature.data(), expected.data(), expected.size()) != 0) {
    return Err(Refused("forged (its signature does not match this cluster's key " + kid + ")"));
  }
  if (!payload.contains("exp") || !payload["exp"].is_number_integer()) return Err(Refused("malformed (no exp claim)"));
  int64_t exp = payload["exp"].get<int64_t>();
  if (exp <= now) {
    return Err(Refused("expired " + std::to_string(now - exp) + " s ago; issue a new one with `shoal token issue`"));
  }
  Identity id;
  id.proof = Proof::kToken;
  ClaimsInto(payload, &id);
  if (id.user.empty()) return Err(Refused("malformed (no user: the sub claim is empty)"));
  return id;
}

}  // namespace shoal::security
