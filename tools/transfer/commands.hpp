// SPDX-License-Identifier: Apache-2.0
// The commands of cdc-transfer: each lives in its own cmd_<name>.cpp and adds
// itself to the app with add_<name>_command; main.cpp lists them.
#pragma once

#include "connect.hpp"

#include <CLI/CLI.hpp>

namespace cdc::cli {

using AddCommand = void (*)(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_push_command(CLI::App& app, int& exit_code);
void add_pull_command(CLI::App& app, int& exit_code);
void add_ls_command(CLI::App& app, int& exit_code);
void add_hash_command(CLI::App& app, int& exit_code);
void add_bench_transfer_command(CLI::App& app, int& exit_code);

}  // namespace cdc::cli
