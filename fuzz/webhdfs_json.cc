// What a WebHDFS namenode answers, read by hdfs:// mounts
// (src/ufs/webhdfs/webhdfs_client.cc): GETFILESTATUS, LISTSTATUS and
// LISTSTATUS_BATCH answers, RemoteException error bodies and {"boolean"}
// answers. Whatever reads as an entry must be one a store can join to its
// directory (no '/', NUL, "." or ".."), with a length below 2^63, and a batch
// that says more follow must move past where it started. The first byte picks
// a mode:
//   0: the rest is an answer as a namenode (or anything in front of it) sent it;
//   1: a LISTSTATUS_BATCH page the harness writes from fuzz-chosen names,
//      lengths and permissions: each sane entry reads back exactly, in order,
//      and a page with an insane one is refused.
#include <string>
#include <vector>

#include "common/utf8.h"
#include "fuzz_check.h"
#include "ufs/webhdfs/webhdfs_client.h"

namespace {

using namespace shoal;

void CheckEntry(const HdfsStatus& s) {
  FUZZ_CHECK(s.name != "." && s.name != ".." && s.name.find('/') == std::string::npos &&
                 s.name.find('\0') == std::string::npos,
             "an entry named '%s' was accepted", s.name.c_str());
  FUZZ_CHECK(s.length < (uint64_t{1} << 63), "a length of %llu was accepted",
             static_cast<unsigned long long>(s.length));
  FUZZ_CHECK(s.permission <= 01777, "a permission of %o was accepted", s.permission);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 256 * 1024) return 0;
  fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.Byte() % 2;
  if (mode == 0) {
    const std::string_view body = in.rest();
    if (auto s = ParseFileStatusAnswer(body)) CheckEntry(*s);
    for (bool batch : {true, false}) {
      for (std::string_view after : {std::string_view(), std::string_view("m")}) {
        auto l = ParseListingAnswer(body, batch, after);
        if (!l) continue;
        for (const auto& e : l->entries) CheckEntry(e);
        if (batch && l->more) {
          FUZZ_CHECK(!l->entries.empty() && l->entries.back().name != after, "a page that does not move on");
        }
        if (!batch && !after.empty()) {
          for (const auto& e : l->entries) FUZZ_CHECK(e.name > after, "LISTSTATUS kept an entry before startAfter");
        }
      }
    }
    auto e = ParseRemoteException(body);
    (void)e.exception.size();
    (void)ParseBooleanAnswer(body);
    return 0;
  }
  struct Written {
    std::string name;
    int64_t length;
    uint16_t perm;
    bool dir;
  };
  std::vector<Written> written;
  bool sane = true;
  for (int i = 0; i < 16 && in.rest().size() > 2; ++i) {
    Written w{std::string(in.Bytes(40)), in.Int<int64_t>(), static_cast<uint16_t>(in.Int<uint16_t>() & 07777),
              (in.Byte() & 1) != 0};
    if (!IsValidUtf8(w.name)) continue;
    sane = sane && w.name != "." && w.name != ".." && w.name.find('/') == std::string::npos &&
           w.name.find('\0') == std::string::npos && w.length >= 0;
    written.push_back(std::move(w));
  }
  const bool more = (in.Byte() & 1) != 0;
  std::string body = "{\"DirectoryListing\":{\"partialListing\":{\"FileStatuses\":{\"FileStatus\":[";
  for (size_t i = 0; i < written.size(); ++i) {
    char perm[8];
    std::snprintf(perm, sizeof perm, "%o", written[i].perm);
    body +=
        std::string(i ? "," : "") +
        "{\"accessTime\":0,\"blockSize\":134217728,\"childrenNum\":0,\"fileId\":" + std::to_string(16386 + i) +
        ",\"group\":\"supergroup\",\"length\":" + std::to_string(written[i].length) +
        ",\"modificationTime\":1700000000000,\"owner\":\"hdfs\",\"pathSuffix\":" + fuzz::JsonQuote(written[i].name) +
        ",\"permission\":\"" + perm + "\",\"replication\":1,\"storagePolicy\":0,\"type\":\"" +
        (written[i].dir ? "DIRECTORY" : "FILE") + "\"}";
  }
  body += "]}},\"remainingEntries\":" + std::string(more ? "3" : "0") + "}}";
  auto l = ParseListingAnswer(body, true, "");
  const bool moves_on = !more || (!written.empty() && !written.back().name.empty());
  if (!sane || !moves_on) {
    FUZZ_CHECK(!l, "a page with an entry no namenode sends, or that does not move on, was accepted");
    return 0;
  }
  FUZZ_CHECK(l.has_value(), "a sane page was refused: %s", l.error().message().c_str());
  FUZZ_CHECK(l->entries.size() == written.size() && l->more == more, "%zu entries read back, %zu written",
             l->entries.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    const auto& e = l->entries[i];
    const uint32_t perm = written[i].perm <= 01777 ? written[i].perm : 0;
    FUZZ_CHECK(e.name == written[i].name && e.length == static_cast<uint64_t>(written[i].length) &&
                   e.is_dir == written[i].dir && e.permission == perm && e.file_id == 16386 + i &&
                   e.mtime_ms == 1700000000000,
               "entry %zu does not read back as written", i);
  }
  return 0;
}
