// The load generator's Shoal reader: the native client (include/shoal/client.h).
//
// One Client is shared by all reader threads of a process, as a training job
// would share it; a File is opened per read, like a data loader opening a
// sample. Whole files that fit one buffer are one Pread; larger ones stream
// with Read(), which gets the client's read-ahead.
#include <memory>
#include <mutex>

#include "bench/loadgen.h"
#include "shoal/client.h"

namespace shoal::bench {

namespace {

std::mutex g_mu;
std::shared_ptr<Client> g_client;  // the last one opened, for ShoalClusterCounters

class ShoalReader : public Reader {
 public:
  // The buffer is not zero-filled: a reader touches only the bytes it reads
  // (the direct reader has no such buffer; 8 zeroed 4 MiB buffers were this
  // process's largest cost in a profile of a short cold epoch).
  ShoalReader(std::shared_ptr<Client> client, std::string prefix, size_t chunk)
      : client_(std::move(client)),
        prefix_(std::move(prefix)),
        buf_(std::make_unique_for_overwrite<char[]>(chunk)),
        size_(chunk) {}

  Result<uint64_t> Read(const DatasetFile& file, uint64_t offset, uint64_t length, const Sink& sink) override {
    std::string path = prefix_ + "/" + file.name;
    auto f = client_->OpenFile(path);
    if (!f) return Err(f.error().WithContext("open " + path));
    uint64_t done = 0;
    bool stream = offset == 0 && length > size_;
    while (done < length) {
      size_t want = std::min<uint64_t>(size_, length - done);
      std::span<char> out(buf_.get(), want);
      auto n = stream ? (*f)->Read(out) : (*f)->Pread(offset + done, out);
      if (!n) return Err(n.error().WithContext("read " + path + " at " + std::to_string(offset + done)));
      if (*n == 0) break;
      sink(std::span<const char>(buf_.get(), *n));
      done += *n;
    }
    return done;
  }

 private:
  std::shared_ptr<Client> client_;
  std::string prefix_;
  std::unique_ptr<char[]> buf_;
  size_t size_;
};

}  // namespace

Result<ReaderFactory> ShoalReaders(const std::string& config, const std::string& prefix) {
  auto c = Client::Open(config);
  if (!c) return Err(c.error().WithContext("cannot open the Shoal client with config " + config));
  std::shared_ptr<Client> client(std::move(*c));
  {
    std::lock_guard lock(g_mu);
    g_client = client;
  }
  std::string p = prefix;
  if (p.empty()) {  // "shoal:CONFIG:" reads under the first mount
    auto mounts = client->Mounts();
    if (mounts.empty()) return Err(Code::kNotFound, "the Shoal config " + config + " has no mounts");
    p = mounts[0].path;
  }
  while (!p.empty() && p.back() == '/') p.pop_back();
  // 4 MiB buffers: one Pread covers a small file, and large reads span shards
  // in few calls.
  return ReaderFactory([client, p]() -> Result<std::unique_ptr<Reader>> {
    return std::make_unique<ShoalReader>(client, p, 4 << 20);
  });
}

std::string ShoalClusterCounters() {
  std::shared_ptr<Client> client;
  {
    std::lock_guard lock(g_mu);
    client = g_client;
  }
  if (!client) return "";
  uint64_t hit = 0, miss = 0, ufs = 0;
  int up = 0, workers = 0;
  for (const auto& w : client->ClusterStatus()) {
    workers++;
    up += w.up ? 1 : 0;
    hit += w.hit_bytes;
    miss += w.miss_bytes;
    ufs += w.ufs_read_bytes;
  }
  auto s = client->stats();
  return "workers=" + std::to_string(workers) + " up=" + std::to_string(up) + " hit_bytes=" + std::to_string(hit) +
         " miss_bytes=" + std::to_string(miss) + " ufs_read_bytes=" + std::to_string(ufs) +
         " fallback_read_bytes=" + std::to_string(s.fallback_read_bytes) +
         " worker_failures=" + std::to_string(s.worker_failures);
}

}  // namespace shoal::bench
