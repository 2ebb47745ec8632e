#include "worker/peer_stat.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <utility>

namespace shoal::peer_stat {

namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

Status Bad(const std::string& ns_path, const std::string& what) {
  return Status(Code::kInvalidArgument, "a peer's cached stat of " + ns_path + " is malformed: " + what +
                                            " (ignored; the under-store is asked instead)");
}

}  // namespace

std::string Encode(const std::string& ns_path, const MetadataCache::AgedStat& s) {
  // Rounded up: the taker must never see the entry younger than it is.
  const auto age_ms = std::chrono::ceil<milliseconds>(s.age).count();
  Json j{{"path", ns_path},
         {"is_dir", s.info.is_dir},
         {"size", s.info.size},
         {"mtime_ns", s.info.mtime_ns},
         {"etag", s.info.etag},
         {"version", s.info.is_dir ? std::string() : s.info.Version()},
         {"age_ms", age_ms}};
  if (s.info.mode != 0) j["mode"] = s.info.mode;
  if (s.info.ctime_ns != 0) j["ctime_ns"] = s.info.ctime_ns;
  if (s.info.uid >= 0) j["uid"] = s.info.uid;
  if (s.info.gid >= 0) j["gid"] = s.info.gid;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<MetadataCache::AgedStat> Decode(std::string_view body, const std::string& ns_path, const std::string& key) {
  if (body.size() > kMaxBodyBytes) {
    return Err(Bad(ns_path, std::to_string(body.size()) + " bytes, more than " + std::to_string(kMaxBodyBytes)));
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Err(Bad(ns_path, "not a JSON object"));
  auto field = [&](const char* name) -> const Json* {
    auto it = j.find(name);
    return it == j.end() ? nullptr : &*it;
  };
  const Json* path = field("path");
  const Json* is_dir = field("is_dir");
  const Json* size = field("size");
  const Json* mtime = field("mtime_ns");
  const Json* etag = field("etag");
  const Json* version = field("version");
  const Json* age = field("age_ms");
  const Json* mode = field("mode");  // absent where the store keeps no modes
  const Json* ctime = field("ctime_ns");
  const Json* uid = field("uid");  // absent where the store keeps no owners
  const Json* gid = field("gid");
  if (!path || !path->is_string()) return Err(Bad(ns_path, "'path' is missing or not a string"));
  if (path->get_ref<const std::string&>() != ns_path) {
    return Err(Bad(ns_path, "it names another path, '" + path->get<std::string>().substr(0, 256) + "'"));
  }
  if (!is_dir || !is_dir->is_boolean()) return Err(Bad(ns_path, "'is_dir' is missing or not a boolean"));
  if (!size || !size->is_number_unsigned()) return Err(Bad(ns_path, "'size' is missing or not a non-negative integer"));
  if (size->get<uint64_t>() > kMaxFileSize) return Err(Bad(ns_path, "'size' is larger than any file can be"));
  if (!mtime || !mtime->is_number_integer() ||
      (mtime->is_number_unsigned() && mtime->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
    return Err(Bad(ns_path, "'mtime_ns' is missing or not a 64-bit integer"));
  }
  for (const auto& [name, f] : {std::pair{"etag", etag}, std::pair{"version", version}}) {
    if (!f || !f->is_string()) return Err(Bad(ns_path, std::string("'") + name + "' is missing or not a string"));
    if (f->get_ref<const std::string&>().size() > kMaxVersionBytes) {
      return Err(Bad(ns_path, std::string("'") + name + "' is longer than " + std::to_string(kMaxVersionBytes) +
                                  " bytes"));
    }
  }
  if (!age || !age->is_number_integer()) return Err(Bad(ns_path, "'age_ms' is missing or not an integer"));
  if (age->is_number_unsigned() ? age->get<uint64_t>() > static_cast<uint64_t>(milliseconds(kMaxAge).count())
                                : age->get<int64_t>() < 0) {
    return Err(Bad(ns_path, "'age_ms' is negative (an entry from the future) or more than ten years"));
  }
  if (mode && (!mode->is_number_unsigned() || mode->get<uint64_t>() > 07777)) {
    return Err(Bad(ns_path, "'mode' is not permission bits (an integer up to 07777)"));
  }
  if (ctime && (!ctime->is_number_integer() ||
                (ctime->is_number_unsigned() && ctime->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))) {
    return Err(Bad(ns_path, "'ctime_ns' is not a 64-bit integer"));
  }
  for (const auto& [name, f] : {std::pair{"uid", uid}, std::pair{"gid", gid}}) {
    if (f && (!f->is_number_unsigned() || f->get<uint64_t>() >= kNoOwner)) {
      return Err(Bad(ns_path, std::string("'") + name + "' is not a user or group id (an integer below 2^32-1)"));
    }
  }
  MetadataCache::AgedStat out;
  out.info.key = key;
  out.info.uid = uid ? uid->get<int64_t>() : -1;
  out.info.gid = gid ? gid->get<int64_t>() : -1;
  out.info.mode = mode ? mode->get<uint32_t>() : 0;
  out.info.ctime_ns = ctime ? ctime->get<int64_t>() : 0;
  out.info.is_dir = is_dir->get<bool>();
  out.info.size = size->get<uint64_t>();
  out.info.mtime_ns = mtime->get<int64_t>();
  out.info.etag = etag->get<std::string>();
  out.age = milliseconds(age->get<int64_t>());
  const std::string& claimed = version->get_ref<const std::string&>();
  const std::string made = out.info.is_dir ? std::string() : out.info.Version();
  if (claimed != made) {
    return Err(Bad(ns_path, "'version' " + claimed.substr(0, 64) + " is not the one its fields make (" +
                                made.substr(0, 64) + ")"));
  }
  if (!out.info.is_dir && made.empty()) return Err(Bad(ns_path, "a file without a version"));
  return out;
}

}  // namespace shoal::peer_stat
