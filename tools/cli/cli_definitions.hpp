// SPDX-License-Identifier: Apache-2.0
// The command line of a program as data (JSON): every command with its
// options, positionals, notes, examples and exit codes, read from the same
// CLI11 definitions that print --help. `cdc --cli-definitions` prints it for
// the cdc tool and its helpers; the man pages, the shell completions and the
// grammar test are made from it (docs/CLI.md).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace cdc::cli {

/// The argument that makes a program print its definitions instead of running.
inline constexpr const char* kDefinitionsFlag = "--cli-definitions";

/// `app` and the commands below it (hidden ones left out). A command run by
/// a helper program (a prefix command) is marked "helper": true, without
/// options.
nlohmann::ordered_json definitions(const CLI::App& app);

}  // namespace cdc::cli
