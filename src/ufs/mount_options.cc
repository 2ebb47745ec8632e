#include "ufs/mount_options.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "common/nearest_name.h"
#include "common/units.h"

namespace shoal {
namespace {

// "5MiB" rather than FormatSize's "5.0 MiB": bounds read like the values users write.
std::string CompactSize(int64_t n) {
  for (auto [unit, name] : {std::pair{kGiB, "GiB"}, std::pair{kMiB, "MiB"}, std::pair{kKiB, "KiB"}}) {
    if (n != 0 && n % static_cast<int64_t>(unit) == 0) return std::to_string(n / static_cast<int64_t>(unit)) + name;
  }
  return std::to_string(n) + "B";
}

std::string Bound(const OptionSpec& s, int64_t v) {
  if (s.kind == OptionKind::kSize) return CompactSize(v);
  if (s.kind == OptionKind::kDuration) return FormatDuration(std::chrono::milliseconds(v));
  return std::to_string(v);
}

// "from 5MiB to 5GiB", "at least 1ms", "" when unbounded.
std::string Range(const OptionSpec& s) {
  const bool has_max = s.max != std::numeric_limits<int64_t>::max();
  if (has_max) return "from " + Bound(s, s.min) + " to " + Bound(s, s.max);
  if (s.min > 0) return "at least " + Bound(s, s.min);
  return "";
}

std::string Choices(std::string_view choices, std::string_view sep) {
  std::string out;
  size_t i = 0;
  while (i <= choices.size()) {
    size_t j = choices.find('|', i);
    if (j == std::string_view::npos) j = choices.size();
    std::string_view c = choices.substr(i, j - i);
    if (!out.empty()) out += j == choices.size() ? std::string(sep) : ", ";
    out += c;
    i = j + 1;
  }
  return out;
}

bool IsChoice(std::string_view choices, std::string_view v) {
  size_t i = 0;
  while (i <= choices.size()) {
    size_t j = choices.find('|', i);
    if (j == std::string_view::npos) j = choices.size();
    if (choices.substr(i, j - i) == v) return true;
    i = j + 1;
  }
  return false;
}

// Checks one value against its spec; the error names the option (and the
// value, unless it is a secret).
Status CheckValue(const OptionSpec& s, const std::string& v, int64_t* number) {
  const std::string shown = s.kind == OptionKind::kSecret ? "option " + std::string(s.name)
                                                          : "option " + std::string(s.name) + "='" + v + "'";
  if (v.empty()) {
    return Status(Code::kInvalidArgument, "option " + std::string(s.name) + " is empty: give a value or leave it out");
  }
  auto bad = [&](const std::string& what) { return Status(Code::kInvalidArgument, shown + ": " + what); };
  auto in_range = [&](int64_t n) { return n >= s.min && n <= s.max; };
  switch (s.kind) {
    case OptionKind::kString:
    case OptionKind::kSecret:
      for (char c : v) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return bad("contains a control character (a pasted newline?)");
      }
      return {};
    case OptionKind::kBool: {
      auto b = ParseBoolText(v);
      if (!b) return bad("expected true or false");
      *number = *b;
      return {};
    }
    case OptionKind::kInt: {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size() || !in_range(n)) {
        return bad("expected a whole number " + Range(s));
      }
      *number = n;
      return {};
    }
    case OptionKind::kSize: {
      auto n = ParseSize(v);
      if (!n) return bad("expected a size such as 8MiB");
      if (*n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) || !in_range(static_cast<int64_t>(*n))) {
        return bad("must be " + Range(s));
      }
      *number = static_cast<int64_t>(*n);
      return {};
    }
    case OptionKind::kDuration: {
      auto d = ParseDuration(v);
      if (!d) return bad("expected a duration such as 30s or 500ms");
      if (!in_range(d->count())) return bad("must be " + Range(s));
      *number = d->count();
      return {};
    }
    case OptionKind::kChoice:
      if (!IsChoice(s.choices, v)) return bad("expected " + Choices(s.choices, " or "));
      return {};
    case OptionKind::kFile: {
      int fd = ::open(v.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return bad(std::string("cannot read it: ") + std::strerror(errno));
      ::close(fd);
      return {};
    }
  }
  return {};
}

}  // namespace

