#include "security/tls_context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <fstream>

namespace shoal::security {
namespace {

constexpr auto kLookInterval = std::chrono::seconds(1);
constexpr size_t kMaxSessions = 64;

std::string FileStamp(const std::string& path) {
  if (path.empty()) return "-";
  struct stat st {};
  // stat follows symlinks: a renewal that swaps a link (Kubernetes secrets) changes the target.
  if (::stat(path.c_str(), &st) != 0) return path + ":missing";
  return path + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

int64_t AsUnix(const ASN1_TIME* t) {
  struct tm tm {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace

std::string OpenSslError() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

bool KernelHasTls() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_available_ulp");
  std::string word;
  while (in >> word) {
    if (word == "tls") return true;
  }
  return false;
}

Result<std::shared_ptr<TlsContext>> TlsContext::Create(Side side, const TlsConfig& files, std::string what) {
  if (side == Side::kServer && (files.cert_file.empty() || files.key_file.empty())) {
    return Err(Code::kInvalidArgument, what + ": a TLS listener needs both cert_file and key_file");
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return Err(Code::kInvalidArgument, what + ": give cert_file and key_file together");
  }
  if (side == Side::kServer && files.client_auth != "none" && files.ca_file.empty()) {
    return Err(Code::kInvalidArgument, what + ".client_auth: " + files.client_auth + " needs " + what +
                                           ".ca_file (the CA of client certificates)");
  }
  std::shared_ptr<TlsContext> c(new TlsContext(side, files, std::move(what)));
  c->stamp_ = c->Stamp();
  auto ctx = c->Build(&c->not_after_, &c->subject_);
  if (!ctx) return Err(ctx.error());
  c->ctx_ = std::move(*ctx);
  c->next_look_ = std::chrono::steady_clock::now() + kLookInterval;
  return c;
}

TlsContext::~TlsContext() {
  for (auto& [a, s] : sessions_) SSL_SESSION_free(s);
}

std::string TlsContext::Stamp() const {
  return FileStamp(files_.cert_file) + "|" + FileStamp(files_.key_file) + "|" + FileStamp(files_.ca_file);
}

Result<std::shared_ptr<SSL_CTX>> TlsContext::Build(int64_t* not_after, std::string* subject) const {
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(side_ == Side::kServer ? TLS_server_method() : TLS_client_method()),
                               SSL_CTX_free);
  if (!ctx) return Err(Code::kInternal, what_ + ": cannot make a TLS context: " + OpenSslError());
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_ENABLE_KTLS);
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (!files_.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(c, files_.cert_file.c_str()) != 1) {
      return Err(Code::kInvalidArgument, what_ + ".cert_file " + files_.cert_file +
                                             ": not a PEM certificate chain that can be read: " + OpenSslError());
    }
    if (SSL_CTX_use_PrivateKey_file(c, files_.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return Err(Code::kInvalidArgument, what_ + ".key_file " + files_.key_file +
                                             ": not a PEM private key that can be read: " + OpenSslError());
    }
    if (SSL_CTX_check_private_key(c) != 1) {
      return Err(Code::kInvalidArgument, what_ + ": key_file " + files_.key_file + " does not belong to cert_file " +
                                             files_.cert_file + " (a renewal half-written?)");
    }
    X509* cert = SSL_CTX_get0_certificate(c);
    *not_after = AsUnix(X509_get0_notAfter(cert));
    char name[512];
    X509_NAME_oneline(X509_get_subject_name(cert), name, sizeof name);
    *subject = name;
  }
  if (!files_.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(c, files_.ca_file.c_str(), nullptr) != 1) {
      return Err(Code::kInvalidArgument, what_ + ".ca_file " + files_.ca_file +
                                             ": not PEM CA certificates that can be read: " + OpenSslError());
    }
  } else if (side_ == Side::kClient) {
    SSL_CTX_set_default_verify_paths(c);
  }
  if (side_ == Side::kClient) {
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT);
  } else {
    static constexpr unsigned char kSessionContext[] = "shoal";
    SSL_CTX_set_session_id_context(c, kSessionContext, sizeof kSessionContext - 1);
    int mode = SSL_VERIFY_NONE;
    if (files_.client_auth == "optional") mode = SSL_VERIFY_PEER;
    if (files_.client_auth == "required") mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(c, mode, nullptr);
    if (!files_.ca_file.empty() && mode != SSL_VERIFY_NONE) {
      SSL_CTX_set_client_CA_list(c, SSL_load_client_CA_file(files_.ca_file.c_str()));
    }
  }
  return ctx;
}

std::shared_ptr<SSL_CTX> TlsContext::Current() {
  std::lock_guard lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now < next_look_) return ctx_;
  next_look_ = now + kLookInterval;
  std::string stamp = Stamp();
  if (stamp == stamp_) return ctx_;
  int64_t not_after = 0;
  std::string subject;
  auto ctx = Build(&not_after, &subject);
  if (!ctx) {
    spdlog::warn("{}: the certificate files changed but do not load ({}); still serving the previous pair", what_,
                 ctx.error().message());
    return ctx_;
  }
  stamp_ = std::move(stamp);
  ctx_ = std::move(*ctx);
  not_after_ = not_after;
  subject_ = std::move(subject);
  ++reloads_;
  for (auto& [a, s] : sessions_) SSL_SESSION_free(s);
  sessions_.clear();
  spdlog::info("{}: loaded the renewed certificate {} (expires at {})", what_, subject_, not_after_);
  return ctx_;
}

int64_t TlsContext::not_after() const {
  std::lock_guard lock(mu_);
  return not_after_;
}

std::string TlsContext::subject() const {
  std::lock_guard lock(mu_);
  return subject_;
}

uint64_t TlsContext::reloads() const {
  std::lock_guard lock(mu_);
  return reloads_;
}

SSL_SESSION* TlsContext::TakeSession(const std::string& address) {
  std::lock_guard lock(mu_);
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (it->first != address) continue;
    SSL_SESSION* s = it->second;
    sessions_.erase(it);
    return s;
  }
  return nullptr;
}

void TlsContext::PutSession(const std::string& address, SSL_SESSION* session) {
  if (session == nullptr) return;
  std::lock_guard lock(mu_);
  if (sessions_.size() >= kMaxSessions) {
    SSL_SESSION_free(sessions_.front().second);
    sessions_.erase(sessions_.begin());
  }
  sessions_.emplace_back(address, session);
}

Status ExpectServerName(SSL* ssl, const std::string& address) {
  auto colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
  unsigned char buf[16];
  bool ip = inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
  int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host.c_str()) : X509_VERIFY_PARAM_set1_host(p, host.c_str(), 0);
  if (!ip) SSL_set_tlsext_host_name(ssl, host.c_str());
  if (ok != 1)
    return Status(Code::kInvalidArgument, "cannot check the certificate of " + address + ": " + OpenSslError());
  return {};
}

}  // namespace shoal::security
