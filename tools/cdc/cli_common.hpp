// Shared pieces of the cdc subcommands: exit codes, profile options,
// algorithm lists, output helpers.
#pragma once

#include "cli_basics.hpp"

#include <cdc/corpus.hpp>
#include <cdc/dupes.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::cli {

/// --min/--avg/--max/--key as strings, parsed on use.
struct ProfileArgs {
    std::string min, avg, max, key;
    /// Parsed options (sizes with suffixes, the hex key); throws OptionError.
    cdc::Options options() const;
};

/// Adds --min, --avg, --max (and --key when `with_key`) to `cmd`.
void add_profile_options(CLI::App& cmd, ProfileArgs& args, bool with_key = true);

/// Splits "a,b,c" at commas (empty items kept: "a,,b" gives three).
std::vector<std::string> split_comma_list(std::string_view list);

/// Splits "a,b,c" or "all" into validated algorithm names (OptionError for
/// an unknown name) with their options. For "all": without a key kfastcdc
/// is left out (it needs one); with a key, the key goes to the names that
/// can use it and the others run unkeyed; a note on stderr says so. For an
/// explicit list the options go unchanged to each name, and its validation
/// rejects a key where it cannot apply.
std::vector<AlgorithmSpec> parse_algorithm_list(std::string_view list, const cdc::Options& base,
                                                bool quiet = false);

/// parse_algorithm_list, each resolved once into its finder at `kernel`.
std::vector<std::shared_ptr<const CutFinder>> resolve_algorithm_list(std::string_view list, const cdc::Options& base,
                                                                     bool quiet = false,
                                                                     KernelLevel kernel = KernelLevel::automatic);

}  // namespace cdc::cli
