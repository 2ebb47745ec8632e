#include "common/sigv4.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace shoal::s3 {
namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out(n * 2, '\0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[p[i] >> 4];
    out[2 * i + 1] = kHex[p[i] & 15];
  }
  return out;
}

// OpenSSL 3 looks an algorithm up by name, in a locked table, whenever a
// context is initialised from EVP_sha256() or HMAC() builds one: per request
// that cost more than the hashing (perf of ufs_get_bench). So the algorithms
// are fetched once per process and each thread reuses its contexts. A fetch
// that fails (an unusual OpenSSL configuration) falls back to the one-shot calls.
const EVP_MD* FetchedMd(const char* name, const EVP_MD* fallback) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  return md ? md : fallback;  // kept for the life of the process
}

const EVP_MD* Sha256Md() {
  static const EVP_MD* md = FetchedMd("SHA256", EVP_sha256());
  return md;
}

const EVP_MD* Md5Md() {
  static const EVP_MD* md = FetchedMd("MD5", EVP_md5());
  return md;
}

// This thread's digest and HMAC-SHA256 contexts, freed when the thread ends.
struct ThreadContexts {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  EVP_MAC_CTX* hmac = NewHmacSha256();
  ThreadContexts() = default;
  ThreadContexts(const ThreadContexts&) = delete;
  ThreadContexts& operator=(const ThreadContexts&) = delete;
  ~ThreadContexts() {
    EVP_MD_CTX_free(md);
    EVP_MAC_CTX_free(hmac);
  }

  static EVP_MAC_CTX* NewHmacSha256() {
    static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);  // kept for the life of the process
    if (!mac) return nullptr;
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    if (ctx && EVP_MAC_CTX_set_params(ctx, params) != 1) {
      EVP_MAC_CTX_free(ctx);
      ctx = nullptr;
    }
    return ctx;
  }
};

ThreadContexts& Contexts() {
  thread_local ThreadContexts c;
  return c;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  EVP_MAC_CTX* ctx = Contexts().hmac;
  size_t n = 0;
  if (ctx && EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), nullptr) == 1 &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1 &&
      EVP_MAC_final(ctx, out, &n, sizeof out) == 1) {
    return std::string(reinterpret_cast<char*>(out), n);
  }
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Digest(const EVP_MD* md, std::span<const char> data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = Contexts().md;
  if (ctx && EVP_DigestInit_ex2(ctx, md, nullptr) == 1 && EVP_DigestUpdate(ctx, data.data(), data.size()) == 1 &&
      EVP_DigestFinal_ex(ctx, out, &len) == 1) {
    return std::string(reinterpret_cast<char*>(out), len);
  }
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Appends a header value trimmed, with inner runs of spaces collapsed to one.
void AppendTrimmed(std::string& out, std::string_view v) {
  bool space = false, any = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = any;
      continue;
    }
    if (space) out += ' ';
    space = false;
    any = true;
    out += c;
  }
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

// The signing key depends only on the secret, the day, the region and the
// service, so each thread derives it (four HMACs) once a day, not per request.
const std::string& SigningKey(const std::string& secret, const std::string& date, const std::string& region,
                              const std::string& service) {
  struct Cached {
    std::string secret, date, region, service, key;
  };
  thread_local Cached c;
  if (c.key.empty() || c.date != date || c.secret != secret || c.region != region || c.service != service) {
    std::string key = Hmac("AWS4" + secret, date);
    key = Hmac(key, region);
    key = Hmac(key, service);
    c = Cached{secret, date, region, service, Hmac(key, "aws4_request")};
  }
  return c.key;
}

std::string Sha256Hex(std::span<const char> data) {
  // The payload hash of every GET, HEAD and DELETE.
  if (data.empty()) return "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  auto d = Digest(Sha256Md(), data);
  return Hex(reinterpret_cast<const unsigned char*>(d.data()), d.size());
}

std::string Md5Hex(std::span<const char> data) {
  auto d = Digest(Md5Md(), data);
  return Hex(reinterpret_cast<const unsigned char*>(d.data()), d.size());
}

std::string Md5Base64(std::span<const char> data) {
  auto d = Digest(Md5Md(), data);
  unsigned char out[64];
  int n = EVP_EncodeBlock(out, reinterpret_cast<const unsigned char*>(d.data()), static_cast<int>(d.size()));
  return std::string(reinterpret_cast<char*>(out), static_cast<size_t>(n));
}

