// The write-back journal read back after a crash (worker/writeback_records.h,
// what WritebackJournal::Replay trusts). The first byte picks a mode:
//   0: the rest is journal.log as found on disk;
//   1: the rest is a history the harness writes with the real encoders
//      (commits, puts with inline bytes, dones, over a few ids), then tears:
//      cuts the file at a fuzz-chosen byte or changes one byte. Replay must
//      give exactly the writes committed, and not done, by the records before
//      the damage, each once, in the order they were committed.
// Either way, every id replay returns must name a file inside the journal's
// directory (<id>.data), since replay writes and deletes files by it.
#include <algorithm>
#include <map>

#include "fuzz_check.h"
#include "ufs/write_options_codec.h"
#include "worker/writeback_records.h"

namespace {

using namespace shoal;
namespace wr = shoal::writeback_records;

void CheckIds(const wr::Replayed& r) {
  std::vector<std::string> seen;
  for (const auto& c : r.commits) {
    FUZZ_CHECK(c.id.size() == 32 && c.id.find_first_not_of("0123456789abcdef") == std::string::npos,
               "replay returned write id '%s', which is not 32 hex digits (its data file is <dir>/<id>.data)",
               c.id.c_str());
    FUZZ_CHECK(std::find(seen.begin(), seen.end(), c.id) == seen.end(), "replay returned write %s twice", c.id.c_str());
    seen.push_back(c.id);
  }
}

std::string Id(int i) {
  std::string id(32, '0');
  id[31] = static_cast<char>('a' + i);
  return id;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 256 * 1024) return 0;
  fuzz::FuzzInput in(data, size);
  if (in.Byte() % 2 == 0) {
    auto r = wr::Parse(in.rest());
    FUZZ_CHECK(r.valid_bytes <= in.rest().size(), "valid_bytes %zu past %zu", r.valid_bytes, in.rest().size());
    CheckIds(r);
    for (const auto& [id, bytes] : r.inline_data) {
      auto it = std::find_if(r.commits.begin(), r.commits.end(), [&](const auto& c) { return c.id == id; });
      FUZZ_CHECK(it != r.commits.end() && it->size == bytes.size(), "inline bytes of %s without their commit",
                 id.c_str());
    }
    return 0;
  }
  // A history: ops until the input runs out, then the damage.
  std::string file;
  std::vector<size_t> ends;                          // where each record ends
  std::vector<std::vector<WritebackCommit>> states;  // what replay must give after each record
  std::vector<WritebackCommit> live;
  std::map<std::string, std::string> inline_after;
  std::vector<std::map<std::string, std::string>> inlines;
  for (int op = 0; op < 32 && in.rest().size() > 4; ++op) {
    uint8_t b = in.Byte();
    std::string id = Id(b % 6);
    if ((b >> 3) % 4 == 0) {
      file += wr::EncodeRecord(wr::DonePayload(id));
      std::erase_if(live, [&](const auto& c) { return c.id == id; });
      inline_after.erase(id);
    } else {
      WritebackCommit c;
      c.id = id;
      c.path = "/" + std::string(in.Bytes(24));
      std::string_view bytes = in.Bytes(64);
      c.size = bytes.size();
      c.xxh3 = in.Int<uint64_t>();
      c.mtime_ns = in.Int<int64_t>();
      c.holders.push_back({"w" + std::to_string(b % 3), "127.0.0.1:" + std::to_string(9000 + b % 7)});
      if (!wr::Recordable(c.path, c.holders).ok()) continue;  // refused at begin: never recorded
      if ((b >> 6) & 1) {  // options for the store, as WritebackJournal::Begin keeps them
        WriteOptions o;
        o.metadata.content_type = std::string(in.Bytes(16));
        o.metadata.user.emplace_back(std::string(in.Bytes(8)), std::string(in.Bytes(16)));
        o.etag = std::string(in.Bytes(34));
        o.mode = in.Int<uint16_t>() & 07777;
        auto text = EncodeWriteOptions(o);
        auto checked = text ? DecodeWriteOptions(*text) : Err(text.error());
        if (!checked) continue;  // refused at begin
        c.attrs = EncodeWriteOptions(*checked).value_or("");
      }
      bool put = (b >> 5) & 1;
      file += wr::EncodeRecord(put ? wr::CommitPayload(c, bytes) : wr::CommitPayload(c));
      auto it = std::find_if(live.begin(), live.end(), [&](const auto& l) { return l.id == id; });
      if (it != live.end()) {
        *it = c;
      } else {
        live.push_back(c);
      }
      if (put) {
        inline_after[id] = std::string(bytes);
      } else {
        inline_after.erase(id);
      }
    }
    ends.push_back(file.size());
    states.push_back(live);
    inlines.push_back(inline_after);
  }
  // The damage: a cut, a changed byte, or none.
  size_t damaged_at = file.size();
  const uint8_t how = in.Byte() % 3;
  if (!file.empty() && how != 0) {
    size_t at = in.Below(file.size() - 1);
    if (how == 1) {
      file.resize(at);
    } else {
      file[at] ^= static_cast<char>(in.Byte() | 1);
    }
    damaged_at = at;
  }
  // The records wholly before the damage count.
  size_t good = 0;
  while (good < ends.size() && ends[good] <= damaged_at) ++good;
  const std::vector<WritebackCommit> want = good == 0 ? std::vector<WritebackCommit>() : states[good - 1];
  auto r = wr::Parse(file);
  CheckIds(r);
  FUZZ_CHECK(r.valid_bytes == (good == 0 ? 0 : ends[good - 1]), "replay stopped at byte %zu, not %zu", r.valid_bytes,
             good == 0 ? size_t{0} : ends[good - 1]);
  FUZZ_CHECK(r.commits.size() == want.size(), "replay found %zu pending writes, not %zu", r.commits.size(),
             want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& a = r.commits[i];
    const auto& b = want[i];
    FUZZ_CHECK(a.id == b.id && a.path == b.path && a.size == b.size && a.xxh3 == b.xxh3 && a.mtime_ns == b.mtime_ns &&
                   a.holders == b.holders && a.attrs == b.attrs,
               "pending write %zu (%s) does not replay as committed", i, b.id.c_str());
  }
  FUZZ_CHECK(r.inline_data == (good == 0 ? std::map<std::string, std::string>() : inlines[good - 1]),
             "the inline bytes of puts do not replay as written");
  return 0;
}
