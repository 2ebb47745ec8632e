// checkpoint_bench: saving and restoring a training checkpoint through Shoal
// (issue 12), against the S3 under-store behind the WAN emulator.
//
//   save      N files of SIZE written at once (one thread per file, as ranks
//             save their shards): time until every file is acknowledged
//             (Writer::Close returned), through and cache-through mounts, and
//             direct: the same C++ S3 store (multipart upload) with no Shoal;
//   restore   right after the save, every file read back at once: from Shoal
//             (cache-through: the cache; through: the store via the workers)
//             and directly from S3 (8 MiB ranged GETs);
//   small     P puts of 10 KB, one after the other (Create, Write, Close):
//             p50/p99 latency, through and cache-through vs direct.
//   write-back  the same save, restore and small writes on a write-back
//             mount (acknowledged once journaled on 2 workers), plus the time
//             until the background upload has drained (every worker's
//             /v1/status shows nothing pending).
//   limit     the write-back save's ceiling here: 2 copies of every file
//             written and fdatasync'd on the (one, shared) cache disk.
//
// Every byte read back is compared with what was written (the bytes are a
// function of file and offset, so nothing is kept in memory), and each
// restore's under-store bytes (the workers' shoal_ufs_read_bytes_total) are
// reported. Prints a markdown table on stdout; progress on stderr.
//
//   checkpoint_bench --shoal build/shoal --endpoint http://127.0.0.1:PROXY --bucket B
//                    [--files 8] [--size 256MiB] [--small 200] [--rounds 1]
//                    [--modes direct,through,cache-through,write-back]
//
// --modes runs only the rows named (to profile one of them); the restore's
// "vs direct" column then needs the direct row among them.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/percentile.h"
#include "common/units.h"
#include "tests/harness/shoal_cluster.h"
#include "ufs/under_store.h"

using namespace shoal;
using namespace shoal::testing;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "checkpoint_bench: %s\n", why.c_str());
  std::exit(1);
}

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

using bench::Percentile;

constexpr size_t kChunk = 8 << 20;