StreamDigest::StreamDigest(Kind kind) : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), kind == Kind::kMd5 ? Md5Md() : Sha256Md(), nullptr);
}

StreamDigest::~StreamDigest() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void StreamDigest::Update(std::span<const char> data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size());
}

std::string StreamDigest::Bytes() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string HexOf(std::string_view bytes) {
  return Hex(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string Base64Of(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string AmzDate(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss hms{floor<seconds>(t - day)};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d%02u%02uT%02d%02d%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Signing runs once per store request, so this builds the block in one pass:
// names lower-cased and sorted, values trimmed straight into it.
CanonicalHeaders CanonicalizeHeaders(const Headers& headers) {
  struct Entry {
    std::string name;  // lower-case
    std::string_view value;
  };
  std::vector<Entry> canon;
  canon.reserve(headers.size());
  size_t bytes = 0;
  for (const auto& [k, v] : headers) {
    canon.push_back({Lower(k), v});
    bytes += k.size() + v.size() + 2;
  }
  std::stable_sort(canon.begin(), canon.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  CanonicalHeaders out;
  out.block.reserve(bytes);
  for (size_t i = 0; i < canon.size(); ++i) {
    if (i > 0 && canon[i].name == canon[i - 1].name) {
      out.block.back() = ',';  // a repeated name: its values joined on one line
    } else {
      out.block += canon[i].name;
      out.block += ':';
      if (!out.signed_names.empty()) out.signed_names += ';';
      out.signed_names += canon[i].name;
    }
    AppendTrimmed(out.block, canon[i].value);
    out.block += '\n';
  }
  return out;
}

std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri, std::string_view canonical_query,
                             const CanonicalHeaders& headers, std::string_view payload_hash) {
  std::string r;
  r.reserve(method.size() + canonical_uri.size() + canonical_query.size() + headers.block.size() +
            headers.signed_names.size() + payload_hash.size() + 8);
  r.append(method).append(1, '\n').append(canonical_uri).append(1, '\n').append(canonical_query).append(1, '\n');
  r.append(headers.block).append(1, '\n').append(headers.signed_names).append(1, '\n').append(payload_hash);
  return r;
}

std::string CredentialScope(std::string_view date, std::string_view region, std::string_view service) {
  return std::string(date) + '/' + std::string(region) + '/' + std::string(service) + "/aws4_request";
}

std::string StringToSign(std::string_view amz_date, std::string_view scope, std::string_view canonical_request) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz_date) + '\n' + std::string(scope) + '\n' + Sha256Hex(canonical_request);
}

std::string HmacHex(std::string_view key, std::string_view data) {
  auto mac = Hmac(key, data);
  return Hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> query) {
  for (auto& [k, v] : query) {
    k = UriEncode(k, false);
    v = UriEncode(v, false);
  }
  std::sort(query.begin(), query.end());
  std::string out;
  for (const auto& [k, v] : query) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

void SignV4(const SigningInput& in, const Credentials& creds, std::chrono::system_clock::time_point now,
            Headers& headers) {
  bool has_host =
      std::any_of(headers.begin(), headers.end(), [](const auto& h) { return EqualsIgnoringCase(h.first, "host"); });
  if (!has_host) headers.emplace_back("Host", in.host);
  std::string amz_date = AmzDate(now);
  std::string date = amz_date.substr(0, 8);
  headers.emplace_back("x-amz-date", amz_date);
  headers.emplace_back("x-amz-content-sha256", in.payload_hash);
  if (!creds.session_token.empty()) headers.emplace_back("x-amz-security-token", creds.session_token);

  CanonicalHeaders canon = CanonicalizeHeaders(headers);
  std::string scope = CredentialScope(date, in.region, in.service);
  std::string string_to_sign = StringToSign(
      amz_date, scope, CanonicalRequest(in.method, in.canonical_uri, CanonicalQuery(in.query), canon, in.payload_hash));
  std::string sig = HmacHex(SigningKey(creds.secret_access_key, date, in.region, in.service), string_to_sign);
  headers.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + creds.access_key_id + '/' + scope +
                                            ", SignedHeaders=" + canon.signed_names + ", Signature=" + sig);
}

}  // namespace shoal::s3
