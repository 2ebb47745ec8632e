// VirtualHosts: several "hosts" on one machine for multi-host tests, each a
// network namespace of its own, joined by veth pairs to a bridge in the
// test's namespace (which keeps the bridge's address: the host of the store,
// etcd and the reader). A host's link can be cut and restored
// (`ip link set ... down/up` on its veth), as a pulled cable would.
//
//   auto hosts = VirtualHosts::Create(3);
//   if (!hosts && hosts.error().code() == Code::kUnavailable) GTEST_SKIP() << hosts.error().message();
//   argv = hosts->Exec(0, {shoal, "worker", "--listen", hosts->host_address(0) + ":0", ...});
//   hosts->SetLink(0, false);
//
// Names carry the test's pid (namespaces "shoalnt-PID-hI", links "shntPID..."),
// so concurrent runs do not collide, and the subnet is a 10.213.N.0/24 that no
// interface of this machine uses. Everything is removed by the destructor,
// also when a test fails; Create() first removes what a crashed run (a pid
// that no longer exists) left behind. Traffic stays on the bridge: nothing is
// routed or forwarded off the machine.
//
// Needs root and iproute2 with `ip netns`; Create() fails with kUnavailable,
// saying which, when either is missing.
//
// Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal::testing {

class VirtualHosts {
 public:
  static Result<std::unique_ptr<VirtualHosts>> Create(int hosts);
  ~VirtualHosts();

  VirtualHosts(const VirtualHosts&) = delete;
  VirtualHosts& operator=(const VirtualHosts&) = delete;

  // The address of the test's own side of the bridge ("10.213.N.1").
  const std::string& bridge_address() const { return bridge_address_; }
  // The address of host i ("10.213.N.(10+i)").
  std::string host_address(int i) const;
  const std::string& namespace_name(int i) const { return namespaces_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(namespaces_.size()); }

  // `argv` run inside host i: {"ip", "netns", "exec", NS, argv...}.
  std::vector<std::string> Exec(int i, std::vector<std::string> argv) const;

  // Brings host i's link to the bridge down (cut) or up (restored).
  Status SetLink(int i, bool up);

  // Deletes the namespaces and links of runs whose process is gone.
  static void RemoveLeftovers();

 private:
  VirtualHosts() = default;
  Status Build(int hosts);
  void Teardown();

  int pid_ = 0;
  std::string bridge_;
  std::string subnet_;  // "10.213.N."
  std::string bridge_address_;
  std::vector<std::string> namespaces_;
  std::vector<std::string> host_links_;  // the bridge side of each veth pair
};

}  // namespace shoal::testing
