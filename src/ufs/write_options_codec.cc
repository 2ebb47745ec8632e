#include "ufs/write_options_codec.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace shoal {

using Json = nlohmann::json;

namespace {

bool HasLineBreak(std::string_view v) { return v.find_first_of("\r\n") != std::string_view::npos; }

Status Bad(const std::string& why) { return Status(Code::kInvalidArgument, "write options: " + why); }

Json Pairs(const std::vector<std::pair<std::string, std::string>>& kv) {
  Json a = Json::array();
  for (const auto& [k, v] : kv) a.push_back(Json::array({k, v}));
  return a;
}

// `j` (an array of [name, value] string pairs) into `out`, each name once.
Status ReadPairs(const Json& j, const char* what, bool header, std::vector<std::pair<std::string, std::string>>* out) {
  if (!j.is_array()) return Bad(std::string(what) + " must be an array of [name, value] pairs");
  std::set<std::string> seen;
  for (const auto& p : j) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string()) {
      return Bad(std::string(what) + " must be an array of [name, value] pairs of strings");
    }
    std::string name = p[0].get<std::string>(), value = p[1].get<std::string>();
    if (name.empty() || name.find('=') != std::string::npos || HasLineBreak(name) || HasLineBreak(value)) {
      return Bad(std::string(what) + " name '" + name + "' is empty or holds '=' or a line break, or its value does");
    }
    if (std::any_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      return Bad(std::string(what) + " name '" + name + "' must be lower case");
    }
    if (header && std::find(std::begin(kObjectHeaders), std::end(kObjectHeaders), name) == std::end(kObjectHeaders)) {
      return Bad("header '" + name + "' is not one an object keeps");
    }
    if (!seen.insert(name).second) return Bad(std::string(what) + " name '" + name + "' appears twice");
    out->emplace_back(std::move(name), std::move(value));
  }
  return {};
}

}  // namespace

Result<std::string> EncodeWriteOptions(const WriteOptions& o) {
  if (o.metadata.empty() && o.etag.empty() && o.mode == 0 && o.uid < 0 && o.gid < 0) return std::string();
  Json j = Json::object();
  if (!o.metadata.content_type.empty()) j["content_type"] = o.metadata.content_type;
  if (!o.metadata.user.empty()) j["metadata"] = Pairs(o.metadata.user);
  if (!o.metadata.headers.empty()) j["headers"] = Pairs(o.metadata.headers);
  if (!o.etag.empty()) j["etag"] = o.etag;
  if (o.mode != 0) j["mode"] = o.mode;
  if (o.uid >= 0) j["uid"] = o.uid;
  if (o.gid >= 0) j["gid"] = o.gid;
  std::string text;
  try {
    text = j.dump();
  } catch (const Json::exception&) {  // a string that is not UTF-8
    return Err(Code::kInvalidArgument, "write options: a metadata name or value is not UTF-8");
  }
  if (text.size() > kMaxWriteOptionsText) {
    return Err(Code::kInvalidArgument, "write options: " + std::to_string(text.size()) +
                                           " bytes of metadata; at most " + std::to_string(kMaxWriteOptionsText));
  }
  return text;
}

Result<WriteOptions> DecodeWriteOptions(std::string_view text) {
  WriteOptions o;
  if (text.empty()) return o;
  if (text.size() > kMaxWriteOptionsText) {
    return Err(Bad(std::to_string(text.size()) + " bytes; at most " + std::to_string(kMaxWriteOptionsText)));
  }
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Err(Bad("not a JSON object"));
  for (const auto& [key, v] : j.items()) {
    if (key == "content_type") {
      if (!v.is_string() || HasLineBreak(v.get<std::string>())) return Err(Bad("content_type must be one line"));
      o.metadata.content_type = v.get<std::string>();
    } else if (key == "metadata") {
      if (Status st = ReadPairs(v, "metadata", false, &o.metadata.user); !st.ok()) return Err(st);
    } else if (key == "headers") {
      if (Status st = ReadPairs(v, "header", true, &o.metadata.headers); !st.ok()) return Err(st);
      // Kept in kObjectHeaders' order, as ObjectMetadata promises.
      auto rank = [](const auto& kv) {
        return std::find(std::begin(kObjectHeaders), std::end(kObjectHeaders), kv.first) - std::begin(kObjectHeaders);
      };
      std::sort(o.metadata.headers.begin(), o.metadata.headers.end(),
                [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
    } else if (key == "etag") {
      if (!v.is_string()) return Err(Bad("etag must be a string"));
      o.etag = v.get<std::string>();
      if (o.etag.empty() || o.etag.size() > 128 || o.etag.find_first_of(" \"\r\n") != std::string::npos) {
        return Err(Bad("etag must be 1 to 128 bytes without spaces, quotes or line breaks"));
      }
    } else if (key == "mode") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > 07777) {
        return Err(Bad("mode must be a number from 1 to 07777"));
      }
      o.mode = static_cast<uint32_t>(v.get<uint64_t>());
    } else if (key == "uid" || key == "gid") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() >= kNoOwner) {
        return Err(Bad(key + " must be a user or group id (below 4294967295)"));
      }
      (key == "uid" ? o.uid : o.gid) = static_cast<int64_t>(v.get<uint64_t>());
    } else {
      return Err(Bad("unknown key '" + key + "'"));
    }
  }
  return o;
}

}  // namespace shoal