std::optional<bool> ParseBoolText(std::string_view v) {
  for (auto t : {"true", "yes", "on", "1"}) {
    if (v == t) return true;
  }
  for (auto f : {"false", "no", "off", "0"}) {
    if (v == f) return false;
  }
  return std::nullopt;
}

Result<MountOptions> MountOptions::Parse(std::string_view scheme, OptionTable table,
                                         const std::map<std::string, std::string>& options) {
  MountOptions out;
  for (const auto& [k, v] : options) {
    auto spec = std::find_if(table.begin(), table.end(), [&](const OptionSpec& s) { return s.name == k; });
    if (spec == table.end()) {
      std::string msg = "unknown " + std::string(scheme) + ":// option '" + k + "'";
      if (table.empty()) return Err(Code::kInvalidArgument, msg + " (" + std::string(scheme) + ":// mounts take no options)");
      if (auto near = NearestOptionName(k, table); !near.empty()) msg += "; did you mean '" + near + "'?";
      return Err(Code::kInvalidArgument, msg + " (" + std::string(scheme) + ":// options: " + OptionNames(table) + ")");
    }
    Value value{spec->kind, v};
    SHOAL_RETURN_IF_ERROR(CheckValue(*spec, v, &value.number));
    out.values_.emplace(k, std::move(value));
  }
  return out;
}

const MountOptions::Value* MountOptions::Find(std::string_view name, OptionKind kind) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  assert(it->second.kind == kind && "option read as another kind than its table says");
  return &it->second;
}

bool MountOptions::has(std::string_view name) const { return values_.contains(name); }

std::string MountOptions::String(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::string() : it->second.text;
}

std::optional<bool> MountOptions::Bool(std::string_view name) const {
  auto* v = Find(name, OptionKind::kBool);
  return v ? std::optional<bool>(v->number != 0) : std::nullopt;
}

std::optional<int64_t> MountOptions::Int(std::string_view name) const {
  auto* v = Find(name, OptionKind::kInt);
  return v ? std::optional<int64_t>(v->number) : std::nullopt;
}

std::optional<uint64_t> MountOptions::Size(std::string_view name) const {
  auto* v = Find(name, OptionKind::kSize);
  return v ? std::optional<uint64_t>(static_cast<uint64_t>(v->number)) : std::nullopt;
}

std::optional<std::chrono::milliseconds> MountOptions::Duration(std::string_view name) const {
  auto* v = Find(name, OptionKind::kDuration);
  return v ? std::optional<std::chrono::milliseconds>(v->number) : std::nullopt;
}

std::string OptionNames(OptionTable table) {
  std::string out;
  for (const auto& s : table) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

std::string NearestOptionName(std::string_view name, OptionTable table) {
  std::vector<std::string> names;
  for (const auto& s : table) names.emplace_back(s.name);
  auto nearest = FindNearestName(name, names);
  return nearest.likely_typo ? nearest.name : std::string();
}

std::string DescribeOptionValue(const OptionSpec& s) {
  // "more than 0" goes without saying for sizes and durations.
  const bool has_max = s.max != std::numeric_limits<int64_t>::max();
  std::string range = s.min > 1 || has_max ? Range(s) : "";
  if (s.min <= 1 && has_max) range = "up to " + Bound(s, s.max);
  switch (s.kind) {
    case OptionKind::kString: return "text";
    case OptionKind::kSecret: return "secret";
    case OptionKind::kBool: return "true/false";
    case OptionKind::kInt: return s.max == std::numeric_limits<int64_t>::max() ? "integer" : Bound(s, s.min) + ".." + Bound(s, s.max);
    case OptionKind::kSize: return range.empty() ? "size" : "size, " + range;
    case OptionKind::kDuration: return range.empty() ? "duration" : "duration, " + range;
    case OptionKind::kChoice: return Choices(s.choices, " or ");
    case OptionKind::kFile: return "file";
  }
  return "";
}

std::string OptionTableMarkdown(OptionTable table) {
  std::string out = "| option | value | what it does (default) |\n|---|---|---|\n";
  for (const auto& s : table) {
    out += "| `" + std::string(s.name) + "` | " + DescribeOptionValue(s) + " | " + std::string(s.help) + " |\n";
  }
  return out;
}

}  // namespace shoal
