// The mount table in etcd (issue 14): `shoal mount publish` writes a config's
// mounts there; workers and clients whose config names only the etcd
// endpoints read them, a mount published later is found at its first use, and
// store credentials reach the workers but never a client. A real etcd and
// real workers (tests/etcd_workers.h).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cluster/etcd_client.h"
#include "meta/etcd_mounts.h"
#include "tests/etcd_workers.h"

namespace shoal::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class EtcdMountsTest : public EtcdWorkersTest {
 protected:
  // A config with only the cluster: etcd endpoints and the cluster secret, no mounts.
  Config EndpointsOnly() const {
    Config c = BaseConfig();
    c.mounts.clear();
    return c;
  }

  // `shoal mount publish --from FILE` for a config with `mounts` and this etcd.
  ::shoal::testing::Run Publish(const std::vector<MountConfig>& mounts, const std::string& name) {
    Config c = BaseConfig();
    c.mounts = mounts;
    const std::string file = root_ + "/" + name + ".yaml";
    EXPECT_TRUE(WriteFile(file, ToYaml(c)).ok());
    return Shoal({"mount", "publish", "--from", file});
  }
};

TEST_F(EtcdMountsTest, AClientWithOnlyTheEndpointsReadsAndSeesALaterMount) {
  const std::string data = RandomBytes(300 * 1024, 7);
  ASSERT_TRUE(WriteFile(root_ + "/ufs/a.bin", data).ok());
  auto published = Publish(BaseConfig().mounts, "data");
  ASSERT_EQ(published.exit_code, 0) << published.out << published.err;
  EXPECT_NE(published.out.find("published: /data -> file://"), std::string::npos) << published.out;

  // Neither the workers' config nor the client's lists a mount.
  const Config c = EndpointsOnly();
  StartWorker(c, "c0");
  StartWorker(c, "c1");
  auto client = NewClient(c, 2);
  ASSERT_TRUE(client);
  auto mounts = client->Mounts();
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].path, "/data");
  EXPECT_EQ(mounts[0].consistency, "immutable");
  auto got = ReadWholeFile(*client, "/data/a.bin");
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_TRUE(*got == data);

  // A mount published while everything runs is read at its first use.
  std::filesystem::create_directories(root_ + "/more");
  const std::string more = RandomBytes(100 * 1024, 8);
  ASSERT_TRUE(WriteFile(root_ + "/more/b.bin", more).ok());
  EXPECT_FALSE(ReadWholeFile(*client, "/more/b.bin")) << "a path outside every mount was read";
  MountConfig m = FileMount(root_ + "/more");
  m.path = "/more";
  published = Publish({m}, "more");
  ASSERT_EQ(published.exit_code, 0) << published.out << published.err;
  const auto t0 = Clock::now();
  Result<std::string> late = Err(Code::kNotFound, "not read yet");
  // The client and the worker each reload at most once a second.
  EXPECT_TRUE(WaitFor([&] { return (late = ReadWholeFile(*client, "/more/b.bin")).has_value(); }, 20s))
      << late.error().ToString();
  const auto seen_after = Clock::now() - t0;
  EXPECT_LE(seen_after, 5s) << "the new mount took " << std::chrono::duration<double>(seen_after).count() << " s";
  if (late) {
    EXPECT_TRUE(*late == more);
  }
  EXPECT_EQ(client->Mounts().size(), 2u);

  // `shoal mount list` with the endpoints-only config shows both.
  ASSERT_TRUE(WriteFile(root_ + "/client.yaml", ToYaml(c)).ok());
  auto list = Shoal({"mount", "list", "--config", root_ + "/client.yaml"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("/data"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("/more"), std::string::npos) << list.out;
}

TEST_F(EtcdMountsTest, StoreSecretsReachWorkersButNoClient) {
  const std::string secret = "never-for-clients-6f1e2d";
  MountConfig s3;
  s3.path = "/bucket";
  s3.ufs = "s3://bucket/prefix/";
  s3.options = {{"endpoint", "http://127.0.0.1:1"},
                {"region", "us-east-1"},
                {"access_key_id", "AKIDEXAMPLE"},
                {"secret_access_key", secret}};
  const Config c = EndpointsOnly();
  ASSERT_TRUE(PublishEtcdMounts(c.cluster.etcd, {s3}).ok());

  // What a client may read holds no secret; the secret sits under its own prefix.
  EtcdClient etcd(c.cluster.etcd.endpoints, 2s);
  auto open = etcd.RangePrefix(EtcdMountsPrefix(c.cluster.etcd));
  ASSERT_TRUE(open) << open.error().ToString();
  ASSERT_EQ(open->kvs.size(), 1u);
  EXPECT_EQ(open->kvs[0].value.find(secret), std::string::npos) << open->kvs[0].value;
  EXPECT_NE(open->kvs[0].value.find("AKIDEXAMPLE"), std::string::npos) << open->kvs[0].value;
  auto hidden = etcd.RangePrefix(EtcdMountSecretsPrefix(c.cluster.etcd));
  ASSERT_TRUE(hidden) << hidden.error().ToString();
  ASSERT_EQ(hidden->kvs.size(), 1u);
  EXPECT_NE(hidden->kvs[0].value.find(secret), std::string::npos);

  auto for_workers = ReadEtcdMounts(c.cluster.etcd, /*with_secrets=*/true);
  ASSERT_TRUE(for_workers) << for_workers.error().ToString();
  ASSERT_EQ(for_workers->size(), 1u);
  EXPECT_EQ(for_workers->at(0).options, s3.options);
  auto for_clients = ReadEtcdMounts(c.cluster.etcd, /*with_secrets=*/false);
  ASSERT_TRUE(for_clients) << for_clients.error().ToString();
  ASSERT_EQ(for_clients->size(), 1u);
  EXPECT_EQ(for_clients->at(0).options.count("secret_access_key"), 0u);
  EXPECT_EQ(for_clients->at(0).options.at("endpoint"), "http://127.0.0.1:1");

  // A client learns the mount, and the published table loses no field.
  StartWorker(c, "c0");
  auto client = NewClient(c, 1);
  ASSERT_TRUE(client);
  auto mounts = client->Mounts();
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].path, "/bucket");
  EXPECT_EQ(mounts[0].ufs, "s3://bucket/prefix/");
}

}  // namespace
}  // namespace shoal::testing
