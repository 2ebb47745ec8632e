// shoal s3 [--config FILE] [--listen HOST:PORT] [--credentials FILE]
//
// Serves the S3 API over a Shoal cluster until SIGINT/SIGTERM, and prints
// `s3: endpoint=http://HOST:PORT` once it answers.
#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "cli/commands.h"
#include "cli/s3_service.h"
#include "net/http_server.h"
#include "s3/s3_endpoint.h"
#include "security/tls_context.h"

namespace shoal::cli {

struct S3Service::State {
  std::unique_ptr<Client> client;
  std::unique_ptr<s3::S3Endpoint> endpoint;
  std::unique_ptr<net::HttpServer> server;
  bool tls = false;
};

S3Service::S3Service(std::unique_ptr<State> state) : state_(std::move(state)) {}

S3Service::~S3Service() {
  if (state_->server) state_->server->Stop();
  state_->server.reset();
  state_->endpoint.reset();
  state_->client.reset();
}

Result<std::unique_ptr<S3Service>> S3Service::Start(const std::string& config_path, const S3Config& s3,
                                                    const std::string& listen, bool handle_signals) {
  auto state = std::make_unique<State>();
  auto client = Client::Open(config_path);
  if (!client) return Err(client.error());
  state->client = std::move(*client);
  auto endpoint = s3::S3Endpoint::Create(*state->client, s3);
  if (!endpoint) return Err(endpoint.error());
  state->endpoint = std::move(*endpoint);
  auto options = s3::S3Endpoint::ServerOptionsFor(listen);
  options.handle_signals = handle_signals;
  // TLS when the config secures its listeners (tls.cert_file), as the workers do.
  auto cfg = LoadConfig(config_path);
  if (!cfg) return Err(cfg.error());
  if (!cfg->tls.cert_file.empty()) {
    auto tls = security::TlsContext::Create(security::TlsContext::Side::kServer, cfg->tls, "tls");
    if (!tls) return Err(tls.error().WithContext("s3 endpoint"));
    options.tls_context = [tls = *tls] { return tls->Current(); };
    state->tls = true;
  }
  auto server = net::HttpServer::Bind(options);
  if (!server) return Err(server.error().WithContext("s3 endpoint on " + listen));
  state->server = std::move(*server);
  state->server->Serve({state->endpoint->Routes()});
  return std::unique_ptr<S3Service>(new S3Service(std::move(state)));
}

const std::string& S3Service::address() const { return state_->server->address(); }
bool S3Service::tls() const { return state_->tls; }
void S3Service::Wait() { state_->server->Wait(); }

Result<std::pair<std::string, std::string>> LoadOrMakeS3Keys(const std::string& path) {
  std::map<std::string, s3::S3Key> keys;
  if (::access(path.c_str(), F_OK) == 0) {
    SHOAL_RETURN_IF_ERROR(s3::LoadCredentialsFile(path, &keys));
    if (keys.empty()) return Err(Code::kInvalidArgument, "s3 credentials file '" + path + "' holds no key");
    return std::pair{keys.begin()->first, keys.begin()->second.secret};
  }
  auto random = [](size_t n, std::string_view alphabet) -> Result<std::string> {
    std::string bytes(n, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(n)) != 1) {
      return Err(Code::kInternal, "cannot generate an S3 key: no randomness from OpenSSL");
    }
    std::string out;
    for (unsigned char c : bytes) out += alphabet[c % alphabet.size()];
    return out;
  };
  auto ak = random(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
  auto sk = random(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789");
  if (!ak || !sk) return Err(ak ? sk.error() : ak.error());
  std::string access_key = "SHOAL" + *ak;
  SHOAL_RETURN_IF_ERROR(WriteFileAtomic(path, access_key + " " + *sk + "\n", 0600));
  return std::pair{access_key, *sk};
}

void AddS3(CLI::App& app, int* exit_code) {
  struct Args {
    ClientOptions client;
    std::string listen, credentials;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("s3", "Serve the S3 API over the cluster (aws, boto3, s3cmd, rclone...) until Ctrl-C");
  AddClientOptions(cmd, &a->client);
  cmd->add_option("--listen", a->listen, "Address to serve on, host:port (default: s3.listen, else 127.0.0.1:0)");
  cmd->add_option("--credentials", a->credentials,
                  "File of 'ACCESS_KEY SECRET_KEY [USER [GROUPS]]' lines, mode 0600 (replaces s3.credentials_file)");
  cmd->callback([a, exit_code] {
    RaiseOpenFilesLimit();
    std::string path = a->client.config;
    if (path.empty()) {
      const char* env = std::getenv("SHOAL_CONFIG");
      path = env ? env : "";
    }
    if (path.empty()) {
      *exit_code = Fail(Status(Code::kInvalidArgument, "no config: pass --config FILE or set SHOAL_CONFIG"));
      return;
    }
    auto config = LoadConfig(path);
    if (!config) {
      *exit_code = Fail(config.error());
      return;
    }
    S3Config s3 = config->s3;
    if (!a->credentials.empty()) s3.credentials_file = a->credentials;
    std::string listen = !a->listen.empty() ? a->listen : !s3.listen.empty() ? s3.listen : "127.0.0.1:0";
    if (const char* level = std::getenv("SHOAL_LOG"); !level || !*level) {
      spdlog::set_level(a->client.verbose ? spdlog::level::info : spdlog::level::warn);
    }
    auto service = S3Service::Start(path, s3, listen, /*handle_signals=*/true);
    if (!service) {
      *exit_code = Fail(service.error());
      return;
    }
    std::printf("s3: endpoint=http://%s\n", (*service)->address().c_str());
    std::fflush(stdout);
    (*service)->Wait();
    *exit_code = 0;
  });
}

}  // namespace shoal::cli
