#include "ufs/posix_metadata.h"

#include <gtest/gtest.h>

#include "common/config.h"

namespace shoal {
namespace {

TEST(PosixMetadata, TimesReadAsS3fsAndRcloneWriteThem) {
  EXPECT_EQ(FormatMetadataTime(1'700'000'000'000'000'000), "1700000000");
  EXPECT_EQ(FormatMetadataTime(1'700'000'000'250'000'000), "1700000000.25");
  EXPECT_EQ(FormatMetadataTime(1'577'934'245'123'456'789), "1577934245.123456789");
  EXPECT_EQ(FormatMetadataTime(-1'500'000'000), "-1.5");
  EXPECT_EQ(FormatMetadataTime(INT64_MIN), "-9223372036.854775808");
  for (int64_t ns :
       {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{1'577'934'245'123'456'789}, int64_t{-1'500'000'000}}) {
    EXPECT_EQ(ParseMetadataTime(FormatMetadataTime(ns)), ns) << ns;
  }
  EXPECT_EQ(ParseMetadataTime("1700000000"), 1'700'000'000'000'000'000);    // s3fs
  EXPECT_EQ(ParseMetadataTime("1700000000.5"), 1'700'000'000'500'000'000);  // rclone
  for (const char* bad : {"", ".", "1.", ".5", "1.1234567890", "+1", "1e9", " 1", "1 ", "x", "-",
                          "99999999999999999999", "9223372037", "1.-5"}) {
    EXPECT_FALSE(ParseMetadataTime(bad)) << bad;
  }
}

TEST(PosixMetadata, ValuesOtherToolsWroteDifferentlyAreIgnored) {
  FileInfo f;
  f.mtime_ns = 42;
  ApplyPosixMetadata({{"mode", "rw-r--r--"}, {"uid", "-1"}, {"gid", "4294967295"}, {"mtime", "yesterday"}}, f);
  EXPECT_EQ(f.mode, 0u);
  EXPECT_EQ(f.uid, -1);
  EXPECT_EQ(f.gid, -1);
  EXPECT_EQ(f.mtime_ns, 42);
  // A directory's st_mode on a file is not the file's.
  ApplyPosixMetadata({{"mode", std::to_string(040755)}}, f);
  EXPECT_EQ(f.mode, 0u);
  ApplyPosixMetadata({{"mode", std::to_string(0100640)}, {"uid", "1000"}, {"gid", "0"}, {"mtime", "1.5"}}, f);
  EXPECT_EQ(f.mode, 0640u);
  EXPECT_EQ(f.uid, 1000);
  EXPECT_EQ(f.gid, 0);
  EXPECT_EQ(f.mtime_ns, 1'500'000'000);
  ApplyPosixMetadata({{"mode", "420"}}, f);  // permission bits alone
  EXPECT_EQ(f.mode, 0644u);
}

TEST(PosixMetadata, AChangeReplacesItsFieldsAndKeepsTheTimeShownBefore) {
  UserMetadata user{{"k", "v"}, {"mode", "33188"}};
  SetPosixMetadata({.mode = 0600, .mtime_ns = std::nullopt}, 1'000'000'000, user);
  const UserMetadata want{{"k", "v"}, {"mode", std::to_string(0100600)}, {"mtime", "1"}};
  EXPECT_EQ(user, want) << "a mode alone keeps the Last-Modified the object had as its time";
  SetPosixMetadata({.mode = std::nullopt, .mtime_ns = 2'500'000'000, .uid = 7, .gid = 8}, 9'000'000'000, user);
  const UserMetadata want2{{"k", "v"}, {"mode", std::to_string(0100600)}, {"mtime", "2.5"}, {"uid", "7"}, {"gid", "8"}};
  EXPECT_EQ(user, want2);
  FileInfo f;
  ApplyPosixMetadata(user, f);
  EXPECT_EQ(f.mode, 0600u);
  EXPECT_EQ(f.mtime_ns, 2'500'000'000);
  EXPECT_EQ(f.uid, 7);
  EXPECT_EQ(f.gid, 8);
}

TEST(PosixMetadata, OnlyObjectStoreMountsThatAskKeepThem) {
  MountConfig m;
  m.ufs = "s3://b/";
  EXPECT_FALSE(KeepsPosixMetadata(m));
  m.options["posix_attributes"] = "true";
  EXPECT_TRUE(KeepsPosixMetadata(m));
  m.options["posix_attributes"] = "off";
  EXPECT_FALSE(KeepsPosixMetadata(m));
  m.options["posix_attributes"] = "yes";
  m.ufs = "file:///srv/data/";
  EXPECT_FALSE(KeepsPosixMetadata(m)) << "file:// keeps them in the files themselves";
}

}  // namespace
}  // namespace shoal
