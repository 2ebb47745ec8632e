// shoal cat PATH / shoal cp PATH LOCAL_FILE
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include "cli/commands.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

constexpr size_t kChunk = 8 << 20;

Status WriteAll(int fd, const char* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) {
        // The reader went away (`shoal cat f | head`): end as cat does, by
        // SIGPIPE, quietly. The process ignores SIGPIPE so that sockets cannot
        // kill it; here the default action is what a shell expects.
        std::signal(SIGPIPE, SIG_DFL);
        std::raise(SIGPIPE);
      }
      return Status(errno == ENOSPC ? Code::kNoSpace : Code::kIo, "cannot write " + what + ": " + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

// Streams a file to fd, with a progress line on stderr when it is a terminal.
Status Copy(Client& c, const std::string& path, int fd, const std::string& dest_name, bool progress) {
  auto f = c.OpenFile(path);
  if (!f) return f.error();
  uint64_t total = (*f)->status().size, done = 0;
  // As large as the file, up to kChunk, and not zeroed: touching 8 MiB to
  // print a 4 KiB file cost a short `shoal cat` 10-25 ms of page faults.
  const size_t size = static_cast<size_t>(std::clamp<uint64_t>(total, 1, kChunk));
  std::unique_ptr<char[]> buf(new char[size]);
  auto start = std::chrono::steady_clock::now();
  while (done < total) {
    auto n = (*f)->Read(std::span<char>(buf.get(), size));
    if (!n) return n.error();
    if (*n == 0) break;
    SHOAL_RETURN_IF_ERROR(WriteAll(fd, buf.get(), *n, dest_name));
    done += *n;
    if (progress) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r%s / %s (%.0f%%) %.1f MB/s   ", FormatSize(done).c_str(), FormatSize(total).c_str(),
                   100.0 * static_cast<double>(done) / static_cast<double>(total), secs > 0 ? done / secs / 1e6 : 0.0);
    }
  }
  if (progress) std::fprintf(stderr, "\n");
  if (done != total) {
    return Status(Code::kIo, path + " ended after " + std::to_string(done) + " of " + std::to_string(total) + " bytes");
  }
  return {};
}

}  // namespace

void AddReadCommands(CLI::App& app, int* exit_code) {
  {
    struct Args {
      ClientOptions client;
      std::vector<std::string> paths;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("cat", "Write files to stdout, one after the other");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("paths", a->paths, "Namespace paths or physical URIs")->required();
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      for (const auto& p : a->paths) {
        auto st = Copy(**c, p, 1, "stdout", false);
        if (!st.ok()) return void(*exit_code = Fail(st));
      }
      *exit_code = 0;
    });
  }
  {
    struct Args {
      ClientOptions client;
      std::vector<std::string> args;
      std::string path, dest;
      bool quiet = false;
      bool recursive = false;
      int parallel = 4;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand(
        "cp", "Copy a file out of Shoal to a local file, or local files (-r: directories) into Shoal");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("args", a->args, "PATH LOCAL_FILE (copy out), or LOCAL... PATH (copy in)")
        ->required()
        ->expected(2, -1);
    cmd->add_flag("-q,--quiet", a->quiet, "No progress line (nor JSON lines)");
    cmd->add_flag("-r,--recursive", a->recursive, "Copy local directories in, with everything below them");
    cmd->add_option("-j,--parallel", a->parallel, "Files uploaded at once (4)")->check(CLI::Range(1, 64));
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      a->dest = a->args.back();
      a->path = a->args.front();
      const bool out = a->args.size() == 2 && IsShoalPath(**c, a->path) &&
                       (!IsShoalPath(**c, a->dest) || ::access(a->path.c_str(), F_OK) != 0);
      if (!out) {
        if (!IsShoalPath(**c, a->dest)) {
          return void(*exit_code = Fail(Status(Code::kInvalidArgument,
                                               "cp: neither '" + a->path + "' nor '" + a->dest +
                                                   "' is in Shoal (a path under a mount, see `shoal mount list`, "
                                                   "or a physical URI)")));
        }
        std::vector<std::string> sources(a->args.begin(), a->args.end() - 1);
        *exit_code = RunUpload(**c, sources, a->dest, a->recursive, a->parallel, a->quiet);
        return;
      }
      if (a->recursive) {
        return void(*exit_code = Fail(Status(Code::kInvalidArgument,
                                             "cp -r copies local directories into Shoal; copy files out one by one")));
      }
      // Written beside the destination and renamed, so a failed copy leaves no partial file.
      std::string tmp = a->dest + ".shoal-partial";
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        *exit_code = Fail(Status(Code::kIo, "cannot create '" + a->dest + "': " + std::strerror(errno)));
        return;
      }
      auto st = Copy(**c, a->path, fd, a->dest, !a->quiet && ::isatty(2));
      ::close(fd);
      if (st.ok() && ::rename(tmp.c_str(), a->dest.c_str()) != 0) {
        st = Status(Code::kIo, "cannot rename into '" + a->dest + "': " + std::strerror(errno));
      }
      if (!st.ok()) ::unlink(tmp.c_str());
      *exit_code = st.ok() ? 0 : Fail(st);
    });
  }
}

}  // namespace shoal::cli
