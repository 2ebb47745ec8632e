// shoal._shoal: the Python binding of the C++ client library (include/shoal/client.h).
//
// The pure-Python package (python/shoal/) wraps these classes; user code never
// sees them directly. Contracts the package relies on:
//  - Every read releases the GIL and copies straight into the caller's buffer
//    (any writable C-contiguous buffer: bytearray, memoryview, numpy array);
//    every write takes the bytes of any C-contiguous buffer, also without the GIL.
//  - Every failed shoal::Status is raised through RaiseStatus(), the one place
//    where Shoal codes become Python exceptions.
//  - Fork: the C++ client's threads do not exist in a child process, so a
//    client or file made before fork() must never be destroyed (or used) in the
//    child. Their destructors notice the pid changed and leak the C++ objects
//    on purpose; the Python package opens fresh ones in the child.
#include <errno.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/end_user.h"
#include "shoal/client.h"

namespace py = pybind11;

namespace shoal::python {
namespace {

// The exception class and errno for a Status code.
std::pair<PyObject*, int> ExceptionFor(Code code) {
  switch (code) {
    case Code::kNotFound: return {PyExc_FileNotFoundError, ENOENT};
    case Code::kPermissionDenied: return {PyExc_PermissionError, EACCES};
    case Code::kReadOnly: return {PyExc_PermissionError, EROFS};
    case Code::kTimeout: return {PyExc_TimeoutError, ETIMEDOUT};
    case Code::kUnavailable: return {PyExc_ConnectionError, ECONNREFUSED};
    case Code::kIsDirectory: return {PyExc_IsADirectoryError, EISDIR};
    case Code::kNotDirectory: return {PyExc_NotADirectoryError, ENOTDIR};
    case Code::kAlreadyExists: return {PyExc_FileExistsError, EEXIST};
    case Code::kInvalidArgument: return {PyExc_OSError, EINVAL};
    case Code::kNotEmpty: return {PyExc_OSError, ENOTEMPTY};
    case Code::kNoSpace: return {PyExc_OSError, ENOSPC};
    case Code::kOutOfRange: return {PyExc_OSError, EINVAL};
    case Code::kVersionMismatch: return {PyExc_OSError, ESTALE};
    case Code::kNotSupported: return {PyExc_OSError, EOPNOTSUPP};
    default: return {PyExc_OSError, EIO};
  }
}

// Raises the Python exception for a failed Status: OSError(errno, message[, path]).
// The path is added as `filename` only when the message does not already name it.
[[noreturn]] void RaiseStatus(const Status& s, std::string_view path = {}) {
  auto [type, err] = ExceptionFor(s.code());
  py::object exc;
  if (!path.empty() && s.message().find(path) == std::string::npos) {
    exc = py::reinterpret_borrow<py::object>(type)(err, s.message(), std::string(path));
  } else {
    exc = py::reinterpret_borrow<py::object>(type)(err, s.message());
  }
  exc.attr("shoal_code") = std::string(CodeName(s.code()));
  PyErr_SetObject(type, exc.ptr());
  throw py::error_already_set();
}

// Runs `f` without the GIL and returns what it returns.
template <typename F>
auto WithoutGil(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

template <typename T>
T Unwrap(Result<T>&& r, std::string_view path = {}) {
  if (!r) RaiseStatus(r.error(), path);
  return std::move(*r);
}

// A C-contiguous view of a Python buffer (writable for reads into it), held for the
// length of the call (which also stops a bytearray from being resized under it).
class BufferView {
 public:
  BufferView(py::handle obj, bool writable) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) != 0) {
      throw py::error_already_set();
    }
  }
  ~BufferView() { PyBuffer_Release(&view_); }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  std::span<char> span() { return {static_cast<char*>(view_.buf), static_cast<size_t>(view_.len)}; }

 private:
  Py_buffer view_;
};

