#include "tests/harness/shoal_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <span>
#include <fstream>
#include <random>
#include <sstream>

#include "client/worker_connection.h"

namespace shoal::testing {

namespace fs = std::filesystem;

std::string ShoalBinary() {
  const char* b = std::getenv("SHOAL_BIN");
  return b && *b ? b : "shoal";
}

std::string MakeTempDir(const std::string& tag) { return MakeTempDir(tag, "a test").value_or(""); }

MountConfig FileMount(const std::string& dir) {
  MountConfig m;
  m.path = "/data";
  m.ufs = "file://" + dir + "/";
  return m;
}

Status WriteFile(const std::string& path, const std::string& data) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return out ? Status() : Status(Code::kIo, "cannot write " + path);
}

Result<std::unique_ptr<ShoalCluster>> ShoalCluster::Start(const Options& o) {
  std::unique_ptr<ShoalCluster> c(new ShoalCluster());
  c->options_ = o;
  c->own_root_ = o.cache_root.empty();
  c->root_ = c->own_root_ ? MakeTempDir("cluster") : o.cache_root;
  if (c->root_.empty()) return Err(Code::kIo, "cannot create a temp dir");
  c->config_.mounts = o.mounts;
  c->config_.rules = o.rules;
  c->config_.cluster.secret = o.secret;
  c->config_.security = o.security;
  c->config_.authz = o.authz;
  c->config_.worker.page_size = o.page_size;
  c->config_.cluster.shard_size = o.shard_size;
  c->config_.worker.ufs_threads = 8;
  c->config_.client = o.client;
  if (o.worker) o.worker(c->config_.worker);
  if (o.s3) {
    c->config_.worker.s3_listen = "127.0.0.1:0";
    c->config_.s3 = *o.s3;
    c->config_.s3.client_config = c->client_config_path();
  }
  c->worker_config_ = c->root_ + "/worker.yaml";
  SHOAL_RETURN_IF_ERROR(WriteFile(c->worker_config_, ToYaml(c->config_)));
  c->procs_.resize(static_cast<size_t>(o.workers));
  c->config_.cluster.workers.resize(static_cast<size_t>(o.workers));
  for (int i = 0; i < o.workers; ++i) {
    c->cache_dirs_.push_back(c->root_ + "/cache-" + std::to_string(i));
    SHOAL_RETURN_IF_ERROR(c->StartWorker(static_cast<size_t>(i), "127.0.0.1:0"));
  }
  if (o.s3) SHOAL_RETURN_IF_ERROR(WriteFile(c->client_config_path(), c->ClientYaml()));
  return c;
}

Result<WorkerProcess> StartWorkerProcess(const std::string& config, const std::string& listen,
                                         const std::string& cache_dir, const std::string& cache_size,
                                         const std::string& log) {
  Subprocess::Options o;
  o.argv = {ShoalBinary(), "worker", "--config", config, "--listen", listen, "--cache-dir", cache_dir,
            "--cache-size", cache_size};
  o.stderr_file = log;
  auto p = Subprocess::Start(o);
  if (!p) return Err(p.error());
  auto line = p->WaitForLine("listening:", std::chrono::seconds(60));
  if (!line) {
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    return Err(Status(line.error().code(), line.error().message() + "\nworker log (" + log + "):\n" + ss.str()));
  }
  auto entry = ParseListeningLine(*line);
  if (!entry) return Err(entry.error());
  return WorkerProcess{std::move(*p), std::move(*entry)};
}

Status ShoalCluster::StartWorker(size_t i, const std::string& listen) {
  auto w = StartWorkerProcess(worker_config_, listen, cache_dirs_[i], std::to_string(options_.cache_capacity),
                              root_ + "/worker-" + std::to_string(i) + ".log");
  if (!w) return w.error();
  procs_[i] = std::move(w->process);
  config_.cluster.workers[i] = w->entry;
  return {};
}

ShoalCluster::~ShoalCluster() {
  for (size_t i = 0; i < procs_.size(); ++i) Thaw(i);
  for (auto& p : procs_) p.Stop(std::chrono::seconds(5));
  if (own_root_ && !std::getenv("SHOAL_TEST_KEEP")) {
    std::error_code ec;
    fs::remove_all(root_, ec);
  } else if (own_root_) {
    std::fprintf(stderr, "kept test cluster dir %s (SHOAL_TEST_KEEP)\n", root_.c_str());
  }
}

