// WebHdfsServer: starts tests/webhdfs_server.py (a WebHDFS namenode plus a
// datanode port, backed by a fresh temporary directory) for tests.
//
//   auto hdfs = WebHdfsServer::Start();
//   mount.ufs = hdfs->Uri("data");   // hdfs://127.0.0.1:PORT/data
//
// The server binds port 0; the process is stopped and its directory removed
// when the WebHdfsServer is destroyed. Needs Debian's /usr/bin/python3.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/subprocess.h"
#include "shoal/status.h"
#include "tests/harness/harness_util.h"

namespace shoal::testing {

class WebHdfsServer {
 public:
  struct Options {
    int ls_limit = 1000;    // entries per LISTSTATUS_BATCH page (small values exercise paging)
    std::string deny_user;  // this user.name gets AccessControlException (403)
  };

  static Result<WebHdfsServer> Start(const Options& options);
  static Result<WebHdfsServer> Start() { return Start(Options{}); }

  const std::string& namenode() const { return namenode_; }  // "127.0.0.1:PORT"
  const std::string& datanode() const { return datanode_; }
  const std::string& root_dir() const;                       // local directory behind "/"
  // "hdfs://127.0.0.1:PORT/<path>"
  std::string Uri(std::string_view path) const;
  // A counter from the server's /debug/stats: open_redirects, create_redirects,
  // append_redirects, datanode_reads, datanode_writes.
  Result<int64_t> Counter(const std::string& name) const;
  // The user.name of the last namenode request.
  Result<std::string> LastUser() const;

 private:
  std::shared_ptr<ScratchDir> dir_;  // declared before proc_: the process stops before the dir goes
  Subprocess proc_;
  std::string namenode_, datanode_;
};

}  // namespace shoal::testing