// Fills `out` from `offset` by repeated Preads (a Pread may return less); returns the count,
// short only at the end of the file. Called without the GIL.
Result<size_t> PreadFully(File& f, uint64_t offset, std::span<char> out) {
  size_t done = 0;
  while (done < out.size()) {
    auto n = f.Pread(offset + done, out.subspan(done));
    if (!n) return std::unexpected(n.error());
    if (*n == 0) break;
    done += *n;
  }
  return done;
}

// A whole-range read that came back short: the file shrank under an open version.
void CheckCount(size_t got, uint64_t want, const std::string& path) {
  if (got != want) {
    RaiseStatus(Status(Code::kIo, path + ": read " + std::to_string(got) + " of " + std::to_string(want) +
                                      " bytes; the file may have changed, open it again"));
  }
}

// Keeps a batch's worth of freed memory in the heap between batches (glibc only).
//
// glibc hands the top of its heap back to the kernel once more than its trim threshold
// is free there; left adaptive, that threshold is twice the largest block it has mmapped
// and freed, about two small files. read_many returns a whole batch (32 files of ~150 KiB
// are 5 MiB) that the caller soon drops, so every batch gave its memory back and the next
// one faulted it in again, page by page: on this project's VMs a fault costs ~15 us, and
// batches of 32 ran at a quarter of a loop of read (which reuses the same few blocks).
// This raises the trim threshold to twice the largest batch seen (at least 64 MiB, at
// most 256 MiB) and fixes the mmap threshold at glibc's own adaptive ceiling (32 MiB),
// which setting any threshold freezes. Process-wide, as any mallopt is; a threshold the
// user chose (MALLOC_*_THRESHOLD_ or GLIBC_TUNABLES) is left alone.
void KeepHeapForBatch(uint64_t batch_bytes) {
#ifdef __GLIBC__
  static std::mutex mu;
  static uint64_t kept = 0;  // the trim threshold set; 0: none yet
  constexpr uint64_t kMin = 64ull << 20, kMax = 256ull << 20, kMmapThreshold = 32ull << 20;
  const uint64_t want = std::clamp(2 * batch_bytes, kMin, kMax);
  std::lock_guard lock(mu);
  if (want <= kept) return;
  if (kept == 0) {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
        (tunables && std::string_view(tunables).find("threshold") != std::string_view::npos)) {
      kept = kMax;  // the user's choice stands
      return;
    }
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold));
  }
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(want));
  kept = want;
#else
  (void)batch_bytes;
#endif
}

class ClientHandle;

// An open file. Reads at the position where the C++ File's sequential cursor stands
// use File::Read (client read-ahead); any other offset (after a seek), and a read
// to the end of the file, use Pread.
class FileHandle {
 public:
  FileHandle(std::shared_ptr<Client> client, std::unique_ptr<File> file)
      : client_(std::move(client)), file_(std::move(file)), pid_(getpid()) {}

  ~FileHandle() {
    if (getpid() != pid_) {
      // Forked child: the read-ahead tasks this File may wait on ran in threads of the
      // parent. Leak it (and keep its client) on purpose rather than hang or crash.
      (void)file_.release();
      new std::shared_ptr<Client>(std::move(client_));
    }
  }

  const FileStatus& status() const {
    Check();
    return file_->status();
  }

  // Reads into `buffer` at `offset`; returns the byte count (0 at the end).
  size_t ReadInto(py::handle buffer, uint64_t offset) {
    Check();
    BufferView out(buffer, /*writable=*/true);
    auto n = WithoutGil([&]() -> Result<size_t> {
      std::lock_guard lock(mu_);
      // Read-ahead serves a reader that comes back for the next piece; a buffer that
      // takes the rest of the file (a whole small file) is one Pread with nothing ahead.
      uint64_t size = file_->status().size;
      bool to_end = offset >= size || out.span().size() >= size - offset;
      if (offset != cursor_ || to_end) return PreadFully(*file_, offset, out.span());
      auto got = file_->Read(out.span());
      if (got) cursor_ += *got;
      return got;
    });
    return Unwrap(std::move(n), file_->status().path);
  }

