#include "cli/worker_supervisor.h"

#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/commands.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string last, l;
  while (std::getline(in, l)) {
    if (!l.empty()) last = l;
  }
  return last;
}

}  // namespace

std::string DescribeExit(int st) {
  if (WIFEXITED(st)) return "exited with code " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    const char* abbrev = ::sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (abbrev ? " (SIG" + std::string(abbrev) + ")" : "");
  }
  return "ended (wait status " + std::to_string(st) + ")";
}

WorkerSupervisor::WorkerSupervisor(Options options) : o_(std::move(options)) {
  o_.min_delay = std::min(o_.min_delay, o_.max_delay);
  slots_.resize(static_cast<size_t>(o_.workers));
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].info.cache_dir = CacheDirOf(o_.cache_root, static_cast<int>(i));
    slots_[i].info.log = o_.state_dir + "/worker-" + std::to_string(i) + ".log";
  }
}

std::string WorkerSupervisor::CacheDirOf(const std::string& cache_root, int i) {
  return cache_root + "/worker-" + std::to_string(i);
}

WorkerSupervisor::~WorkerSupervisor() { StopAll(); }

std::string WorkerSupervisor::PortsFile() const { return o_.state_dir + "/ports"; }

void WorkerSupervisor::SavePorts() const {
  std::string text = "# worker addresses of the last `shoal up` on this state dir, tried first at the next start\n";
  for (size_t i = 0; i < slots_.size(); ++i) text += "worker-" + std::to_string(i) + " " + slots_[i].info.entry.address + "\n";
  if (auto st = WriteFileAtomic(PortsFile(), text, 0600); !st.ok()) {
    std::fprintf(stderr, "shoal up: cannot remember the worker ports: %s\n", st.message().c_str());
  }
}

Status WorkerSupervisor::StartOn(size_t i, const std::string& listen) {
  auto& s = slots_[i];
  Subprocess::Options p;
  p.argv = {o_.exe,   "worker",           "--config",     o_.worker_config, "--listen", listen,
            "--cache-dir", s.info.cache_dir, "--cache-size", std::to_string(o_.cache_size)};
  p.stderr_file = s.info.log;
  auto proc = Subprocess::Start(p);
  if (!proc) return proc.error();
  auto line = proc->WaitForLine("listening:", o_.start_timeout);
  Result<WorkerEntry> entry = line ? ParseListeningLine(*line) : Err(line.error());
  if (!entry) {
    std::string last = LastLine(s.info.log);
    return Status(Code::kUnavailable, "worker " + std::to_string(i) + " did not start: " +
                                          (last.empty() ? entry.error().message() : last) + " (log: " + s.info.log + ")");
  }
  s.proc = std::move(*proc);
  s.info.entry = std::move(*entry);
  s.info.pid = s.proc.pid();
  s.up_since = Clock::now();
  return {};
}

Status WorkerSupervisor::Start(size_t i, const std::string& listen) {
  auto st = StartOn(i, listen);
  if (st.ok() || listen.ends_with(":0")) return st;
  std::fprintf(stderr, "shoal up: worker %zu could not take %s again (%s); using a free port\n", i, listen.c_str(),
               st.message().c_str());
  return StartOn(i, "127.0.0.1:0");
}

Status WorkerSupervisor::StartAll() {
  std::map<std::string, std::string> remembered;  // "worker-i" -> host:port
  {
    std::ifstream in(PortsFile());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string name, address;
      if (line.starts_with('#') || !(fields >> name >> address)) continue;
      if (auto e = ParseWorkerEntry(address); e && address.starts_with("127.0.0.1:")) remembered[name] = address;
    }
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    auto it = remembered.find("worker-" + std::to_string(i));
    auto st = Start(i, it == remembered.end() ? "127.0.0.1:0" : it->second);
    if (!st.ok()) {
      StopAll();
      return st;
    }
  }
  SavePorts();
  return {};
}

void WorkerSupervisor::NoteExit(size_t i) {
  auto& s = slots_[i];
  int status = s.proc.Wait(std::chrono::milliseconds(0));
  auto now = Clock::now();
  const bool stable = now - s.up_since >= o_.stable_after;
  s.delay = stable || s.delay.count() == 0 ? o_.min_delay : std::min(s.delay * 2, o_.max_delay);
  s.restart_at = now + s.delay;
  std::fprintf(stderr, "shoal up: worker %zu (%s, pid %d) %s; restarting it in %s (log: %s)\n", i,
               FormatWorkerEntry(s.info.entry).c_str(), static_cast<int>(s.info.pid), DescribeExit(status).c_str(),
               FormatDuration(s.delay).c_str(), s.info.log.c_str());
}

bool WorkerSupervisor::Tick() {
  bool moved = false;
  for (size_t i = 0; i < slots_.size(); ++i) {
    auto& s = slots_[i];
    if (!s.restart_at) {
      if (!s.proc.running()) NoteExit(i);
      continue;
    }
    if (Clock::now() < *s.restart_at) continue;
    ++s.restarts;
    const std::string before = s.info.entry.address;
    auto st = Start(i, before);
    if (!st.ok()) {
      s.delay = std::min(s.delay * 2, o_.max_delay);
      s.restart_at = Clock::now() + s.delay;
      std::fprintf(stderr, "shoal up: restart %d of worker %zu failed: %s; trying again in %s\n", s.restarts, i,
                   st.message().c_str(), FormatDuration(s.delay).c_str());
      continue;
    }
    s.restart_at.reset();
    std::fprintf(stderr, "shoal up: worker %zu is back (restart %d): %s, pid %d\n", i, s.restarts,
                 FormatWorkerEntry(s.info.entry).c_str(), static_cast<int>(s.info.pid));
    moved = moved || s.info.entry.address != before;
  }
  if (moved) SavePorts();
  std::fflush(stderr);
  return moved;
}

void WorkerSupervisor::StopAll() {
  for (auto& s : slots_) s.proc.Signal(SIGTERM);
  for (auto& s : slots_) s.proc.Stop(std::chrono::seconds(10));
}

std::vector<WorkerEntry> WorkerSupervisor::members() const {
  std::vector<WorkerEntry> out;
  for (const auto& s : slots_) out.push_back(s.info.entry);
  return out;
}

std::vector<WorkerSupervisor::WorkerInfo> WorkerSupervisor::workers() const {
  std::vector<WorkerInfo> out;
  for (const auto& s : slots_) out.push_back(s.info);
  return out;
}

}  // namespace shoal::cli
