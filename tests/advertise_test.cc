// worker.advertise: a worker that listens on every interface (0.0.0.0) gives
// other hosts an address they can connect to, in etcd and in its status:
// the configured one, or this host's first non-loopback address; never the
// wildcard, which a client on another host would take for itself.
#include <gtest/gtest.h>

#include "tests/etcd_workers.h"
#include "worker/advertise.h"

namespace shoal::testing {
namespace {

class WorkerAdvertiseTest : public EtcdWorkersTest {
 protected:
  // A file under /data, and a client of `c` that reads it through the only worker.
  void ExpectReadThrough(const Config& c, const std::string& address) {
    const std::string data = RandomBytes(300 * 1024, 7);
    ASSERT_TRUE(WriteFile(root_ + "/ufs/f", data).ok());
    auto client = NewClient(c, 1);
    ASSERT_TRUE(client);
    ASSERT_EQ(client->Ring().members.size(), 1u);
    EXPECT_EQ(client->Ring().members[0].address, address);
    auto got = ReadWholeFile(*client, "/data/f");
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_TRUE(*got == data);
    EXPECT_GT(Sum("shoal_ufs_read_bytes_total", {address}), 0) << "the read did not reach the worker";
  }
};

TEST_F(WorkerAdvertiseTest, AWildcardListenerRegistersTheAddressItIsGiven) {
  Config c = BaseConfig();
  c.worker.advertise = "127.0.0.3";  // a loopback address of its own, which 0.0.0.0 also serves
  StartWorker(c, "cache", "0.0.0.0:0");
  ASSERT_EQ(entries_.size(), 1u);
  EXPECT_TRUE(entries_[0].address.starts_with("127.0.0.3:")) << entries_[0].address;
  ExpectReadThrough(c, entries_[0].address);
}

TEST_F(WorkerAdvertiseTest, AWildcardListenerWithoutTheSettingRegistersAHostAddressOrRefusesToStart) {
  Config c = BaseConfig();
  const auto host = HostAddresses();
  if (host.empty()) {
    // Only loopback here: the worker must not register 0.0.0.0; it stops, naming the setting.
    std::string config = root_ + "/worker.yaml";
    ASSERT_TRUE(WriteFile(config, ToYaml(c)).ok());
    shoal::testing::Run r = Shoal({"worker", "--config", config, "--listen", "0.0.0.0:0", "--cache-dir", root_ + "/cache",
                   "--cache-size", "64MiB"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("worker.advertise"), std::string::npos) << r.err;
    return;
  }
  StartWorker(c, "cache", "0.0.0.0:0");
  ASSERT_EQ(entries_.size(), 1u);
  EXPECT_TRUE(entries_[0].address.starts_with(host.front() + ":")) << entries_[0].address;
  ExpectReadThrough(c, entries_[0].address);
}

TEST_F(WorkerAdvertiseTest, ABadSettingStopsTheWorkerNamingIt) {
  Config c = BaseConfig();
  c.worker.advertise = "host:70000";
  std::string config = root_ + "/worker.yaml";
  ASSERT_TRUE(WriteFile(config, ToYaml(c)).ok());
  shoal::testing::Run r = Shoal({"worker", "--config", config, "--listen", "127.0.0.1:0", "--cache-dir", root_ + "/cache",
                 "--cache-size", "64MiB"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("worker.advertise 'host:70000'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace shoal::testing