  py::bytes Read(uint64_t offset, int64_t length) {
    Check();
    uint64_t size = file_->status().size;
    uint64_t n = offset >= size ? 0 : size - offset;
    if (length >= 0) n = std::min<uint64_t>(n, static_cast<uint64_t>(length));
    py::bytes out(nullptr, static_cast<size_t>(n));  // filled below before anyone sees it
    std::span<char> span(PyBytes_AS_STRING(out.ptr()), static_cast<size_t>(n));
    auto got = WithoutGil([&] { return PreadFully(*file_, offset, span); });
    CheckCount(Unwrap(std::move(got), file_->status().path), n, file_->status().path);
    return out;
  }

  void Close() {
    if (getpid() == pid_) file_.reset();
  }
  bool closed() const { return file_ == nullptr; }

 private:
  void Check() const {
    if (!file_) throw py::value_error("I/O operation on a closed shoal file");
  }

  std::shared_ptr<Client> client_;  // outlives file_ (REQUIRES of client.h)
  std::unique_ptr<File> file_;
  pid_t pid_;
  std::mutex mu_;
  uint64_t cursor_ = 0;  // where File::Read continues
};

// A file being written. The C++ Writer takes one thread at a time: calls are serialised here.
// Destroyed without Close (in this process) it aborts: nothing becomes visible.
class WriterHandle {
 public:
  WriterHandle(std::shared_ptr<Client> client, std::unique_ptr<Writer> writer, std::string path)
      : client_(std::move(client)), writer_(std::move(writer)), path_(std::move(path)), pid_(getpid()) {}

  ~WriterHandle() {
    if (getpid() != pid_) {
      // Forked child: the writer's upload belongs to the parent. Leak it on purpose.
      (void)writer_.release();
      new std::shared_ptr<Client>(std::move(client_));
    }
  }

  // Appends the bytes of any C-contiguous buffer; returns their count.
  size_t Write(py::handle data) {
    Check();
    BufferView in(data, /*writable=*/false);
    Status s = WithoutGil([&] {
      std::lock_guard lock(mu_);
      return writer_->Write(in.span());
    });
    if (!s.ok()) RaiseStatus(s, path_);
    return in.span().size();
  }

  uint64_t size() {
    Check();
    std::lock_guard lock(mu_);
    return writer_->size();
  }

  // The durability point: the new file's status once it is in the under-store.
  FileStatus Close() {
    Check();
    auto r = WithoutGil([&] {
      std::lock_guard lock(mu_);
      return writer_->Close();
    });
    writer_.reset();
    return Unwrap(std::move(r), path_);
  }

  void Abort() {
    if (!writer_ || getpid() != pid_) return;
    WithoutGil([&] {
      std::lock_guard lock(mu_);
      writer_->Abort();
    });
    writer_.reset();
  }

  bool closed() const { return writer_ == nullptr; }

 private:
  void Check() const {
    if (!writer_) throw py::value_error("I/O operation on a closed shoal writer: " + path_);
  }

  std::shared_ptr<Client> client_;  // outlives writer_ (REQUIRES of client.h)
  std::unique_ptr<Writer> writer_;
  std::string path_;
  pid_t pid_;
  std::mutex mu_;
};

class ClientHandle {
 public:
  ClientHandle(const std::string& config_path, const std::string& token) : pid_(getpid()) {
    auto c = Client::Open(config_path, token);
    if (!c) RaiseStatus(c.error());
    client_ = std::shared_ptr<Client>(std::move(*c));
  }

  ~ClientHandle() {
    if (getpid() != pid_) {
      // Forked child: the client's threads and connections belong to the parent.
      // Destroying it would join threads that do not exist here; leak it on purpose.
      new std::shared_ptr<Client>(std::move(client_));
    }
  }

