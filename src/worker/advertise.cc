#include "worker/advertise.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cctype>
#include <charconv>

namespace shoal {
namespace {

constexpr size_t kMaxHostLen = 253;

bool IsWildcard(std::string_view host) { return host == "0.0.0.0" || host == "[::]" || host == "::" || host.empty(); }

// A host name or an address: letters, digits, '.', '-', ':' (IPv6, inside brackets).
bool ValidHost(std::string_view host) {
  if (host.empty() || host.size() > kMaxHostLen) return false;
  std::string_view inner = host;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    inner = host.substr(1, host.size() - 2);
    for (char ch : inner) {
      if (!std::isxdigit(static_cast<unsigned char>(ch)) && ch != ':' && ch != '.') return false;
    }
    return true;
  }
  for (char ch : inner) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-') return false;
  }
  return true;
}

}  // namespace

Result<std::string> AdvertisedAddress(std::string_view advertise, std::string_view bound, uint16_t port,
                                      const std::vector<std::string>& host_addresses) {
  const std::string port_text = std::to_string(port);
  if (!advertise.empty()) {
    std::string_view host = advertise;
    std::string_view port_part;
    // HOST:PORT, [V6]:PORT, [V6] or HOST (a bare IPv6 address needs brackets).
    if (auto close = advertise.rfind(']'); advertise.front() == '[' && close != std::string_view::npos) {
      host = advertise.substr(0, close + 1);
      if (close + 1 < advertise.size()) {
        if (advertise[close + 1] != ':') host = advertise;  // rejected below
        port_part = advertise.substr(close + 2);
      }
    } else if (auto colon = advertise.rfind(':'); colon != std::string_view::npos) {
      host = advertise.substr(0, colon);
      port_part = advertise.substr(colon + 1);
    }
    unsigned long p = port;
    if (!port_part.empty() || (advertise.back() == ':')) {
      auto [end, ec] = std::from_chars(port_part.data(), port_part.data() + port_part.size(), p);
      if (ec != std::errc() || end != port_part.data() + port_part.size() || p == 0 || p > 65535) {
        return Err(Code::kInvalidArgument, "worker.advertise '" + std::string(advertise) +
                                               "': the port must be 1-65535 (or leave it out to use the bound port " +
                                               port_text + ")");
      }
    }
    if (!ValidHost(host) || IsWildcard(host)) {
      return Err(Code::kInvalidArgument,
                 "worker.advertise '" + std::string(advertise) +
                     "' is not HOST, HOST:PORT or [IPv6]:PORT that other hosts can connect to (e.g. 10.0.0.5 or "
                     "node-3.example:9000)");
    }
    return std::string(host) + ":" + std::to_string(p);
  }
  auto colon = bound.rfind(':');
  std::string_view host = colon == std::string_view::npos ? bound : bound.substr(0, colon);
  if (!IsWildcard(host)) return std::string(bound);
  if (host_addresses.empty()) {
    return Err(Code::kInvalidArgument,
               "worker.listen " + std::string(bound) +
                   " listens on every interface, and this host has no address other than loopback to give other "
                   "hosts: set worker.advertise to the HOST[:PORT] they should connect to");
  }
  return host_addresses.front() + ":" + port_text;
}

std::vector<std::string> HostAddresses() {
  std::vector<std::string> v4, v6;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      if (::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text)) v4.emplace_back(text);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr) || IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) continue;
      if (::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text)) v6.push_back("[" + std::string(text) + "]");
    }
  }
  ::freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

}  // namespace shoal
