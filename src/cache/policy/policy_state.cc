#include "cache/policy/policy_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <cerrno>
#include <cstring>

namespace shoal::policy_state {
namespace {

constexpr std::string_view kMagic = "SHOALPS1";
constexpr size_t kEntryBytes = 8 + 8 + 8 + 4;
constexpr size_t kMaxName = 256;

template <typename T>
void Put(std::string* out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out->push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
}

template <typename T>
T Get(std::string_view b, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t{static_cast<unsigned char>(b[at + i])} << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

std::string Encode(std::string_view policy, const std::vector<EvictionPolicy::Entry>& entries) {
  std::string out(kMagic);
  out.reserve(kMagic.size() + 4 + policy.size() + 8 + entries.size() * kEntryBytes + 8);
  Put<uint32_t>(&out, static_cast<uint32_t>(policy.size()));
  out.append(policy);
  Put<uint64_t>(&out, entries.size());
  for (const auto& e : entries) {
    Put<uint64_t>(&out, e.id.hi);
    Put<uint64_t>(&out, e.id.lo);
    Put<uint64_t>(&out, e.bytes);
    Put<uint32_t>(&out, e.tag);
  }
  Put<uint64_t>(&out, XXH3_64bits(out.data(), out.size()));
  return out;
}

Result<Saved> Decode(std::string_view b) {
  auto bad = [](std::string what) { return Err(Code::kCorruption, "eviction policy state: " + what); };
  if (b.size() < kMagic.size() + 4 + 8 + 8 || b.substr(0, kMagic.size()) != kMagic) return bad("not a state file");
  if (Get<uint64_t>(b, b.size() - 8) != XXH3_64bits(b.data(), b.size() - 8)) return bad("checksum mismatch");
  size_t at = kMagic.size();
  uint32_t name_len = Get<uint32_t>(b, at);
  at += 4;
  if (name_len > kMaxName || at + name_len + 8 + 8 > b.size()) return bad("bad policy name length");
  Saved s;
  s.policy.assign(b.substr(at, name_len));
  at += name_len;
  uint64_t count = Get<uint64_t>(b, at);
  at += 8;
  if (count != (b.size() - 8 - at) / kEntryBytes || (b.size() - 8 - at) % kEntryBytes != 0) {
    return bad("entry count does not match the file size");
  }
  s.entries.reserve(count);
  for (uint64_t i = 0; i < count; ++i, at += kEntryBytes) {
    s.entries.push_back(
        {PageId{Get<uint64_t>(b, at), Get<uint64_t>(b, at + 8)}, Get<uint64_t>(b, at + 16), Get<uint32_t>(b, at + 24)});
  }
  return s;
}

Status Write(const std::string& path, std::string_view policy, const std::vector<EvictionPolicy::Entry>& entries) {
  std::string bytes = Encode(policy, entries);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status(Code::kIo, "cannot create '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(Code::kIo, "cannot write '" + tmp + "': " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Status(Code::kIo, "cannot write '" + path + "': " + std::strerror(e));
  }
  return {};
}

Result<Saved> Read(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Err(errno == ENOENT ? Code::kNotFound : Code::kIo, "cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat st;
  std::string bytes;
  if (::fstat(fd, &st) == 0) bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  auto s = Decode(bytes);
  if (!s) return Err(s.error().WithContext(path));
  return s;
}

}  // namespace shoal::policy_state
