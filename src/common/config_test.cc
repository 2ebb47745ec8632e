#include "common/config.h"

#include <gtest/gtest.h>

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
  EXPECT_FALSE(c->worker.verify_checksums);
  EXPECT_FALSE(c->client.verify_checksums);
  EXPECT_TRUE(Config().worker.verify_checksums) << "checksums are verified by default";
  EXPECT_TRUE(Config().client.verify_checksums);

  auto again = ParseConfig(ToYaml(*c), "again.yaml");
  ASSERT_TRUE(again) << again.error().ToString() << "\n" << ToYaml(*c);
  EXPECT_EQ(ToYaml(*again), ToYaml(*c));
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

}  // namespace shoal
