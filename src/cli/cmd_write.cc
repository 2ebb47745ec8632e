// shoal put / cp (upload) / rm / mkdir / rmdir / mv: writes through the
// client library (Client::Create and the namespace writes), to the under-store
// by each mount's write_mode.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

constexpr size_t kChunk = 8 << 20;

// Streams `fd` into a new file at `path`; on any failure the writer is
// aborted, so nothing appears under the path. `progress` (optional) is told
// each chunk's size as it is written, and -size() when the write fails.
Status Put(Client& c, int fd, const std::string& source, const std::string& path, bool overwrite, bool progress,
           const std::function<void(int64_t)>& on_bytes = {}) {
  uint64_t total = 0;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) total = static_cast<uint64_t>(st.st_size);
  auto w = c.Create(path, CreateOptions{.overwrite = overwrite});
  if (!w) return w.error();
  std::string buf(kChunk, '\0');
  auto start = std::chrono::steady_clock::now();
  uint64_t reported = 0;
  auto report = [&](int64_t n) {
    if (!on_bytes) return;
    on_bytes(n);
    reported += static_cast<uint64_t>(n);
  };
  // Whatever was counted for a write that then failed is taken back.
  struct Unreport {
    const std::function<void(int64_t)>& f;
    uint64_t& n;
    bool armed = true;
    ~Unreport() {
      if (armed && f && n) f(-static_cast<int64_t>(n));
    }
  } unreport{on_bytes, reported};
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      Status err(Code::kIo,
                 "cannot read " + source + ": " + std::strerror(errno) + " (nothing was written to " + path + ")");
      (*w)->Abort();
      return err;
    }
    if (n == 0) break;
    SHOAL_RETURN_IF_ERROR((*w)->Write(std::span<const char>(buf.data(), static_cast<size_t>(n))));
    report(n);
    if (progress) {
      uint64_t done = (*w)->size();
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::string of = total ? " / " + FormatSize(total) : "";
      std::fprintf(stderr, "\r%s%s %.1f MB/s   ", FormatSize(done).c_str(), of.c_str(),
                   secs > 0 ? done / secs / 1e6 : 0.0);
    }
  }
  auto closed = (*w)->Close();
  if (progress) std::fprintf(stderr, "\n");
  if (!closed) return closed.error();
  unreport.armed = false;
  return {};
}

Status OpenError(const std::string& source) {
  Code code = errno == ENOENT ? Code::kNotFound : errno == EACCES ? Code::kPermissionDenied : Code::kIo;
  return Status(code, "cannot open " + source + ": " + std::strerror(errno));
}

// ---- shoal cp LOCAL... SHOAL_PATH (upload) --------------------------------

struct UploadJob {
  std::string local;  // a regular file (or, with is_dir, a directory to create)
  std::string dest;
  uint64_t size = 0;
  bool is_dir = false;
};

