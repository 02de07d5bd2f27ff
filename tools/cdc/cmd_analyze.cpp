// SPDX-License-Identifier: Apache-2.0
// cdc analyze — dedup figures of files, trees and stdin for one or more
// algorithms, streamed through a pool of workers.
#include "corpus_options.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "sizes.hpp"

#include <fmt/format.h>

namespace cdc::cli {

namespace {
struct AnalyzeArgs {
    std::string algorithm = "fastcdc";
    CorpusArgs corpus;
    bool json = false;
    bool csv = false;
};

void print_table(const AnalyzeReport& report, DigestKind digest) {
    fmt::print("{} files, {} ({} bytes) in {:.2f} s; {} jobs, digest {}\n", report.files,
               tools::format_size(static_cast<double>(report.bytes)), report.bytes, report.wall_seconds, report.jobs,
               to_string(digest));
    fmt::print("{:<18} {:>14} {:>10} {:>10} {:>7} {:>10} {:>6} {:>6} {:>7} {:>6} {:>7} {:>7} {:>9} {:>9}\n",
               "ALGORITHM", "MIN/AVG/MAX", "CHUNKS", "DISTINCT", "DEDUP%", "SAVED", "MIN", "P50", "MEAN", "P95",
               "MAX", "STDDEV", "CUT MB/s", "WALL MB/s");
    for (const auto& r : report.algorithms) {
        const auto& s = r.sizes;
        fmt::print("{:<18} {:>14} {:>10} {:>10} {:>7.2f} {:>10} {:>6} {:>6} {:>7.0f} {:>6} {:>7} {:>7.0f} {:>9.0f} "
                   "{:>9.0f}\n",
                   r.algorithm,
                   profile_sizes(r.profile),
                   r.chunks, r.distinct_chunks, 100.0 * r.dedup_ratio(),
                   tools::format_size(static_cast<double>(r.saved_bytes())), s.min(), s.p50(), s.mean(), s.p95(),
                   s.max(), s.stddev(), r.chunk_mb_s(), r.wall_mb_s());
    }
    fmt::print("DEDUP% = distinct bytes / total bytes (lower is better); CUT MB/s = bytes / CPU time in the cut "
               "finder (per core); WALL MB/s = end to end.\n");
}

int run(const AnalyzeArgs& args) {
    const Options base = args.corpus.profile.options();
    AnalyzeOptions options = corpus_options(args.corpus);
    options.algorithms = resolve_algorithm_list(args.algorithm, base, args.corpus.quiet || args.json || args.csv,
                                                corpus_kernel(args.corpus));

    const AnalyzeReport report = run_analysis(args.corpus, options);
    report_issues(report, args.corpus.quiet);

    if (args.json) {
        const nlohmann::json doc = tools::analyze_report_json(report, args.corpus.digest);
        fmt::print("{}\n", doc.dump());
    } else if (args.csv) {
        std::string out = csv_header();
        for (const auto& r : report.algorithms) out.append(csv_row(r));
        fmt::print("{}", out);
    } else {
        print_table(report, options.digest);
    }
    finish_stdout();
    return report.errors.empty() ? kExitOk : kExitPartial;
}
}  // namespace

void add_analyze_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<AnalyzeArgs>();
    auto* cmd = app.add_subcommand(
        "analyze", "dedup figures of files, directory trees or - (stdin) for one or more algorithms");
    add_algorithm_list_option(*cmd, args->algorithm, "algorithms to measure: names, comma-separated or repeated, or all");
    add_profile_options(*cmd, args->corpus.profile);
    add_corpus_options(*cmd, args->corpus);
    auto* csv = add_csv_flag(*cmd, args->csv, "a header, then one row per algorithm");
    auto* json = add_json_flag(*cmd, args->json,
                               "{\"algorithms\": [{algorithm, files, bytes, chunks, distinct_chunks, distinct_bytes, "
                               "dedup_ratio, size: {min, p50, mean, p95, max, stddev}, chunk_mb_s, wall_mb_s, ...}], "
                               "\"errors\": [{path, error}], ...}");
    csv->excludes(json);
    document(*cmd, {.notes = "Dedup is measured across the whole corpus; dedup_ratio = distinct bytes / total bytes "
                             "(lower is better). Directories are walked recursively; symbolic links inside them are "
                             "skipped unless --follow-symlinks; special files (FIFOs, sockets, devices) are skipped "
                             "with a warning. A file that cannot be read is reported, skipped and counted; the run "
                             "goes on and exits with 3. Memory: the dedup index (about 20-40 bytes per distinct "
                             "chunk and algorithm) + jobs x 2 x (2 MiB + MaxSize).",
                    .examples = {{"cdc analyze -a all ~/backups", "every algorithm's dedup on a tree"},
                                 {"cdc analyze -a fastcdc-v1.0.0 -a ultracdc --avg 16K --json disk1.img disk2.img",
                                  "two algorithms at 16 KiB on two images, as JSON"}},
                    .exit_codes = exit_codes({partial_exit()})});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
