#include "ufs/accounting_store.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/metrics.h"

namespace shoal {
namespace {

// A counting semaphore with a runtime limit.
class Limiter {
 public:
  explicit Limiter(int limit) : free_(limit) {}
  void Acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

class AccountingStore;

// Counts one request and holds a concurrency slot for its duration; times the
// wait for the slot and the request itself.
class Request {
 public:
  Request(AccountingStore& s, int op);
  ~Request();
  template <typename T>
  T Done(T result) {
    ok_ = result.has_value();
    return result;
  }
  Status Done(Status st) {
    ok_ = st.ok();
    return st;
  }

 private:
  AccountingStore& s_;
  int op_;
  bool ok_ = true;
  std::chrono::steady_clock::time_point start_;
};

enum Op { kStat, kList, kRead, kWrite, kDelete, kRename, kMkdir, kRmdir, kSetAttributes, kOpCount };
const char* kOpNames[] = {"stat", "list", "read", "write", "delete", "rename", "mkdir", "rmdir", "set_attributes"};

class AccountingStore;

class CountingWriter final : public ObjectWriter {
 public:
  CountingWriter(std::unique_ptr<ObjectWriter> inner, AccountingStore& s) : inner_(std::move(inner)), s_(s) {}
  Status Append(std::span<const char> data) override;
  Status AppendFile(int fd, uint64_t offset, uint64_t length) override;
  Status Close() override;
  void Abort() override { inner_->Abort(); }

 private:
  std::unique_ptr<ObjectWriter> inner_;
  AccountingStore& s_;
};

class AccountingStore final : public UnderStore {
 public:
  AccountingStore(std::shared_ptr<UnderStore> inner, int max_concurrency, MetricsRegistry& m)
      : inner_(std::move(inner)), limiter_(max_concurrency) {
    Labels base{{"ufs", inner_->uri()}};
    for (int op = 0; op < kOpCount; ++op) {
      Labels l = base;
      l.emplace_back("op", kOpNames[op]);
      requests_[op] = &m.GetCounter("shoal_ufs_requests_total", "Requests sent to an under-store", l);
      errors_[op] = &m.GetCounter("shoal_ufs_errors_total", "Under-store requests that failed", l);
      seconds_[op] = &m.GetHistogram("shoal_ufs_request_seconds",
                                     "Time an under-store request took, from send to its last byte", l);
    }
    read_bytes_ = &m.GetCounter("shoal_ufs_read_bytes_total", "Bytes read from an under-store", base);
    written_bytes_ = &m.GetCounter("shoal_ufs_written_bytes_total", "Bytes written to an under-store", base);
    inflight_ = &m.GetGauge("shoal_ufs_inflight", "Under-store requests in flight", base);
    queued_ = &m.GetHistogram("shoal_ufs_queue_seconds",
                              "Time a request waited for one of the under-store's concurrency slots "
                              "(worker.ufs_max_concurrency)",
                              base);
  }

  const std::string& uri() const override { return inner_->uri(); }

  Result<FileInfo> Stat(std::string_view key) override {
    Request r(*this, kStat);
    return r.Done(inner_->Stat(key));
  }
  Result<ListPage> List(std::string_view prefix, const ListOptions& o) override {
    Request r(*this, kList);
    return r.Done(inner_->List(prefix, o));
  }
  Result<size_t> Read(std::string_view key, uint64_t offset, std::span<char> out, const ReadOptions& o) override {
    Request r(*this, kRead);
    auto n = inner_->Read(key, offset, out, o);
    if (n) read_bytes_->Add(*n);
    return r.Done(std::move(n));
  }
  Result<ReadWithInfoResult> ReadWithInfo(std::string_view key, uint64_t offset, std::span<char> out) override {
    Request r(*this, kRead);
    auto res = inner_->ReadWithInfo(key, offset, out);
    if (res) read_bytes_->Add(res->bytes);
    return r.Done(std::move(res));
  }
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key, const WriteOptions& options = {}) override {
    auto w = inner_->OpenWriter(key, options);
    if (!w) return w;
    return std::unique_ptr<ObjectWriter>(std::make_unique<CountingWriter>(std::move(*w), *this));
  }
  Result<ObjectMetadata> Metadata(std::string_view key) override {
    Request r(*this, kStat);
    return r.Done(inner_->Metadata(key));
  }
  Status Delete(std::string_view key) override {
    Request r(*this, kDelete);
    return r.Done(inner_->Delete(key));
  }
  Status Mkdir(std::string_view key) override {
    Request r(*this, kMkdir);
    return r.Done(inner_->Mkdir(key));
  }
  Status Rmdir(std::string_view key) override {
    Request r(*this, kRmdir);
    return r.Done(inner_->Rmdir(key));
  }
  Status Rename(std::string_view from, std::string_view to) override {
    Request r(*this, kRename);
    return r.Done(inner_->Rename(from, to));
  }
  Status SetAttributes(std::string_view key, const AttributeChange& change) override {
    Request r(*this, kSetAttributes);
    return r.Done(inner_->SetAttributes(key, change));
  }

 private:
  friend class Request;
  friend class CountingWriter;
  std::shared_ptr<UnderStore> inner_;
  Limiter limiter_;
  Counter* requests_[kOpCount];
  Counter* errors_[kOpCount];
  Histogram* seconds_[kOpCount];
  Histogram* queued_;
  Counter* read_bytes_;
  Counter* written_bytes_;
  Gauge* inflight_;
};

Request::Request(AccountingStore& s, int op) : s_(s), op_(op) {
  const auto asked = std::chrono::steady_clock::now();
  s_.limiter_.Acquire();
  start_ = std::chrono::steady_clock::now();
  s_.queued_->Observe(std::chrono::duration<double>(start_ - asked).count());
  s_.inflight_->Add(1);
  s_.requests_[op_]->Add(1);
}

Request::~Request() {
  s_.seconds_[op_]->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  if (!ok_) s_.errors_[op_]->Add(1);
  s_.inflight_->Add(-1);
  s_.limiter_.Release();
}

Status CountingWriter::Append(std::span<const char> data) {
  auto st = inner_->Append(data);
  if (st.ok()) s_.written_bytes_->Add(data.size());
  return st;
}

Status CountingWriter::AppendFile(int fd, uint64_t offset, uint64_t length) {
  auto st = inner_->AppendFile(fd, offset, length);
  if (st.ok()) s_.written_bytes_->Add(length);
  return st;
}

Status CountingWriter::Close() {
  Request r(s_, kWrite);
  return r.Done(inner_->Close());
}

}  // namespace

std::shared_ptr<UnderStore> WithAccounting(std::shared_ptr<UnderStore> inner, int max_concurrency,
                                           MetricsRegistry* metrics) {
  return std::make_shared<AccountingStore>(std::move(inner), max_concurrency,
                                           metrics ? *metrics : MetricsRegistry::Global());
}

}  // namespace shoal