// The files (and directories) to upload. A file source goes to `dest`, or
// into it when `dest` is a directory in Shoal or ends with '/'; a directory
// source (recursive only) becomes `dest`, its tree below it.
Result<std::vector<UploadJob>> PlanUpload(Client& c, const std::string& source, std::string dest, bool recursive) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto st = fs::status(source, ec);
  if (ec || !fs::exists(st)) {
    return Err(ec == std::errc::permission_denied ? Code::kPermissionDenied : Code::kNotFound,
               "cannot copy '" + source + "': " + (ec ? ec.message() : "no such file or directory"));
  }
  auto existing = c.Stat(dest);
  const bool dest_is_dir = (existing && existing->is_dir) || dest.ends_with('/');
  while (dest.size() > 1 && dest.ends_with('/')) dest.pop_back();
  std::string base = fs::path(source).lexically_normal().filename().string();
  if (base.empty()) base = fs::path(source).lexically_normal().parent_path().filename().string();
  std::vector<UploadJob> jobs;
  if (fs::is_regular_file(st)) {
    std::string to = dest_is_dir ? dest + "/" + base : dest;
    jobs.push_back({source, to, static_cast<uint64_t>(fs::file_size(source, ec)), false});
    return jobs;
  }
  if (!fs::is_directory(st)) {
    return Err(Code::kInvalidArgument, "cannot copy '" + source + "': not a regular file or directory");
  }
  if (!recursive) {
    return Err(Code::kInvalidArgument, "'" + source + "' is a directory: copy it with cp -r");
  }
  // Like cp -r: into an existing directory as its own name, else as `dest`.
  const std::string root = existing && existing->is_dir ? dest + "/" + base : dest;
  jobs.push_back({source, root, 0, true});
  fs::recursive_directory_iterator it(source, fs::directory_options::follow_directory_symlink, ec), end;
  if (ec) return Err(Code::kIo, "cannot list '" + source + "': " + ec.message());
  size_t seen = 0;
  for (; it != end; it.increment(ec)) {
    if (ec) return Err(Code::kIo, "cannot list '" + source + "': " + ec.message());
    if (++seen > 10'000'000) return Err(Code::kInvalidArgument, "'" + source + "' holds more than 10 million entries");
    std::string rel = fs::relative(it->path(), source, ec).generic_string();
    UploadJob j{it->path().string(), root + "/" + rel, 0, false};
    if (it->is_directory(ec)) {
      j.is_dir = true;
    } else if (it->is_regular_file(ec)) {
      j.size = it->file_size(ec);
    } else {
      continue;  // sockets, fifos, devices, dangling links: not files to upload (as cp -r skips them)
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// Uploads `jobs` with `parallel` files at a time. On a terminal (stderr), one
// progress line; otherwise JSON lines on stdout: one per file and, at most
// once a second, the progress. Every failure is one error line; returns the
// exit code (the first failure's, 0 when all went through).
int Upload(Client& c, std::vector<UploadJob> jobs, int parallel, bool quiet) {
  using Json = nlohmann::json;
  using Clock = std::chrono::steady_clock;
  const bool tty = !quiet && ::isatty(2);
  const bool json = !quiet && !tty;
  uint64_t total_bytes = 0, total_files = 0;
  for (const auto& j : jobs) {
    if (!j.is_dir) total_bytes += j.size, ++total_files;
  }
  // Directories first (in order: parents before children), one by one.
  int code = 0;
  std::mutex out_mu;
  auto fail = [&](const std::string& local, const std::string& dest, const Status& st) {
    std::lock_guard lock(out_mu);
    if (tty) std::fprintf(stderr, "\n");
    int e = Fail(st.WithContext("copy '" + local + "' to " + dest));
    if (json)
      std::printf("%s\n", Json{{"event", "error"}, {"source", local}, {"path", dest}, {"error", st.message()}}
                              .dump(-1, ' ', false, Json::error_handler_t::replace)
                              .c_str());
    if (code == 0) code = e;
  };
  for (const auto& j : jobs) {
    if (!j.is_dir) continue;
    Status st = c.Mkdir(j.dest);
    if (!st.ok() && st.code() != Code::kAlreadyExists) fail(j.local, j.dest, st);
  }
  std::erase_if(jobs, [](const UploadJob& j) { return j.is_dir; });

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0}, files_done{0}, files_failed{0};
  const auto start = Clock::now();
  auto line = [&](bool final) {
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    uint64_t b = bytes.load();
    double rate = secs > 0 ? static_cast<double>(b) / secs / 1e6 : 0.0;
    std::lock_guard lock(out_mu);
    if (tty) {
      std::fprintf(stderr, "\rfiles %llu/%llu  %s / %s  %.1f MB/s%s   ", (unsigned long long)files_done.load(),
                   (unsigned long long)total_files, FormatSize(b).c_str(), FormatSize(total_bytes).c_str(), rate,
                   files_failed ? (", " + std::to_string(files_failed.load()) + " failed").c_str() : "");
      if (final) std::fprintf(stderr, "\n");
    } else if (json) {
      Json j{{"event", final ? "done" : "progress"},
             {"files_done", files_done.load()},
             {"files_failed", files_failed.load()},
             {"files_total", total_files},
             {"bytes", b},
             {"bytes_total", total_bytes},
             {"seconds", secs},
             {"mb_per_s", rate}};
      std::printf("%s\n", j.dump().c_str());
      std::fflush(stdout);
    }
  };
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      const UploadJob& j = jobs[i];
      int fd = ::open(j.local.c_str(), O_RDONLY | O_CLOEXEC);
      Status st = fd < 0 ? OpenError("'" + j.local + "'")
                         : Put(c, fd, "'" + j.local + "'", j.dest, true, false,
                               [&](int64_t n) { bytes.fetch_add(static_cast<uint64_t>(n)); });
      if (fd >= 0) ::close(fd);
      if (!st.ok()) {
        files_failed.fetch_add(1);
        fail(j.local, j.dest, st);
        continue;
      }
      files_done.fetch_add(1);
      if (json) {
        std::lock_guard lock(out_mu);
        std::printf("%s\n", Json{{"event", "file"}, {"source", j.local}, {"path", j.dest}, {"bytes", j.size}}
                                .dump(-1, ' ', false, Json::error_handler_t::replace)
                                .c_str());
        std::fflush(stdout);
      }
    }
  };
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool finished = false;
  std::thread reporter;
  if (!quiet) {
    reporter = std::thread([&] {
      std::unique_lock lock(done_mu);
      auto every = tty ? std::chrono::milliseconds(200) : std::chrono::milliseconds(1000);
      while (!done_cv.wait_for(lock, every, [&] { return finished; })) {
        lock.unlock();
        line(false);
        lock.lock();
      }
    });
  }
  std::vector<std::thread> threads;
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(1, parallel)), std::max<size_t>(1, jobs.size()));
  for (size_t k = 0; k < n; ++k) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  {
    std::lock_guard lock(done_mu);
    finished = true;
  }
  done_cv.notify_all();
  if (reporter.joinable()) reporter.join();
  if (!quiet) line(true);
  return code;
}

}  // namespace

