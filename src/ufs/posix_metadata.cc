#include "ufs/posix_metadata.h"

#include <sys/stat.h>

#include <charconv>

#include "common/config.h"
#include "ufs/mount_options.h"

namespace shoal {
namespace {

constexpr std::string_view kMode = "mode", kUid = "uid", kGid = "gid", kMtime = "mtime";

// Decimal digits only, at most `max`.
std::optional<uint64_t> Decimal(std::string_view s, uint64_t max) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

void Put(UserMetadata& user, std::string_view name, std::string value) {
  for (auto& [k, v] : user) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  user.emplace_back(std::string(name), std::move(value));
}

const std::string* Find(const UserMetadata& user, std::string_view name) {
  for (const auto& [k, v] : user) {
    if (k == name) return &v;
  }
  return nullptr;
}

}  // namespace

bool KeepsPosixMetadata(const MountConfig& mount) {
  if (mount.ufs.starts_with("file://") || mount.ufs.starts_with("hdfs://")) return false;
  auto it = mount.options.find("posix_attributes");
  return it != mount.options.end() && ParseBoolText(it->second).value_or(false);
}

std::string FormatMetadataTime(int64_t ns) {
  const bool negative = ns < 0;
  // In unsigned arithmetic: -INT64_MIN does not fit an int64_t.
  const uint64_t abs = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string out = (negative ? "-" : "") + std::to_string(abs / 1'000'000'000);
  if (uint64_t frac = abs % 1'000'000'000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 9 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out;
}

std::optional<int64_t> ParseMetadataTime(std::string_view text) {
  const bool negative = text.starts_with('-');
  if (negative) text.remove_prefix(1);
  const size_t dot = text.find('.');
  constexpr uint64_t kMaxSeconds = static_cast<uint64_t>(INT64_MAX) / 1'000'000'000 - 1;
  auto seconds = Decimal(text.substr(0, dot), kMaxSeconds);
  if (!seconds) return std::nullopt;
  uint64_t frac = 0;
  if (dot != std::string_view::npos) {
    std::string_view f = text.substr(dot + 1);
    if (f.empty() || f.size() > 9) return std::nullopt;
    auto v = Decimal(f, 999'999'999);
    if (!v) return std::nullopt;
    frac = *v;
    for (size_t i = f.size(); i < 9; ++i) frac *= 10;
  }
  const int64_t ns = static_cast<int64_t>(*seconds * 1'000'000'000 + frac);
  return negative ? -ns : ns;
}

void ApplyPosixMetadata(const UserMetadata& user, FileInfo& info) {
  if (const auto* m = Find(user, kMode)) {
    // s3fs keeps the whole st_mode; the file type bits must not contradict the entry.
    if (auto v = Decimal(*m, 0177777)) {
      const uint64_t type = *v & S_IFMT;
      if (type == 0 || type == (info.is_dir ? S_IFDIR : S_IFREG)) info.mode = static_cast<uint32_t>(*v & 07777);
    }
  }
  if (const auto* u = Find(user, kUid)) {
    if (auto v = Decimal(*u, kNoOwner - 1)) info.uid = static_cast<int64_t>(*v);
  }
  if (const auto* g = Find(user, kGid)) {
    if (auto v = Decimal(*g, kNoOwner - 1)) info.gid = static_cast<int64_t>(*v);
  }
  if (const auto* t = Find(user, kMtime)) {
    if (auto v = ParseMetadataTime(*t)) info.mtime_ns = *v;
  }
}

UnderStore::AttributeChange PosixChangeOf(const WriteOptions& options) {
  UnderStore::AttributeChange c;
  if (options.mode != 0) c.mode = options.mode;
  if (options.uid >= 0) c.uid = static_cast<uint32_t>(options.uid);
  if (options.gid >= 0) c.gid = static_cast<uint32_t>(options.gid);
  return c;
}

void SetPosixMetadata(const UnderStore::AttributeChange& change, int64_t current_mtime_ns, UserMetadata& user) {
  if (change.mode) Put(user, kMode, std::to_string(S_IFREG | (*change.mode & 07777)));
  if (change.uid) Put(user, kUid, std::to_string(*change.uid));
  if (change.gid) Put(user, kGid, std::to_string(*change.gid));
  if (change.mtime_ns) {
    Put(user, kMtime, FormatMetadataTime(*change.mtime_ns));
  } else if (!Find(user, kMtime) && current_mtime_ns != 0) {
    Put(user, kMtime, FormatMetadataTime(current_mtime_ns));
  }
}

}  // namespace shoal
