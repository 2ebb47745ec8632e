// The `shoal` subcommands. Each Add* registers one subcommand on the CLI11 app;
// its callback stores the exit code in *exit_code.
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/file_text.h"  // WriteFileAtomic
#include "shoal/client.h"
#include "shoal/status.h"

namespace shoal::cli {

void AddWorker(CLI::App& app, int* exit_code);
void AddUp(CLI::App& app, int* exit_code);
void AddClientCommands(CLI::App& app, int* exit_code);  // ls, stat, mount, refresh, status
void AddReadCommands(CLI::App& app, int* exit_code);    // cat, cp (both ways)
void AddWriteCommands(CLI::App& app, int* exit_code);   // put, rm, mkdir, rmdir, mv
void AddFuse(CLI::App& app, int* exit_code);            // fuse (mount, --unmount)
void AddS3(CLI::App& app, int* exit_code);              // s3 (the S3 endpoint)
void AddLoadCommands(CLI::App& app, int* exit_code);    // load, free
void AddRulesCommands(CLI::App& app, int* exit_code);   // pin, unpin, rules [set|rm] (cmd_rules.cc)
void AddScrubCommand(CLI::App& app, int* exit_code);    // scrub (cmd_scrub.cc)
void AddPolicyCommands(CLI::App& app, int* exit_code);  // policy check (cmd_policy.cc)
void AddTokenCommands(CLI::App& app, int* exit_code);   // token issue, token keygen, whoami (cmd_token.cc)

// Prints "shoal: error: <message>" and returns the exit code for it.
int Fail(const Status& s);
// The exit code for an error CLI11 raised while parsing the command line, of
// any subcommand (parse_errors.cc): --help and --version print and give 0;
// any other prints one line, "shoal: error: WHAT; see 'shoal CMD --help'"
// (an unknown subcommand named, with the nearest real one), and gives 2.
int ReportParseError(CLI::App& app, const CLI::ParseError& e);
// `shoal --version`: "shoal 0.1.0 (commit 0123abcd4567, RelWithDebInfo build)".
std::string VersionText();
// Logs go to stderr (stdout carries command output, and `listening:` /
// `ready:` lines), at the level $SHOAL_LOG names when it is set.
void SetUpLogging();

// What every client command takes: --config FILE and -v/--verbose.
struct ClientOptions {
  std::string config;  // "" means $SHOAL_CONFIG
  bool verbose = false;
};
void AddClientOptions(CLI::App* cmd, ClientOptions* options);
// Sets the log level of a client command (errors only, so that a failure is
// one line; -v adds warnings and info; SHOAL_LOG overrides both) and opens
// the client.
Result<std::unique_ptr<Client>> OpenClient(const ClientOptions& options);

// Whether `path` names something in Shoal (a physical URI, or a path under a
// mount of `c`) rather than a local file.
bool IsShoalPath(Client& c, const std::string& path);
// shoal cp LOCAL... DEST (cmd_write.cc): uploads local files (with
// `recursive`, directory trees) to DEST, `parallel` files at a time, with a
// progress line on a terminal or JSON lines on stdout; returns the exit code.
int RunUpload(Client& c, const std::vector<std::string>& sources, const std::string& dest, bool recursive, int parallel,
              bool quiet);

// Checks every mount of `config` without contacting the stores (option names
// and values, credentials' shape, bucket names); the error names the mount.
Status ValidateMounts(const Config& config);

// The path of the running `shoal` binary (to start workers and daemons).
std::string SelfExe();
// Raises this process's soft RLIMIT_NOFILE to its hard limit (at most 65536),
// as any process may: `shoal s3` holds page files a worker leased
// (client/local_reader.h), an eighth of the limit, and a soft limit of 1024
// leaves room for 128.
void RaiseOpenFilesLimit();

// Creates `dir` and its missing parents.
Status MakeDirs(const std::string& dir);
// Creates a cache directory and checks that a file can be written in it, so
// that a worker is never started on one it cannot use: kReadOnly on a
// read-only file system, kPermissionDenied when not writable,
// kInvalidArgument when a file is in the way; each names the path.
Status CheckCacheDir(const std::string& dir);

}  // namespace shoal::cli
