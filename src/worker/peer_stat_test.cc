// The cache-only stat answer a worker takes from a peer: what Encode writes
// Decode reads back, and every malformed or inconsistent answer is refused.
#include "worker/peer_stat.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

namespace shoal {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

MetadataCache::AgedStat Entry(std::string etag = "abc123") {
  MetadataCache::AgedStat s;
  s.info.key = "train/0001.jpg";
  s.info.size = 123'456;
  s.info.mtime_ns = 1'700'000'000'000'000'000;
  s.info.etag = std::move(etag);
  s.info.mode = 0750;
  s.info.ctime_ns = 1'700'000'001'000'000'007;
  s.age = 1500ms;
  return s;
}

const std::string kPath = "/data/train/0001.jpg";

TEST(PeerStat, WhatIsEncodedDecodesToTheSameEntry) {
  for (const std::string etag : {"abc123", ""}) {  // an object store's ETag, or mtime+size
    auto s = Entry(etag);
    auto d = peer_stat::Decode(peer_stat::Encode(kPath, s), kPath, "train/0001.jpg");
    ASSERT_TRUE(d) << d.error().ToString();
    EXPECT_EQ(d->info.key, "train/0001.jpg");
    EXPECT_EQ(d->info.size, s.info.size);
    EXPECT_EQ(d->info.mtime_ns, s.info.mtime_ns);
    EXPECT_EQ(d->info.Version(), s.info.Version());
    EXPECT_EQ(d->info.mode, 0750u);
    EXPECT_EQ(d->info.ctime_ns, s.info.ctime_ns);
    EXPECT_FALSE(d->info.is_dir);
    EXPECT_EQ(d->age, 1500ms);
  }
  auto dir = Entry("");
  dir.info.is_dir = true;
  auto d = peer_stat::Decode(peer_stat::Encode("/data/train", dir), "/data/train", "train");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_TRUE(d->info.is_dir);
}

TEST(PeerStat, TheAgeIsRoundedUpNeverDown) {
  auto s = Entry();
  s.age = 1500ms + std::chrono::microseconds(1);
  auto d = peer_stat::Decode(peer_stat::Encode(kPath, s), kPath, "k");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->age, 1501ms) << "the taker must never see an entry younger than it is";
}

// Each field broken in turn: every answer is refused with a message naming the field.
TEST(PeerStat, MalformedOrInconsistentAnswersAreRefused) {
  const Json good = Json::parse(peer_stat::Encode(kPath, Entry()));
  struct Case {
    const char* what;
    std::function<void(Json&)> spoil;
    const char* names;
  };
  const std::vector<Case> cases = {
      {"another path", [](Json& j) { j["path"] = "/data/other"; }, "another path"},
      {"no path", [](Json& j) { j.erase("path"); }, "'path'"},
      {"is_dir a string", [](Json& j) { j["is_dir"] = "no"; }, "'is_dir'"},
      {"negative size", [](Json& j) { j["size"] = -1; }, "'size'"},
      {"size past off_t", [](Json& j) { j["size"] = (1ull << 63); }, "'size'"},
      {"size a float", [](Json& j) { j["size"] = 1.5; }, "'size'"},
      {"mtime past int64", [](Json& j) { j["mtime_ns"] = (1ull << 63); }, "'mtime_ns'"},
      {"no etag", [](Json& j) { j.erase("etag"); }, "'etag'"},
      {"a huge etag", [](Json& j) { j["etag"] = std::string(2000, 'e'); }, "'etag'"},
      {"a huge version", [](Json& j) { j["version"] = std::string(2000, 'v'); }, "'version'"},
      {"a version the fields do not make", [](Json& j) { j["version"] = "other"; }, "'version'"},
      {"a directory with a version", [](Json& j) { j["is_dir"] = true; }, "'version'"},
      {"a negative age", [](Json& j) { j["age_ms"] = -5; }, "'age_ms'"},
      {"an age past ten years", [](Json& j) { j["age_ms"] = 400ull * 24 * 3600 * 1000 * 365; }, "'age_ms'"},
      {"an age as a string", [](Json& j) { j["age_ms"] = "5"; }, "'age_ms'"},
      {"no age", [](Json& j) { j.erase("age_ms"); }, "'age_ms'"},
      {"a mode past the permission bits", [](Json& j) { j["mode"] = 0100644; }, "'mode'"},
      {"a negative mode", [](Json& j) { j["mode"] = -1; }, "'mode'"},
      {"a ctime past int64", [](Json& j) { j["ctime_ns"] = (1ull << 63); }, "'ctime_ns'"},
      {"a ctime as a string", [](Json& j) { j["ctime_ns"] = "1"; }, "'ctime_ns'"},
  };
  for (const auto& c : cases) {
    Json j = good;
    c.spoil(j);
    auto d = peer_stat::Decode(j.dump(), kPath, "k");
    ASSERT_FALSE(d) << c.what << " was taken";
    EXPECT_EQ(d.error().code(), Code::kInvalidArgument) << c.what;
    EXPECT_NE(d.error().message().find(c.names), std::string::npos) << c.what << ": " << d.error().message();
    EXPECT_NE(d.error().message().find(kPath), std::string::npos) << c.what << ": " << d.error().message();
  }
  for (const std::string& garbage :
       std::vector<std::string>{"", "not json", "[1,2]", "\"s\"", "{\"path\":", std::string(70'000, ' ')}) {
    EXPECT_FALSE(peer_stat::Decode(garbage, kPath, "k")) << garbage.substr(0, 20);
  }
}

}  // namespace
}  // namespace shoal
