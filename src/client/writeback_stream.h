// WritebackStream: the client's side of one write-back write (write_mode:
// write-back, docs/protocol.md "Write-back"), fed while the file is written.
//
// The writer keeps every byte in its spill file (for a fall-back to through)
// and tells the stream how far the spill is written (Offer). One thread per
// holder reads the new bytes from the spill and sends them: begin, then
// appends of kPiece bytes, pipelined with the writes; Commit then sends only
// what is left and the commit. Offer blocks while a holder lags more than
// kMaxLag bytes behind the writer (bounded work in flight, and disk speed,
// not memory, paces the writer). A file of at most kInlineMax bytes that
// never started streaming is sent at Commit as one `put` per holder (one
// round trip; the holder keeps the bytes in its journal record).
//
// Acknowledged only when all k holders committed. When a holder fails
// (down, busy, disk full) the stream stops: Offer or Commit returns why, the
// holders are told to drop what they have, and the writer writes the same
// bytes through from its spill. Nothing is acknowledged that is on fewer
// than k holders.
//
// Thread safety: one writer thread calls Offer/Commit/Abort; the holder
// threads are internal.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "meta/mount_table.h"
#include "shoal/client.h"

namespace shoal::detail {

class ClientImpl;

class WritebackStream {
 public:
  static constexpr uint64_t kPiece = 4 << 20;       // one append's body
  static constexpr uint64_t kMaxLag = 32ull << 20;  // how far a holder may lag behind the writer
  static constexpr uint64_t kInlineMax = 256 << 10;

  // Holders: WritebackHolders(rp), not empty. `spill_fd` must stay open until
  // the stream is destroyed. `attrs`: the write's options for the store
  // (EncodeWriteOptions), which the holders keep and upload with.
  WritebackStream(ClientImpl& client, ResolvedPath rp, std::vector<WorkerEntry> holders, int spill_fd,
                  std::string attrs = {});
  ~WritebackStream();  // Abort unless committed
  WritebackStream(const WritebackStream&) = delete;
  WritebackStream& operator=(const WritebackStream&) = delete;

  // The spill holds the first `written` bytes of the file. An error once a
  // holder failed (or lagged past client.timeout): fall back to through.
  Status Offer(uint64_t written);
  // Every byte sent, then the commit on every holder; the primary's status.
  // `attrs`: options that replace those given at construction.
  // On failure the holders have been told to drop the write.
  Result<FileStatus> Commit(uint64_t size, uint64_t xxh3, std::optional<std::string> attrs = std::nullopt);
  // Stops the holder threads and tells every holder to drop the write.
  void Abort();

 private:
  void StartThreads();  // REQUIRES: mu_ held
  void Run(size_t holder);
  Result<FileStatus> Put(const WorkerEntry& w, uint64_t size, uint64_t xxh3);
  Result<FileStatus> ParseCommitted(const WorkerEntry& w, const std::string& body, uint64_t size) const;
  void Fail(const Status& why);  // REQUIRES: mu_ held
  void TellAbort();

  ClientImpl& client_;
  const ResolvedPath rp_;
  const std::vector<WorkerEntry> holders_;
  const int spill_fd_;
  const std::string id_;
  const std::string attrs_param_;  // "&attrs=..." or ""

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t ready_ = 0;  // bytes of the spill the holders may send
  bool closing_ = false;
  uint64_t size_ = 0, xxh3_ = 0;  // once closing_
  std::string commit_attrs_param_;     // once closing_: "&attrs=..." for a put, or ""
  bool commit_attrs_changed_ = false;  // once closing_: a commit sends them too (else the holders keep begin's)
  Status failed_;                 // the first failure (or an abort)
  bool begun_ = false;            // any holder may have something: abort on failure
  bool finished_ = false;         // committed, or aborted and told
  std::vector<uint64_t> sent_;    // per holder: bytes it took
  std::vector<Result<FileStatus>> committed_;
  std::vector<std::thread> threads_;
};

}  // namespace shoal::detail
