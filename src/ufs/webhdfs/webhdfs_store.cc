// WebHdfsStore: the UnderStore over WebHDFS (hdfs://namenode:port/root/).
//
// Keys map to paths under the root. Listing with delimiter "/" is one
// directory read page by page (LISTSTATUS_BATCH); without a delimiter it is a
// depth-first walk, whose order (children by name) lets a continuation token
// be just the last key returned. Writes go to a hidden temporary file next to
// the target and are renamed into place on Close, so readers never see a
// partial file; listings hide those temporaries.
#include "ufs/webhdfs/webhdfs_store.h"

#include <atomic>
#include <random>

#include "common/config.h"
#include "ufs/webhdfs/webhdfs_client.h"

namespace shoal {
namespace {

constexpr std::string_view kTmpMarker = ".shoal-tmp-";

bool IsTemporary(std::string_view name) { return name.starts_with('.') && name.find(kTmpMarker) != std::string_view::npos; }

std::string RandomHex() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t v = rng();
  std::string s(16, '0');
  for (auto& c : s) {
    c = kHex[v & 15];
    v >>= 4;
  }
  return s;
}

FileInfo ToFileInfo(std::string key, const HdfsStatus& s) {
  FileInfo fi;
  fi.key = std::move(key);
  fi.is_dir = s.is_dir;
  fi.size = s.is_dir ? 0 : s.length;
  fi.mtime_ns = s.mtime_ms * 1'000'000;
  fi.mode = s.permission;
  // The ETag names the file (its inode id: every write through Shoal makes a
  // new file, renamed into place), its modification time and its length, so
  // a file rewritten and given back its old time and length (rsync does)
  // still gets a new one. No change time: HDFS keeps none.
  if (!s.is_dir && s.file_id != 0) {
    fi.etag = std::to_string(s.file_id) + "-" + std::to_string(s.mtime_ms) + "-" + std::to_string(s.length);
  }
  return fi;
}

class WebHdfsStore;

// Buffers appended data and ships it in write_buffer-sized chunks: CREATE of
// the temporary with the first chunk, APPEND for the rest, RENAME on Close.
class WebHdfsWriter final : public ObjectWriter {
 public:
  WebHdfsWriter(std::shared_ptr<WebHdfsClient> client, std::string final_path, std::string tmp_path, uint32_t mode)
      : client_(std::move(client)), final_(std::move(final_path)), tmp_(std::move(tmp_path)), mode_(mode) {}
  ~WebHdfsWriter() override { Abort(); }

  Status Append(std::span<const char> data) override {
    if (done_) return Status(Code::kInvalidArgument, "write to a finished writer for hdfs path " + final_);
    while (!data.empty()) {
      size_t room = client_->settings().write_buffer - buffer_.size();
      size_t n = std::min(room, data.size());
      buffer_.append(data.data(), n);
      data = data.subspan(n);
      if (buffer_.size() >= client_->settings().write_buffer) {
        auto st = Flush();
        if (!st.ok()) return st;
      }
    }
    return {};
  }

  Status Close() override {
    if (done_) return Status(Code::kInvalidArgument, "writer for hdfs path " + final_ + " already finished");
    Status st = created_ && buffer_.empty() ? Status() : Flush();  // an empty file still needs its CREATE
    if (st.ok() && mode_ == 0) {
      // No mode given: the file keeps the one of the file it replaces.
      if (auto old = client_->GetFileStatus(final_); old && !old->is_dir && old->permission != 0) {
        st = client_->SetPermission(tmp_, old->permission);
      }
    }
    if (st.ok()) st = client_->Rename(tmp_, final_);
    if (!st.ok()) {
      Abort();
      return st;
    }
    done_ = true;
    return {};
  }

  void Abort() override {
    if (done_) return;
    done_ = true;
    buffer_.clear();
    if (created_) (void)client_->Delete(tmp_, false);  // best effort; a leftover temporary stays hidden
  }

