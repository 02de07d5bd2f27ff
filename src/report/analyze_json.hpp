// SPDX-License-Identifier: Apache-2.0
// The JSON of `cdc analyze --json` (and the pieces cdc compare reuses), free
// of CLI11: the Python binding's analyze() returns the same document.
#pragma once

#include <cdc/corpus/analyze.hpp>

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

namespace cdc::tools {

/// The analyze fields of one algorithm (the keys of `cdc analyze --json`).
nlohmann::json result_json(const AlgorithmResult& r);
/// [{"path", "error"}, ...]
nlohmann::json issues_json(const std::vector<InputIssue>& issues);
/// The whole document: {"algorithms": [...], "errors", "warnings",
/// "symlinks_skipped", "duplicates_skipped", "files", "bytes", "jobs", "digest", "buffer_bytes",
/// "wall_seconds"}.
nlohmann::json analyze_report_json(const AnalyzeReport& report, std::string_view digest);

}  // namespace cdc::tools
