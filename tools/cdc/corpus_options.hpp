// SPDX-License-Identifier: Apache-2.0
// Pieces shared by cdc analyze, compare and resync: the corpus options, the
// progress line, JSON/CSV/table output of AlgorithmResult.
#pragma once

#include "analyze_json.hpp"
#include "cli_common.hpp"

#include <cdc/corpus/analyze.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace cdc::cli {

/// Options every corpus command takes.
struct CorpusArgs {
    ProfileArgs profile;
    std::string digest = "blake3";
    std::string kernel = "auto";
    unsigned jobs = 0;
    bool follow_symlinks = false;
    WalkArgs walk;
    bool quiet = false;
    std::vector<std::string> paths;
};

/// Adds --digest, --kernel, --jobs, --follow-symlinks, the walk's options
/// (add_walk_options), --quiet and PATH...
/// (the profile options are added by the caller).
void add_corpus_options(CLI::App& cmd, CorpusArgs& args);

/// AnalyzeOptions from the corpus args (no algorithms yet).
AnalyzeOptions corpus_options(const CorpusArgs& args);
/// The --kernel level the algorithms' finders are made with.
KernelLevel corpus_kernel(const CorpusArgs& args);

/// Fails with a UsageError (exit 2) if a top-level path does not exist.
void check_paths(const std::vector<std::string>& paths);

/// Runs analyze(), with a progress line on stderr when it is a terminal
/// and not quiet; bad top-level paths become usage errors.
AnalyzeReport run_analysis(const CorpusArgs& args, AnalyzeOptions options);

/// Prints the errors (always) and warnings (unless quiet) to stderr.
void report_issues(const AnalyzeReport& report, bool quiet);

// The JSON of analyze and compare (src/report/analyze_json.hpp).
using tools::issues_json;
using tools::result_json;

/// CSV header and one row per algorithm (the JSON keys, size.* flattened).
std::string csv_header();
std::string csv_row(const AlgorithmResult& r);

}  // namespace cdc::cli
