#include "net/cert_name.h"

#include <openssl/crypto.h>
#include <openssl/x509v3.h>

#include "common/utf8.h"

namespace shoal::net {

bool FitCertificateName(std::string_view name) {
  if (name.empty() || name.size() > kMaxCertificateName || name.front() == ' ' || name.back() == ' ') return false;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return IsValidUtf8(name);
}

namespace {

std::string FirstUriName(X509* cert, bool* found) {
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  std::string name;
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
    if (g->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = g->d.uniformResourceIdentifier;
    const int n = ASN1_STRING_length(uri);
    if (n > 0) name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)), static_cast<size_t>(n));
    *found = true;
    break;
  }
  GENERAL_NAMES_free(sans);
  return name;
}

std::string OnlyCommonName(X509* cert) {
  const X509_NAME* subject = X509_get_subject_name(cert);
  if (subject == nullptr) return "";
  const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (at < 0 || X509_NAME_get_index_by_NID(subject, NID_commonName, at) >= 0) return "";
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);  // BMPString and the rest, as UTF-8
  std::string name;
  if (n > 0) name.assign(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return name;
}

}  // namespace

std::string CertificateName(X509* cert) {
  if (cert == nullptr) return "";
  bool has_uri = false;
  std::string name = FirstUriName(cert, &has_uri);
  if (!has_uri) name = OnlyCommonName(cert);
  return FitCertificateName(name) ? name : std::string();
}

}  // namespace shoal::net
