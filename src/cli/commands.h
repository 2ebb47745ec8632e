// The `shoal` subcommands. Each Add* registers one subcommand on the CLI11 app;
// its callback stores the exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "shoal/client.h"
#include "shoal/status.h"

namespace shoal::cli {

void AddWorker(CLI::App& app, int* exit_code);
void AddUp(CLI::App& app, int* exit_code);
void AddClientCommands(CLI::App& app, int* exit_code);  // ls, stat, mount, refresh, status
void AddReadCommands(CLI::App& app, int* exit_code);    // cat, cp

// Prints "shoal: error: <message>" and returns the exit code for it.
int Fail(const Status& s);
// Adds --config to a client subcommand; the path ends up in *path ("" means $SHOAL_CONFIG).
void AddConfigOption(CLI::App* cmd, std::string* path);
Result<std::unique_ptr<Client>> OpenClient(const std::string& config_path);

}  // namespace shoal::cli
