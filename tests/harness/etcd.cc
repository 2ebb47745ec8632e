#include "tests/harness/etcd.h"

#include <signal.h>

namespace shoal::testing {

Result<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(const std::string& client_host) {
  std::unique_ptr<EtcdProcess> e(new EtcdProcess());
  auto dir = MakeScratchDir("etcd", "etcd's data");
  if (!dir) return Err(dir.error());
  e->dir_ = std::move(*dir);
  LocalEtcd::Options o;
  o.data_dir = e->dir_->path + "/data";
  o.log_file = e->dir_->path + "/etcd.log";
  o.client_host = client_host;
  auto started = LocalEtcd::Start(o);
  if (!started) return Err(started.error());
  e->etcd_ = std::move(*started);
  return e;
}

EtcdProcess::~EtcdProcess() { etcd_.Stop(); }

void EtcdProcess::Kill() {
  etcd_.Signal(SIGKILL);
  etcd_.Stop();  // reaps it
}

Status EtcdProcess::Restart() {
  LocalEtcd::Options o = etcd_.options();
  o.client_port = etcd_.client_port();
  o.peer_port = etcd_.peer_port();
  etcd_.Stop();
  auto started = LocalEtcd::Start(o);
  if (!started) return started.error();
  etcd_ = std::move(*started);
  return {};
}

}  // namespace shoal::testing
