// SPDX-License-Identifier: Apache-2.0
// The subcommands of cdc: each lives in its own cmd_<name>.cpp and adds
// itself to the app with add_<name>_command (its callback stores the exit
// code); main.cpp lists them in one table, in `cdc --help` order.
#pragma once

#include <CLI/CLI.hpp>

#include <string_view>

namespace cdc::cli {

using AddCommand = void (*)(CLI::App& app, int& exit_code);

void add_chunk_command(CLI::App& app, int& exit_code);
void add_analyze_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);
void add_resync_command(CLI::App& app, int& exit_code);
void add_dupes_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_plot_command(CLI::App& app, int& exit_code);
void add_speed_command(CLI::App& app, int& exit_code);
void add_kernels_command(CLI::App& app, int& exit_code);
void add_sample_command(CLI::App& app, int& exit_code);
void add_algorithms_command(CLI::App& app, int& exit_code);
void add_gen_command(CLI::App& app, int& exit_code);
void add_store_command(CLI::App& app, int& exit_code);
/// serve, push, pull, ls, hash: listed in --help, run by the cdc-transfer helper.
void add_transfer_commands(CLI::App& app, int& exit_code);

/// The flag by which `command` ("resync", "bench run", ...) sets a library
/// field named by an OptionError ("normal_size" -> "--avg"); empty if none.
/// The one place where the library's field names meet the tools' flags.
std::string_view flag_of(std::string_view command, std::string_view field) noexcept;

}  // namespace cdc::cli
