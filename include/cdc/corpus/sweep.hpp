// SPDX-License-Identifier: Apache-2.0
// cdc/corpus/sweep.hpp — the data behind the graphs of `cdc plot`: size histograms,
// dedup ratio against the average chunk size, and resync quality against the
// number of edits. Built on SizeStats, analyze() and run_resync(); the tool
// only draws what these return.
//
//   auto hist = cdc::size_histogram(result.sizes, profile.max_size, 64);
//   const double factors[] = {0.25, 0.5, 1, 2, 4};
//   auto sweep = cdc::dedup_sweep(cdc::walk_inputs({"/data"}), "fastcdc", {}, factors);
//   auto curves = cdc::resync_curves(finders, original, cdc::doubling_counts(64), spec);
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/corpus/analyze.hpp>
#include <cdc/digest.hpp>
#include <cdc/options.hpp>
#include <cdc/corpus/resync.hpp>
#include <cdc/corpus/size_stats.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc {

/// Chunk sizes in `bins` equal-width bins covering [0, upper]: bin i holds
/// the sizes in [edges[i], edges[i + 1]); the width is ceil((upper + 1) / bins)
/// so that every size 0..upper has a bin. Sizes above `upper` are counted in
/// the last bin (and in `above_upper`). Throws OptionError if bins == 0.
struct SizeHistogram {
    std::vector<std::uint64_t> edges;   ///< bins + 1 values, edges[0] = 0
    std::vector<std::uint64_t> counts;  ///< bins values
    std::uint64_t total = 0;            ///< chunks counted (= stats.count())
    std::uint64_t above_upper = 0;
};
SizeHistogram size_histogram(const SizeStats& stats, std::uint64_t upper, std::size_t bins);

/// The profile of `algorithm` under `base` (defaults applied) with min,
/// normal and max each multiplied by `factor`, rounded to whole bytes.
/// Throws OptionError when the scaled profile breaks a rule (ALGORITHMS.md
/// section 5: limits, a power-of-two Normal for FastCDC names — power-of-two
/// factors keep it).
Options scaled_options(std::string_view algorithm, const Options& base, double factor);

/// One point of a dedup sweep.
struct SweepPoint {
    double factor = 1;            ///< scale applied to the base profile
    Profile profile;              ///< the sizes used
    std::uint64_t bytes = 0;
    std::uint64_t chunks = 0;
    std::uint64_t distinct_chunks = 0;
    std::uint64_t distinct_bytes = 0;
    double dedup_ratio = 1;       ///< distinct_bytes / bytes (lower is better), as AlgorithmResult
    double mean_chunk_size = 0;   ///< bytes / chunks (0 when empty)
};

/// The dedup ratio of `algorithm` over `walk` for each factor, its min,
/// normal and max scaled together (scaled_options), in one analyze() pass
/// over the data. Factors whose profile is invalid are left out (listed in
/// `skipped` when given). Points are in the order of `factors`. Files that
/// could not be read are left out of every point and listed in `errors`
/// when given (AnalyzeReport::errors).
std::vector<SweepPoint> dedup_sweep(const WalkResult& walk, std::string_view algorithm, const Options& base,
                                    std::span<const double> factors, unsigned jobs = 0,
                                    std::vector<double>* skipped = nullptr, std::vector<InputIssue>* errors = nullptr);

/// 1, 2, 4, ... up to and including the largest power of two <= max; for
/// max = 0, the single count 0 (no edits, as `cdc resync --edits 0`).
std::vector<std::size_t> doubling_counts(std::size_t max);

/// Resync quality of one algorithm against the number of edits.
struct ResyncPoint {
    std::size_t edits = 0;
    double shared_pct_mean = 0;  ///< over the trials
    double shared_pct_min = 0;
    double chunks_edited_mean = 0;
};
struct ResyncCurve {
    std::string algorithm;
    std::vector<ResyncPoint> points;  ///< in the order of edit_counts
};

/// For each count of `edit_counts`, run_resync() with `spec` (its count
/// replaced), `trials` trials: every finder sees the same edited data.
/// Returns one curve per finder, in order.
std::vector<ResyncCurve> resync_curves(std::span<const std::shared_ptr<const CutFinder>> finders,
                                       std::span<const std::uint8_t> original,
                                       std::span<const std::size_t> edit_counts, const EditSpec& spec,
                                       std::size_t trials = 1, DigestKind digest = DigestKind::blake3);

}  // namespace cdc
