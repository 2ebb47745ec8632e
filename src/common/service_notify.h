// Readiness for service managers: systemd's notify protocol (Type=notify),
// spoken directly, without libsystemd. When the service manager started us
// with $NOTIFY_SOCKET (a UNIX datagram socket; "@name" is in the abstract
// namespace), NotifyServiceManager sends it one datagram of "KEY=VALUE" lines
// ("READY=1", "STATUS=serving on 127.0.0.1:7000", "STOPPING=1"). Without the
// variable it does nothing: a worker started by hand or by `shoal up` is not
// affected.
#pragma once

#include <string_view>

#include "shoal/status.h"

namespace shoal {

// OK when sent or when there is no $NOTIFY_SOCKET; an error naming the socket
// otherwise (the caller logs it: a failed notification is not fatal to serving,
// though systemd then times the start out).
Status NotifyServiceManager(std::string_view state);

}  // namespace shoal
