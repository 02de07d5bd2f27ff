// SPDX-License-Identifier: Apache-2.0
// The commands of `cdc --cli-definitions` (tools/cli/cli_definitions.hpp)
// as a tree that the man pages and the completions are written from.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace cdc::docgen {

struct Option {
    std::vector<std::string> names;  ///< "-a", "--algorithm"
    std::string type;                ///< "NAME", "SIZE", ... ("" for a flag)
    std::string description;
    std::string default_value;
    bool required = false;
    bool repeatable = false;
    std::vector<std::string> choices;
    bool takes_value() const { return !type.empty(); }
};

struct Positional {
    std::string name;  ///< "PATH", "DIR", "NAME", "SPEC"...
    std::string description;
    bool required = false;
    bool repeatable = false;
    std::vector<std::string> choices;
};

struct Example {
    std::string command, what;
};

struct ExitStatus {
    int code = 0;
    std::string meaning;
};

struct Command {
    std::vector<std::string> path;  ///< {} for cdc itself, {"store", "put"}
    std::string description, notes;
    std::vector<Option> options;
    std::vector<Positional> positionals;
    std::vector<Example> examples;
    std::vector<ExitStatus> exit_codes;
    std::vector<Command> subcommands;

    /// "cdc store put"
    std::string words() const;
    /// "cdc-store-put": the man page's name.
    std::string page() const;
};

/// The tree of `definitions` (throws nlohmann::json::exception when it is
/// not the definitions' shape).
Command command_tree(const nlohmann::json& definitions);

/// Every command of the tree, parents before their subcommands.
std::vector<const Command*> all_commands(const Command& root);

/// What a value of this type or positional is completed with.
enum class Completion { none, files, directories };
Completion completion_of(const std::string& type_or_name);

}  // namespace cdc::docgen
