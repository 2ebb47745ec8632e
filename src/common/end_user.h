// The end user a request is made for: the process behind a FUSE call, the
// owner of an S3 access key. A door that authenticates as itself (a mount's
// service token, the S3 endpoint's credential) names this user to the workers
// in X-Shoal-On-Behalf-Of, and the workers authorize that user, not the door.
//
// Held per thread: a door sets it (ActingFor) around the calls it makes for
// the user, and TaskPool carries it into the tasks submitted meanwhile.
#pragma once

#include <sys/types.h>

#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

struct EndUser {
  std::string user;
  std::vector<std::string> groups;
};

// The end user of this thread's current call; null when the caller acts as itself.
const std::shared_ptr<const EndUser>& CurrentEndUser();

// For threads a door owns (a FUSE session's): sets the end user of the
// thread's next calls until set again.
void SetCurrentEndUser(std::shared_ptr<const EndUser> user);

// Sets the thread's end user for its lifetime, then puts back the one before.
class ActingFor {
 public:
  explicit ActingFor(std::shared_ptr<const EndUser> user);
  ~ActingFor();
  ActingFor(const ActingFor&) = delete;
  ActingFor& operator=(const ActingFor&) = delete;

 private:
  std::shared_ptr<const EndUser> previous_;
};

// The door a process's requests come through ("native" unless the process
// says otherwise: "fuse", "s3", "python", "cli"), sent to the workers in
// X-Shoal-Door for their metrics and audit lines. A label, not a credential.
inline constexpr std::string_view kDoorHeader = "X-Shoal-Door";
// A request's id, sent by clients that have one, kept in the worker's audit line.
inline constexpr std::string_view kRequestIdHeader = "X-Shoal-Request-Id";
void SetDoorName(std::string_view door);
std::string_view DoorName();
// The doors a client may declare (X-Shoal-Door, or a short-circuit hello):
// the labels of the workers' per-client metrics and audit lines. Any other
// name counts as "other": a label from the network is untrusted.
inline constexpr std::string_view kClientDoors[] = {"native", "cli",           "fuse", "s3",
                                                    "python", "short-circuit", "load", "other"};
inline constexpr size_t kClientDoorCount = std::size(kClientDoors);
// The index of `door` in kClientDoors (that of "other" for an unknown name).
size_t ClientDoorIndex(std::string_view door);

// Whether `name` can travel in the header: 1-256 bytes of letters, digits and
// `._@-+=$\` (user and group names of POSIX, LDAP and cloud directories).
bool IsHeaderSafeName(std::string_view name);

// "alice;groups=a,b": the header's value. Groups with names the header
// cannot carry are left out (a group never grants more by being dropped,
// only a deny on it would be missed: the authorization issue denies such
// users by name instead). Empty when the user's own name cannot travel.
std::string OnBehalfValue(const EndUser& user);

// The host's name for `uid` (its passwd entry, getpwuid_r), or the number
// when it has none. When the entry is found and `primary_gid` is given, its
// primary group is stored there (else it is left alone).
std::string UserNameOf(uid_t uid, gid_t* primary_gid = nullptr);

}  // namespace shoal
