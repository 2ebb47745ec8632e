// EtcdProcess: a real single-member etcd (/usr/bin/etcd, Debian's
// etcd-server) for tests, on 127.0.0.1 ports that were free, with its data in
// a fresh temporary directory; stopped, and the directory removed, when the
// object is destroyed. Built on LocalEtcd (src/cluster/local_etcd.h), which
// `shoal up --etcd` uses too.
//
//   auto etcd = EtcdProcess::Start();
//   if (!etcd && etcd.error().code() == Code::kNotFound) GTEST_SKIP() << etcd.error().message();
//   config.cluster.etcd.endpoints = {etcd->endpoint()};
#pragma once

#include <memory>
#include <string>

#include "cluster/local_etcd.h"
#include "shoal/status.h"
#include "tests/harness/harness_util.h"

namespace shoal::testing {

class EtcdProcess {
 public:
  // kNotFound (with a message naming the package) when /usr/bin/etcd is missing.
  // `client_host`: the address etcd serves clients on (LocalEtcd::Options).
  static Result<std::unique_ptr<EtcdProcess>> Start(const std::string& client_host = "127.0.0.1");
  ~EtcdProcess();

  std::string endpoint() const { return etcd_.endpoint(); }
  pid_t pid() const { return etcd_.pid(); }
  // SIGKILL: etcd lost (the data dir stays, for Restart()).
  void Kill();
  // Starts etcd again on the same port and data dir.
  Status Restart();

 private:
  EtcdProcess() = default;
  std::shared_ptr<ScratchDir> dir_;
  LocalEtcd etcd_;
};

}  // namespace shoal::testing