 private:
  Status Flush() {
    Status st = created_ ? client_->Append(tmp_, buffer_) : client_->Create(tmp_, buffer_, mode_);
    if (!st.ok()) return st;
    created_ = true;
    buffer_.clear();
    return {};
  }

  std::shared_ptr<WebHdfsClient> client_;
  std::string final_;
  std::string tmp_;
  uint32_t mode_;  // 0: the replaced file's, else the namenode's default
  std::string buffer_;
  bool created_ = false;
  bool done_ = false;
};

class WebHdfsStore final : public UnderStore {
 public:
  WebHdfsStore(std::shared_ptr<WebHdfsClient> client, std::string root)
      : client_(std::move(client)), uri_(client_->settings().uri), root_(std::move(root)) {}

  const std::string& uri() const override { return uri_; }

  Result<FileInfo> Stat(std::string_view key) override {
    auto s = client_->GetFileStatus(PathOf(key));
    if (!s) return Err(s.error());
    FileInfo fi = ToFileInfo(std::string(key), *s);
    if (PathOf(key) == root_) fi.mode = 0;  // the mount's own directory: its mode is the operator's, not shown
    return fi;
  }

  Result<ListPage> List(std::string_view prefix, const ListOptions& options) override {
    // "a/b/" lists directory a/b; "a/b" lists the entries of a/ whose names start with "b".
    std::string p(prefix);
    size_t slash = p.rfind('/');
    std::string dir_key = slash == std::string::npos ? "" : p.substr(0, slash + 1);
    std::string name_prefix = p.substr(dir_key.size());
    size_t max = options.max_keys > 0 ? static_cast<size_t>(options.max_keys) : 1000;
    ListPage page;
    bool full = false;
    Status st = options.delimiter.empty()
                    ? Walk(dir_key, name_prefix, options.continuation.substr(std::min(dir_key.size(), options.continuation.size())),
                           max, &page.entries, &full)
                    : ListDir(dir_key, name_prefix, options.continuation, max, &page.entries, &full);
    if (!st.ok()) return Err(st);
    if (full && !page.entries.empty()) page.continuation = page.entries.back().key;
    return page;
  }

  Result<size_t> Read(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& options) override {
    std::string path = PathOf(key);
    if (!options.if_version.empty() || out.empty()) {
      // WebHDFS has no conditional OPEN: compare the version first. A change
      // between this check and the OPEN is caught by the next revalidation.
      auto s = client_->GetFileStatus(path);
      if (!s) return Err(s.error());
      if (s->is_dir) return Err(Code::kInvalidArgument, uri_ + std::string(key) + " is a directory, not a file");
      if (!options.if_version.empty() && ToFileInfo("", *s).Version() != options.if_version) {
        return Err(Code::kVersionMismatch, uri_ + std::string(key) + " changed since it was opened (version " +
                                               ToFileInfo("", *s).Version() + ", expected " + options.if_version + ")");
      }
      if (out.empty()) return size_t{0};
    }
    return client_->Open(path, offset, out);
  }

  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key, const WriteOptions& options = {}) override {
    if (key.empty()) return Err(Code::kInvalidArgument, "cannot write the root of " + uri_ + ": name a file");
    std::string path = PathOf(key);
    size_t slash = path.rfind('/');
    std::string tmp = path.substr(0, slash + 1) + "." + path.substr(slash + 1) + std::string(kTmpMarker) + RandomHex();
    return std::unique_ptr<ObjectWriter>(new WebHdfsWriter(client_, path, tmp, options.mode & 07777));
  }

