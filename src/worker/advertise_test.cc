#include "worker/advertise.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

TEST(AdvertiseTest, ASpecificListenAddressIsAdvertisedAsIs) {
  auto a = AdvertisedAddress("", "127.0.0.1:4000", 4000, {"10.0.0.5"});
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(*a, "127.0.0.1:4000");
}

TEST(AdvertiseTest, AWildcardListenAdvertisesTheHostsFirstAddress) {
  for (const char* bound : {"0.0.0.0:4000", "[::]:4000"}) {
    auto a = AdvertisedAddress("", bound, 4000, {"10.0.0.5", "[2001:db8::1]"});
    ASSERT_TRUE(a) << a.error().ToString();
    EXPECT_EQ(*a, "10.0.0.5:4000") << bound;
  }
}

TEST(AdvertiseTest, AWildcardListenOnAHostWithOnlyLoopbackIsAClearError) {
  auto a = AdvertisedAddress("", "0.0.0.0:4000", 4000, {});
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message().find("worker.advertise"), std::string::npos) << a.error().message();
}

TEST(AdvertiseTest, TheSettingWinsAndTakesTheBoundPortWhenItNamesNone) {
  struct Case {
    const char* advertise;
    const char* want;
  };
  for (const Case& c : {Case{"10.1.2.3", "10.1.2.3:4000"}, Case{"node-3.example:9000", "node-3.example:9000"},
                        Case{"[2001:db8::7]", "[2001:db8::7]:4000"}, Case{"[2001:db8::7]:81", "[2001:db8::7]:81"}}) {
    auto a = AdvertisedAddress(c.advertise, "0.0.0.0:4000", 4000, {});
    ASSERT_TRUE(a) << c.advertise << ": " << a.error().ToString();
    EXPECT_EQ(*a, c.want);
  }
}

TEST(AdvertiseTest, BadSettingsAreRefusedNamingTheKey) {
  for (const char* bad : {"0.0.0.0", "host:0", "host:70000", "host:x", "host:", "ho st", "a/b:80", "[::1", "[::]:80",
                          "[2001:db8::7]x"}) {
    auto a = AdvertisedAddress(bad, "127.0.0.1:4000", 4000, {});
    ASSERT_FALSE(a) << bad << " gave " << *a;
    EXPECT_NE(a.error().message().find("worker.advertise"), std::string::npos) << a.error().message();
  }
}

TEST(AdvertiseTest, HostAddressesHoldNoLoopback) {
  for (const auto& a : HostAddresses()) {
    EXPECT_NE(a, "127.0.0.1");
    EXPECT_NE(a, "[::1]");
    EXPECT_FALSE(a.empty());
  }
}

}  // namespace
}  // namespace shoal
