#include "tests/harness/file_io.h"

#include <algorithm>
#include <span>

namespace shoal::testing {

Result<FileStatus> WriteFileVia(Client& c, const std::string& path, const std::string& data, size_t chunk) {
  auto w = c.Create(path);
  if (!w) return Err(w.error());
  for (size_t off = 0; off < data.size(); off += chunk) {
    auto n = std::min(chunk, data.size() - off);
    if (Status st = (*w)->Write(std::span<const char>(data.data() + off, n)); !st.ok()) return Err(st);
  }
  if ((*w)->size() != data.size()) return Err(Code::kInternal, "size() disagrees with the bytes written");
  return (*w)->Close();
}

std::string ReadFileVia(Client& c, const std::string& path) {
  auto got = ReadWholeFile(c, path);
  return got ? std::move(*got) : "<error: " + got.error().ToString() + ">";
}

Result<std::string> ReadWholeFile(Client& client, const std::string& path) {
  auto f = client.OpenFile(path);
  if (!f) return Err(f.error());
  std::string out((*f)->status().size, '\0');
  auto n = (*f)->Pread(0, std::span<char>(out.data(), out.size()));
  if (!n) return Err(n.error());
  out.resize(*n);
  return out;
}

std::string ReadStoreObject(UnderStore& s, const std::string& key) {
  auto info = s.Stat(key);
  if (!info) return "<error: " + info.error().ToString() + ">";
  std::string out(info->size, '\0');
  uint64_t done = 0;
  while (done < out.size()) {
    auto n = s.Read(key, done, std::span<char>(out.data() + done, out.size() - done));
    if (!n) return "<error: " + n.error().ToString() + ">";
    if (*n == 0) break;
    done += *n;
  }
  out.resize(done);
  return out;
}

}  // namespace shoal::testing
