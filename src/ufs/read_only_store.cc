#include "ufs/read_only_store.h"

namespace shoal {
namespace {

class ReadOnlyStore final : public UnderStore {
 public:
  ReadOnlyStore(std::shared_ptr<UnderStore> inner, std::string mount_path)
      : inner_(std::move(inner)), mount_path_(std::move(mount_path)) {}

  const std::string& uri() const override { return inner_->uri(); }
  Result<FileInfo> Stat(std::string_view key) override { return inner_->Stat(key); }
  Result<ListPage> List(std::string_view prefix, const ListOptions& options) override {
    return inner_->List(prefix, options);
  }
  Result<size_t> Read(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& options) override {
    return inner_->Read(key, offset, out, options);
  }
  Result<ReadWithInfoResult> ReadWithInfo(std::string_view key, uint64_t offset, std::span<char> out) override {
    return inner_->ReadWithInfo(key, offset, out);
  }

  Result<ObjectMetadata> Metadata(std::string_view key) override { return inner_->Metadata(key); }
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key, const WriteOptions& = {}) override {
    return Err(Refused("write", key));
  }
  Status Write(std::string_view key, std::span<const char>) override { return Refused("write", key); }
  Status Delete(std::string_view key) override { return Refused("delete", key); }
  Status Mkdir(std::string_view key) override { return Refused("create directory", key); }
  Status Rmdir(std::string_view key) override { return Refused("remove directory", key); }
  Status Rename(std::string_view from, std::string_view) override { return Refused("rename", from); }
  Status SetAttributes(std::string_view key, const AttributeChange&) override {
    return Refused("set the mode or time of", key);
  }

 private:
  Status Refused(const char* op, std::string_view key) const {
    std::string path = mount_path_ == "/" ? "/" + std::string(key) : mount_path_ + "/" + std::string(key);
    return Status(Code::kReadOnly, std::string("cannot ") + op + " " + path + ": mount " + mount_path_ +
                                       " is read-only (read_only: true in its mount config)");
  }

  std::shared_ptr<UnderStore> inner_;
  std::string mount_path_;
};

}  // namespace

std::shared_ptr<UnderStore> WithReadOnly(std::shared_ptr<UnderStore> inner, std::string mount_path) {
  return std::make_shared<ReadOnlyStore>(std::move(inner), std::move(mount_path));
}

}  // namespace shoal
