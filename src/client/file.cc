// shoal::File: an open file version with positional reads and read-ahead.
#include <cstring>
#include <deque>
#include <future>

#include "client/client_impl.h"
#include "client/client_internal.h"
#include "client/local_pages.h"

namespace shoal {
namespace {

constexpr uint64_t kDirectReadBytes = 1 << 20;

class FileImpl final : public File {
 public:
  FileImpl(detail::ClientImpl& client, OpenedFile opened)
      : client_(client),
        rp_(std::move(opened.resolved)),
        st_(std::move(opened.status)),
        prefix_(std::move(opened.prefix)) {
    uint64_t ra = client_.config().client.readahead;
    chunk_ = std::clamp<uint64_t>(ra / 2, 256 * 1024, 4ull << 20);
    depth_ = ra == 0 ? 0 : std::max<uint64_t>(1, ra / chunk_);
  }

  // The reads served from pages held on this host reach their workers as the
  // file closes, so that the workers' hit counts show them from then on.
  ~FileImpl() override {
    DropAhead();
    client_.ReportHeldReads();
  }

  const FileStatus& status() const override { return st_; }

  Result<size_t> Pread(uint64_t offset, std::span<char> out) override {
    if (st_.is_dir) return Err(Code::kIsDirectory, st_.path + " is a directory");
    if (offset >= st_.size || out.empty()) return size_t{0};
    size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), st_.size - offset));
    SHOAL_RETURN_IF_ERROR(ReadAt(offset, out.first(n)));
    return n;
  }

  Result<size_t> Read(std::span<char> out) override {
    std::lock_guard lock(mu_);
    if (st_.is_dir) return Err(Code::kIsDirectory, st_.path + " is a directory");
    if (pos_ >= st_.size || out.empty()) return size_t{0};
    size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), st_.size - pos_));
    if (depth_ == 0 || want >= kDirectReadBytes) {
      // Large reads go straight into the caller's buffer, split over parallel
      // requests; the worker's own read-ahead keeps the next bytes coming from
      // the under-store. Client read-ahead (with its copy) is for small reads.
      DropAhead();
      SHOAL_RETURN_IF_ERROR(ReadAt(pos_, out.first(want)));
      pos_ += want;
      return want;
    }
    // The bytes the open brought are copied from memory, without read-ahead:
    // a small file is whole in them.
    size_t done = CopyFromPrefix(pos_, out.first(want));
    pos_ += done;
    while (done < want) {
      Fill();
      auto& c = ahead_.front();
      c->done.wait();
      if (!c->status.ok()) {
        auto st = c->status;
        DropAhead();
        return Err(st);
      }
      uint64_t skip = pos_ - c->offset;
      size_t n = static_cast<size_t>(std::min<uint64_t>(want - done, c->data.size() - skip));
      std::memcpy(out.data() + done, c->data.data() + skip, n);
      done += n;
      pos_ += n;
      if (pos_ >= c->offset + c->data.size()) ahead_.pop_front();
    }
    return done;
  }

  // The page files a worker on this host holds for a prefix of the range
  // (local_pages.h); none for bytes the open brought, which are in memory.
  std::vector<LocalPage> LocalPages(uint64_t offset, uint64_t length) {
    if (st_.is_dir || offset < prefix_.size() || offset >= st_.size) return {};
    return client_.LocalPages(rp_, st_, offset, length);
  }
  std::string_view opened_bytes() const { return prefix_; }

 private:
  struct Chunk {
    uint64_t offset = 0;
    std::string data;
    Status status;
    std::shared_future<void> done;
  };

  // [offset, offset + out.size()) within the file: the part the open already
  // brought from the prefix, the rest from the workers.
  Status ReadAt(uint64_t offset, std::span<char> out, bool parallel = true) {
    size_t n = CopyFromPrefix(offset, out);
    if (n == out.size()) return {};
    return client_.ReadRange(rp_, st_, offset + n, out.subspan(n), parallel);
  }

  // Copies what `prefix_` holds of [offset, offset + out.size()); returns the count.
  size_t CopyFromPrefix(uint64_t offset, std::span<char> out) const {
    if (offset >= prefix_.size()) return 0;
    size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), prefix_.size() - offset));
    std::memcpy(out.data(), prefix_.data() + offset, n);
    return n;
  }

  // Read-ahead tasks use this File: wait for them before forgetting their chunks.
  void DropAhead() {
    for (auto& c : ahead_) c->done.wait();
    ahead_.clear();
  }

  // Keeps `depth_` chunks queued from the one holding pos_ on.
  void Fill() {
    while (!ahead_.empty() && (pos_ < ahead_.front()->offset || pos_ >= ahead_.front()->offset + ahead_.front()->data.size())) {
      ahead_.front()->done.wait();
      ahead_.pop_front();  // a seek: drop what no longer applies
    }
    uint64_t next = ahead_.empty() ? pos_ / chunk_ * chunk_ : ahead_.back()->offset + ahead_.back()->data.size();
    while (ahead_.size() < depth_ && next < st_.size) {
      auto c = std::make_shared<Chunk>();
      c->offset = next;
      c->data.resize(static_cast<size_t>(std::min<uint64_t>(chunk_, st_.size - next)));
      next += c->data.size();
      c->done = client_.readahead_pool()
                    .Submit([this, c] {
                      c->status = ReadAt(c->offset, std::span<char>(c->data.data(), c->data.size()), false);
                    })
                    .share();
      ahead_.push_back(std::move(c));
    }
  }

  detail::ClientImpl& client_;
  ResolvedPath rp_;
  FileStatus st_;
  const std::string prefix_;  // the file's first bytes, fetched by the open
  uint64_t chunk_;
  uint64_t depth_;
  std::mutex mu_;
  uint64_t pos_ = 0;
  std::deque<std::shared_ptr<Chunk>> ahead_;
};

}  // namespace

std::vector<LocalPage> LocalPagesOf(File& file, uint64_t offset, uint64_t length) {
  auto* f = dynamic_cast<FileImpl*>(&file);
  return f ? f->LocalPages(offset, length) : std::vector<LocalPage>();
}

std::string_view OpenedBytesOf(const File& file) {
  const auto* f = dynamic_cast<const FileImpl*>(&file);
  return f ? f->opened_bytes() : std::string_view();
}

namespace {

// What OpenFile and OpenCachedOnly make of an open: a File, or kIsDirectory.
Result<std::unique_ptr<File>> ToFile(detail::ClientImpl& impl, Result<OpenedFile> opened) {
  if (!opened) return Err(opened.error());
  if (opened->status.is_dir) return Err(Code::kIsDirectory, opened->status.path + " is a directory, not a file");
  return std::unique_ptr<File>(std::make_unique<FileImpl>(impl, std::move(*opened)));
}

// The bytes are held in memory for the File's life.
uint64_t PrefetchOf(const OpenOptions& options) { return std::min<uint64_t>(options.prefetch, 4 << 20); }

}  // namespace

Result<std::unique_ptr<File>> Client::OpenFile(std::string_view path, const OpenOptions& options) {
  return ToFile(*impl_, impl_->Open(path, PrefetchOf(options)));
}

Result<std::unique_ptr<File>> OpenCachedOnly(Client& client, std::string_view path, const OpenOptions& options) {
  auto& impl = detail::ClientAccess::Impl(client);
  return ToFile(impl, impl.OpenCached(path, PrefetchOf(options)));
}

}  // namespace shoal