bool IsShoalPath(Client& c, const std::string& path) {
  if (path.find("://") != std::string::npos) return true;
  for (const auto& m : c.Mounts()) {
    if (m.path == "/" || path == m.path || path.starts_with(m.path + "/")) return true;
  }
  return false;
}

int RunUpload(Client& c, const std::vector<std::string>& sources, const std::string& dest, bool recursive, int parallel,
              bool quiet) {
  std::vector<UploadJob> jobs;
  int code = 0;
  // Several sources go into a directory, as with cp.
  std::string into = sources.size() > 1 && !dest.ends_with('/') ? dest + "/" : dest;
  for (const auto& s : sources) {
    auto planned = PlanUpload(c, s, into, recursive);
    if (!planned) {
      int e = Fail(planned.error());
      if (code == 0) code = e;
      continue;
    }
    for (auto& j : *planned) jobs.push_back(std::move(j));
  }
  int up = Upload(c, std::move(jobs), parallel, quiet);
  return code ? code : up;
}

namespace {

// Runs `op` on each path; every failure is reported, the first one's exit code returned.
int EachPath(const ClientOptions& options, const std::vector<std::string>& paths,
             const std::function<Status(Client&, const std::string&)>& op) {
  auto c = OpenClient(options);
  if (!c) return Fail(c.error());
  int code = 0;
  for (const auto& p : paths) {
    Status st = op(**c, p);
    if (!st.ok()) {
      int e = Fail(st);
      if (code == 0) code = e;
    }
  }
  return code;
}

}  // namespace

void AddWriteCommands(CLI::App& app, int* exit_code) {
  {
    struct Args {
      ClientOptions client;
      std::string source, path;
      bool no_overwrite = false;
      bool quiet = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("put", "Write a local file (or stdin, '-') to a path, through to the under-store");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("source", a->source, "Local file, or - for stdin")->required();
    cmd->add_option("path", a->path, "Namespace path or physical URI to write")->required();
    cmd->add_flag("-n,--no-overwrite", a->no_overwrite, "Fail if the path exists");
    cmd->add_flag("-q,--quiet", a->quiet, "No progress line");
    cmd->callback([a, exit_code] {
      int fd = 0;
      std::string source = "stdin";
      if (a->source != "-") {
        source = "'" + a->source + "'";
        fd = ::open(a->source.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
          Code code = errno == ENOENT ? Code::kNotFound : errno == EACCES ? Code::kPermissionDenied : Code::kIo;
          return void(*exit_code = Fail(Status(code, "cannot open " + source + ": " + std::strerror(errno))));
        }
        struct stat st;
        if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
          ::close(fd);
          return void(*exit_code =
                          Fail(Status(Code::kInvalidArgument, source + " is a directory: put writes one file")));
        }
      }
      auto c = OpenClient(a->client);
      Status st = c ? Put(**c, fd, source, a->path, !a->no_overwrite, !a->quiet && ::isatty(2)) : c.error();
      if (fd != 0) ::close(fd);
      *exit_code = st.ok() ? 0 : Fail(st);
    });
  }
  {
    struct Args {
      ClientOptions client;
      std::vector<std::string> paths;
    };
    struct Simple {
      const char* name;
      const char* help;
      Status (Client::*op)(std::string_view);
    };
    for (const Simple& s : {Simple{"rm", "Delete files (not directories)", &Client::Delete},
                            Simple{"mkdir", "Create directories, and any missing parents", &Client::Mkdir},
                            Simple{"rmdir", "Remove empty directories", &Client::Rmdir}}) {
      auto a = std::make_shared<Args>();
      auto* cmd = app.add_subcommand(s.name, s.help);
      AddClientOptions(cmd, &a->client);
      cmd->add_option("paths", a->paths, "Namespace paths or physical URIs")->required();
      cmd->callback([a, exit_code, op = s.op] {
        *exit_code = EachPath(a->client, a->paths, [op](Client& c, const std::string& p) { return (c.*op)(p); });
      });
    }
  }
  {
    struct Args {
      ClientOptions client;
      std::string from, to;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("mv", "Rename a file (or, on file:// and hdfs://, a directory) within a mount");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("from", a->from, "Namespace path or physical URI")->required();
    cmd->add_option("to", a->to, "New path, in the same mount; an existing file there is replaced")->required();
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      Status st = (*c)->Rename(a->from, a->to);
      *exit_code = st.ok() ? 0 : Fail(st);
    });
  }
}

}  // namespace shoal::cli
