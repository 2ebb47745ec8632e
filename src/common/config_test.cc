#include "common/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace shoal {

TEST(Config, EmptyIsValidDefaults) {
  auto c = ParseConfig("", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->cluster.shard_size, 64u << 20);
  EXPECT_EQ(c->worker.page_size, 1u << 20);
  EXPECT_TRUE(c->client.ufs_fallback);
}

TEST(Config, FullRoundTrip) {
  const char* text = R"(
cluster:
  shard_size: 8MiB
  workers: [127.0.0.1:7001, 127.0.0.1:7002]
mounts:
  - path: /data/
    ufs: file:///srv/datasets/
    consistency: immutable
  - path: /s3
    ufs: s3://bucket/prefix/
    consistency: ttl=30s
    options:
      endpoint: http://127.0.0.1:4568
worker:
  page_size: 256KiB
  cache_dirs:
    - path: /tmp/c1
      capacity: 1GiB
  verify_checksums: false
client:
  timeout: 3s
  ufs_fallback: false
  verify_checksums: false
)";
  auto c = ParseConfig(text, "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->cluster.workers.size(), 2u);
  EXPECT_EQ(c->mounts[0].path, "/data");
  EXPECT_EQ(c->mounts[0].consistency, Consistency::kImmutable);
  EXPECT_EQ(c->mounts[1].consistency, Consistency::kTtl);
  EXPECT_EQ(c->mounts[1].ttl.count(), 30'000);
  EXPECT_EQ(c->mounts[1].options.at("endpoint"), "http://127.0.0.1:4568");
  EXPECT_EQ(c->worker.page_size, 256u << 10);
  EXPECT_EQ(c->worker.cache_dirs.at(0).capacity, 1ull << 30);
  EXPECT_EQ(c->client.timeout.count(), 3000);
  EXPECT_FALSE(c->client.ufs_fallback);
  EXPECT_EQ(c->worker.verify, "off") << "the old key verify_checksums: false still turns the checks off";
  EXPECT_FALSE(c->client.verify_checksums);
  EXPECT_EQ(Config().worker.verify, "once") << "pages are verified once, then trusted while unchanged, by default";
  EXPECT_TRUE(Config().client.verify_checksums);

  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString() << "\n" << ToYaml(*c);
  EXPECT_EQ(ToYaml(*again), ToYaml(*c));
}

TEST(Config, WriteModePerMountDefaultsToCacheThroughAndAcceptsWriteBack) {
  auto c = ParseConfig(
      "mounts:\n  - {path: /a, ufs: 'file:///a/', write_mode: through}\n"
      "  - {path: /b, ufs: 'file:///b/'}\n  - {path: /c, ufs: 'file:///c/', write_mode: cache-through}\n",
      "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->mounts[0].write_mode, WriteMode::kThrough);
  EXPECT_EQ(c->mounts[1].write_mode, WriteMode::kCacheThrough);
  EXPECT_EQ(c->mounts[2].write_mode, WriteMode::kCacheThrough);
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->mounts[0].write_mode, WriteMode::kThrough);

  auto wb = ParseConfig(
      "mounts:\n  - {path: /a, ufs: 'file:///a/', write_mode: write-back, write_back_replicas: 3}\n"
      "worker: {write_back_max_pending: 1GiB, write_back_takeover: 5s}\n",
      "wb.yaml");
  ASSERT_TRUE(wb) << wb.error().ToString();
  EXPECT_EQ(wb->mounts[0].write_mode, WriteMode::kWriteBack);
  EXPECT_EQ(wb->mounts[0].write_back_replicas, 3);
  EXPECT_EQ(wb->worker.write_back_max_pending, 1ull << 30);
  EXPECT_EQ(wb->worker.write_back_takeover, std::chrono::seconds(5));
  auto wb2 = ParseConfig(ToYaml(*wb), "wb2.yaml");
  ASSERT_TRUE(wb2) << wb2.error().ToString();
  EXPECT_EQ(wb2->mounts[0].write_mode, WriteMode::kWriteBack);
  EXPECT_EQ(wb2->mounts[0].write_back_replicas, 3);
  EXPECT_EQ(wb2->worker.write_back_max_pending, 1ull << 30);
  EXPECT_EQ(wb2->worker.write_back_takeover, std::chrono::seconds(5));
  auto zero = ParseConfig(
      "mounts:\n  - {path: /a, ufs: 'file:///a/', write_mode: write-back, write_back_replicas: 0}\n", "zero.yaml");
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message().find("mounts[0].write_back_replicas"), std::string::npos) << zero.error().message();
  auto bad = ParseConfig("mounts:\n  - {path: /a, ufs: 'file:///a/', write_mode: sometimes}\n", "bad.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("'sometimes'"), std::string::npos) << bad.error().message();
}

TEST(Config, ClusterSecretIsCheckedExpandedAndNeverCopiedFromTheEnvironment) {
  auto c = ParseConfig("cluster:\n  secret: 0123456789abcdef0123\n", "s.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->cluster.secret, "0123456789abcdef0123");
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->cluster.secret, c->cluster.secret);

  ::setenv("SHOAL_TEST_SECRET", "fedcba9876543210fedcba", 1);
  auto env = ParseConfig("cluster:\n  secret: ${SHOAL_TEST_SECRET}\n", "env.yaml");
  ASSERT_TRUE(env) << env.error().ToString();
  EXPECT_EQ(env->cluster.secret, "fedcba9876543210fedcba");
  EXPECT_EQ(ToYaml(*env).find("fedcba"), std::string::npos) << ToYaml(*env);
  EXPECT_NE(ToYaml(*env).find("${SHOAL_TEST_SECRET}"), std::string::npos) << ToYaml(*env);
  ::unsetenv("SHOAL_TEST_SECRET");

  EXPECT_EQ(ParseConfig("", "e.yaml")->cluster.secret, "") << "no secret unless configured";
  for (auto [bad, expect] : {std::pair{"cluster:\n  secret: short\n", "at least 16"},
                             std::pair{"cluster:\n  secret: 'has a space in it 0123'\n", "printable"},
                             std::pair{"cluster:\n  secret: ${SHOAL_UNSET_SECRET_X}\n", "SHOAL_UNSET_SECRET_X"}}) {
    auto r = ParseConfig(bad, "bad.yaml");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("cluster.secret"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(expect), std::string::npos) << r.error().message();
  }
}

TEST(Config, EvictionWatermarksDefaultOnAndMustBeInOrder) {
  auto d = ParseConfig("", "t.yaml");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->worker.eviction_high_watermark, 98);
  EXPECT_EQ(d->worker.eviction_low_watermark, 96);
  auto c = ParseConfig("worker:\n  eviction_high_watermark: 80\n  eviction_low_watermark: 60\n", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->worker.eviction_high_watermark, 80);
  EXPECT_EQ(again->worker.eviction_low_watermark, 60);
  EXPECT_TRUE(ParseConfig("worker:\n  eviction_high_watermark: 0\n", "t.yaml")) << "0: off";
  auto bad = ParseConfig("worker:\n  eviction_high_watermark: 80\n  eviction_low_watermark: 85\n", "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("worker.eviction_low_watermark"), std::string::npos) << bad.error().message();
  EXPECT_FALSE(ParseConfig("worker:\n  eviction_high_watermark: 101\n", "t.yaml"));
}

TEST(Config, VerifyModeAndScrubberKnobsRoundTripAndBadModesAreRefused) {
  auto c = ParseConfig("worker:\n  verify: always\n  scrub_rate: 0\n  scrub_interval: 1h\n", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->worker.verify, "always");
  EXPECT_EQ(again->worker.scrub_rate, 0u) << "0: the scrubber is off";
  EXPECT_EQ(again->worker.scrub_interval, std::chrono::hours(1));
  EXPECT_GT(Config().worker.scrub_rate, 0u) << "the scrubber runs by default";
  auto bad = ParseConfig("worker:\n  verify: sometimes\n", "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("once, always or off"), std::string::npos) << bad.error().message();
}

TEST(Config, ErrorsNameKeyAndLine) {
  auto c = ParseConfig("worker:\n  page_size: 1MiB\n  cache_dirz: []\n", "t.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("t.yaml:3"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("worker.cache_dirz"), std::string::npos) << c.error().message();

  auto d = ParseConfig("client:\n  timeout: forever\n", "t.yaml");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message().find("t.yaml:2"), std::string::npos) << d.error().message();
  EXPECT_NE(d.error().message().find("client.timeout"), std::string::npos) << d.error().message();
}

TEST(Config, RejectsNestedMounts) {
  auto c = ParseConfig("mounts:\n - {path: /a, ufs: 'file:///x'}\n - {path: /a/b, ufs: 'file:///y'}\n", "t.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("nest"), std::string::npos) << c.error().message();
}

TEST(Config, RejectsBadPageSize) {
  auto c = ParseConfig("worker: {page_size: 3000}\n", "t.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("page_size"), std::string::npos);
}

TEST(Config, WorkerEntriesCarryStableIds) {
  auto c = ParseConfig("cluster:\n  workers: [w-a@127.0.0.1:7001, '[::1]:7002']\n", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_EQ(c->cluster.workers.size(), 2u);
  EXPECT_EQ(c->cluster.workers[0], (WorkerEntry{"w-a", "127.0.0.1:7001"}));
  EXPECT_EQ(c->cluster.workers[1], (WorkerEntry{"[::1]:7002", "[::1]:7002"}));  // no id: the address is the id
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->cluster.workers, c->cluster.workers);

  auto dup = ParseConfig("cluster:\n  workers: [w@127.0.0.1:1, w@127.0.0.1:2]\n", "t.yaml");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message().find("listed twice"), std::string::npos) << dup.error().message();
  EXPECT_FALSE(ParseConfig("cluster:\n  workers: ['bad id@127.0.0.1:1']\n", "t.yaml"));
  EXPECT_FALSE(ParseConfig("cluster:\n  workers: ['@127.0.0.1:1']\n", "t.yaml"));

  auto line = ParseListeningLine(ListeningLine({"w-1f", "127.0.0.1:4000"}));
  ASSERT_TRUE(line) << line.error().ToString();
  EXPECT_EQ(*line, (WorkerEntry{"w-1f", "127.0.0.1:4000"}));
  EXPECT_FALSE(ParseListeningLine("listening: 127.0.0.1:4000"));
}

TEST(Config, OptionValuesReferToEnvironmentVariablesAndStayReferences) {
  ::setenv("SHOAL_TEST_CONFIG_SECRET", "s3cr3t-value", 1);
  const char* text = R"(
mounts:
  - path: /s3
    ufs: s3://bucket/p/
    options:
      access_key_id: AK
      secret_access_key: "${SHOAL_TEST_CONFIG_SECRET}"
      endpoint: "http://${SHOAL_TEST_CONFIG_HOST}:9000"
)";
  ::setenv("SHOAL_TEST_CONFIG_HOST", "127.0.0.1", 1);
  auto c = ParseConfig(text, "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->mounts[0].options.at("secret_access_key"), "s3cr3t-value");
  EXPECT_EQ(c->mounts[0].options.at("endpoint"), "http://127.0.0.1:9000");
  EXPECT_EQ(c->mounts[0].options.at("access_key_id"), "AK");
  // Written back as written: the secret's value never reaches a file.
  std::string yaml = ToYaml(*c);
  EXPECT_EQ(yaml.find("s3cr3t-value"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("${SHOAL_TEST_CONFIG_SECRET}"), std::string::npos) << yaml;
  auto again = ParseConfig(yaml, "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->mounts[0].options, c->mounts[0].options);

  ::unsetenv("SHOAL_TEST_CONFIG_SECRET");
  auto unset = ParseConfig(text, "t.yaml");
  ASSERT_FALSE(unset);
  EXPECT_EQ(unset.error().code(), Code::kInvalidArgument);
  EXPECT_NE(unset.error().message().find("t.yaml:7"), std::string::npos) << unset.error().message();
  EXPECT_NE(unset.error().message().find("environment variable SHOAL_TEST_CONFIG_SECRET"), std::string::npos)
      << unset.error().message();
  EXPECT_FALSE(ParseConfig("mounts: [{path: /a, ufs: 'file:///a/', options: {k: '${1BAD}'}}]\n", "t.yaml"));
  EXPECT_FALSE(ParseConfig("mounts: [{path: /a, ufs: 'file:///a/', options: {k: 'x${OPEN'}}]\n", "t.yaml"));
  ::unsetenv("SHOAL_TEST_CONFIG_HOST");
}

TEST(Config, UnreadableFileIsAConfigError) {
  auto c = LoadConfig("/nonexistent/shoal.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), Code::kInvalidArgument) << "a config error exits 2, as the README says";
  EXPECT_NE(c.error().message().find("/nonexistent/shoal.yaml"), std::string::npos);
}

}  // namespace shoal

namespace shoal {
namespace {

TEST(Config, S3SectionRoundTripsAndIsLeftOutWhenUnset) {
  ::setenv("SHOAL_TEST_S3_SECRET", "s3cr3t", 1);
  auto c = ParseConfig(R"(
s3:
  listen: 127.0.0.1:9100
  region: eu-west-1
  credentials: {AKTEST: "${SHOAL_TEST_S3_SECRET}"}
  buckets: {images: /data/images}
  public_buckets: [images]
  max_clock_skew: 5m
  staging_dir: /var/tmp/uploads
)",
                       "s3.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->s3.listen, "127.0.0.1:9100");
  EXPECT_EQ(c->s3.region, "eu-west-1");
  EXPECT_EQ(c->s3.credentials.at("AKTEST"), "s3cr3t");
  EXPECT_EQ(c->s3.buckets.at("images"), "/data/images");
  EXPECT_EQ(c->s3.public_buckets, std::vector<std::string>{"images"});
  EXPECT_EQ(c->s3.max_clock_skew, std::chrono::minutes(5));
  EXPECT_EQ(c->s3.staging_dir, "/var/tmp/uploads");
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->s3, c->s3);

  auto bad = ParseConfig("s3:\n  credential: {a: b}\n", "bad.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("s3.credential"), std::string::npos) << bad.error().message();
  EXPECT_EQ(ToYaml(Config{}).find("s3:"), std::string::npos);
}

TEST(Config, AuthzSectionRoundTripsIsCheckedAndIsLeftOutWhenUnset) {
  ::setenv("SHOAL_TEST_RANGER_PW", "r4nger", 1);
  auto c = ParseConfig(R"(
authz:
  ranger_url: https://ranger:6182
  ranger_service: hadoopdev
  ranger_user: shoal
  ranger_password: ${SHOAL_TEST_RANGER_PW}
  poll_interval: 10s
  fallback: allow
  admin_groups: [ops, sre]
  status_open: false
  audit: all
  audit_failure: allow
  audit_file: /var/log/shoal/
  audit_max_bytes: 1MiB
  audit_keep: 3
)",
                       "authz.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_TRUE(c->authz.enabled());
  EXPECT_EQ(c->authz.ranger_password, "r4nger");
  EXPECT_EQ(c->authz.poll_interval, std::chrono::seconds(10));
  EXPECT_EQ(c->authz.admin_groups, (std::vector<std::string>{"ops", "sre"}));
  EXPECT_FALSE(c->authz.status_open);
  EXPECT_EQ(c->authz.audit_max_bytes, 1u << 20);
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->authz, c->authz);
  EXPECT_FALSE(Config{}.authz.enabled());
  EXPECT_EQ(ToYaml(Config{}).find("authz:"), std::string::npos);
  for (const char* bad : {"authz: {fallback: maybe}", "authz: {audit: some}", "authz: {ranger_url: http://r}",
                          "authz: {policy_file: p, poll_interval: 10ms}", "authz: {polcy_file: p}"}) {
    auto r = ParseConfig(bad, "bad.yaml");
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_NE(r.error().message().find("authz"), std::string::npos) << r.error().message();
    }
  }
}

TEST(Config, S3UsersHaveAKeyASecretAndGroupsAndRoundTrip) {
  ::setenv("SHOAL_TEST_ALICE_SECRET", "alice-s3cr3t", 1);
  auto c = ParseConfig(R"(
s3:
  users:
    alice: {access_key: AKALICE, secret_key: "${SHOAL_TEST_ALICE_SECRET}", groups: [ml, vision]}
    bob: {access_key: AKBOB, secret_key: bob-secret}
)",
                       "users.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_EQ(c->s3.users.size(), 2u);
  EXPECT_EQ(c->s3.users.at("alice").access_key, "AKALICE");
  EXPECT_EQ(c->s3.users.at("alice").secret_key, "alice-s3cr3t");
  EXPECT_EQ(c->s3.users.at("alice").groups, (std::vector<std::string>{"ml", "vision"}));
  EXPECT_TRUE(c->s3.users.at("bob").groups.empty());
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->s3, c->s3);

  for (const char* bad : {
           "s3:\n  users:\n    alice: {access_key: AK}\n",                                // no secret
           "s3:\n  users:\n    \"al ice\": {access_key: AK, secret_key: s}\n",            // not a name
           "s3:\n  users:\n    a: {access_key: AK, secret_key: s, groups: [\"x;y\"]}\n",  // not a group
           "s3:\n  users:\n    a: {access_key: AK, secret_key: s}\n    b: {access_key: AK, secret_key: t}\n",
           "s3:\n  users:\n    a: {access_key: AK, secret_key: s, group: [x]}\n",  // a misspelt key
       }) {
    auto r = ParseConfig(bad, "bad.yaml");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("s3.users"), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace shoal

namespace shoal {

TEST(Config, EvictionPolicyIsReadWrittenAndEmptyByDefault) {
  EXPECT_EQ(Config().worker.eviction, "") << "no name: the page store's default policy";
  auto c = ParseConfig("worker:\n  eviction: s3fifo\n", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->worker.eviction, "s3fifo");
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->worker.eviction, "s3fifo");
  EXPECT_EQ(ToYaml(Config()).find("eviction"), std::string::npos) << "left out when unset, for older workers";
  auto bad = ParseConfig("worker:\n  eviction: [lru]\n", "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("worker.eviction"), std::string::npos) << bad.error().message();
}

TEST(Config, PageStoreLayoutIsReadWrittenAndChecked) {
  EXPECT_EQ(Config().worker.page_store, "files");
  auto c = ParseConfig("worker:\n  page_store: blocks\n", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->worker.page_store, "blocks");
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->worker.page_store, "blocks");
  EXPECT_EQ(ToYaml(Config()).find("page_store"), std::string::npos) << "left out when the default, for older workers";
  auto bad = ParseConfig("worker:\n  page_store: slabs\n", "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("worker.page_store"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("files or blocks"), std::string::npos) << bad.error().message();
}

namespace {

TEST(Config, EtcdMembershipKeysRoundTripAndAreChecked) {
  auto c = ParseConfig(R"(
cluster:
  etcd:
    endpoints: [http://127.0.0.1:2379/, http://10.0.0.2:2379]
    prefix: /shoal/prod/
    lease_ttl: 3s
    timeout: 2s
)",
                       "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->cluster.etcd.endpoints, (std::vector<std::string>{"http://127.0.0.1:2379", "http://10.0.0.2:2379"}));
  EXPECT_EQ(c->cluster.etcd.prefix, "/shoal/prod");
  EXPECT_EQ(c->cluster.etcd.lease_ttl, std::chrono::seconds(3));
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->cluster.etcd, c->cluster.etcd);
  EXPECT_EQ(ParseConfig("", "t.yaml")->cluster.etcd.lease_ttl, std::chrono::seconds(10));

  auto bad_url = ParseConfig("cluster:\n  etcd:\n    endpoints: [127.0.0.1:2379]\n", "t.yaml");
  ASSERT_FALSE(bad_url);
  EXPECT_NE(bad_url.error().message().find("cluster.etcd.endpoints"), std::string::npos);
  auto short_ttl = ParseConfig("cluster:\n  etcd:\n    lease_ttl: 500ms\n", "t.yaml");
  ASSERT_FALSE(short_ttl);
  EXPECT_NE(short_ttl.error().message().find("at least 1s"), std::string::npos);
  EXPECT_FALSE(ParseConfig("cluster:\n  etcd:\n    prefix: shoal\n", "t.yaml"));
  EXPECT_FALSE(ParseConfig("cluster:\n  etcd:\n    endpoint: [http://x:1]\n", "t.yaml"));  // unknown key
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

TEST(Config, HotShardKeysRoundTripAndAreChecked) {
  EXPECT_EQ(Config().worker.hot_shard_rps, 500);
  auto c = ParseConfig("worker:\n  hot_shard_rps: 40\n  hot_shard_window: 200ms\n", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->worker.hot_shard_rps, 40);
  EXPECT_EQ(c->worker.hot_shard_window, std::chrono::milliseconds(200));
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->worker.hot_shard_rps, 40);
  EXPECT_EQ(again->worker.hot_shard_window, std::chrono::milliseconds(200));
  EXPECT_EQ(ToYaml(Config()).find("hot_shard"), std::string::npos) << "left out when unset, for older workers";
  for (const char* bad : {"worker: {hot_shard_rps: -1}\n", "worker: {hot_shard_window: 0s}\n"}) {
    auto b = ParseConfig(bad, "t.yaml");
    ASSERT_FALSE(b) << bad;
    EXPECT_NE(b.error().message().find("worker.hot_shard"), std::string::npos) << b.error().message();
  }
}

TEST(Config, NonScalarKeyIsAConfigError) {
  // Found by fuzz/config.cc: yaml-cpp's conversion of such a key used to throw out of ParseConfig.
  for (const char* text : {"cluster:\n  ? [a, b]\n  : x\n", "? {a: 1}\n: 2\n"}) {
    auto c = ParseConfig(text, "k.yaml");
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().message().find("a key must be a plain name"), std::string::npos) << c.error().ToString();
  }
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

TEST(Config, LogFormatRoundTripsAndOnlyTextOrJsonIsTaken) {
  auto c = ParseConfig("log:\n  format: json\n", "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->log.format, "json");
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->log.format, "json");
  EXPECT_EQ(ParseConfig("", "t.yaml")->log.format, "text");
  auto bad = ParseConfig("log:\n  format: xml\n", "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("log.format"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

TEST(Config, EgressPriceIsPerMountWithADefaultByStore) {
  auto c = ParseConfig(
      "mounts:\n"
      "  - {path: /lake, ufs: 's3://bucket/x/'}\n"
      "  - {path: /cheap, ufs: 's3://other/', egress_price_per_gb: 0.02}\n"
      "  - {path: /local, ufs: 'file:///srv/data/'}\n",
      "t.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_DOUBLE_EQ(EgressPricePerGb(c->mounts[0]), kDefaultEgressPricePerGb);
  EXPECT_DOUBLE_EQ(EgressPricePerGb(c->mounts[1]), 0.02);
  EXPECT_DOUBLE_EQ(EgressPricePerGb(c->mounts[2]), 0.0);
  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString() << ToYaml(*c);
  EXPECT_DOUBLE_EQ(EgressPricePerGb(again->mounts[1]), 0.02);
  EXPECT_LT(again->mounts[0].egress_price_per_gb, 0) << "a default is not written out as a setting";
  for (const char* bad : {"-1", "abc", "0.09USD", "5000"}) {
    auto b = ParseConfig(std::string("mounts:\n  - {path: /d, ufs: 's3://b/', egress_price_per_gb: '") + bad + "'}\n",
                         "b.yaml");
    ASSERT_FALSE(b) << bad;
    EXPECT_NE(b.error().message().find("egress_price_per_gb"), std::string::npos) << b.error().message();
  }
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

// A key that is a mapping or a list (YAML's "? key" form) where a name is
// expected is a clear error, not an exception out of the parser (fuzz finding
// of config's long run, kept as fuzz/crashes/config/non-scalar-option-name).
TEST(Config, KeysThatAreNotPlainNamesAreRefusedWhereTheyStand) {
  const char* cases[] = {
      "mounts:\n  - path: /s3\n    ufs: s3://b/p/\n    options:\n      ? {endpoint: x}\n      : y\n",
      "mounts:\n  - path: /s3\n    ufs: s3://b/p/\n    options:\n      ? [a, b]\n      : y\n",
  };
  for (const char* text : cases) {
    auto c = ParseConfig(text, "t.yaml");
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().message().find("a key must be a plain name"), std::string::npos) << c.error().message();
    EXPECT_NE(c.error().message().find("options"), std::string::npos) << c.error().message();
  }
}

TEST(Config, OptionNamesOtherThanPlainNamesAreRefusedAndPlainOnesReadBackEqual) {
  // fuzz/crashes/config/toyaml-option-names-not-read-back-equal: a name of
  // control and non-UTF-8 bytes came back quoted and escaped through ToYaml.
  const std::string bad[] = {
      "mounts:\n  - path: /s3\n    ufs: s3://b/p/\n    options:\n      endpo\xff\xffint: http://x\n",
      "mounts:\n  - path: /s3\n    ufs: s3://b/p/\n    options:\n      \"e\\x1edpoint\": http://x\n",
      "mounts:\n  - path: /s3\n    ufs: s3://b/p/\n    options:\n      \"end point\": http://x\n",
      "mounts:\n  - path: /s3\n    ufs: s3://b/p/\n    options:\n      \"\": http://x\n",
  };
  for (const std::string& text : bad) {
    auto c = ParseConfig(text, "t.yaml");
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().message().find("an option name is letters, digits"), std::string::npos) << c.error().message();
    EXPECT_NE(c.error().message().find("t.yaml"), std::string::npos) << c.error().message();
  }
  auto c = ParseConfig(
      "mounts:\n  - path: /s3\n    ufs: s3://b/p/\n    options:\n      endpoint: http://127.0.0.1:9000\n"
      "      max_retries: '3'\n      region: us-east-1\n",
      "t.yaml");
  ASSERT_TRUE(c) << c.error().message();
  const std::string yaml = ToYaml(*c);
  auto again = ParseConfig(yaml, "ToYaml");
  ASSERT_TRUE(again) << again.error().message() << "\n" << yaml;
  EXPECT_EQ(ToYaml(*again), yaml);
  EXPECT_EQ(again->mounts.at(0).options, c->mounts.at(0).options);
  EXPECT_EQ(again->mounts.at(0).options.size(), 3u);
}

}  // namespace
}  // namespace shoal
