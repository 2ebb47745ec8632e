#include "net/cert_name.h"

#include <gtest/gtest.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <vector>

namespace shoal::net {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using Cert = std::unique_ptr<X509, X509Free>;

// A certificate with these common names (each of `type`) and URI alternative names.
Cert Make(const std::vector<std::string>& common_names, int type = V_ASN1_UTF8STRING,
          const std::vector<std::string>& uris = {}) {
  Cert cert(X509_new());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  for (const auto& cn : common_names) {
    X509_NAME_add_entry_by_NID(subject, NID_commonName, type, reinterpret_cast<const unsigned char*>(cn.data()),
                               static_cast<int>(cn.size()), -1, 0);
  }
  if (!uris.empty()) {
    GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
    for (const auto& u : uris) {
      GENERAL_NAME* g = GENERAL_NAME_new();
      ASN1_IA5STRING* s = ASN1_IA5STRING_new();
      ASN1_STRING_set(s, u.data(), static_cast<int>(u.size()));
      GENERAL_NAME_set0_value(g, GEN_URI, s);
      sk_GENERAL_NAME_push(names, g);
    }
    X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT);
    GENERAL_NAMES_free(names);
  }
  return cert;
}

TEST(CertificateName, FirstUriElseTheOnlyCommonNameAsUtf8) {
  EXPECT_EQ(CertificateName(Make({"alice"}).get()), "alice");
  EXPECT_EQ(CertificateName(Make({"J\xC3\xBCrgen M"}).get()), "J\xC3\xBCrgen M");
  EXPECT_EQ(CertificateName(Make({"node-1"}, V_ASN1_UTF8STRING, {"spiffe://c/ns/ml/sa/t", "spiffe://other"}).get()),
            "spiffe://c/ns/ml/sa/t");
  // A BMPString (UTF-16) common name, as some CAs write them, read as its
  // characters: it once proved "\0a\0l\0i\0c\0e".
  EXPECT_EQ(CertificateName(Make({std::string("\0a\0l\0i\0c\0e", 10)}, V_ASN1_BMPSTRING).get()), "alice");
  EXPECT_EQ(CertificateName(nullptr), "");
}

// Each of these once proved its bytes as the user: a line break or NUL in
// the name, the first of two common names, bytes that are not UTF-8.
TEST(CertificateName, NamesUnfitForAUserProveNone) {
  EXPECT_EQ(CertificateName(Make({"alice\nadmin"}).get()), "");
  EXPECT_EQ(CertificateName(Make({std::string("admin\0x", 7)}).get()), "");
  EXPECT_EQ(CertificateName(Make({"alice", "admin"}).get()), "") << "which of two common names is the user?";
  EXPECT_EQ(CertificateName(Make({"\xff\xfe"}).get()), "");
  EXPECT_EQ(CertificateName(Make({" alice"}).get()), "");
  EXPECT_EQ(CertificateName(Make({std::string(kMaxCertificateName + 1, 'a')}).get()), "");
  EXPECT_EQ(CertificateName(Make({std::string(kMaxCertificateName, 'a')}).get()),
            std::string(kMaxCertificateName, 'a'));
  // The first URI decides, fit or not: an unfit one does not fall back to the common name.
  EXPECT_EQ(CertificateName(Make({"alice"}, V_ASN1_UTF8STRING, {"spiffe://x\r\nX-User: root"}).get()), "");
  EXPECT_EQ(CertificateName(Make({}).get()), "");
}

}  // namespace
}  // namespace shoal::net
