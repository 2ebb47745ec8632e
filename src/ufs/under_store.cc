#include "ufs/under_store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/config.h"
#include "common/units.h"
#include "ufs/azure/azure_client.h"
#include "ufs/azure/azure_store.h"
#include "ufs/posix/posix_store.h"
#include "ufs/read_only_store.h"
#include "ufs/s3/s3_settings.h"
#include "ufs/s3/s3_store.h"
#include "ufs/uri.h"
#include "ufs/webhdfs/webhdfs_client.h"
#include "ufs/webhdfs/webhdfs_store.h"

namespace shoal {

std::string FileInfo::Version() const {
  if (!etag.empty()) return etag;
  return std::to_string(mtime_ns) + "-" + std::to_string(size);
}

Status UnderStore::Write(std::string_view key, std::span<const char> data) {
  auto w = OpenWriter(key);
  if (!w) return w.error();
  auto st = (*w)->Append(data);
  if (!st.ok()) {
    (*w)->Abort();
    return st;
  }
  return (*w)->Close();
}

Status ObjectWriter::AppendFile(int fd, uint64_t offset, uint64_t length) {
  constexpr uint64_t kPiece = 4 << 20;
  std::unique_ptr<char[]> buf;
  while (length > 0) {
    const size_t want = static_cast<size_t>(std::min(length, kPiece));
    if (!buf) buf = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(std::min(length, kPiece)));
    ssize_t got = ::pread(fd, buf.get(), want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return Status(Code::kIo, std::string("cannot read the file being appended: ") +
                                   (got < 0 ? std::strerror(errno) : "it ended early"));
    }
    SHOAL_RETURN_IF_ERROR(Append(std::span<const char>(buf.get(), static_cast<size_t>(got))));
    offset += static_cast<uint64_t>(got);
    length -= static_cast<uint64_t>(got);
  }
  return {};
}

Result<UnderStore::ReadWithInfoResult> UnderStore::ReadWithInfo(std::string_view key, uint64_t offset,
                                                               std::span<char> out) {
  auto st = Stat(key);
  if (!st) return Err(st.error());
  if (st->is_dir) return Err(Code::kNotFound, "'" + std::string(key) + "' in " + uri() + " is a directory, not an object");
  ReadOptions o;
  o.if_version = st->Version();
  auto n = Read(key, offset, out, o);
  if (!n) return Err(n.error());
  return ReadWithInfoResult{*n, std::move(*st)};
}

Result<std::vector<FileInfo>> ListDirectory(UnderStore& store, std::string_view key) {
  std::vector<FileInfo> out;
  ListOptions o;
  std::string prefix = key.empty() ? "" : std::string(key) + "/";
  for (;;) {
    auto page = store.List(prefix, o);
    if (!page) return Err(page.error());
    for (auto& e : page->entries) out.push_back(std::move(e));
    if (page->continuation.empty()) return out;
    o.continuation = std::move(page->continuation);
  }
}

namespace {

// The backend for the mount's scheme, without the read-only guard.
Result<std::shared_ptr<UnderStore>> OpenBackend(const MountConfig& mount) {
  auto uri = ParseUfsUri(mount.ufs);
  if (!uri) return Err(uri.error());
  if (uri->scheme == "file") return MakePosixStore(*uri, mount);
  if (uri->scheme == "s3" || uri->scheme == "gs") return MakeS3Store(*uri, mount);
  if (uri->scheme == "az") return MakeAzureStore(*uri, mount);
  if (uri->scheme == "hdfs" || uri->scheme == "webhdfs") return MakeWebHdfsStore(*uri, mount);
  return Err(Code::kInvalidArgument, "unknown under-store scheme '" + uri->scheme + "'");
}

}  // namespace

Result<std::shared_ptr<UnderStore>> OpenUnderStore(const MountConfig& mount) {
  auto store = OpenBackend(mount);
  if (store && mount.read_only) return WithReadOnly(std::move(*store), mount.path);
  return store;
}

Result<OptionTable> MountOptionTable(std::string_view scheme) {
  if (scheme == "file") return OptionTable{};
  if (scheme == "s3" || scheme == "gs") return s3::S3Options();
  if (scheme == "az") return AzureOptions();
  if (scheme == "hdfs" || scheme == "webhdfs") return WebHdfsOptions();
  return Err(Code::kInvalidArgument, "unknown under-store scheme '" + std::string(scheme) + "'");
}

Status ValidateMount(const MountConfig& mount) {
  auto uri = ParseUfsUri(mount.ufs);
  if (!uri) return uri.error();
  if (uri->scheme == "file") {
    auto o = MountOptions::Parse("file", {}, mount.options);
    return o ? Status() : o.error();
  }
  if (uri->scheme == "s3" || uri->scheme == "gs") {
    auto s = s3::ResolveS3Settings(*uri, mount, s3::ProcessEnv());
    return s ? Status() : s.error();
  }
  if (uri->scheme == "az") {
    auto s = ParseAzureSettings(*uri, mount, ProcessEnv(), /*start_credentials=*/false);  // no token fetched
    return s ? Status() : s.error();
  }
  if (uri->scheme == "hdfs" || uri->scheme == "webhdfs") {
    auto s = ParseWebHdfsSettings(uri->authority, mount);
    return s ? Status() : s.error();
  }
  return Status(Code::kInvalidArgument, "unknown under-store scheme '" + uri->scheme + "'");
}

Status ProbeMount(const MountConfig& mount, std::chrono::milliseconds deadline) {
  auto uri = ParseUfsUri(mount.ufs);
  if (!uri) return uri.error();
  auto table = MountOptionTable(uri->scheme);
  if (!table) return table.error();
  // The mount's own timeouts, capped at the deadline, and one retry at most.
  MountConfig probe = mount;
  auto declared = [&](std::string_view name) {
    return std::any_of(table->begin(), table->end(), [&](const OptionSpec& s) { return s.name == name; });
  };
  for (const char* name : {"request_timeout", "connect_timeout"}) {
    if (!declared(name)) continue;
    auto it = probe.options.find(name);
    auto own = it == probe.options.end() ? std::nullopt : std::optional(ParseDuration(it->second).value_or(deadline));
    probe.options[name] = FormatDuration(own ? std::min(*own, deadline) : deadline);
  }
  if (declared("max_retries")) {
    auto it = probe.options.find("max_retries");
    if (it == probe.options.end() || it->second != "0") probe.options["max_retries"] = "1";
  }
  auto store = OpenUnderStore(probe);
  if (!store) return store.error();
  ListOptions o;
  o.max_keys = 1;
  auto page = (*store)->List("", o);
  return page ? Status() : page.error();
}

}  // namespace shoal