std::string ShoalCluster::ClientYaml() const { return ClientYaml(options_.client); }

std::string ShoalCluster::ClientYaml(const ClientConfig& client) const {
  Config c = config_;
  c.client = client;
  return ToYaml(c);
}

Result<std::unique_ptr<Client>> ShoalCluster::NewClient() const { return Client::FromYaml(ClientYaml(), "test"); }

void ShoalCluster::Kill(size_t i) {
  Thaw(i);
  procs_[i].Signal(SIGKILL);
  procs_[i].Wait(std::chrono::seconds(10));
}

bool ShoalCluster::Freeze(size_t i) {
  frozen_.resize(procs_.size());
  frozen_[i] = true;
  return FreezeProcess(procs_[i].pid());
}

void ShoalCluster::Thaw(size_t i) {
  if (i >= frozen_.size() || !frozen_[i]) return;
  ThawProcess(procs_[i].pid());
  frozen_[i] = false;
}

int ShoalCluster::Stop(size_t i) {
  Thaw(i);
  return procs_[i].Stop(std::chrono::seconds(10));
}

Status ShoalCluster::Restart(size_t i) {
  if (procs_[i].running()) Stop(i);
  // The old port can briefly be taken by someone else; the worker then fails to
  // start and the error says so.
  return StartWorker(i, config_.cluster.workers[i].address);
}

Result<std::string> WorkerGet(const std::string& address, const std::string& target, const std::string& secret) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto conn = WorkerConnection::Connect(address, deadline);
  if (!conn) return Err(conn.error());
  (*conn)->set_secret(secret);
  SHOAL_RETURN_IF_ERROR((*conn)->SendRequest("GET", target, deadline));
  auto head = (*conn)->ReadHead(deadline);
  if (!head) return Err(head.error());
  auto body = (*conn)->ReadBodyString(head->content_length, deadline);
  if (!body) return Err(body.error());
  if (head->status != 200) return Err(Code::kInternal, "HTTP " + std::to_string(head->status) + ": " + *body);
  return body;
}

Result<double> WorkerMetricSum(const std::vector<std::string>& addresses, const std::string& name) {
  double sum = 0;
  for (const auto& address : addresses) {
    auto text = WorkerGet(address, "/metrics");
    if (!text) return Err(text.error());
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto sp = line.rfind(' ');
      std::string key = line.substr(0, sp);
      if (key == name || (name.find('{') == std::string::npos && key.starts_with(name + "{"))) {
        sum += std::stod(line.substr(sp + 1));
      }
    }
  }
  return sum;
}

Result<std::string> ShoalCluster::Get(size_t i, const std::string& target) const {
  return WorkerGet(config_.cluster.workers[i].address, target, config_.cluster.secret);
}

Result<double> ShoalCluster::MetricSum(const std::string& name) const { return WorkerMetricSum(addresses(), name); }

Status StartWithTwoClients(const ShoalCluster::Options& options, std::unique_ptr<ShoalCluster>* cluster,
                           std::unique_ptr<Client>* writer, std::unique_ptr<Client>* reader) {
  auto c = ShoalCluster::Start(options);
  if (!c) return c.error();
  *cluster = std::move(*c);
  auto w = (*cluster)->NewClient();
  if (!w) return w.error();
  auto r = (*cluster)->NewClient();
  if (!r) return r.error();
  *writer = std::move(*w);
  *reader = std::move(*r);
  return {};
}

std::string ReadWhole(Client& client, const std::string& path, const OpenOptions& options, Code* code) {
  return ReadWhole(client.OpenFile(path, options), code);
}

std::string ReadWhole(Result<std::unique_ptr<File>> f, Code* code) {
  if (code) *code = f ? Code::kOk : f.error().code();
  if (!f) return "<error: " + f.error().ToString() + ">";
  std::string out((*f)->status().size, '\0');
  auto n = (*f)->Pread(0, std::span<char>(out.data(), out.size()));
  if (!n) return "<error: " + n.error().ToString() + ">";
  return out;
}

}  // namespace shoal::testing
