// The name a client certificate proves (src/net/cert_name.cc), which the
// worker takes as the user of every request on that connection: what it
// returns is "" or a name fit for a user (FitCertificateName). The first
// byte picks a mode:
//   0: the rest is a DER certificate as a client sent it (OpenSSL parses it;
//      verification is not the harness's business);
//   1: a certificate the harness builds from fuzz-chosen common names
//      (UTF8String bytes as given, or BMPString) and URI and DNS alternative
//      names: the name read back is the one the rule in cert_name.h picks.
#include <openssl/asn1.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#include "fuzz_check.h"
#include "net/cert_name.h"

namespace {

using namespace shoal;

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};

void CheckName(const std::string& name) {
  FUZZ_CHECK(name.empty() || net::FitCertificateName(name), "an unfit name of %zu bytes was proven", name.size());
}

void AddAltName(GENERAL_NAMES* names, int type, std::string_view value) {
  GENERAL_NAME* g = GENERAL_NAME_new();
  ASN1_IA5STRING* s = ASN1_IA5STRING_new();
  ASN1_STRING_set(s, value.data(), static_cast<int>(value.size()));
  GENERAL_NAME_set0_value(g, type, s);
  sk_GENERAL_NAME_push(names, g);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  fuzz::FuzzInput in(data, size);
  if (in.Byte() % 2 == 0) {
    const auto* p = reinterpret_cast<const unsigned char*>(in.rest().data());
    std::unique_ptr<X509, X509Free> cert(d2i_X509(nullptr, &p, static_cast<long>(in.rest().size())));
    if (cert) CheckName(net::CertificateName(cert.get()));
    return 0;
  }
  std::unique_ptr<X509, X509Free> cert(X509_new());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("Shoal"), -1, -1, 0);
  const uint8_t shape = in.Byte();
  const int common_names = shape % 3;
  std::string common_name;  // the first, as UTF-8
  for (int i = 0; i < common_names; ++i) {
    std::string bytes(in.Bytes(80));
    if (shape & 4) {  // BMPString of the ASCII bytes: reads back as those bytes
      std::string bmp, ascii;
      for (char c : bytes) {
        if (static_cast<unsigned char>(c) >= 0x80) continue;
        bmp += '\0';
        bmp += c;
        ascii += c;
      }
      X509_NAME_add_entry_by_NID(subject, NID_commonName, V_ASN1_BMPSTRING,
                                 reinterpret_cast<const unsigned char*>(bmp.data()), static_cast<int>(bmp.size()), -1,
                                 0);
      if (i == 0) common_name = ascii;
    } else {
      X509_NAME_add_entry_by_NID(subject, NID_commonName, V_ASN1_UTF8STRING,
                                 reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()),
                                 -1, 0);
      if (i == 0) common_name = bytes;
    }
  }
  // All alternative names in one extension, as RFC 5280 has it (OpenSSL reads
  // none from a certificate with two, and does not verify it).
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  if (shape & 8) AddAltName(names, GEN_DNS, in.Bytes(40));
  const bool has_uri = (shape & 16) != 0;
  const std::string uri(has_uri ? in.Bytes(255) : std::string_view());
  if (has_uri) AddAltName(names, GEN_URI, uri);
  if (shape & 32) AddAltName(names, GEN_URI, "spiffe://second/uri");
  if (sk_GENERAL_NAME_num(names) > 0) X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT);
  GENERAL_NAMES_free(names);

  const std::string got = net::CertificateName(cert.get());
  CheckName(got);
  std::string want;
  if (has_uri) {
    want = net::FitCertificateName(uri) ? uri : "";
  } else if (shape & 32) {
    want = "spiffe://second/uri";
  } else if (common_names == 1) {
    want = net::FitCertificateName(common_name) ? common_name : "";
  }
  FUZZ_CHECK(got == want, "the certificate proves '%s', the rule says '%s'", got.c_str(), want.c_str());
  return 0;
}
