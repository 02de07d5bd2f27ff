// SPDX-License-Identifier: Apache-2.0
// Runs a program's CLI11 app the same way in the cdc tool and its helpers:
// --help and --version print and exit 0; `--cli-definitions` prints the
// definitions; a bad command line is one line, "cdc: error: ... (see 'cdc
// COMMAND --help')", and exit 2; an exception out of a command is reported by
// report_current_exception.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace cdc::cli {

/// The flag of `command` ("resync", "store put") that sets a library field
/// named by an OptionError ("normal_size" -> "--avg"); empty if none.
using FlagOf = std::function<std::string_view(std::string_view command, std::string_view field)>;

/// "resync", "bench run": the command path that was parsed ("" for none).
std::string command_path(const CLI::App& app);

/// Parses argv and runs the command chosen; returns the exit code (the
/// command's callback sets `exit_code`).
int run_app(CLI::App& app, int argc, char** argv, const int& exit_code, const FlagOf& flag_of = {});

}  // namespace cdc::cli
