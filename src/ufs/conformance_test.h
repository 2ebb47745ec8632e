// One conformance suite for every UnderStore backend.
//
// A backend's test file instantiates it with a factory that returns a store
// rooted at a fresh, empty prefix (and whatever server the backend needs):
//
//   INSTANTIATE_TEST_SUITE_P(S3, UnderStoreConformance, ::testing::Values(StoreFactory{"s3", MakeFreshS3}));
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "ufs/under_store.h"

namespace shoal {

struct StoreFactory {
  std::string name;
  std::function<std::shared_ptr<UnderStore>()> make;  // a store at a fresh, empty root
  bool has_rename = false;                            // renames files (else kNotSupported)
  bool renames_dirs = false;                          // renames directories too
  bool keeps_metadata = false;                        // OpenWriter's metadata comes back from Metadata()
  bool keeps_modes = false;                           // SetAttributes keeps modes and times (else kNotSupported)
  // Where keeps_modes: the store's time resolution (WebHDFS: 1 ms), whether
  // it keeps a change time, and whether its version names the mtime (a
  // touch then makes cached pages of the file stale).
  int64_t mtime_granularity_ns = 1;
  bool keeps_ctime = true;
  bool version_names_mtime = false;
  bool keeps_owners = false;  // SetAttributes keeps owners and groups (file://, as root)
};

inline std::string PrintToString(const StoreFactory& f) { return f.name; }

// A new empty directory /tmp/shoal-NAME-XXXXXX, removed with everything in it
// when the test binary exits ("" if it could not be made).
std::string FreshTempDir(const std::string& name);

// A file:// store rooted at a FreshTempDir (nullptr if it could not be made).
std::shared_ptr<UnderStore> FreshLocalStore(const std::string& name);

// An object store opened with posix_attributes (ufs/posix_metadata.h): the
// checks every such backend passes, with `raw` the same store without the
// option (what another tool reading the bucket sees).
void CheckPosixAttributesInMetadata(UnderStore& store, UnderStore& raw);

class UnderStoreConformance : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    store_ = GetParam().make();
    ASSERT_NE(store_, nullptr);
  }
  std::shared_ptr<UnderStore> store_;
};

}  // namespace shoal
