// Shared pieces of the cdc subcommands: exit codes, profile options,
// algorithm lists, output helpers.
#pragma once

#include <cdc/cdc.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::cli {

/// Exit codes of every subcommand (documented in `cdc --help`).
enum ExitCode : int {
    kExitOk = 0,          ///< success
    kExitRegression = 1,  ///< compare: B is worse than A beyond the tolerance
    kExitUsage = 2,       ///< bad option, bad algorithm, bad top-level path
    kExitPartial = 3,     ///< finished, but some inputs were skipped after errors
    kExitFailure = 4,     ///< an I/O error stopped the run
};

inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 success; 1 compare found a regression; 2 usage error (bad option, algorithm or path); "
    "3 finished but some inputs were skipped after errors; 4 an I/O error stopped the run.";

/// A usage error detected by a command (exit code 2).
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

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

/// A list of algorithms to run and the options of each.
struct AlgorithmRun {
    std::string name;
    cdc::Options options;
};

/// Splits "a,b,c" or "all" into validated algorithm names (OptionError for
/// an unknown name) with their options. For "all": without a key kfastcdc
/// is left out (it needs one); with a key, the key goes to the names that
/// can use it and the others run unkeyed; a note on stderr says so. For an
/// explicit list the options go unchanged to each name, and its validation
/// rejects a key where it cannot apply.
std::vector<AlgorithmRun> parse_algorithm_list(std::string_view list, const cdc::Options& base,
                                               bool quiet = false);

/// Flushes stdout and turns a write error (EPIPE, ENOSPC) into IoError.
void finish_stdout();

/// True when stderr is a terminal (progress lines are drawn only then).
bool stderr_is_tty();

}  // namespace cdc::cli
