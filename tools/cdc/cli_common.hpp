// Shared pieces of the cdc subcommands: exit codes, profile options,
// algorithm lists, output helpers.
#pragma once

#include "algorithm_list.hpp"
#include "cli_basics.hpp"

#include <cdc/corpus.hpp>
#include <cdc/dupes.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::cli {

/// --min/--avg/--max/--key/--level/--seed/--poly/--window as strings,
/// parsed on use.
struct ProfileArgs {
    std::string min, avg, max, key, level, seed, poly, window;
    /// Parsed options (sizes with suffixes, the hex key, decimal or 0x
    /// numbers); throws OptionError naming the flag.
    cdc::Options options() const;
};

/// Adds --min, --avg, --max, --level, --seed, --poly, --window (and --key
/// when `with_key`) to `cmd`. A command whose --seed means something else
/// (resync, plot: the edits' seed) passes "--chunker-seed" as `seed_flag`.
void add_profile_options(CLI::App& cmd, ProfileArgs& args, bool with_key = true,
                         std::string_view seed_flag = "--seed");

/// The parameters beyond the sizes that `a` takes, with their values in
/// `p`, as JSON fields ("level", "seed", "polynomial", "window"); nothing
/// for a name that takes none.
nlohmann::json parameters_json(const cdc::AlgorithmInfo& a, const cdc::Profile& p);

// parameters_for, split_comma_list, parse_algorithm_list and
// resolve_algorithm_list live in tools/common (the Python binding uses them).
using tools::parameters_for;
using tools::parse_algorithm_list;
using tools::resolve_algorithm_list;
using tools::split_comma_list;

}  // namespace cdc::cli