  FileStatus Stat(const std::string& path) {
    auto r = WithoutGil([&] { return client_->Stat(path); });
    return Unwrap(std::move(r), path);
  }

  std::vector<FileStatus> List(const std::string& path) {
    auto r = WithoutGil([&] { return client_->List(path); });
    return Unwrap(std::move(r), path);
  }

  std::unique_ptr<FileHandle> Open(const std::string& path) {
    auto r = WithoutGil([&] { return client_->OpenFile(path); });
    if (!r) RaiseStatus(r.error(), path);
    return std::make_unique<FileHandle>(client_, std::move(*r));
  }

  // Open and read in one call without the GIL (one release, not two: what many small
  // files from many threads cost). The bytes [offset, offset + length) or to the end.
  py::bytes Read(const std::string& path, uint64_t offset, int64_t length) {
    auto f = WithoutGil([&] { return client_->OpenFile(path); });
    if (!f) RaiseStatus(f.error(), path);
    uint64_t size = (*f)->status().size;
    uint64_t n = offset >= size ? 0 : size - offset;
    if (length >= 0) n = std::min<uint64_t>(n, static_cast<uint64_t>(length));
    py::bytes out(nullptr, static_cast<size_t>(n));  // filled below before anyone sees it
    std::span<char> span(PyBytes_AS_STRING(out.ptr()), static_cast<size_t>(n));
    auto got = WithoutGil([&] {
      auto r = PreadFully(**f, offset, span);
      f->reset();  // closed without the GIL too
      return r;
    });
    CheckCount(Unwrap(std::move(got), path), n, path);
    return out;
  }

  // Opens `path` and reads from `offset` into a writable buffer, all without the GIL;
  // returns the count (less than the buffer only at the end of the file).
  size_t ReadInto(const std::string& path, py::handle buffer, uint64_t offset) {
    BufferView out(buffer, /*writable=*/true);
    auto got = WithoutGil([&] { return ReadIntoNoGil(path, out.span(), offset); });
    if (!got) RaiseStatus(got.error(), path);
    return *got;
  }

  // ReadInto for each (path, buffer[, offset]) of `items`, in order, with ONE release of the
  // GIL for them all: from many Python threads, a GIL hand-off per file costs more than
  // reading a small cached file. Stops at the first file that fails and raises its error
  // (the buffers before it are filled); returns the counts.
  py::list ReadIntoMany(const py::sequence& items) {
    struct Item {
      std::string path;
      std::unique_ptr<BufferView> out;
      uint64_t offset = 0;
    };
    std::vector<Item> batch;
    batch.reserve(py::len(items));
    for (py::handle it : items) {
      size_t n = py::isinstance<py::sequence>(it) && !py::isinstance<py::str>(it) ? py::len(it) : 0;
      if (n != 2 && n != 3) {
        throw py::type_error("readinto_many: item " + std::to_string(batch.size()) +
                             " is not a (path, buffer) or (path, buffer, offset) tuple");
      }
      auto t = py::reinterpret_borrow<py::sequence>(it);
      Item item;
      item.path = t[0].cast<std::string>();
      item.out = std::make_unique<BufferView>(t[1], /*writable=*/true);
      if (n == 3) item.offset = t[2].cast<uint64_t>();
      batch.push_back(std::move(item));
    }
    std::vector<size_t> counts(batch.size());
    size_t failed = batch.size();
    Status error;
    WithoutGil([&] {
      for (size_t i = 0; i < batch.size(); ++i) {
        auto got = ReadIntoNoGil(batch[i].path, batch[i].out->span(), batch[i].offset);
        if (!got) {
          failed = i;
          error = got.error();
          return;
        }
        counts[i] = *got;
      }
    });
    if (failed < batch.size()) RaiseStatus(error, batch[failed].path);
    py::list out;
    for (size_t n : counts) out.append(n);
    return out;
  }

