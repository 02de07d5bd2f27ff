// The subcommands of cdc. Each lives in its own cmd_<name>.cpp and adds
// itself to the app; its callback stores the exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <vector>

namespace cdc::cli {

using AddCommand = void (*)(CLI::App& app, int& exit_code);

void add_algorithms_command(CLI::App& app, int& exit_code);
void add_chunk_command(CLI::App& app, int& exit_code);
void add_gen_command(CLI::App& app, int& exit_code);

/// Every subcommand, in the order `cdc --help` lists them.
inline std::vector<AddCommand> command_list() {
    return {
        &add_chunk_command,
        &add_algorithms_command,
        &add_gen_command,
    };
}

}  // namespace cdc::cli
