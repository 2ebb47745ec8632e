// shoal worker --config FILE [--listen HOST:PORT] [--cache-dir DIR --cache-size SIZE] [--check-config]
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "common/config.h"
#include "common/library_log.h"
#include "common/service_notify.h"
#include "common/units.h"
#include "ufs/cloud/credential_cache.h"
#include "worker/worker.h"

namespace shoal::cli {

void AddWorker(CLI::App& app, int* exit_code) {
  struct Args {
    std::string config, listen, cache_dir, cache_size;
    bool check_config = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("worker", "Run one cache worker (shoal up starts these for you)");
  cmd->add_option("--config,-c", args->config, "Worker config file (mounts, cache dirs)")->required();
  cmd->add_option("--listen", args->listen, "Address to serve on, host:port (port 0 picks a free one)");
  cmd->add_option("--cache-dir", args->cache_dir, "Cache directory (replaces worker.cache_dirs)");
  cmd->add_option("--cache-size", args->cache_size, "Capacity of --cache-dir, e.g. 10GiB (default: " +
                                                       FormatSize(kDefaultCacheCapacity) + ")");
  cmd->add_flag("--check-config", args->check_config,
                "Check the config (and the flags above) and exit: 0 and one line when a worker would start with it");
  cmd->callback([args, exit_code] {
    auto config = LoadConfig(args->config);
    if (!config) {
      *exit_code = Fail(config.error());
      return;
    }
    if (const char* format = std::getenv("SHOAL_LOG_FORMAT"); !format || !*format) {
      (void)SetLogFormat(config->log.format);  // parsing checked it
    }
    // Mounts are opened on first use; their options are checked now, so a
    // worker that could never serve a mount does not print `listening:`.
    if (auto st = ValidateMounts(*config); !st.ok()) {
      *exit_code = Fail(st.WithContext("config error in " + args->config));
      return;
    }
    if (!args->listen.empty()) config->worker.listen = args->listen;
    if (!args->cache_size.empty() && args->cache_dir.empty()) {
      *exit_code = Fail(Status(Code::kInvalidArgument, "--cache-size needs --cache-dir (the capacities of "
                                                       "worker.cache_dirs are set in the config)"));
      return;
    }
    if (!args->cache_dir.empty()) {
      uint64_t capacity = kDefaultCacheCapacity;
      if (!args->cache_size.empty()) {
        auto size = ParseSize(args->cache_size);
        if (!size) {
          *exit_code = Fail(size.error().WithContext("--cache-size"));
          return;
        }
        capacity = *size;
      }
      config->worker.cache_dirs = {{args->cache_dir, capacity}};
    }
    if (config->worker.cache_dirs.empty()) {
      *exit_code = Fail(Status(Code::kInvalidArgument, "no cache directory: set worker.cache_dirs in " + args->config +
                                                           " or pass --cache-dir DIR --cache-size SIZE"));
      return;
    }
    if (args->check_config) {
      // Not the cache dirs themselves: a unit or a pod checks its config where they do not exist yet.
      std::printf("config ok: %s (%zu mounts, %zu cache dirs, membership %s)\n", args->config.c_str(),
                  config->mounts.size(), config->worker.cache_dirs.size(),
                  config->cluster.etcd.endpoints.empty() ? "static" : "etcd");
      *exit_code = 0;
      return;
    }
    for (const auto& dir : config->worker.cache_dirs) {
      if (auto st = CheckCacheDir(dir.path); !st.ok()) {
        *exit_code = Fail(st);
        return;
      }
    }
    auto worker = Worker::Start(*config, /*handle_signals=*/true);
    if (!worker) {
      *exit_code = Fail(worker.error());
      return;
    }
    std::printf("%s\n", ListeningLine({(*worker)->id(), (*worker)->address()}).c_str());
    if (!(*worker)->s3_address().empty()) std::printf("s3: endpoint=http://%s\n", (*worker)->s3_address().c_str());
    for (const auto& [mount, info] : cloud::RegisteredCredentials()) {
      std::printf("credentials: %s: %s\n", mount.c_str(), cloud::DescribeInfo(info).c_str());
      spdlog::info("mount {}: credentials from {}", mount, cloud::DescribeInfo(info));
    }
    std::fflush(stdout);
    spdlog::info("worker serving on {} ({} mounts)", (*worker)->address(), config->mounts.size());
    // Under systemd (Type=notify): ready once it serves.
    if (auto st = NotifyServiceManager("READY=1\nSTATUS=serving on " + (*worker)->address()); !st.ok()) {
      spdlog::warn("{}", st.message());
    }
    (*worker)->Wait();
    *exit_code = 0;
  });
}

}  // namespace shoal::cli