  // Client.read for each path (whole files), in order, with one release of the GIL per
  // group of files rather than two per file. Each release copies the files opened in the
  // previous one into the bytes objects made for them (with the GIL, which making a bytes
  // object needs), closes them, and opens the next group. A group holds at most
  // kGroupBytes of what its opens brought (a small file whole), so the batch's memory
  // is its result plus about 1 MiB, not twice the result (see KeepHeapForBatch for why
  // that memory matters). Raises the first error, naming its path; the files after it
  // are not opened.
  py::list ReadMany(const std::vector<std::string>& paths) {
    constexpr size_t kGroupFiles = 64;
    constexpr uint64_t kGroupBytes = 1 << 20;
    py::list out;
    std::vector<std::unique_ptr<File>> opened;  // paths[first, next)
    size_t first = 0, next = 0;
    uint64_t total = 0;  // bytes returned
    size_t failed = paths.size();
    Status error;
    while (true) {
      std::vector<py::bytes> data;
      std::vector<std::span<char>> spans;
      data.reserve(opened.size());
      spans.reserve(opened.size());
      for (auto& f : opened) {
        auto n = static_cast<size_t>(f->status().size);
        data.emplace_back(nullptr, n);  // filled below before anyone sees it
        spans.emplace_back(PyBytes_AS_STRING(data.back().ptr()), n);
      }
      size_t short_count = 0;
      WithoutGil([&] {
        for (size_t i = 0; i < opened.size(); ++i) {
          auto got = PreadFully(*opened[i], 0, spans[i]);
          if (!got || *got != spans[i].size()) {
            failed = first + i;
            if (got) {
              short_count = *got;
            } else {
              error = got.error();
            }
            break;
          }
        }
        opened.clear();  // closed (their bytes freed) before the next group is opened
        if (failed < paths.size()) return;
        first = next;
        uint64_t held = 0;
        while (next < paths.size() && opened.size() < kGroupFiles && held < kGroupBytes) {
          auto f = client_->OpenFile(paths[next]);
          if (!f) {
            failed = next;
            error = f.error();
            opened.clear();
            return;
          }
          held += std::min<uint64_t>((*f)->status().size, OpenOptions{}.prefetch);
          opened.push_back(std::move(*f));
          ++next;
        }
      });
      if (failed < paths.size()) {
        if (!error.ok()) RaiseStatus(error, paths[failed]);
        CheckCount(short_count, spans[failed - first].size(), paths[failed]);
      }
      for (auto& d : data) {
        total += static_cast<uint64_t>(PyBytes_GET_SIZE(d.ptr()));
        out.append(std::move(d));
      }
      if (opened.empty()) {
        KeepHeapForBatch(total);
        return out;
      }
    }
  }

  // Reads a whole file and drops the bytes: brings it into the owning workers' caches.
  // Returns the byte count. For prefetching; `scratch_bytes` bounds the memory used.
  uint64_t Warm(const std::string& path, uint64_t scratch_bytes) {
    auto r = WithoutGil([&] { return WarmNoGil(path, std::clamp<uint64_t>(scratch_bytes, 64 * 1024, 64ull << 20)); });
    return Unwrap(std::move(r), path);
  }

  std::unique_ptr<WriterHandle> Create(const std::string& path, bool overwrite) {
    CreateOptions options;
    options.overwrite = overwrite;
    auto r = WithoutGil([&] { return client_->Create(path, options); });
    if (!r) RaiseStatus(r.error(), path);
    return std::make_unique<WriterHandle>(client_, std::move(*r), path);
  }

  void Delete(const std::string& path) {
    Check(WithoutGil([&] { return client_->Delete(path); }), path);
  }
  void Mkdir(const std::string& path) {
    Check(WithoutGil([&] { return client_->Mkdir(path); }), path);
  }
  void Rmdir(const std::string& path) {
    Check(WithoutGil([&] { return client_->Rmdir(path); }), path);
  }
  void Rename(const std::string& from, const std::string& to) {
    Check(WithoutGil([&] { return client_->Rename(from, to); }), from);
  }

