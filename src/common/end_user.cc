#include "common/end_user.h"

#include <atomic>
#include <mutex>

#include <pwd.h>

#include <vector>

namespace shoal {
namespace {

thread_local std::shared_ptr<const EndUser> current_end_user;

constexpr size_t kMaxGroups = 256;

}  // namespace

const std::shared_ptr<const EndUser>& CurrentEndUser() { return current_end_user; }

void SetCurrentEndUser(std::shared_ptr<const EndUser> user) { current_end_user = std::move(user); }

ActingFor::ActingFor(std::shared_ptr<const EndUser> user) : previous_(std::move(current_end_user)) {
  current_end_user = std::move(user);
}

ActingFor::~ActingFor() { current_end_user = std::move(previous_); }

bool IsHeaderSafeName(std::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '@' || c == '-' || c == '+' || c == '=' || c == '$' || c == '\\';
    if (!ok) return false;
  }
  return true;
}

namespace {
std::atomic<const char*> g_door{"native"};
}  // namespace

void SetDoorName(std::string_view door) {
  // The few door names live for the process: kept, never freed.
  static std::mutex mu;
  static std::vector<std::unique_ptr<std::string>> names;
  std::lock_guard lock(mu);
  names.push_back(std::make_unique<std::string>(door));
  g_door.store(names.back()->c_str());
}

std::string_view DoorName() { return g_door.load(); }

size_t ClientDoorIndex(std::string_view door) {
  for (size_t i = 0; i + 1 < kClientDoorCount; ++i) {
    if (door == kClientDoors[i]) return i;
  }
  return kClientDoorCount - 1;
}

std::string OnBehalfValue(const EndUser& user) {
  if (!IsHeaderSafeName(user.user)) return {};
  std::string out = user.user;
  size_t n = 0;
  for (const auto& g : user.groups) {
    if (!IsHeaderSafeName(g) || n == kMaxGroups) continue;
    out += n++ == 0 ? ";groups=" : ",";
    out += g;
  }
  return out;
}

std::string UserNameOf(uid_t uid, gid_t* primary_gid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return std::to_string(uid);
  if (primary_gid) *primary_gid = found->pw_gid;
  return found->pw_name;
}

}  // namespace shoal
