// BlockFiles: the slots of one cache directory's block files, the page store's
// layout with `worker.page_store: blocks` (docs/page-format.md, "Block files").
//
// A cache miss in the one-file-per-page layout creates a file, and an eviction
// deletes one: file-system metadata work that costs more CPU than the bytes.
// Here pages live in slots of preallocated files that are reused in place, so
// a miss is a pwrite into a free slot and an eviction is a list operation.
//
// Slots come in size classes (4 KiB multiples, each about 1.25x the one
// before, up to a page plus its largest header), one file per class:
// `<dir>/blocks/<slot bytes>.blk`. A slot holds the page exactly as a page file
// does (header, then data; cache/page_format.h), with a generation in the
// header that is new for every page written, so a reader holding an old
// reference to a reused slot sees a different generation and stops.
//
// A slot's life: Allocate (free list, or the file grows by a region, with
// fallocate) -> Write (data, then header: a header that checks implies its
// data was written, unless the machine itself went down, when the chunk
// checksums catch it) -> Lease while a reader holds it -> Free (its header's
// magic is zeroed so that a restart does not bring the page back; deferred
// while leased, so a worker that checked bytes and then sendfile()s them
// sends the bytes it checked). Freed slots beyond `slack` bytes have their
// blocks returned to the file system (a hole), so that space freed in one
// size class does not stay held while another class grows.
//
// Thread safety: all methods are safe from any thread; no lock is held across
// a write of page bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/page_format.h"
#include "shoal/status.h"

namespace shoal {

class PageFileWriter;

class BlockFiles : public std::enable_shared_from_this<BlockFiles> {
 public:
  struct Slot {
    uint16_t cls = 0;     // size class: index into slot_sizes()
    uint32_t index = 0;   // slot number in the class's file
    bool operator==(const Slot&) const = default;
  };

  // Opens (creating) `<dir>/blocks`. Files of slot sizes this page size does
  // not use are deleted (a page size change). `slack`: freed slot bytes kept
  // allocated before freed slots become holes.
  static Result<std::shared_ptr<BlockFiles>> Open(const std::string& dir, uint64_t page_size, uint64_t slack,
                                                   std::shared_ptr<PageFileWriter> writer);
  ~BlockFiles();

  // The slot sizes of `page_size`, ascending (4 KiB multiples).
  static std::vector<uint32_t> SlotSizes(uint64_t page_size);
  const std::vector<uint32_t>& slot_sizes() const { return sizes_; }
  // The smallest class whose slots hold `bytes`; nullopt when none does (a
  // page with a path and version too long to fit its header in a slot).
  std::optional<uint16_t> ClassFor(uint64_t bytes) const;
  uint64_t offset(Slot s) const { return uint64_t{s.index} * sizes_[s.cls]; }
  const std::string& dir() const { return dir_; }

  // Every slot of every file, read in parallel: `found` gets each slot whose
  // header checks and fits its slot (called from several threads at once) and
  // returns whether the caller keeps it; the others are free. Free slots
  // beyond the slack are made holes. Call once, before anything else.
  void Scan(const std::function<bool(Slot, const page_format::HeaderView&)>& found);

  // A free slot of class `cls`, growing its file when it has none.
  // kNoSpace when the file system cannot grow it.
  Result<Slot> Allocate(uint16_t cls);
  // Writes a page (header, data) into `slot`: data first, then the header.
  Status Write(Slot slot, std::span<const char> header, std::span<const char> data);
  // Returns `slot` to the free list (and zeroes its header's magic), or, while
  // it is leased, when the last lease ends. REQUIRES: not already free.
  void Free(Slot slot);

  // The class file's descriptor and a lease that keeps `slot` from being
  // reused until it is destroyed. The descriptor is the files' own (no dup:
  // a page served costs no fcntl and no close): valid while the lease lives,
  // which also keeps these files open; never the caller's to close.
  struct Handle {
    int fd = -1;
    std::shared_ptr<void> lease;
  };
  Result<Handle> Hold(Slot slot);

  uint64_t free_bytes() const;  // bytes of free slots still allocated on disk

 private:
  struct Class {
    int fd = -1;
    uint32_t slots = 0;           // slots in the file
    std::vector<uint32_t> free;   // free slots whose blocks are allocated
    std::vector<uint32_t> holes;  // free slots whose blocks were given back
  };
  static uint64_t Key(Slot s) { return uint64_t{s.cls} << 32 | s.index; }
  Status OpenClassLocked(uint16_t cls);
  // Puts the slot on a free list: its header's magic zeroed (`zero`), or made
  // a hole when the free slots already hold the slack. REQUIRES: mu_ held.
  void ReleaseLocked(Slot slot, bool zero);
  void Unlease(Slot slot);

  std::string dir_;
  std::vector<uint32_t> sizes_;
  uint64_t slack_ = 0;
  std::shared_ptr<PageFileWriter> writer_;

  mutable std::mutex mu_;
  std::vector<Class> classes_;
  uint64_t free_bytes_ = 0;                            // free slots still allocated on disk
  std::unordered_map<uint64_t, uint32_t> leases_;     // slot -> readers holding it
  std::unordered_set<uint64_t> free_when_unleased_;  // freed while leased
};

}  // namespace shoal
