// Shared pieces of the cdc subcommands: exit codes, profile options,
// algorithm lists, output helpers.
#pragma once

#include "algorithm_list.hpp"
#include "cli_basics.hpp"
#include "sizes.hpp"

#include <cdc/corpus.hpp>

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
    bool key_given = false;        ///< --key was on the command line (even as "")
    std::string prefix = "--";     ///< of the size flags in messages ("--b-" for compare's --b-min...)
    /// Parsed options (sizes with suffixes, the hex key, decimal or 0x
    /// numbers); throws OptionError naming the flag (never the key's value).
    cdc::Options options() const;
};

/// Bounds of the numeric options (a usage error beyond them, before any
/// work or allocation).
namespace limits {
inline constexpr std::uint64_t kJobs = 4096;               ///< --jobs, --threads
inline constexpr std::uint64_t kTrials = 1000;             ///< resync / plot --trials
inline constexpr std::uint64_t kEdits = 1'000'000;         ///< resync / plot --edits
inline constexpr std::uint64_t kEditSize = 1ull << 30;     ///< --edit-size
inline constexpr std::uint64_t kConcurrency = 1'000'000;   ///< bench run -c
inline constexpr std::uint64_t kSampleMs = 3'600'000;      ///< bench run --sample-ms (an hour)
inline constexpr std::uint64_t kRuns = 1000;               ///< speed --runs
inline constexpr std::uint64_t kBins = 10000;              ///< plot --bins
inline constexpr std::uint64_t kBuffer = 1ull << 30;       ///< bench run --buffer
inline constexpr double kMinScale = 1.0 / 1024, kMaxScale = 1024;  ///< plot --scales
}  // namespace limits

/// A whole-number option read by tools::parse_count: a bad value is a usage
/// error naming the option and the value (exit 2), never CLI11's own text,
/// never a wrap ("-1" for an unsigned). The message names the last (long)
/// name of `names`.
template <class T>
CLI::Option* add_count_option(CLI::App& cmd, const std::string& names, T& target, std::uint64_t min, std::uint64_t max,
                              const std::string& help) {
    const std::string flag = names.substr(names.rfind(',') + 1);
    return cmd
        .add_option_function<std::string>(
            names, [&target, flag, min, max](const std::string& v) { target = static_cast<T>(tools::parse_count(v, flag, min, max)); },
            help)
        ->type_name("N")
        ->default_str(std::to_string(target));
}

/// Throws UsageError unless `spec.count` edits of `spec.size` bytes fit in
/// `data_size` bytes (edits x size <= size: what the data allows).
void check_edits_fit(const EditSpec& spec, std::string_view option, std::uint64_t data_size, std::string_view what);

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
// resolve_algorithm_list live in src/report (the Python binding uses them).
using tools::parameters_for;
using tools::parse_algorithm_list;
using tools::resolve_algorithm_list;
using tools::split_comma_list;

}  // namespace cdc::cli
