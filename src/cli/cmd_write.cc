// shoal put / rm / mkdir / rmdir / mv: writes through the client library
// (Client::Create and the namespace writes), straight to the under-store.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>

#include "cli/commands.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

constexpr size_t kChunk = 8 << 20;

// Streams `fd` into a new file at `path`; on any failure the writer is
// aborted, so nothing appears under the path.
Status Put(Client& c, int fd, const std::string& source, const std::string& path, bool overwrite, bool progress) {
  uint64_t total = 0;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) total = static_cast<uint64_t>(st.st_size);
  auto w = c.Create(path, CreateOptions{.overwrite = overwrite});
  if (!w) return w.error();
  std::string buf(kChunk, '\0');
  auto start = std::chrono::steady_clock::now();
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
  return {};
}

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
