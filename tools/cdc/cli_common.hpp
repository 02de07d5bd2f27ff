// Shared pieces of the cdc subcommands: exit codes, profile options,
// algorithm lists, output helpers.
#pragma once

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

/// `base` without the parameters `a` does not take (key, level, seed,
/// polynomial, window): for "all" and for options shared by several names.
/// `dropped`, if given, receives the names of those left out ("key",
/// "level", "seed", "polynomial", "window").
cdc::Options parameters_for(const cdc::AlgorithmInfo& a, cdc::Options base,
                            std::vector<std::string>* dropped = nullptr);

/// The parameters beyond the sizes that `a` takes, with their values in
/// `p`, as JSON fields ("level", "seed", "polynomial", "window"); nothing
/// for a name that takes none.
nlohmann::json parameters_json(const cdc::AlgorithmInfo& a, const cdc::Profile& p);

/// Splits "a,b,c" at commas (empty items kept: "a,,b" gives three).
std::vector<std::string> split_comma_list(std::string_view list);

/// Splits "a,b,c" or "all" into validated algorithm names (OptionError for
/// an unknown name) with their options. For "all": without a key kfastcdc
/// is left out (it needs one); a key, level, seed, polynomial or window goes
/// to the names that take it and the others run without it; a note on
/// stderr says so. For an explicit list a level, seed, polynomial or window
/// goes to the listed names that take it (OptionError if none does), and a
/// key to every name (whose validation rejects it where it cannot apply).
std::vector<AlgorithmSpec> parse_algorithm_list(std::string_view list, const cdc::Options& base,
                                                bool quiet = false);

/// parse_algorithm_list, each resolved once into its finder at `kernel`.
std::vector<std::shared_ptr<const CutFinder>> resolve_algorithm_list(std::string_view list, const cdc::Options& base,
                                                                     bool quiet = false,
                                                                     KernelLevel kernel = KernelLevel::automatic);

}  // namespace cdc::cli
