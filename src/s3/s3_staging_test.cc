// SweepStaging: completed uploads go after their retry window, uploads with
// no part for a week go with their parts, and nothing else is touched.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "s3/s3_writes.h"

namespace shoal::s3 {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(StagingSweep, CompletedAfterTheirWindowAbandonedAfterAWeekNothingElse) {
  std::string made = (fs::temp_directory_path() / "shoal-s3-staging-XXXXXX").string();
  ASSERT_NE(::mkdtemp(made.data()), nullptr) << std::strerror(errno);
  const std::string staging = made;
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove{staging};
  const auto now = fs::file_time_type::clock::now();
  // An upload dir with one staged part; `completed_at` adds a "completed" file.
  auto upload = [&](char c, fs::file_time_type active, std::optional<fs::file_time_type> completed_at) {
    const std::string dir = staging + "/" + std::string(32, c);
    fs::create_directories(dir);
    std::ofstream(dir + "/1.part") << "part bytes";
    if (completed_at) {
      std::ofstream(dir + "/completed") << "etag";
      fs::last_write_time(dir + "/completed", *completed_at);
    }
    fs::last_write_time(dir, active);  // last: making the files moved it
    return dir;
  };
  const auto abandoned = upload('a', now - 8 * 24h, std::nullopt);
  const auto recent = upload('b', now - 6 * 24h, std::nullopt);
  const auto done_long_ago = upload('c', now - 1h, now - 20min);
  const auto done_just_now = upload('d', now - 1h, now - 1min);
  const auto busy = upload('e', now - 30 * 24h, std::nullopt);
  fs::create_directories(staging + "/not-an-upload");
  fs::last_write_time(staging + "/not-an-upload", now - 30 * 24h);

  auto swept = SweepStaging(staging, now, 15min, 7 * 24h, {std::string(32, 'e')});
  EXPECT_EQ(swept.abandoned, 1u);
  EXPECT_EQ(swept.completed, 1u);
  EXPECT_FALSE(fs::exists(abandoned)) << "no part for 8 days: aborted, its parts removed";
  EXPECT_TRUE(fs::exists(recent + "/1.part")) << "6 days: still an upload";
  EXPECT_FALSE(fs::exists(done_long_ago)) << "completed 20 minutes ago: past the retry window";
  EXPECT_TRUE(fs::exists(done_just_now)) << "a retried Complete is still answered from it";
  EXPECT_TRUE(fs::exists(busy)) << "a Complete is running on it";
  EXPECT_TRUE(fs::exists(staging + "/not-an-upload")) << "not Shoal's: never touched";
  // A second sweep finds nothing more.
  swept = SweepStaging(staging, now, 15min, 7 * 24h, {});
  EXPECT_EQ(swept.abandoned, 1u) << "the busy one, once no Complete runs on it";
  EXPECT_EQ(swept.completed, 0u);
  EXPECT_FALSE(fs::exists(busy));
}

}  // namespace
}  // namespace shoal::s3
