// shoal scrub [--now] [PATH]: a scrub pass on every worker (cache/scrubber.h),
// with progress while it runs and what it found at the end.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/commands.h"
#include "client/client_internal.h"
#include "common/units.h"
#include "ufs/uri.h"

namespace shoal::cli {
namespace {

using Json = nlohmann::json;

struct ScrubArgs {
  ClientOptions client;
  std::string path;
  bool now = false;
};

// One worker's pass: the number it was given, and what it has done so far.
struct WorkerPass {
  uint64_t pass = 0;
  bool running = true;
  uint64_t pages = 0, bytes = 0, corrupt = 0;
  std::string error;  // why it was not reached or answered
};

// Reads a /v1/scrub answer into `w`; false (error set) when it does not parse.
bool ReadPass(const WorkerAnswer& r, WorkerPass* w) {
  if (!r.status.ok()) {
    w->error = r.status.message();
    return false;
  }
  try {
    auto j = Json::parse(r.body);
    w->pass = j.at("pass").get<uint64_t>();
    w->running = j.at("running").get<bool>();
    w->pages = j.at("pages").get<uint64_t>();
    w->bytes = j.at("bytes").get<uint64_t>();
    w->corrupt = j.at("corrupt").get<uint64_t>();
    return true;
  } catch (const std::exception& e) {
    w->error = std::string("malformed answer: ") + e.what();
    return false;
  }
}

int Scrub(Client& c, const ScrubArgs& a) {
  std::string ns = "/";
  if (!a.path.empty() && a.path != "/") {
    auto st = c.Stat(a.path);
    if (!st && st.error().code() != Code::kNotFound) return Fail(st.error());
    ns = st ? st->path : a.path;  // a path gone from the store may still have cached pages
  }
  const std::string start = "/v1/scrub?path=" + PercentEncode(ns, true) + (a.now ? "&now=1" : "");
  std::map<std::string, WorkerPass> passes;  // by member
  for (const auto& r : CallWorkers(c, "POST", [&](const std::string&) { return start; })) {
    ReadPass(r, &passes[r.member]);
  }
  const bool tty = ::isatty(STDERR_FILENO);
  auto last_line = std::chrono::steady_clock::now();
  for (;;) {
    uint64_t pages = 0, bytes = 0, corrupt = 0;
    size_t running = 0;
    for (auto& [m, w] : passes) {
      pages += w.pages;
      bytes += w.bytes;
      corrupt += w.corrupt;
      running += w.error.empty() && w.running;
    }
    const auto now = std::chrono::steady_clock::now();
    if (running == 0 || tty || now - last_line >= std::chrono::seconds(10)) {
      std::fprintf(stderr, "%sscrub %s: %llu pages (%s) checked, %llu corrupt, %zu of %zu workers still checking%s",
                   tty ? "\r" : "", ns.c_str(), static_cast<unsigned long long>(pages), FormatSize(bytes).c_str(),
                   static_cast<unsigned long long>(corrupt), running, passes.size(), tty ? "\033[K" : "\n");
      last_line = now;
    }
    if (running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling the workers' progress
    for (const auto& r : CallWorkers(c, "GET", [](const std::string&) { return "/v1/scrub"; })) {
      auto& w = passes[r.member];
      if (!w.error.empty()) continue;
      WorkerPass now_pass;
      if (!ReadPass(r, &now_pass)) {
        w.error = now_pass.error;
      } else if (now_pass.pass > w.pass) {
        w.error = "its pass was replaced by a newer one (another `shoal scrub`); run it again for the whole count";
      } else if (now_pass.pass == w.pass) {
        w = now_pass;
      }
    }
  }
  if (tty) std::fputc('\n', stderr);
  uint64_t pages = 0, bytes = 0, corrupt = 0;
  std::string failed;
  for (const auto& [m, w] : passes) {
    pages += w.pages;
    bytes += w.bytes;
    corrupt += w.corrupt;
    if (!w.error.empty()) failed += (failed.empty() ? "" : "; ") + ("worker " + m + ": " + w.error);
  }
  std::printf("scrubbed %s: %llu pages (%s) checked on %zu workers, %llu corrupt %s\n", ns.c_str(),
              static_cast<unsigned long long>(pages), FormatSize(bytes).c_str(), passes.size(),
              static_cast<unsigned long long>(corrupt),
              corrupt ? "pages dropped (their next reads fetch them again from the under-store)" : "pages");
  if (!failed.empty()) {
    return Fail(Status(Code::kUnavailable, "the scrub did not finish on every worker: " + failed));
  }
  return 0;
}

}  // namespace

void AddScrubCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ScrubArgs>();
  auto* cmd = app.add_subcommand(
      "scrub",
      "Read back and check every cached page (under PATH) on every worker, dropping bad ones; waits for the "
      "pass and reports what it found");
  AddClientOptions(cmd, &a->client);
  cmd->add_option("path", a->path, "Only the pages of files under this namespace path (default: all)");
  cmd->add_flag("--now", a->now, "As fast as the disks read, not at worker.scrub_rate");
  cmd->callback([a, exit_code] {
    auto c = OpenClient(a->client);
    if (!c) return void(*exit_code = Fail(c.error()));
    *exit_code = Scrub(**c, *a);
  });
}

}  // namespace shoal::cli
