#include <gtest/gtest.h>

#include "cache/policy/eviction_policy.h"

namespace shoal {

TEST(LruPolicy, OrdersByRecency) {
  auto p = std::move(*MakeEvictionPolicy("lru"));
  EXPECT_FALSE(p->Victim());
  for (uint32_t i = 0; i < 4; ++i) p->Insert(i);
  EXPECT_EQ(*p->Victim(), 0u);
  p->Touch(0);
  EXPECT_EQ(*p->Victim(), 1u);
  p->Erase(1);
  EXPECT_EQ(*p->Victim(), 2u);
  p->Demote(3);
  EXPECT_EQ(*p->Victim(), 3u);
  p->Erase(3);
  p->Erase(2);
  EXPECT_EQ(*p->Victim(), 0u);
  p->Erase(0);
  EXPECT_FALSE(p->Victim());
}

TEST(LruPolicy, UnknownNameIsClearError) {
  auto p = MakeEvictionPolicy("random");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("lru"), std::string::npos);
}

}  // namespace shoal