  // SETPERMISSION and SETTIMES. HDFS keeps the sticky bit but no setuid or
  // setgid (dropped), and times to the millisecond.
  Status SetAttributes(std::string_view key, const AttributeChange& change) override {
    std::string path = PathOf(key);
    if (path == root_) return Status(Code::kNotSupported, "the root of " + uri_ + " keeps its own mode and time");
    if (!change.mode && !change.mtime_ns) {
      if (change.empty()) return {};
      return Status(Code::kNotSupported, "owners are not kept by " + uri_ + " (HDFS names its owners, not ids)");
    }
    if (change.mtime_ns && *change.mtime_ns < 0) {
      // SETTIMES reads -1 as "leave it as it is".
      return Status(Code::kInvalidArgument, "cannot set the time of " + uri_ + std::string(key) +
                                                ": HDFS keeps no modification time before 1970");
    }
    // An absent path: SETPERMISSION's (or SETTIMES') FileNotFoundException, kNotFound.
    if (change.mode) SHOAL_RETURN_IF_ERROR(client_->SetPermission(path, *change.mode & 01777));
    if (change.mtime_ns) SHOAL_RETURN_IF_ERROR(client_->SetModificationTime(path, *change.mtime_ns / 1'000'000));
    return {};
  }

  Status Delete(std::string_view key) override {
    auto s = client_->GetFileStatus(PathOf(key));
    if (!s) return s.error();
    if (s->is_dir) {
      return Status(Code::kIsDirectory,
                    "cannot delete " + uri_ + std::string(key) + ": it is a directory; rmdir removes an empty one");
    }
    auto r = client_->Delete(PathOf(key), /*recursive=*/false);
    if (!r) return r.error();
    if (!*r) return Status(Code::kNotFound, "cannot delete " + uri_ + std::string(key) + ": no such file");
    return {};
  }

  Status Mkdir(std::string_view key) override {
    auto s = client_->GetFileStatus(PathOf(key));
    if (s) {
      return Status(Code::kAlreadyExists, "cannot create directory " + uri_ + std::string(key) + ": a " +
                                              (s->is_dir ? "directory" : "file") + " is already there");
    }
    if (s.error().code() != Code::kNotFound) return s.error();
    return client_->Mkdirs(PathOf(key));
  }

  Status Rmdir(std::string_view key) override {
    if (PathOf(key) == root_) return Status(Code::kInvalidArgument, "cannot remove the root of " + uri_);
    auto s = client_->GetFileStatus(PathOf(key));
    if (!s) return s.error();
    if (!s->is_dir)
      return Status(Code::kNotDirectory, "cannot remove directory " + uri_ + std::string(key) + ": it is a file");
    auto batch = client_->ListBatch(PathOf(key), "");
    if (!batch) return batch.error();
    if (!batch->entries.empty()) {
      return Status(Code::kNotEmpty, "cannot remove directory " + uri_ + std::string(key) + ": it is not empty");
    }
    auto r = client_->Delete(PathOf(key), /*recursive=*/false);
    if (!r) return r.error();
    if (!*r) return Status(Code::kNotFound, "cannot remove directory " + uri_ + std::string(key) + ": it is gone");
    return {};
  }

  Status Rename(std::string_view from, std::string_view to) override {
    auto src = client_->GetFileStatus(PathOf(from));
    if (!src) return src.error();
    auto dst = client_->GetFileStatus(PathOf(to));
    if (dst && dst->is_dir && !src->is_dir) {
      return Status(Code::kIsDirectory, "cannot rename " + uri_ + std::string(from) + " to " + std::string(to) +
                                            ": the target is a directory");
    }
    if (dst && !dst->is_dir && src->is_dir) {
      return Status(Code::kNotDirectory, "cannot rename " + uri_ + std::string(from) + " to " + std::string(to) +
                                             ": the target is a file and the source a directory");
    }
    std::string dest = PathOf(to);
    auto parent = dest.substr(0, dest.rfind('/'));
    if (!parent.empty()) {
      auto st = client_->Mkdirs(parent);
      if (!st.ok()) return st;
    }
    return client_->Rename(PathOf(from), dest);
  }

