// The address a worker gives other hosts (etcd membership, /v1/status, the
// `listening:` line): worker.advertise when set, else the address it bound,
// unless that is a wildcard (0.0.0.0 or ::), which no other host can
// connect to; then this host's first address that is not loopback.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"

namespace shoal {

// `advertise`: worker.advertise ("" = not set): HOST or HOST:PORT (an IPv6
// host in brackets); without a port, the bound one. `bound`: the listening
// socket's HOST:PORT. `host_addresses`: this host's addresses other hosts may
// reach, best first (HostAddresses()). Fails naming the setting to change.
Result<std::string> AdvertisedAddress(std::string_view advertise, std::string_view bound, uint16_t port,
                                      const std::vector<std::string>& host_addresses);

// This host's addresses on interfaces that are up and not loopback: IPv4
// first, then global IPv6 (in brackets), in interface order.
std::vector<std::string> HostAddresses();

}  // namespace shoal
