#include "fuse/caller_user.h"

#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace shoal::fuse {
namespace {

using Clock = std::chrono::steady_clock;

// Distinct (uid, gid) pairs a mount sees are few; the bound only stops a
// host with many users from growing the cache without end.
constexpr size_t kMaxCached = 4096;
constexpr int kMaxGroups = 1024;

struct Cached {
  std::shared_ptr<const EndUser> user;
  Clock::time_point until;
};

std::string GroupName(gid_t gid) {
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  if (::getgrgid_r(gid, &g, buf.data(), buf.size(), &found) == 0 && found != nullptr) return found->gr_name;
  return std::to_string(gid);
}

std::shared_ptr<const EndUser> Lookup(uid_t uid, gid_t gid) {
  auto user = std::make_shared<EndUser>();
  std::vector<gid_t> gids{gid};
  constexpr gid_t kNoEntry = static_cast<gid_t>(-1);
  gid_t primary = kNoEntry;
  user->user = UserNameOf(uid, &primary);
  if (primary != kNoEntry) {  // the host knows the user: its groups too
    int n = kMaxGroups;
    gids.resize(static_cast<size_t>(n));
    // The passwd entry's primary group counts too (getgrouplist adds it); the caller's gid first.
    if (::getgrouplist(user->user.c_str(), primary, gids.data(), &n) < 0) n = 0;
    gids.resize(static_cast<size_t>(std::min(n, kMaxGroups)));
    gids.insert(gids.begin(), gid);
  }
  for (gid_t g : gids) {
    std::string name = GroupName(g);
    bool seen = false;
    for (const auto& have : user->groups) seen = seen || have == name;
    if (!seen) user->groups.push_back(std::move(name));
  }
  return user;
}

}  // namespace

std::shared_ptr<const EndUser> UserOfCaller(uid_t uid, gid_t gid) {
  static std::mutex mu;
  static std::map<std::pair<uid_t, gid_t>, Cached> cache;
  const auto key = std::make_pair(uid, gid);
  const auto now = Clock::now();
  {
    std::lock_guard lock(mu);
    auto it = cache.find(key);
    if (it != cache.end() && now < it->second.until) return it->second.user;
  }
  // Looked up outside the lock: a slow directory (LDAP) holds up only this caller.
  auto user = Lookup(uid, gid);
  std::lock_guard lock(mu);
  if (cache.size() >= kMaxCached) cache.clear();
  cache[key] = Cached{user, now + kCallerTtl};
  return user;
}

}  // namespace shoal::fuse
