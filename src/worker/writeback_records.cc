#include "worker/writeback_records.h"

#include "ufs/write_options_codec.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/utf8.h"

namespace shoal::writeback_records {

using Json = nlohmann::json;

Status Recordable(std::string_view path, const std::vector<WorkerEntry>& holders) {
  if (!IsValidUtf8(path)) {
    return Status(Code::kInvalidArgument,
                  "write-back of a path that is not UTF-8: write it with write_mode cache-through or "
                  "through, or rename it");
  }
  for (const auto& h : holders) {
    if (!IsValidUtf8(FormatWorkerEntry(h))) {
      return Status(Code::kInvalidArgument, "write-back holders name a worker that is not UTF-8");
    }
  }
  return {};
}

std::string CommitPayload(const WritebackCommit& c, std::optional<std::string_view> inline_bytes) {
  Json holders = Json::array();
  for (const auto& h : c.holders) holders.push_back(FormatWorkerEntry(h));
  Json j{{"t", "commit"},          {"id", c.id},        {"path", c.path}, {"size", c.size}, {"xxh3", c.xxh3},
         {"mtime_ns", c.mtime_ns}, {"holders", holders}};
  if (!c.attrs.empty()) j["attrs"] = c.attrs;  // JSON text: UTF-8, checked at begin
  if (!inline_bytes) return j.dump();
  j["inline"] = inline_bytes->size();
  std::string payload = j.dump();
  payload += '\0';
  payload.append(*inline_bytes);
  return payload;
}

std::string DonePayload(std::string_view id) { return Json{{"t", "done"}, {"id", id}}.dump(); }

std::string EncodeRecord(std::string_view payload) {
  char head[kRecordHeader];
  uint32_t len = static_cast<uint32_t>(payload.size());
  uint64_t sum = XXH3_64bits(payload.data(), payload.size());
  std::memcpy(head, &len, 4);
  std::memcpy(head + 4, &sum, 8);
  std::string rec(head, kRecordHeader);
  rec += payload;
  return rec;
}

Replayed Parse(std::string_view bytes) {
  Replayed out;
  std::map<std::string, WritebackCommit> commits;
  std::vector<std::string> order;
  size_t at = 0;
  for (;;) {
    if (bytes.size() - at < kRecordHeader) break;
    uint32_t len;
    uint64_t sum;
    std::memcpy(&len, bytes.data() + at, 4);
    std::memcpy(&sum, bytes.data() + at + 4, 8);
    if (len > kMaxRecord || bytes.size() - at - kRecordHeader < len) break;
    std::string_view payload(bytes.data() + at + kRecordHeader, len);
    if (XXH3_64bits(payload.data(), payload.size()) != sum) break;
    const size_t nul = payload.find('\0');
    const std::string_view inline_bytes = nul == std::string_view::npos ? std::string_view() : payload.substr(nul + 1);
    try {
      auto j = Json::parse(payload.substr(0, nul));
      std::string t = j.at("t"), id = j.at("id");
      if (t == "commit") {
        WritebackCommit c;
        c.id = id;
        c.path = j.at("path");
        c.size = j.at("size");
        c.xxh3 = j.at("xxh3");
        c.mtime_ns = j.at("mtime_ns");
        for (const auto& h : j.at("holders")) {
          auto e = ParseWorkerEntry(h.get<std::string>());
          if (!e) throw std::runtime_error(e.error().message());
          c.holders.push_back(*e);
        }
        if (j.contains("attrs")) {
          c.attrs = j.at("attrs").get<std::string>();
          if (auto o = DecodeWriteOptions(c.attrs); !o) throw std::runtime_error(o.error().message());
        }
        if (j.contains("inline")) {
          if (j.at("inline").get<uint64_t>() != inline_bytes.size() || c.size != inline_bytes.size()) {
            throw std::runtime_error("its inline bytes do not match its size");
          }
          out.inline_data[id] = std::string(inline_bytes);
        } else {
          out.inline_data.erase(id);  // a put superseded by a streamed commit of the same id
        }
        if (!commits.contains(id)) order.push_back(id);
        commits[id] = std::move(c);
      } else if (t == "done") {
        if (commits.erase(id) > 0) std::erase(order, id);  // committed again later, it goes last
        out.inline_data.erase(id);
      }
    } catch (const std::exception& e) {
      out.malformed = e.what();
      break;
    }
    at += kRecordHeader + len;
  }
  out.valid_bytes = at;
  for (const auto& id : order) {
    out.commits.push_back(std::move(commits.at(id)));
  }
  return out;
}

}  // namespace shoal::writeback_records
