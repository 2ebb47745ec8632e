#include "fuse/caller_user.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>

#include <algorithm>

namespace shoal::fuse {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(CallerUser, AUidIsNamedAsTheHostNamesItWithItsGroups) {
  // Cross-checked with the host's own answer (what `id -un` and `id -gn` print).
  passwd* pw = ::getpwuid(0);
  ASSERT_NE(pw, nullptr);
  group* gr = ::getgrgid(pw->pw_gid);
  ASSERT_NE(gr, nullptr);
  auto u = UserOfCaller(0, pw->pw_gid);
  EXPECT_EQ(u->user, pw->pw_name);
  ASSERT_FALSE(u->groups.empty());
  EXPECT_EQ(u->groups.front(), gr->gr_name);
  EXPECT_EQ(OnBehalfValue(*u).substr(0, u->user.size()), u->user);
}

TEST(CallerUser, TheCallersGidComesFirstEvenWhenItIsNotTheUsersOwn) {
  passwd* pw = ::getpwnam("nobody");
  if (pw == nullptr) GTEST_SKIP() << "no user nobody on this host";
  auto u = UserOfCaller(pw->pw_uid, 0);  // a setgid program run by nobody
  EXPECT_EQ(u->user, "nobody");
  ASSERT_FALSE(u->groups.empty());
  EXPECT_EQ(u->groups.front(), ::getgrgid(0)->gr_name);
  EXPECT_TRUE(Has(u->groups, ::getgrgid(pw->pw_gid)->gr_name));
}

TEST(CallerUser, AUidWithoutAnEntryIsNamedByItsNumber) {
  uid_t uid = 3'999'999'001u;
  ASSERT_EQ(::getpwuid(uid), nullptr);
  auto u = UserOfCaller(uid, 3'999'999'002u);
  EXPECT_EQ(u->user, "3999999001");
  EXPECT_EQ(u->groups, (std::vector<std::string>{"3999999002"}));
  // Cached: the same answer object.
  EXPECT_EQ(UserOfCaller(uid, 3'999'999'002u).get(), u.get());
}

}  // namespace
}  // namespace shoal::fuse
