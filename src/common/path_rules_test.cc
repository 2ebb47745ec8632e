#include "common/path_rules.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

PathRule Rule(std::string path, std::initializer_list<std::pair<const char*, const char*>> fields) {
  PathRule r = EmptyRule(std::move(path));
  for (auto [f, v] : fields) {
    auto st = SetRuleField(&r, f, v);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return r;
}

TEST(PathRules, LongestPrefixSetsEachFieldAndDefaultsFillTheRest) {
  auto rules = PathRules::Make({Rule("/data", {{"priority", "low"}, {"ttl", "1h"}}),
                                Rule("/data/val", {{"pin", "true"}, {"priority", "high"}}),
                                Rule("/data/val/tmp", {{"pin", "false"}, {"admission", "skip"}}),
                                Rule("/data-x", {{"pin", "true"}})});
  ASSERT_TRUE(rules) << rules.error().ToString();

  auto none = rules->For("/other/file");
  EXPECT_EQ(none, EffectiveRule{});

  auto data = rules->For("/data/train/0001.jpg");
  EXPECT_FALSE(data.pin);
  EXPECT_EQ(data.priority, Priority::kLow);
  EXPECT_EQ(data.ttl, std::chrono::hours(1));
  EXPECT_TRUE(data.admit);

  auto val = rules->For("/data/val/x.jpg");
  EXPECT_TRUE(val.pin);
  EXPECT_EQ(val.priority, Priority::kHigh);
  EXPECT_EQ(val.ttl, std::chrono::hours(1)) << "inherited from /data";

  auto tmp = rules->For("/data/val/tmp/y");
  EXPECT_FALSE(tmp.pin) << "the inner rule turns the pin off again";
  EXPECT_FALSE(tmp.admit);
  EXPECT_EQ(tmp.priority, Priority::kHigh);

  // A prefix matches at a '/' boundary only: /data-x is not under /data, and
  // /data/valid is not under /data/val.
  EXPECT_TRUE(rules->For("/data-x/a").pin);
  EXPECT_EQ(rules->For("/data-x/a").priority, Priority::kMedium);
  EXPECT_FALSE(rules->For("/data/valid").pin);
  EXPECT_TRUE(rules->For("/data/val").pin) << "the prefix itself";
}

TEST(PathRules, QuotasOfEveryMatchingPrefixApplyOutermostFirst) {
  auto rules = PathRules::Make({Rule("/t/a/scratch", {{"quota", "1GiB"}}), Rule("/t/a", {{"quota", "10GiB"},
                                {"cluster_quota", "1TiB"}}), Rule("/t", {{"pin", "true"}})});
  ASSERT_TRUE(rules);
  auto e = rules->For("/t/a/scratch/f");
  ASSERT_EQ(e.quotas.size(), 2u);
  EXPECT_EQ(rules->rules()[e.quotas[0]].path, "/t/a");
  EXPECT_EQ(*rules->rules()[e.quotas[0]].cluster_quota, 1ull << 40);
  EXPECT_EQ(*rules->rules()[e.quotas[1]].quota, 1ull << 30);
  EXPECT_EQ(rules->For("/t/b").quotas.size(), 0u);
  ASSERT_NE(rules->Find("/t/a"), nullptr);
  EXPECT_EQ(rules->Find("/t/a/"), nullptr);
}

TEST(PathRules, RootRuleCoversEverythingAndDuplicatesAreRefused) {
  auto rules = PathRules::Make({Rule("/", {{"priority", "low"}}), Rule("/a", {{"replicas", "3"}})});
  ASSERT_TRUE(rules);
  EXPECT_EQ(rules->For("/a/b").priority, Priority::kLow);
  EXPECT_EQ(rules->For("/a/b").replicas, 3);
  EXPECT_FALSE(rules->For("/b").replicas);

  auto dup = PathRules::Make({Rule("/a", {{"pin", "true"}}), Rule("/a/", {{"ttl", "1s"}})});
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message().find("two rules for '/a'"), std::string::npos) << dup.error().message();
  EXPECT_FALSE(PathRules::Make({Rule("relative", {})}));
}

TEST(PathRules, FieldErrorsNameTheFieldAndWhatItTakes) {
  PathRule r = EmptyRule("/a");
  for (auto [field, value, expect] :
       {std::tuple{"pin", "maybe", "true or false"}, std::tuple{"priority", "urgent", "high, medium or low"},
        std::tuple{"ttl", "0s", "more than 0"}, std::tuple{"ttl", "soon", "not a duration"},
        std::tuple{"quota", "0", "more than 0"}, std::tuple{"admission", "never", "skip"},
        std::tuple{"replicas", "0", "1 to 16"}, std::tuple{"replicas", "2x", "1 to 16"},
        std::tuple{"colour", "red", "unknown rule field 'colour'"}, std::tuple{"write_mode", "later", "through"}}) {
    auto st = SetRuleField(&r, field, value);
    ASSERT_FALSE(st.ok()) << field << "=" << value;
    EXPECT_NE(st.message().find(expect), std::string::npos) << st.message();
    const std::string quoted = "'" + std::string(value) + "'";
    const size_t first = st.message().find(quoted);
    EXPECT_EQ(st.message().find(quoted, first == std::string::npos ? 0 : first + 1), std::string::npos)
        << "the value is named twice: " << st.message();
  }
  EXPECT_EQ(r, EmptyRule("/a")) << "a refused value changes nothing";
  ASSERT_TRUE(SetRuleField(&r, "ttl", "30m").ok());
  ASSERT_TRUE(SetRuleField(&r, "ttl", "").ok());
  EXPECT_FALSE(r.ttl) << "an empty value unsets the field";
}

TEST(PathRules, ConfigRulesParseValidateAndRoundTrip) {
  const char* text = R"(
rules:
  - path: /data/val/
    pin: true
    priority: high
  - path: /data/scratch
    ttl: 6h
    quota: 1536KiB
    cluster_quota: 20GiB
    admission: cache
  - {path: /data/tmp, admission: skip, replicas: 2, write_mode: through}
)";
  auto c = ParseConfig(text, "r.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_EQ(c->rules.size(), 3u);
  EXPECT_EQ(c->rules[0].path, "/data/scratch") << "sorted by path";
  EXPECT_EQ(c->rules[2].path, "/data/val") << "normalised";
  EXPECT_EQ(*c->rules[0].quota, 1536u << 10);
  EXPECT_EQ(c->rules[1].write_mode, WriteMode::kThrough);
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString() << "\n" << ToYaml(*c);
  EXPECT_EQ(again->rules, c->rules);

  for (auto [bad, expect] : {std::pair{"rules: {path: /a}", "expected a list"},
                             std::pair{"rules:\n  - {pin: true}", "rules[0].path"},
                             std::pair{"rules:\n  - {path: /a}", "sets nothing"},
                             std::pair{"rules:\n  - {path: a, pin: true}", "absolute"},
                             std::pair{"rules:\n  - {path: /a, pin: true}\n  - {path: /a/, ttl: 1h}", "two rules"},
                             std::pair{"rules:\n  - {path: /a, ttl: forever}", "rules[0].ttl"},
                             std::pair{"rules:\n  - {path: /a, size: 1}", "unknown rule field 'size'"}}) {
    auto r = ParseConfig(bad, "bad.yaml");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find(expect), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("bad.yaml:"), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace shoal