  void Refresh(const std::string& path, bool recursive, bool data) {
    Check(WithoutGil([&] { return client_->Refresh(path, recursive, data); }), path);
  }

  std::vector<WorkerStatus> ClusterStatus() {
    py::gil_scoped_release nogil;
    return client_->ClusterStatus();
  }
  py::dict WhoAmI() {
    auto id = WithoutGil([&] { return client_->WhoAmI(); });
    CallerIdentity who = Unwrap(std::move(id));
    py::dict d;
    d["user"] = who.user;
    d["groups"] = who.groups;
    d["proof"] = who.proof;
    d["via"] = who.via;
    d["may_act_for_others"] = who.may_act_for_others;
    return d;
  }
  std::vector<MountInfo> Mounts() const { return client_->Mounts(); }
  ClientStats Stats() const { return client_->stats(); }

 private:
  Result<uint64_t> WarmNoGil(const std::string& path, uint64_t scratch_bytes) {
    auto f = client_->OpenFile(path);
    if (!f) return std::unexpected(f.error());
    uint64_t size = (*f)->status().size;
    std::vector<char> scratch(static_cast<size_t>(std::min(size, scratch_bytes)));
    uint64_t done = 0;
    while (done < size) {
      auto n = PreadFully(**f, done, scratch);
      if (!n) return std::unexpected(n.error());
      if (*n == 0) break;
      done += *n;
    }
    return done;
  }

  Result<size_t> ReadIntoNoGil(const std::string& path, std::span<char> out, uint64_t offset) {
    auto f = client_->OpenFile(path);
    if (!f) return std::unexpected(f.error());
    return PreadFully(**f, offset, out);
  }

  static void Check(const Status& s, const std::string& path) {
    if (!s.ok()) RaiseStatus(s, path);
  }

  std::shared_ptr<Client> client_;
  pid_t pid_;
};

std::string Repr(const FileStatus& s) {
  return "FileStatus(path=" + py::repr(py::str(s.path)).cast<std::string>() +
         (s.is_dir
              ? ", is_dir=True"
              : ", size=" + std::to_string(s.size) + ", version=" + py::repr(py::str(s.version)).cast<std::string>()) +
         ")";
}

}  // namespace
}  // namespace shoal::python

