#include "security/local_ca.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "security/tls_context.h"

namespace shoal::security {
namespace {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;

KeyPtr NewKey() { return KeyPtr(EVP_EC_gen("P-256"), EVP_PKEY_free); }

// Writes with `mode` (created fresh: an old file's wider mode does not survive).
Status WritePem(const std::string& path, int mode, const std::function<int(FILE*)>& write) {
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Status(Code::kIo, "cannot create " + tmp + ": " + std::strerror(errno));
  FILE* f = ::fdopen(fd, "w");
  bool ok = f != nullptr && write(f) == 1;
  ok = (f != nullptr && std::fclose(f) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status(Code::kIo, "cannot write " + path + ": " + OpenSslError());
  }
  return {};
}

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

CertPtr NewCert(EVP_PKEY* key, const std::string& cn, int days) {
  CertPtr cert(X509_new(), X509_free);
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // clocks a little behind still accept it
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("Shoal"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

std::string SanList(const std::vector<std::string>& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    unsigned char buf[16];
    bool ip = inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
    if (!out.empty()) out += ",";
    out += (ip ? "IP:" : "DNS:") + h;
  }
  return out;
}

struct Ca {
  KeyPtr key{nullptr, EVP_PKEY_free};
  CertPtr cert{nullptr, X509_free};
};

Result<Ca> LoadCa(const std::string& dir) {
  Ca ca;
  FILE* k = std::fopen((dir + "/ca.key").c_str(), "r");
  FILE* c = std::fopen((dir + "/ca.pem").c_str(), "r");
  if (k) ca.key.reset(PEM_read_PrivateKey(k, nullptr, nullptr, nullptr));
  if (c) ca.cert.reset(PEM_read_X509(c, nullptr, nullptr, nullptr));
  if (k) std::fclose(k);
  if (c) std::fclose(c);
  if (!ca.key || !ca.cert) return Err(Code::kNotFound, "no CA in " + dir);
  return ca;
}

Result<Ca> LoadOrMakeCa(const std::string& dir) {
  if (auto ca = LoadCa(dir)) return ca;
  Ca ca;
  ca.key = NewKey();
  if (!ca.key) return Err(Code::kInternal, "cannot make a CA key: " + OpenSslError());
  ca.cert = NewCert(ca.key.get(), "Shoal local CA", 3650);
  X509_set_issuer_name(ca.cert.get(), X509_get_subject_name(ca.cert.get()));
  if (!AddExtension(ca.cert.get(), ca.cert.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !AddExtension(ca.cert.get(), ca.cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !AddExtension(ca.cert.get(), ca.cert.get(), NID_subject_key_identifier, "hash") ||
      X509_sign(ca.cert.get(), ca.key.get(), EVP_sha256()) == 0) {
    return Err(Code::kInternal, "cannot make the local CA certificate: " + OpenSslError());
  }
  EVP_PKEY* key = ca.key.get();
  X509* cert = ca.cert.get();
  SHOAL_RETURN_IF_ERROR(WritePem(dir + "/ca.key", 0600, [key](FILE* f) {
    return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  }));
  SHOAL_RETURN_IF_ERROR(WritePem(dir + "/ca.pem", 0644, [cert](FILE* f) { return PEM_write_X509(f, cert); }));
  return ca;
}

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(Code::kIo, "cannot create " + dir + ": " + std::strerror(errno));
  }
  if (::chmod(dir.c_str(), 0700) != 0)
    return Status(Code::kIo, "cannot chmod 0700 " + dir + ": " + std::strerror(errno));
  return {};
}

}  // namespace

Status IssueCertificate(const std::string& dir, const std::string& common_name, const std::vector<std::string>& hosts,
                        int days, const std::string& out_prefix) {
  auto ca = LoadOrMakeCa(dir);
  if (!ca) return ca.error();
  KeyPtr key = NewKey();
  if (!key) return Status(Code::kInternal, "cannot make a key: " + OpenSslError());
  CertPtr cert = NewCert(key.get(), common_name, days);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca->cert.get()));
  bool ok = AddExtension(cert.get(), ca->cert.get(), NID_basic_constraints, "critical,CA:FALSE") &&
            AddExtension(cert.get(), ca->cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
            AddExtension(cert.get(), ca->cert.get(), NID_ext_key_usage, "serverAuth,clientAuth") &&
            AddExtension(cert.get(), ca->cert.get(), NID_authority_key_identifier, "keyid");
  if (ok && !hosts.empty()) ok = AddExtension(cert.get(), ca->cert.get(), NID_subject_alt_name, SanList(hosts));
  if (!ok || X509_sign(cert.get(), ca->key.get(), EVP_sha256()) == 0) {
    return Status(Code::kInternal, "cannot make the certificate of " + common_name + ": " + OpenSslError());
  }
  EVP_PKEY* k = key.get();
  X509* c = cert.get();
  // The key first: a reader that sees the new certificate finds its key.
  SHOAL_RETURN_IF_ERROR(WritePem(out_prefix + ".key", 0600, [k](FILE* f) {
    return PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
  }));
  return WritePem(out_prefix + ".pem", 0644, [c](FILE* f) { return PEM_write_X509(f, c); });
}

Result<LocalCaFiles> MakeLocalCa(const std::string& dir, const std::vector<std::string>& hosts, int days) {
  SHOAL_RETURN_IF_ERROR(MakeDir(dir));
  std::vector<std::string> all = {"127.0.0.1", "::1", "localhost"};
  for (const auto& h : hosts) {
    if (std::find(all.begin(), all.end(), h) == all.end()) all.push_back(h);
  }
  SHOAL_RETURN_IF_ERROR(IssueCertificate(dir, "shoal-worker", all, days, dir + "/worker"));
  return LocalCaFiles{dir + "/ca.pem", dir + "/worker.pem", dir + "/worker.key"};
}

}  // namespace shoal::security
