#include "tests/cli_helpers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/harness/shoal_cluster.h"

namespace shoal::testing {

namespace fs = std::filesystem;

Run Shoal(std::vector<std::string> args, std::chrono::seconds timeout) {
  args.insert(args.begin(), ShoalBinary());
  return Command(std::move(args), timeout);
}

Run Command(std::vector<std::string> argv, std::chrono::seconds timeout) {
  static int n = 0;
  std::string errfile =
      fs::temp_directory_path() / ("shoal-cli-err-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  Subprocess::Options o;
  o.argv = std::move(argv);
  o.stderr_file = errfile;
  Run r;
  auto p = Subprocess::Start(o);
  if (!p) return r;
  int st = p->Wait(timeout);
  if (st == -1) p->Stop(std::chrono::seconds(5));
  r.exit_code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = p->output();
  r.err = Slurp(errfile);
  fs::remove(errfile);
  return r;
}

std::string Up::err() const { return Slurp(err_file); }

Up LaunchUp(std::vector<std::string> args, const std::string& err_file) {
  Up up;
  up.err_file = err_file;
  Subprocess::Options o;
  o.argv = {ShoalBinary(), "up"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stderr_file = err_file;
  auto p = Subprocess::Start(o);
  if (!p) return up;
  up.proc = std::move(*p);
  auto line = up.proc.WaitForLine("ready: config=", std::chrono::seconds(90));
  if (line) {
    up.ready = true;
    up.config = line->substr(line->find('=') + 1);
    return up;
  }
  int st = up.proc.Wait(std::chrono::seconds(30));
  up.exit_code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return up;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Mounted(const std::string& mp) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" " + mp + " ") != std::string::npos) return true;
  }
  return false;
}

int CountLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace shoal::testing