PYBIND11_MODULE(_shoal, m) {
  shoal::SetDoorName("python");
  using namespace shoal;
  using namespace shoal::python;
  m.doc() = "Shoal's C++ client library; use the `shoal` package, not this module.";

  py::class_<FileStatus>(m, "FileStatus",
                         "A file's or directory's status (Client.stat, Client.ls): its namespace path, size, "
                         "mtime and version (the ETag, or \"<mtime_ns>-<size>\"; empty for a directory). Every "
                         "byte a file opened at a version returns comes from that version.")
      .def_readonly("path", &FileStatus::path, "The namespace path (\"/data/train/x.jpg\").")
      .def_readonly("is_dir", &FileStatus::is_dir)
      .def_readonly("size", &FileStatus::size, "Bytes (0 for a directory).")
      .def_readonly("mtime_ns", &FileStatus::mtime_ns, "Modification time, nanoseconds since the epoch.")
      .def_readonly("version", &FileStatus::version, "The ETag, or \"<mtime_ns>-<size>\"; \"\" for a directory.")
      .def_readonly("mode", &FileStatus::mode,
                    "Permission bits (0o7777) where the store keeps them (file://, hdfs://, object stores with "
                    "posix_attributes), else 0.")
      .def_readonly("ctime_ns", &FileStatus::ctime_ns,
                    "Last change of bytes or attributes, ns since the epoch, where the store keeps it (file://), "
                    "else 0.")
      .def_readonly("uid", &FileStatus::uid,
                    "Owner's id where the store keeps one (file://, object stores with posix_attributes), else -1.")
      .def_readonly("gid", &FileStatus::gid, "Group's id where the store keeps one, else -1.")
      .def("__repr__", &Repr);

  py::class_<WorkerStatus>(m, "WorkerStatus",
                           "One worker of the cluster as this client sees it (Client.status()): whether it "
                           "answers, and its cache's size and hits. A worker that is down has up=False and "
                           "the reason in `error`; its other fields are then 0.")
      .def_readonly("address", &WorkerStatus::address, "host:port")
      .def_readonly("up", &WorkerStatus::up)
      .def_readonly("error", &WorkerStatus::error, "Why it is down (\"\" when up).")
      .def_readonly("cache_used_bytes", &WorkerStatus::cache_used_bytes)
      .def_readonly("cache_capacity_bytes", &WorkerStatus::cache_capacity_bytes, "As configured.")
      .def_readonly("cache_effective_capacity_bytes", &WorkerStatus::cache_effective_capacity_bytes,
                    "What its disks can hold now (less than configured when they fill).")
      .def_readonly("hit_bytes", &WorkerStatus::hit_bytes, "Bytes served from its cache.")
      .def_readonly("miss_bytes", &WorkerStatus::miss_bytes, "Bytes it had to fetch for a reader.")
      .def_readonly("ufs_read_bytes", &WorkerStatus::ufs_read_bytes, "Bytes it read from the under-store.")
      .def_property_readonly("hit_ratio", &WorkerStatus::hit_ratio, "hit_bytes / (hit_bytes + miss_bytes), 0 if none.")
      .def("__repr__", [](const WorkerStatus& w) {
        return "WorkerStatus(address='" + w.address + "', up=" + (w.up ? "True" : "False") + ")";
      });

  py::class_<MountInfo>(m, "MountInfo",
                        "One entry of the mount table (Client.mounts()): a namespace path, the under-store "
                        "URI it maps to, its consistency mode and whether it refuses writes.")
      .def_readonly("path", &MountInfo::path, "The namespace path (\"/data\").")
      .def_readonly("ufs", &MountInfo::ufs, "The under-store URI (\"s3://bucket/prefix/\").")
      .def_readonly("consistency", &MountInfo::consistency, "\"immutable\", \"ttl=60s\" or \"always\".")
      .def_readonly("read_only", &MountInfo::read_only)
      .def("__repr__", [](const MountInfo& i) { return "MountInfo(path='" + i.path + "', ufs='" + i.ufs + "')"; });

  // ClientStats' fields, in the order of include/shoal/client.h; its repr lists them all.
  static const std::vector<std::pair<const char*, uint64_t ClientStats::*>> kStatsFields = {
      {"worker_read_bytes", &ClientStats::worker_read_bytes},
      {"fallback_read_bytes", &ClientStats::fallback_read_bytes},
      {"worker_failures", &ClientStats::worker_failures},
      {"local_read_bytes", &ClientStats::local_read_bytes},
      {"local_corrupt_reads", &ClientStats::local_corrupt_reads},
      {"cache_pushed_bytes", &ClientStats::cache_pushed_bytes},
      {"cache_push_failures", &ClientStats::cache_push_failures},
      {"write_backs", &ClientStats::write_backs},
      {"write_back_fallbacks", &ClientStats::write_back_fallbacks},
      {"fallback_throttled_waits", &ClientStats::fallback_throttled_waits},
      {"fallback_rate_limited", &ClientStats::fallback_rate_limited},
      {"hot_spread_reads", &ClientStats::hot_spread_reads},
      {"local_file_bytes", &ClientStats::local_file_bytes},
  };
  py::class_<ClientStats> stats(m, "ClientStats",
                                "Counters of this process's client since it was opened (Client.stats()), as "
                                "include/shoal/client.h describes them: bytes read from workers "
                                "(worker_read_bytes; local_read_bytes of them through the same-host short "
                                "circuit), from the under-store when workers failed (fallback_read_bytes), "
                                "failures, and the cache-through and write-back writers' counts.");
  for (const auto& [name, field] : kStatsFields) stats.def_readonly(name, field);
  stats.def("__repr__", [](const ClientStats& s) {
    std::string out = "ClientStats(";
    for (size_t i = 0; i < kStatsFields.size(); ++i) {
      out += (i ? ", " : "") + std::string(kStatsFields[i].first) + "=" + std::to_string(s.*kStatsFields[i].second);
    }
    return out + ")";
  });

  py::class_<FileHandle>(m, "File")
      .def_property_readonly("status", &FileHandle::status, py::return_value_policy::copy)
      .def("readinto", &FileHandle::ReadInto, py::arg("buffer"), py::arg("offset"),
           "Reads into a writable buffer at `offset` without the GIL; returns the count (0 at the end).")
      .def("read", &FileHandle::Read, py::arg("offset") = 0, py::arg("length") = -1)
      .def("close", &FileHandle::Close)
      .def_property_readonly("closed", &FileHandle::closed);

  py::class_<WriterHandle>(m, "Writer")
      .def("write", &WriterHandle::Write, py::arg("data"),
           "Appends the bytes of a buffer without the GIL; returns their count.")
      .def_property_readonly("size", &WriterHandle::size)
      .def("close", &WriterHandle::Close, "Commits the file; returns its new FileStatus.")
      .def("abort", &WriterHandle::Abort)
      .def_property_readonly("closed", &WriterHandle::closed);

  py::class_<ClientHandle>(m, "Client")
      .def(py::init<const std::string&, const std::string&>(), py::arg("config_path"), py::arg("token") = "")
      .def("stat", &ClientHandle::Stat, py::arg("path"))
      .def("ls", &ClientHandle::List, py::arg("path"))
      .def("open", &ClientHandle::Open, py::arg("path"))
      .def("read", &ClientHandle::Read, py::arg("path"), py::arg("offset") = 0, py::arg("length") = -1)
      .def("readinto", &ClientHandle::ReadInto, py::arg("path"), py::arg("buffer"), py::arg("offset") = 0)
      .def("readinto_many", &ClientHandle::ReadIntoMany, py::arg("items"))
      .def("read_many", &ClientHandle::ReadMany, py::arg("paths"))
      .def("create", &ClientHandle::Create, py::arg("path"), py::arg("overwrite") = true)
      .def("delete", &ClientHandle::Delete, py::arg("path"))
      .def("mkdir", &ClientHandle::Mkdir, py::arg("path"))
      .def("rmdir", &ClientHandle::Rmdir, py::arg("path"))
      .def("rename", &ClientHandle::Rename, py::arg("from_path"), py::arg("to_path"))
      .def("warm", &ClientHandle::Warm, py::arg("path"), py::arg("scratch_bytes") = 4 << 20)
      .def("refresh", &ClientHandle::Refresh, py::arg("path"), py::arg("recursive") = false, py::arg("data") = false)
      .def("status", &ClientHandle::ClusterStatus)
      .def("whoami", &ClientHandle::WhoAmI)
      .def("mounts", &ClientHandle::Mounts)
      .def("stats", &ClientHandle::Stats);

  // For tests of the one mapping: raises what a Status with this code name becomes.
  m.def("_raise_status", [](const std::string& code_name, const std::string& message, const std::string& path) {
    for (int c = 0; c <= static_cast<int>(Code::kNotDirectory); ++c) {
      if (CodeName(static_cast<Code>(c)) == code_name) RaiseStatus(Status(static_cast<Code>(c), message), path);
    }
    throw py::value_error("unknown status code name: " + code_name);
  });
}
