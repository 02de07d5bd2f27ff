// SPDX-License-Identifier: Apache-2.0
// The one way each kind of option is added to a cdc command (docs/CLI.md):
// sizes through tools::parse_size, whole numbers through tools::parse_count,
// algorithm names one by one or as lists, and the flags every command
// shares. A bad value is a usage error naming the flag and the value (exit
// 2), raised while the command line is parsed, never CLI11's own text.
// Shared by the cdc tool and its helper programs (cdc-dupes, cdc-transfer).
#pragma once

#include "cli_basics.hpp"
#include "sizes.hpp"

#include <cdc/exclude.hpp>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cdc::cli {

/// A size with an optional suffix (4096, 8K, 8KiB, 1M, 1G, 1T: K = 1024;
/// tools::parse_size) in [min, max].
CLI::Option* add_size_option(CLI::App& cmd, const std::string& names, std::uint64_t& target, std::uint64_t min,
                             std::uint64_t max, const std::string& help);
/// The same, left empty when the option is not given.
CLI::Option* add_size_option(CLI::App& cmd, const std::string& names, std::optional<std::uint64_t>& target,
                             std::uint64_t min, std::uint64_t max, const std::string& help);

/// A whole number (decimal digits; tools::parse_count) in [min, max].
template <class T>
CLI::Option* add_count_option(CLI::App& cmd, const std::string& names, T& target, std::uint64_t min, std::uint64_t max,
                              const std::string& help) {
    const std::string flag = names.substr(names.rfind(',') + 1);
    return cmd
        .add_option_function<std::string>(
            names,
            [&target, flag, min, max](const std::string& v) {
                target = static_cast<T>(tools::parse_count(v, flag, min, max));
            },
            help)
        ->type_name("N")
        ->default_str(std::to_string(target));
}

/// -a/--algorithm NAME: one algorithm name (cdc algorithms).
CLI::Option* add_algorithm_option(CLI::App& cmd, std::string& target, const std::string& help);
/// -a/--algorithm NAME: repeatable, each a name or a comma-separated list
/// ("all": every name); `target` receives them joined with commas.
CLI::Option* add_algorithm_list_option(CLI::App& cmd, std::string& target, const std::string& help);
/// A repeatable option whose values may also be comma-separated lists
/// (`--chart cdf --chart resync` = `--chart cdf,resync`), joined with commas.
CLI::Option* add_list_option(CLI::App& cmd, const std::string& names, std::string& target, const std::string& type,
                             const std::string& help);

/// What a command that walks trees leaves out (docs/CLI.md, "Excludes"):
/// --exclude PATTERN and --exclude-file FILE (repeatable, in the order
/// given: patterns of files first, then --exclude), --exclude-caches,
/// --exclude-if-present NAME (repeatable) and --one-file-system.
struct WalkArgs {
    std::vector<std::string> exclude;
    std::vector<std::string> exclude_files;
    bool exclude_caches = false;
    std::vector<std::string> exclude_if_present;
    bool one_file_system = false;
};
void add_walk_options(CLI::App& cmd, WalkArgs& args);
/// The exclusions of `args`, the pattern files read: a UsageError naming the
/// flag for a bad pattern, a file that cannot be read or a bad NAME.
WalkExcludes walk_excludes(const WalkArgs& args);

/// --json: `what` is the document printed (one JSON value on stdout).
CLI::Option* add_json_flag(CLI::App& cmd, bool& target, const std::string& what);
/// --csv: `what` is the table printed.
CLI::Option* add_csv_flag(CLI::App& cmd, bool& target, const std::string& what);
/// -q/--quiet: nothing on stderr but errors, no status line on stdout (the
/// data asked for, e.g. a table or --json, is still printed).
CLI::Option* add_quiet_flag(CLI::App& cmd, bool& target);

/// -h/--help on `app`, in the words of the other flags; call before adding
/// commands (they take it over).
void set_help_flags(CLI::App& app);

/// -V/--version on `app` and on every command below it ("cdc X.Y.Z"); call
/// once every command is added.
void add_version_flags(CLI::App& app);

/// The values an option takes (for completions and man pages; the command
/// checks them itself).
CLI::Option* with_choices(CLI::Option* opt, std::vector<std::string> names);
/// The choices recorded for `opt`, or null.
const std::vector<std::string>* choices_of(const CLI::Option& opt);

/// Every algorithm name (the choices of -a), and "all" when `with_all`.
std::vector<std::string> algorithm_choices(bool with_all);

/// The names of an enum's name table (cdc/enum_names.hpp), as choices.
template <class Table>
std::vector<std::string> names_of(const Table& table) {
    std::vector<std::string> names;
    for (const auto& e : table) names.emplace_back(e.name);
    return names;
}

}  // namespace cdc::cli
