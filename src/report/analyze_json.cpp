// SPDX-License-Identifier: Apache-2.0
#include "analyze_json.hpp"

#include "escape.hpp"

#include <string>

namespace cdc::tools {

nlohmann::json result_json(const AlgorithmResult& r) {
    const SizeStats& s = r.sizes;
    return nlohmann::json{
        {"algorithm", r.algorithm},
        {"min_size", r.profile.min_size},
        {"avg_size", r.profile.normal_size},
        {"max_size", r.profile.max_size},
        {"keyed", r.profile.keyed},
        {"files", r.files},
        {"bytes", r.bytes},
        {"chunks", r.chunks},
        {"distinct_chunks", r.distinct_chunks},
        {"distinct_bytes", r.distinct_bytes},
        {"dedup_ratio", r.dedup_ratio()},
        {"saved_bytes", r.saved_bytes()},
        {"saved_pct", 100.0 * (1.0 - r.dedup_ratio())},
        {"size",
         {{"min", s.min()}, {"p50", s.p50()}, {"mean", s.mean()}, {"p95", s.p95()}, {"max", s.max()},
          {"stddev", s.stddev()}}},
        {"chunk_mb_s", r.chunk_mb_s()},
        {"wall_mb_s", r.wall_mb_s()},
        {"cut_seconds", r.cut_seconds},
        {"hash_seconds", r.hash_seconds},
        {"wall_seconds", r.wall_seconds},
        {"index_bytes", r.index_memory_bytes},
        {"index_bytes_per_distinct_chunk",
         r.distinct_chunks ? static_cast<double>(r.index_memory_bytes) / static_cast<double>(r.distinct_chunks)
                           : 0.0},
    };
}

nlohmann::json issues_json(const std::vector<InputIssue>& issues) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& i : issues) {
        nlohmann::json j;
        put_name(j, "path", i.path);  // "path_bytes" too when the name is not UTF-8 (escape.hpp)
        j["error"] = escape_text(i.message);
        a.push_back(std::move(j));
    }
    return a;
}

nlohmann::json analyze_report_json(const AnalyzeReport& report, std::string_view digest) {
    nlohmann::json doc;
    doc["algorithms"] = nlohmann::json::array();
    for (const auto& r : report.algorithms) doc["algorithms"].push_back(result_json(r));
    doc["errors"] = issues_json(report.errors);
    doc["warnings"] = issues_json(report.warnings);
    doc["symlinks_skipped"] = report.symlinks_skipped;
    doc["duplicates_skipped"] = report.duplicates_skipped;
    doc["excluded"] = report.excluded;
    doc["files"] = report.files;
    doc["bytes"] = report.bytes;
    doc["jobs"] = report.jobs;
    doc["digest"] = std::string(digest);
    doc["buffer_bytes"] = report.buffer_bytes;
    doc["wall_seconds"] = report.wall_seconds;
    return doc;
}

}  // namespace cdc::tools
