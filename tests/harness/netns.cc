#include "tests/harness/netns.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>
#include <sstream>

namespace shoal::testing {
namespace {

constexpr const char* kNamespacePrefix = "shoalnt-";  // shoalnt-PID-hI
constexpr const char* kLinkPrefix = "shnt";           // shntPIDb (bridge), shntPIDhI / shntPIDnI (veth ends)

// Runs `ip ARGS` (arguments made here, never from input): its output, or an
// error holding the command and what it printed.
Result<std::string> Ip(const std::string& args) {
  const std::string command = "ip " + args;
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  if (!f) return Err(Code::kIo, "cannot run `" + command + "`");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  const int status = ::pclose(f);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Err(Code::kIo, "`" + command + "` failed: " + out);
  }
  return out;
}

// The pid in a name "PREFIX<digits>...", or 0.
int PidIn(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return 0;
  int pid = 0;
  for (size_t i = prefix.size(); i < name.size() && name[i] >= '0' && name[i] <= '9' && pid < 100'000'000; ++i) {
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

bool Alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// The first word of each line of `text` (`ip netns list`: "NAME (id: N)").
std::vector<std::string> FirstWords(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w;
    if (words >> w) out.push_back(w);
  }
  return out;
}

// Link names in `ip -o link show` ("3: NAME@PEER: <...> ...").
std::vector<std::string> LinkNames(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(": ");
    if (a == std::string::npos) continue;
    const size_t b = line.find_first_of(":@", a + 2);
    if (b == std::string::npos) continue;
    out.push_back(line.substr(a + 2, b - a - 2));
  }
  return out;
}

}  // namespace

void VirtualHosts::RemoveLeftovers() {
  if (auto list = Ip("netns list")) {
    for (const auto& ns : FirstWords(*list)) {
      const int pid = PidIn(ns, kNamespacePrefix);
      if (pid > 0 && !Alive(pid)) (void)Ip("netns delete " + ns);
    }
  }
  if (auto links = Ip("-o link show")) {
    for (const auto& link : LinkNames(*links)) {
      const int pid = PidIn(link, kLinkPrefix);
      // The veth ends went with their namespaces: what is left is the bridge (or a half-made pair).
      if (pid > 0 && !Alive(pid)) (void)Ip("link delete " + link);
    }
  }
}

Result<std::unique_ptr<VirtualHosts>> VirtualHosts::Create(int hosts) {
  if (::geteuid() != 0) {
    return Err(Code::kUnavailable, "network namespaces need root (run the test as root, as CI does)");
  }
  if (hosts < 1 || hosts > 200) return Err(Code::kInvalidArgument, "VirtualHosts: 1 to 200 hosts");
  if (auto probe = Ip("netns list"); !probe) {
    return Err(Code::kUnavailable, "`ip netns` is unavailable (install iproute2): " + probe.error().message());
  }
  RemoveLeftovers();
  std::unique_ptr<VirtualHosts> v(new VirtualHosts());
  if (Status s = v->Build(hosts); !s.ok()) return Err(s);  // the destructor removes what was made
  return v;
}

Status VirtualHosts::Build(int hosts) {
  pid_ = static_cast<int>(::getpid());
  const std::string tag = std::to_string(pid_);
  // A /24 no interface here is on (10.213.N.0).
  auto addresses = Ip("-o addr show");
  if (!addresses) return addresses.error();
  auto routes = Ip("route show");
  if (!routes) return routes.error();
  for (int i = 0; i < 254 && subnet_.empty(); ++i) {
    const std::string candidate = "10.213." + std::to_string((pid_ + i) % 254 + 1) + ".";
    if (addresses->find(candidate) == std::string::npos && routes->find(candidate) == std::string::npos) {
      subnet_ = candidate;
    }
  }
  if (subnet_.empty()) return Status(Code::kUnavailable, "no free 10.213.N.0/24 subnet for the test network");
  bridge_address_ = subnet_ + "1";

  bridge_ = kLinkPrefix + tag + "b";
  if (auto r = Ip("link add " + bridge_ + " type bridge"); !r) {
    bridge_.clear();
    return r.error();
  }
  for (const auto& args : {"addr add " + bridge_address_ + "/24 dev " + bridge_, "link set " + bridge_ + " up"}) {
    if (auto r = Ip(args); !r) return r.error();
  }
  for (int i = 0; i < hosts; ++i) {
    const std::string ns = kNamespacePrefix + tag + "-h" + std::to_string(i);
    const std::string outer = kLinkPrefix + tag + "h" + std::to_string(i);
    const std::string inner = kLinkPrefix + tag + "n" + std::to_string(i);
    if (auto r = Ip("netns add " + ns); !r) return r.error();
    namespaces_.push_back(ns);
    if (auto r = Ip("link add " + outer + " type veth peer name " + inner); !r) return r.error();
    host_links_.push_back(outer);
    for (const auto& args : {
             "link set " + outer + " master " + bridge_ + " up",
             "link set " + inner + " netns " + ns,
             "-n " + ns + " addr add " + host_address(i) + "/24 dev " + inner,
             "-n " + ns + " link set " + inner + " up",
             "-n " + ns + " link set lo up",
         }) {
      if (auto r = Ip(args); !r) return r.error();
    }
  }
  return {};
}

VirtualHosts::~VirtualHosts() { Teardown(); }

void VirtualHosts::Teardown() {
  // Deleting a namespace deletes the veth end inside it, and so its pair.
  for (const auto& ns : namespaces_) (void)Ip("netns delete " + ns);
  for (const auto& link : host_links_) (void)Ip("link delete " + link);  // fails (harmlessly) once gone
  if (!bridge_.empty()) (void)Ip("link delete " + bridge_);
  namespaces_.clear();
  host_links_.clear();
  bridge_.clear();
}

std::string VirtualHosts::host_address(int i) const { return subnet_ + std::to_string(10 + i); }

std::vector<std::string> VirtualHosts::Exec(int i, std::vector<std::string> argv) const {
  std::vector<std::string> out = {"ip", "netns", "exec", namespace_name(i)};
  out.insert(out.end(), std::make_move_iterator(argv.begin()), std::make_move_iterator(argv.end()));
  return out;
}

Status VirtualHosts::SetLink(int i, bool up) {
  if (i < 0 || i >= size()) return Status(Code::kInvalidArgument, "VirtualHosts: no host " + std::to_string(i));
  auto r = Ip("link set " + host_links_[static_cast<size_t>(i)] + (up ? " up" : " down"));
  return r ? Status() : r.error();
}

}  // namespace shoal::testing
