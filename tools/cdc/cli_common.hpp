// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the cdc subcommands: exit codes, profile options,
// algorithm lists, output helpers.
#pragma once

#include "algorithm_list.hpp"
#include "cli_basics.hpp"
#include "cli_docs.hpp"
#include "cli_options.hpp"
#include "cli_run.hpp"
#include "sizes.hpp"

#include <cdc/corpus.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::cli {

/// --min/--avg/--max/--window (sizes, parsed with the command line) and
/// --key/--level/--seed/--poly (parsed on use).
struct ProfileArgs {
    std::optional<std::uint64_t> min, avg, max, window;
    std::string key, level, seed, poly;
    bool key_given = false;  ///< --key was on the command line (even as "")
    /// The options (the hex key, decimal or 0x numbers); throws OptionError
    /// naming the flag (never the key's value).
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

/// Throws UsageError unless `spec.count` edits of `spec.size` bytes fit in
/// `data_size` bytes (edits x size <= size: what the data allows).
void check_edits_fit(const EditSpec& spec, std::string_view option, std::uint64_t data_size, std::string_view what);

/// Adds --min, --avg, --max, --level, --seed, --poly, --window (and --key
/// when `with_key`) to `cmd`.
void add_profile_options(CLI::App& cmd, ProfileArgs& args, bool with_key = true);

/// --edits N, --edit-size SIZE, --edit-kind KIND, --edit-seed N (resync
/// and plot); `edits_help` says what --edits counts.
void add_edit_options(CLI::App& cmd, std::size_t& edits, std::uint64_t& edit_size, std::string& kind,
                      std::uint64_t& seed, const std::string& edits_help);

/// --digest NAME (blake3, sha256, xxh3, and none when `with_none`).
CLI::Option* add_digest_option(CLI::App& cmd, std::string& target, bool with_none);
/// --kernel LEVEL (auto, scalar, wide, avx2, avx512, avx512vbmi).
CLI::Option* add_kernel_option(CLI::App& cmd, std::string& target);

/// "8K/16K/64K": a profile's min, avg and max as sizes are written on the
/// command line (analyze's table, compare's columns, store stats).
std::string profile_sizes(const cdc::Profile& p);

/// The parameters beyond the sizes that `a` takes, with their values in
/// `p`, as JSON fields ("level", "seed", "polynomial", "window"); nothing
/// for a name that takes none.
nlohmann::json parameters_json(const cdc::AlgorithmInfo& a, const cdc::Profile& p);

// parameters_for, split_comma_list, parse_algorithm_list and
// resolve_algorithm_list live in src/report (the Python binding uses them).
using tools::parameters_for;
/// compute_digests of every chunk, `lengths` over `data` from its start,
/// on up to `jobs` threads (contiguous runs of chunks of about equal bytes,
/// at least 1 MiB each; 0: one per hardware thread), 64 chunks per call.
void compute_digests_parallel(DigestKind kind, std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                              std::span<Digest> out, unsigned jobs);

using tools::parse_algorithm_list;
using tools::resolve_algorithm_list;
using tools::split_comma_list;

}  // namespace cdc::cli
