// SPDX-License-Identifier: Apache-2.0
#include "corpus_options.hpp"

#include "escape.hpp"
#include "sizes.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace cdc::cli {

void add_corpus_options(CLI::App& cmd, CorpusArgs& args) {
    add_digest_option(cmd, args.digest, false);
    add_kernel_option(cmd, args.kernel);
    add_count_option(cmd, "-j,--jobs", args.jobs, 0, limits::kJobs, "worker threads (0 = every core)");
    cmd.add_flag("--follow-symlinks", args.follow_symlinks,
                 "follow symbolic links inside directories (links named on the command line are always followed)");
    add_walk_options(cmd, args.walk);
    add_quiet_flag(cmd, args.quiet);
    cmd.add_option("PATH", args.paths, "files, directories (walked recursively) or - for standard input")
        ->required()
        ->type_name("");
}

AnalyzeOptions corpus_options(const CorpusArgs& args) {
    AnalyzeOptions o;
    o.digest = parse_digest_kind(args.digest);
    if (o.digest == DigestKind::none)
        throw UsageError("--digest = 'none' is invalid here: dedup needs fingerprints (blake3, sha256, xxh3)");
    (void)corpus_kernel(args);  // a bad --kernel fails with the other options
    o.jobs = args.jobs;
    o.follow_symlinks = args.follow_symlinks;
    o.one_file_system = args.walk.one_file_system;
    o.exclude = walk_excludes(args.walk);
    return o;
}

KernelLevel corpus_kernel(const CorpusArgs& args) { return parse_kernel_level(args.kernel); }

void check_paths(const std::vector<std::string>& paths) {
    std::size_t stdin_count = 0;
    for (const auto& p : paths) {
        if (p == "-") {
            if (++stdin_count > 1) throw UsageError("'-' (standard input) may be given only once");
            continue;
        }
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0) throw UsageError(fmt::format("cannot read '{}': {}", p, std::strerror(errno)));
    }
}

namespace {
std::string mb(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

void draw_progress(const AnalyzeProgress& p) {
    if (p.finished) {
        std::fputs("\r\033[K", stderr);
        std::fflush(stderr);
        return;
    }
    const double rate = p.seconds > 0 ? static_cast<double>(p.bytes_done) / p.seconds : 0;
    std::string eta = "?";
    if (rate > 0 && p.bytes_total > p.bytes_done)
        eta = fmt::format("{:.0f} s", static_cast<double>(p.bytes_total - p.bytes_done) / rate);
    fmt::print(stderr, "\r\033[K{} / {}  {:.0f} MB/s  ETA {}  {}/{} files{}", mb(static_cast<double>(p.bytes_done)),
               mb(static_cast<double>(p.bytes_total)), rate / 1e6, eta, p.files_done, p.files_total,
               p.errors ? fmt::format("  {} errors", p.errors) : std::string());
    std::fflush(stderr);
}
}  // namespace

AnalyzeReport run_analysis(const CorpusArgs& args, AnalyzeOptions options) {
    check_paths(args.paths);
    if (!args.quiet && stderr_is_tty()) options.progress = draw_progress;
    try {
        return analyze(args.paths, options);
    } catch (const IoError& e) {
        // Only the walk of top-level paths throws IoError (a path that
        // vanished since check_paths): a usage error.
        throw UsageError(e.what());
    }
}

void report_issues(const AnalyzeReport& report, bool quiet) {
    for (const auto& e : report.errors) print_error(fmt::format("{}: {} (skipped)", e.path, e.message));
    if (!quiet) {
        for (const auto& w : report.warnings) print_warning(fmt::format("{}: {}", w.path, w.message));
        if (report.duplicates_skipped > 0)
            print_warning(fmt::format("{} path(s) led to files already counted (overlapping inputs or hard links): "
                                      "each file is counted once",
                                      report.duplicates_skipped));
    }
    if (!report.errors.empty())
        fmt::print(stderr, "cdc: {} input(s) skipped after errors\n", report.errors.size());
}

std::string csv_header() {
    return "algorithm,min_size,avg_size,max_size,files,bytes,chunks,distinct_chunks,distinct_bytes,dedup_ratio,"
           "saved_bytes,size_min,size_p50,size_mean,size_p95,size_max,size_stddev,chunk_mb_s,wall_mb_s\n";
}

std::string csv_row(const AlgorithmResult& r) {
    const SizeStats& s = r.sizes;
    return fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{},{},{},{:.1f},{},{},{:.1f},{:.1f},{:.1f}\n", r.algorithm,
                       r.profile.min_size, r.profile.normal_size, r.profile.max_size, r.files, r.bytes, r.chunks,
                       r.distinct_chunks, r.distinct_bytes, r.dedup_ratio(), r.saved_bytes(), s.min(), s.p50(),
                       s.mean(), s.p95(), s.max(), s.stddev(), r.chunk_mb_s(), r.wall_mb_s());
}


}  // namespace cdc::cli