 private:
  // Absolute HDFS path of a key ("" is the root itself).
  std::string PathOf(std::string_view key) const {
    std::string path = root_;
    while (!key.empty() && key.front() == '/') key.remove_prefix(1);
    while (!key.empty() && key.back() == '/') key.remove_suffix(1);
    if (!key.empty()) {
      if (path.back() != '/') path += '/';
      path.append(key);
    }
    return path;
  }

  // One directory, from the entry after `after_key`, filtered by name prefix.
  Status ListDir(const std::string& dir_key, const std::string& name_prefix, const std::string& after_key, size_t max,
                 std::vector<FileInfo>* out, bool* full) {
    std::string start = after_key.size() > dir_key.size() && after_key.starts_with(dir_key) ? after_key.substr(dir_key.size()) : "";
    for (;;) {
      auto batch = client_->ListBatch(PathOf(dir_key), start);
      if (!batch) {
        if (batch.error().code() == Code::kNotFound) return {};  // an absent directory lists empty
        return batch.error();
      }
      for (const auto& e : batch->entries) {
        if (e.name.empty()) return {};  // the path is a file: it has no entries
        start = e.name;
        if (IsTemporary(e.name)) continue;
        if (!e.name.starts_with(name_prefix)) {
          if (e.name > name_prefix) return {};  // sorted: no later name matches
          continue;
        }
        if (out->size() == max) {
          *full = true;
          return {};
        }
        out->push_back(ToFileInfo(dir_key + e.name, e));
      }
      if (!batch->more || batch->entries.empty()) return {};
    }
  }

  // Depth-first walk of files only (object-store semantics without a delimiter).
  // `resume` is the continuation relative to this directory ("" when past it).
  Status Walk(const std::string& dir_key, const std::string& name_prefix, std::string_view resume, size_t max,
              std::vector<FileInfo>* out, bool* full) {
    std::string_view resume_name = resume.substr(0, resume.find('/'));
    std::string start;
    for (;;) {
      auto batch = client_->ListBatch(PathOf(dir_key), start);
      if (!batch) {
        if (batch.error().code() == Code::kNotFound) return {};
        return batch.error();
      }
      for (const auto& e : batch->entries) {
        if (e.name.empty()) return {};
        start = e.name;
        if (IsTemporary(e.name) || !e.name.starts_with(name_prefix)) continue;
        std::string_view rest;  // what is left of the continuation below this entry
        if (!resume.empty()) {
          if (e.name < resume_name) continue;
          if (e.name == resume_name) {
            if (!e.is_dir || resume_name.size() == resume.size()) continue;  // the last key returned
            rest = resume.substr(resume_name.size() + 1);
          }
        }
        if (e.is_dir) {
          auto st = Walk(dir_key + e.name + "/", "", rest, max, out, full);
          if (!st.ok() || *full) return st;
          continue;
        }
        if (out->size() == max) {
          *full = true;
          return {};
        }
        out->push_back(ToFileInfo(dir_key + e.name, e));
      }
      if (!batch->more || batch->entries.empty()) return {};
    }
  }

  std::shared_ptr<WebHdfsClient> client_;
  std::string uri_;
  std::string root_;  // absolute HDFS path of the mount root, "/" or "/a/b"
};

}  // namespace

Result<std::shared_ptr<UnderStore>> MakeWebHdfsStore(const UfsUri& uri, const MountConfig& mount) {
  auto settings = ParseWebHdfsSettings(uri.authority, mount);
  if (!settings) return Err(settings.error());
  if (settings->authority.find(':') == std::string::npos) settings->authority += ":9870";  // Hadoop 3's namenode HTTP port
  settings->uri = "hdfs://" + settings->authority + "/" + uri.path;
  std::string root = "/" + uri.path;
  if (root.size() > 1) root.pop_back();  // no trailing '/'
  return std::make_shared<WebHdfsStore>(std::make_shared<WebHdfsClient>(std::move(*settings)), std::move(root));
}

}  // namespace shoal
