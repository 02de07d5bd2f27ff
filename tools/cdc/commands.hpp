// The subcommands of cdc. Each lives in its own cmd_<name>.cpp and registers
// itself with a static CommandRegistration; its callback stores the exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <utility>
#include <vector>

namespace cdc::cli {

using AddCommand = void (*)(CLI::App& app, int& exit_code);

/// Registered subcommands as (order, add function); `cdc --help` lists them
/// by order.
std::vector<std::pair<int, AddCommand>>& command_registry();

struct CommandRegistration {
    CommandRegistration(int order, AddCommand add) { command_registry().emplace_back(order, add); }
};

}  // namespace cdc::cli