// The bytes of file `file` at [offset, offset + out.size()): splitmix64 of
// (file, 8-byte word index), so any range can be made again to check it.
uint64_t Word(uint64_t file, uint64_t word) {
  uint64_t z = (file << 40) + word + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Whole words are stored whole: the byte-wise loop this replaces cost more
// CPU than Shoal's own restore of the same bytes, inside the timed restore.
void Fill(uint64_t file, uint64_t offset, std::span<char> out) {
  size_t i = 0;
  while (i < out.size() && (offset + i) % 8 != 0) {  // the head, up to a word boundary
    const uint64_t z = Word(file, (offset + i) / 8);
    out[i] = reinterpret_cast<const char*>(&z)[(offset + i) % 8];
    ++i;
  }
  for (; i + 8 <= out.size(); i += 8) {
    const uint64_t z = Word(file, (offset + i) / 8);
    std::memcpy(out.data() + i, &z, 8);
  }
  for (; i < out.size(); ++i) {  // the tail
    const uint64_t z = Word(file, (offset + i) / 8);
    out[i] = reinterpret_cast<const char*>(&z)[(offset + i) % 8];
  }
}

// Compared word by word as they are made, with no buffer of expected bytes.
void Check(uint64_t file, uint64_t offset, std::span<const char> got, const std::string& what) {
  bool same = true;
  if (offset % 8 == 0) {
    size_t i = 0;
    uint64_t diff = 0;
    for (; i + 8 <= got.size(); i += 8) {
      uint64_t g;
      std::memcpy(&g, got.data() + i, 8);
      diff |= g ^ Word(file, (offset + i) / 8);
    }
    same = diff == 0;
    if (same && i < got.size()) {
      char tail[8];
      Fill(file, offset + i, std::span<char>(tail, got.size() - i));
      same = std::memcmp(tail, got.data() + i, got.size() - i) == 0;
    }
  } else {
    std::string want(got.size(), '\0');
    Fill(file, offset, want);
    same = std::memcmp(want.data(), got.data(), got.size()) == 0;
  }
  if (!same) {
    Die(what + ": bytes at " + std::to_string(offset) + ".." + std::to_string(offset + got.size()) +
        " differ from what was written");
  }
}

// Runs f(i) for i in [0, n) on n threads; the wall time.
template <class F>
double Parallel(size_t n, F f) {
  auto start = Clock::now();
  std::vector<std::thread> t;
  for (size_t i = 0; i < n; ++i) t.emplace_back([&, i] { f(i); });
  for (auto& x : t) x.join();
  return Secs(Clock::now() - start);
}

struct Args {
  std::string shoal, endpoint, bucket;
  size_t files = 8;
  uint64_t size = 256ull << 20;
  size_t small = 200;
  std::vector<std::string> modes = {"direct", "through", "cache-through", "write-back"};
};

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::err);
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--shoal") a.shoal = v;
    else if (k == "--endpoint") a.endpoint = v;
    else if (k == "--bucket") a.bucket = v;
    else if (k == "--files") a.files = std::stoul(v);
    else if (k == "--size") {
      auto s = ParseSize(v);
      if (!s) Die(s.error().message());
      a.size = *s;
    } else if (k == "--small") a.small = std::stoul(v);
    else if (k == "--modes") {
      a.modes.clear();
      for (size_t at = 0; at <= v.size();) {
        size_t comma = std::min(v.find(',', at), v.size());
        std::string m = v.substr(at, comma - at);
        if (m != "direct" && m != "through" && m != "cache-through" && m != "write-back") {
          Die("--modes: unknown mode '" + m + "' (direct, through, cache-through, write-back)");
        }
        a.modes.push_back(m);
        at = comma + 1;
      }
    } else Die("unknown option " + k);
  }
  if (a.shoal.empty() || a.endpoint.empty() || a.bucket.empty()) {
    Die("usage: checkpoint_bench --shoal BIN --endpoint URL --bucket B [--files N] [--size SIZE] [--small N]");
  }
  ::setenv("SHOAL_BIN", std::filesystem::absolute(a.shoal).c_str(), 1);

  const std::string run = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  auto mount = [&](const std::string& path, const std::string& prefix, WriteMode mode) {
    MountConfig m;
    m.path = path;
    m.ufs = "s3://" + a.bucket + "/ckpt-" + run + "/" + prefix + "/";
    m.write_mode = mode;
    m.consistency = Consistency::kTtl;
    m.ttl = std::chrono::hours(1);
    m.options = {{"endpoint", a.endpoint},
                 {"region", "us-east-1"},
                 {"access_key_id", "S3RVER"},
                 {"secret_access_key", "S3RVER"},
                 {"path_style", "true"}};
    return m;
  };
  ShoalCluster::Options o;
  o.workers = 3;
  o.mounts = {mount("/th", "th", WriteMode::kThrough), mount("/ct", "ct", WriteMode::kCacheThrough),
              mount("/direct", "direct", WriteMode::kThrough), mount("/wb", "wb", WriteMode::kWriteBack)};
  o.page_size = 1 << 20;
  o.shard_size = 64ull << 20;
  o.cache_capacity = std::max<uint64_t>(2ull << 30, a.files * a.size);  // per worker: the whole checkpoint fits
  o.client.timeout = std::chrono::minutes(10);
  // The whole write-back checkpoint may be pending at once.
  o.worker = [&](WorkerConfig& w) { w.write_back_max_pending = 2 * a.files * a.size + (1ull << 30); };
  std::fprintf(stderr, "checkpoint_bench: starting 3 workers\n");
  auto cluster = ShoalCluster::Start(o);
  if (!cluster) Die("cluster: " + cluster.error().ToString());
  auto client = (*cluster)->NewClient();
  if (!client) Die(client.error().ToString());
  auto direct = OpenUnderStore(o.mounts[2]);
  if (!direct) Die(direct.error().ToString());
  auto ufs_bytes = [&] {
    auto v = (*cluster)->MetricSum("shoal_ufs_read_bytes_total");
    if (!v) Die(v.error().ToString());
    return *v;
  };

  auto file_key = [&](size_t i) { return "rank-" + std::to_string(i) + ".pt"; };
  // Saves through Shoal (`mount`) or directly (empty mount).
  auto save = [&](const std::string& mnt) {
    return Parallel(a.files, [&](size_t i) {
      std::string buf(kChunk, '\0');
      if (mnt.empty()) {
        auto w = (*direct)->OpenWriter(file_key(i));
        if (!w) Die("direct writer: " + w.error().ToString());
        for (uint64_t off = 0; off < a.size; off += kChunk) {
          size_t n = std::min<uint64_t>(kChunk, a.size - off);
          Fill(i, off, std::span<char>(buf.data(), n));
          if (Status st = (*w)->Append(std::span<const char>(buf.data(), n)); !st.ok()) Die(st.ToString());
        }
        if (Status st = (*w)->Close(); !st.ok()) Die("direct close: " + st.ToString());
        return;
      }
      auto w = (*client)->Create(mnt + "/" + file_key(i));
      if (!w) Die(w.error().ToString());
      for (uint64_t off = 0; off < a.size; off += kChunk) {
        size_t n = std::min<uint64_t>(kChunk, a.size - off);
        Fill(i, off, std::span<char>(buf.data(), n));
        if (Status st = (*w)->Write(std::span<const char>(buf.data(), n)); !st.ok()) Die(st.ToString());
      }
      auto done = (*w)->Close();
      if (!done) Die("close: " + done.error().ToString());
      if (done->size != a.size) Die("closed with the wrong size");
    });
  };
  auto restore = [&](const std::string& mnt) {
    return Parallel(a.files, [&](size_t i) {
      std::string buf(kChunk, '\0');
      if (mnt.empty()) {
        for (uint64_t off = 0; off < a.size; off += kChunk) {
          size_t n = std::min<uint64_t>(kChunk, a.size - off);
          auto got = (*direct)->Read(file_key(i), off, std::span<char>(buf.data(), n));
          if (!got || *got != n) Die("direct read of " + file_key(i) + " failed or was short");
          Check(i, off, std::span<const char>(buf.data(), n), "direct " + file_key(i));
        }
        return;
      }
      auto f = (*client)->OpenFile(mnt + "/" + file_key(i));
      if (!f) Die(f.error().ToString());
      if ((*f)->status().size != a.size) Die(mnt + "/" + file_key(i) + " has the wrong size");
      for (uint64_t off = 0; off < a.size;) {
        auto got = (*f)->Read(std::span<char>(buf.data(), buf.size()));
        if (!got) Die(got.error().ToString());
        if (*got == 0) Die(mnt + "/" + file_key(i) + " ended early");
        Check(i, off, std::span<const char>(buf.data(), *got), mnt + "/" + file_key(i));
        off += *got;
      }
    });
  };

  // Seconds until no worker has write-back uploads pending.
  auto drain = [&] {
    auto start = Clock::now();
    for (;;) {
      bool empty = true;
      for (size_t i = 0; i < 3 && empty; ++i) {
        auto body = (*cluster)->Get(i, "/v1/status");
        empty = body && body->find("\"write_back_pending_files\":0") != std::string::npos;
      }
      if (empty) return Secs(Clock::now() - start);
      if (Clock::now() - start > std::chrono::minutes(30)) Die("write-back uploads did not drain in 30 minutes");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  // The ceiling of a write-back save on this machine: k copies of every file
  // written and fdatasync'd on the cache dirs' disk (every worker shares it
  // here), one thread per file, no network.
  auto disk_limit = [&] {
    const std::string dir = std::filesystem::path((*cluster)->cache_dir(0)).parent_path().string();
    return Parallel(a.files, [&](size_t i) {
      std::string buf(kChunk, '\0');
      Fill(i, 0, buf);
      for (int copy = 0; copy < 2; ++copy) {
        const std::string path = dir + "/limit-" + std::to_string(i) + "-" + std::to_string(copy);
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) Die("limit: cannot create " + path);
        for (uint64_t off = 0; off < a.size; off += kChunk) {
          size_t n = std::min<uint64_t>(kChunk, a.size - off);
          if (::pwrite(fd, buf.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) Die("limit: write");
        }
        if (::fdatasync(fd) != 0) Die("limit: fdatasync");
        ::close(fd);
        ::unlink(path.c_str());
      }
    });
  };
  std::fprintf(stderr, "checkpoint_bench: limit, 2 x %zu x %s written and fdatasync'd\n", a.files,
               FormatSize(a.size).c_str());
  ::sync();
  const double limit_s = disk_limit();
  double wb_drain_s = 0;
  const double total_mb = static_cast<double>(a.files * a.size) / 1e6;
  struct Row {
    std::string name;
    double save_s, restore_s, restore_ufs_mb;
  };
  std::vector<Row> rows;
  // Each mode: its --modes name, its mount ("" for direct), its row names.
  struct Mode {
    std::string flag, mnt, name, small_name;
  };
  std::vector<Mode> modes;
  for (const Mode& m : {Mode{"direct", "", "direct S3 (multipart, no Shoal)", "direct S3 PUT"},
                        Mode{"through", "/th", "through", "through"},
                        Mode{"cache-through", "/ct", "cache-through", "cache-through"},
                        Mode{"write-back", "/wb", "write-back (k=2)", "write-back (k=2)"}}) {
    if (std::find(a.modes.begin(), a.modes.end(), m.flag) != a.modes.end()) modes.push_back(m);
  }
  for (const Mode& m : modes) {
    const std::string& mnt = m.mnt;
    const std::string& name = m.name;
    std::fprintf(stderr, "checkpoint_bench: save %zu x %s, %s\n", a.files, FormatSize(a.size).c_str(), name.c_str());
    const uint64_t fallbacks_before = (*client)->stats().write_back_fallbacks;
    // Each row starts with nothing dirty: the page cache the rows before
    // left (s3rver's objects, cached pages) is written out untimed, not
    // during this save.
    ::sync();
    double s = save(mnt);
    if (uint64_t fell = (*client)->stats().write_back_fallbacks - fallbacks_before) {
      std::fprintf(stderr, "checkpoint_bench: %llu write-back files fell back to through during the save\n",
                   static_cast<unsigned long long>(fell));
    }
    double before = ufs_bytes();
    std::fprintf(stderr, "checkpoint_bench: restore, %s\n", name.c_str());
    double r = restore(mnt);
    double ufs_mb = mnt.empty() ? total_mb : (ufs_bytes() - before) / 1e6;
    if (mnt == "/wb") wb_drain_s = s + r + drain();
    rows.push_back({name, s, r, ufs_mb});
  }

  // Small writes.
  struct Small {
    std::string name;
    double p50, p99;
  };
  std::vector<Small> smalls;
  for (const Mode& m : modes) {
    const std::string& mnt = m.mnt;
    const std::string& name = m.small_name;
    std::fprintf(stderr, "checkpoint_bench: %zu small writes, %s\n", a.small, name.c_str());
    std::vector<double> ms;
    std::string body(10'000, '\0');
    for (size_t k = 0; k < a.small; ++k) {
      Fill(1000 + k, 0, body);
      const std::string key = "small/" + std::to_string(k);
      auto start = Clock::now();
      if (mnt.empty()) {
        auto w = (*direct)->OpenWriter(key);
        if (!w || !(*w)->Append(body).ok() || !(*w)->Close().ok()) Die("direct small write failed");
      } else {
        auto w = (*client)->Create(mnt + "/" + key);
        if (!w || !(*w)->Write(body).ok()) Die("small write failed");
        if (auto c = (*w)->Close(); !c) Die(c.error().ToString());
      }
      ms.push_back(Secs(Clock::now() - start) * 1e3);
    }
    // Every byte checked: read them all back from the store.
    for (size_t k = 0; k < a.small; ++k) {
      auto got = mnt.empty()
                     ? (*direct)->Read("small/" + std::to_string(k), 0, std::span<char>(body.data(), body.size()))
                     : Result<size_t>(Err(Code::kInternal, ""));
      if (!mnt.empty()) {
        auto f = (*client)->OpenFile(mnt + "/small/" + std::to_string(k));
        if (!f) Die(f.error().ToString());
        got = (*f)->Pread(0, std::span<char>(body.data(), body.size()));
      }
      if (!got || *got != body.size()) Die("small file " + std::to_string(k) + " reads back short");
      Check(1000 + k, 0, body, "small file " + std::to_string(k));
    }
    smalls.push_back({name, Percentile(ms, 0.5), Percentile(ms, 0.99)});
  }

  std::printf(
      "| checkpoint %zu x %s (%.0f MB) | save: all acknowledged | save MB/s | restore right after | restore MB/s | "
      "restore vs direct | store bytes read by the restore |\n|---|---|---|---|---|---|---|\n",
      a.files, FormatSize(a.size).c_str(), total_mb);
  const bool has_direct = !modes.empty() && modes[0].flag == "direct";
  for (const auto& r : rows) {
    const std::string vs = has_direct ? fmt::format("{:.1f}x", rows[0].restore_s / r.restore_s) : "-";
    std::printf("| %s | %.2f s | %.0f | %.2f s | %.0f | %s | %.0f MB |\n", r.name.c_str(), r.save_s,
                total_mb / r.save_s, r.restore_s, total_mb / r.restore_s, vs.c_str(), r.restore_ufs_mb);
  }
  std::printf("| limit: 2 copies written and fdatasync'd on this disk, no network | %.2f s | %.0f | | | | |\n", limit_s,
              total_mb / limit_s);
  if (wb_drain_s > 0) {
    std::printf("\nwrite-back: the background upload of the checkpoint had drained %.1f s after the save began\n",
                wb_drain_s);
  }
  std::printf("\n");
  std::printf("| small writes (10 KB put + close, %zu, one at a time) | p50 | p99 |\n|---|---|---|\n", a.small);
  for (const auto& s : smalls) std::printf("| %s | %.1f ms | %.1f ms |\n", s.name.c_str(), s.p50, s.p99);
  return 0;
}
