// SPDX-License-Identifier: Apache-2.0
// cdc plot — PNG graphs of chunk sizes, resync quality and dedup against the
// average size, per algorithm and overlaid. The data comes from the library
// (analyze, SizeStats, cdc/corpus/sweep.hpp); this file only lays out the charts.
#include "cli_common.hpp"
#include "commands.hpp"
#include "escape.hpp"
#include "plot.hpp"
#include "sizes.hpp"

#include <cdc/corpus/analyze.hpp>
#include <cdc/corpus/resync.hpp>
#include <cdc/corpus/sweep.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <limits>
#include <set>
#include <unistd.h>

namespace cdc::cli {

namespace {

constexpr const char* kKinds[] = {"distribution", "cdf", "resync", "dedup-sweep"};

struct PlotArgs {
    std::string algorithms = "fastcdc-v1.0.0,jc-v1.1.0,ultracdc-v1.0.0";
    std::string kinds = "all";
    ProfileArgs profile;
    std::string out;
    std::vector<std::string> paths;
    std::size_t bins = 64;
    std::size_t max_edits = 64;
    std::string edit_kind = "insert";
    std::uint64_t edit_size = 1;
    std::size_t trials = 3;
    std::uint64_t seed = 1;
    std::uint64_t resync_bytes = std::uint64_t{16} << 20;
    std::string scales = "0.125,0.25,0.5,1,2,4,8";
    unsigned jobs = 0;
    bool quiet = false;
    bool json = false;
};

std::set<std::string> parse_kinds(const std::string& text) {
    std::set<std::string> kinds;
    for (const auto& k : split_comma_list(text)) {
        if (k == "all") {
            kinds.insert(std::begin(kKinds), std::end(kKinds));
            continue;
        }
        if (std::find(std::begin(kKinds), std::end(kKinds), k) == std::end(kKinds))
            throw UsageError(fmt::format("--chart = '{}' is invalid: distribution, cdf, resync, dedup-sweep or all", k));
        kinds.insert(k);
    }
    return kinds;
}

// Factors in [1/1024, 1024] that give every algorithm a valid profile.
std::vector<double> parse_scales(const std::string& text, const std::vector<AlgorithmSpec>& runs) {
    std::vector<double> out;
    for (const auto& s : split_comma_list(text)) {
        const double f = tools::parse_real(s, "--scales", limits::kMinScale, limits::kMaxScale);
        for (const auto& r : runs) {
            try {
                (void)resolve_profile(r.name, scaled_options(r.name, r.options, f));
            } catch (const OptionError& e) {
                throw UsageError(fmt::format("--scales = '{}' is invalid: x{} gives {} an invalid profile ({})", text,
                                             s, r.name, e.what()));
            }
        }
        out.push_back(f);
    }
    return out;
}

double kib(double bytes) { return bytes / 1024.0; }

std::string profile_text(const Profile& p) { return fmt::format("min/avg/max {}", profile_sizes(p)); }

// The bytes resync edits: the corpus files concatenated in walk order, up to
// `limit` bytes (a tar-like stream). A file that cannot be read is reported
// through `skip` and left out.
std::vector<std::uint8_t> resync_input(const WalkResult& walk, std::uint64_t limit,
                                       const std::function<void(const std::string&, const std::string&)>& skip) {
    std::vector<std::uint8_t> data;
    for (const FileEntry& f : walk.files) {
        if (data.size() >= limit) break;
        const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
            skip(f.path, fmt::format("cannot open: {}", std::strerror(errno)));
            continue;
        }
        const std::size_t at = data.size();
        data.resize(at + static_cast<std::size_t>(std::min<std::uint64_t>(f.size, limit - at)));
        std::size_t got = at;
        while (got < data.size()) {
            const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                skip(f.path, fmt::format("read error: {}", std::strerror(errno)));
                got = at;
                break;
            }
            if (n == 0) break;  // shorter than at the walk
            got += static_cast<std::size_t>(n);
        }
        ::close(fd);
        data.resize(got);
    }
    return data;
}

// Each PNG as it is written is named on stdout (unless quiet or JSON, which
// lists them all at the end).
class PngWriter {
public:
    PngWriter(std::filesystem::path out, bool quiet, bool json) : out_(std::move(out)), quiet_(quiet), json_(json) {}
    void write(const plot::Chart& chart, const std::filesystem::path& relative) {
        plot::render_png(chart, out_ / relative);
        files_.push_back((out_ / relative).string());
        if (!quiet_ && !json_) fmt::print("{}\n", tools::escape_text(files_.back()));
    }
    std::size_t written() const noexcept { return files_.size(); }
    const std::vector<std::string>& files() const noexcept { return files_; }

private:
    std::filesystem::path out_;
    bool quiet_;
    bool json_;
    std::vector<std::string> files_;
};

// The options, validated before any file is read.
struct PlotPlan {
    std::set<std::string> kinds;
    std::vector<AlgorithmSpec> runs;
    std::vector<std::shared_ptr<const CutFinder>> finders;  // each algorithm resolved once (as runs)
    std::vector<double> scales;
    EditSpec edit_spec;
    std::vector<std::size_t> edit_counts;
    std::uint64_t resync_limit = 0;
};

PlotPlan plan_of(const PlotArgs& args) {
    PlotPlan p;
    p.kinds = parse_kinds(args.kinds);
    p.runs = parse_algorithm_list(args.algorithms, args.profile.options(), args.quiet);
    p.scales = parse_scales(args.scales, p.runs);
    p.edit_spec.kind = parse_edit_kind(args.edit_kind);
    p.edit_spec.size = static_cast<std::size_t>(args.edit_size);
    p.edit_spec.seed = args.seed;
    p.edit_spec.count = args.max_edits;
    p.edit_counts = doubling_counts(args.max_edits);
    p.resync_limit = args.resync_bytes;
    if (p.kinds.count("resync"))
        tools::check_fits_in_memory(2 * p.resync_limit, "--resync-bytes", tools::format_size_exact(args.resync_bytes));
    for (const auto& r : p.runs) p.finders.push_back(make_cut_finder(r));
    for (const auto& path : args.paths)
        if (path == "-") throw UsageError("cdc plot reads files and directories, not standard input");
    return p;
}

// Every input left out (unreadable, vanished, a name too long...) is
// reported once, whichever step found it, and makes the exit code 3.
class Skips {
public:
    void operator()(const std::string& path, const std::string& why) {
        if (paths_.insert(path).second) print_error(fmt::format("{}: {} (skipped)", path, why));
    }
    std::size_t size() const noexcept { return paths_.size(); }

private:
    std::set<std::string> paths_;
};

WalkResult walk_corpus(const PlotArgs& args, Skips& skip) {
    WalkResult walk;
    try {
        walk = walk_inputs(args.paths);
    } catch (const IoError& e) {
        throw UsageError(e.what());
    }
    for (const auto& e : walk.errors) skip(e.path, e.message);
    if (!args.quiet)
        for (const auto& w : walk.warnings) print_warning(fmt::format("{}: {}", w.path, w.message));
    if (walk.total_bytes == 0) throw UsageError("no data: the inputs hold no bytes to chunk");
    return walk;
}

// What every graph of one run shares.
struct PlotRun {
    const PlotArgs& args;
    const PlotPlan& plan;
    const WalkResult& walk;
    std::string corpus;  // "12 files, 3.4 MiB": the subtitles' start
    PngWriter& writer;
    Skips& skip;
};

plot::Series distribution_series(const AlgorithmResult& r, std::size_t bins) {
    const SizeHistogram h = size_histogram(r.sizes, r.profile.max_size, bins);
    plot::Series s{r.algorithm, {}, {}};
    for (auto e : h.edges) s.x.push_back(kib(static_cast<double>(e)));
    for (auto c : h.counts) s.y.push_back(100.0 * static_cast<double>(c) / static_cast<double>(h.total));
    return s;
}

plot::Series cdf_series(const AlgorithmResult& r) {
    plot::Series s{r.algorithm, {0}, {0}};
    for (const auto& [size, frac] : r.sizes.cdf()) {
        // a step: the fraction jumps at each size
        s.x.push_back(kib(static_cast<double>(size)));
        s.y.push_back(s.y.back());
        s.x.push_back(kib(static_cast<double>(size)));
        s.y.push_back(100.0 * frac);
    }
    return s;
}

// The charts of one kind share their axes: one factory per kind, the same
// for the per-algorithm chart and the one overlaying them.
plot::Chart chart(std::string title, std::string subtitle, std::string x_label, std::string y_label) {
    plot::Chart c;
    c.title = std::move(title);
    c.subtitle = std::move(subtitle);
    c.x_label = std::move(x_label);
    c.y_label = std::move(y_label);
    return c;
}

plot::Chart distribution_chart(std::string title, std::string subtitle, plot::Kind kind) {
    plot::Chart c = chart(std::move(title), std::move(subtitle), "chunk size (KiB)", "share of chunks (%)");
    c.kind = kind;
    return c;
}

plot::Chart cdf_chart(std::string title, std::string subtitle) {
    plot::Chart c =
        chart(std::move(title), std::move(subtitle), "chunk size (KiB)", "chunks of this size or smaller (%)");
    c.y_max = 102;
    return c;
}

// distribution and cdf: one analysis of the corpus, a graph per algorithm
// and one overlaying them.
void plot_sizes(const PlotRun& run) {
    const bool dist = run.plan.kinds.count("distribution") > 0, cdf = run.plan.kinds.count("cdf") > 0;
    AnalyzeOptions options;
    options.jobs = run.args.jobs;
    options.algorithms = run.plan.finders;
    const AnalyzeReport report = analyze(run.walk, options);
    for (const auto& e : report.errors) run.skip(e.path, e.message);
    plot::Chart cmp_dist = distribution_chart("Chunk-size distribution", run.corpus, plot::Kind::steps);
    plot::Chart cmp_cdf = cdf_chart("Chunk-size CDF", run.corpus);
    for (const AlgorithmResult& r : report.algorithms) {
        if (r.chunks == 0) continue;
        const std::string sub = fmt::format("{}; {}; {} chunks", run.corpus, profile_text(r.profile), r.chunks);
        if (dist) {
            plot::Chart c = distribution_chart(fmt::format("Chunk-size distribution: {}", r.algorithm), sub,
                                               plot::Kind::bars);
            c.series = {distribution_series(r, run.args.bins)};
            run.writer.write(c, std::filesystem::path(r.algorithm) / "chunk-distribution.png");
            cmp_dist.series.push_back(std::move(c.series.front()));
        }
        if (cdf) {
            plot::Chart c = cdf_chart(fmt::format("Chunk-size CDF: {}", r.algorithm), sub);
            c.series = {cdf_series(r)};
            run.writer.write(c, std::filesystem::path(r.algorithm) / "chunk-size-cdf.png");
            cmp_cdf.series.push_back(std::move(c.series.front()));
        }
    }
    if (dist && !cmp_dist.series.empty()) run.writer.write(cmp_dist, "compare-distribution.png");
    if (cdf && !cmp_cdf.series.empty()) run.writer.write(cmp_cdf, "compare-cdf.png");
}

plot::Chart resync_chart(std::string title, std::string subtitle, bool log_edits) {
    plot::Chart c = chart(std::move(title), std::move(subtitle), "number of edits (n)",
                          "bytes still shared after the edits (%)");
    c.x_log = log_edits;
    c.markers = true;
    c.y_min = 0;
    return c;
}

// resync: the first --resync-bytes of the corpus, edited n = 1, 2, 4...
// times; no readable data, no graph (run() then fails).
void plot_resync(const PlotRun& run) {
    const PlotPlan& plan = run.plan;
    const auto data = resync_input(run.walk, plan.resync_limit, std::ref(run.skip));
    if (data.empty()) return;
    check_edits_fit(plan.edit_spec, "--edits", data.size(), "the resync input (--resync-bytes of the files)");
    const auto curves = resync_curves(plan.finders, data, plan.edit_counts, plan.edit_spec, run.args.trials);
    const std::string sub = fmt::format("{} of input; n random {}-byte {}s; mean of {} trial{}",
                                        tools::format_size(static_cast<double>(data.size())), plan.edit_spec.size,
                                        to_string(plan.edit_spec.kind), run.args.trials,
                                        run.args.trials == 1 ? "" : "s");
    const bool log_edits = plan.edit_counts.front() > 0;  // (--edits 0: the one point n = 0)
    plot::Chart cmp = resync_chart("Resync impact", sub, log_edits);
    for (std::size_t i = 0; i < curves.size(); ++i) {
        plot::Series s{curves[i].algorithm, {}, {}};
        for (const auto& p : curves[i].points) {
            s.x.push_back(static_cast<double>(p.edits));
            s.y.push_back(p.shared_pct_mean);
        }
        plot::Chart c = resync_chart(fmt::format("Resync impact: {}", curves[i].algorithm),
                                     fmt::format("{}; {}", sub, profile_text(plan.finders[i]->profile())), log_edits);
        c.series = {s};
        run.writer.write(c, std::filesystem::path(curves[i].algorithm) / "resync-impact.png");
        cmp.series.push_back(std::move(s));
    }
    if (!cmp.series.empty()) run.writer.write(cmp, "compare-resync.png");
}

plot::Chart sweep_chart(std::string title, std::string subtitle) {
    plot::Chart c = chart(std::move(title), std::move(subtitle), "measured mean chunk size (KiB, log scale)",
                          "dedup ratio: distinct / total bytes (lower is better)");
    c.x_log = true;
    c.markers = true;
    c.y_from_zero = false;
    return c;
}

// dedup-sweep: each algorithm with min, avg and max scaled together.
void plot_dedup_sweep(const PlotRun& run) {
    const PlotPlan& plan = run.plan;
    plot::Chart cmp = sweep_chart("Dedup ratio against average chunk size",
                                  fmt::format("{}; min, avg, max scaled together", run.corpus));
    for (std::size_t i = 0; i < plan.runs.size(); ++i) {
        const AlgorithmSpec& r = plan.runs[i];
        std::vector<double> skipped_scales;
        std::vector<InputIssue> errors;
        const auto points =
            dedup_sweep(run.walk, r.name, r.options, plan.scales, run.args.jobs, &skipped_scales, &errors);
        for (double f : skipped_scales)
            print_warning(fmt::format("{}: scale x{} left out (the scaled profile is invalid)", r.name, f));
        for (const auto& e : errors) run.skip(e.path, e.message);
        plot::Series s{r.name, {}, {}};
        for (const auto& p : points)
            if (p.chunks > 0) s.x.push_back(kib(p.mean_chunk_size)), s.y.push_back(p.dedup_ratio);
        if (s.x.empty()) continue;
        plot::Chart c = sweep_chart(fmt::format("Dedup ratio against average chunk size: {}", r.name),
                                    fmt::format("{}; min, avg, max scaled x{}..x{} from {}", run.corpus,
                                                plan.scales.front(), plan.scales.back(),
                                                profile_text(plan.finders[i]->profile())));
        c.series = {s};
        run.writer.write(c, std::filesystem::path(r.name) / "dedup-sweep.png");
        cmp.series.push_back(std::move(s));
    }
    if (!cmp.series.empty()) run.writer.write(cmp, "compare-dedup-sweep.png");
}

int run(const PlotArgs& args) {
    const PlotPlan plan = plan_of(args);
    Skips skip;
    const WalkResult walk = walk_corpus(args, skip);
    PngWriter writer(args.out, args.quiet, args.json);
    const PlotRun run{args, plan, walk,
                      fmt::format("{} file{}, {}", walk.files.size(), walk.files.size() == 1 ? "" : "s",
                                  tools::format_size(static_cast<double>(walk.total_bytes))),
                      writer, skip};
    if (plan.kinds.count("distribution") || plan.kinds.count("cdf")) plot_sizes(run);
    if (plan.kinds.count("resync")) plot_resync(run);
    if (plan.kinds.count("dedup-sweep")) plot_dedup_sweep(run);
    if (args.json) {
        nlohmann::json files = nlohmann::json::array();
        for (const auto& f : writer.files()) files.push_back(tools::escape_text(f));
        fmt::print("{}\n", nlohmann::json{{"files", files}, {"skipped", skip.size()}}.dump());
    }
    finish_stdout();
    // No data could be read: nothing is written, and that is a failure.
    if (writer.written() == 0)
        throw IoError(fmt::format("no graph written: no data could be read ({} input(s) skipped)", skip.size()));
    if (skip.size() > 0) fmt::print(stderr, "cdc: {} input(s) skipped after errors\n", skip.size());
    return skip.size() == 0 ? kExitOk : kExitPartial;
}

}  // namespace

void add_plot_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<PlotArgs>();
    auto* cmd = app.add_subcommand(
        "plot",
        "PNG graphs per algorithm (OUT/<algorithm>/chunk-distribution.png, chunk-size-cdf.png, resync-impact.png, "
        "dedup-sweep.png) and OUT/compare-<chart>.png overlaying them");
    add_algorithm_list_option(*cmd, args->algorithms, "algorithms to draw: names, comma-separated or repeated, or all");
    with_choices(add_list_option(*cmd, "--chart", args->kinds, "CHART",
                                 "distribution, cdf, resync, dedup-sweep or all (comma-separated or repeated)"),
                 {"distribution", "cdf", "resync", "dedup-sweep", "all"});
    add_profile_options(*cmd, args->profile);
    cmd->add_option("-o,--output", args->out, "output directory")->required()->type_name("DIR");
    add_count_option(*cmd, "--bins", args->bins, 1, limits::kBins, "histogram bins over [0, max]");
    add_edit_options(*cmd, args->max_edits, args->edit_size, args->edit_kind, args->seed,
                     "resync: up to this many edits (1, 2, 4, ... n; 0: the point n = 0 only, no edits)");
    add_count_option(*cmd, "--trials", args->trials, 1, limits::kTrials, "resync: trials (edit seeds) averaged per point");
    add_size_option(*cmd, "--resync-bytes", args->resync_bytes, 1, std::numeric_limits<std::uint64_t>::max(),
                    "resync: edit the first this-many bytes of the inputs, concatenated");
    cmd->add_option("--scales", args->scales,
                    "dedup-sweep: factors (1/1024..1024) applied to min, avg and max together")
        ->type_name("LIST")
        ->capture_default_str();
    add_count_option(*cmd, "-j,--jobs", args->jobs, 0, limits::kJobs, "analysis workers (0: every core)");
    add_json_flag(*cmd, args->json, "{files: [the PNG files written], skipped}");
    add_quiet_flag(*cmd, args->quiet);
    cmd->add_option("PATH", args->paths, "files or directories (recursive)")->required()->type_name("");
    document(*cmd, {.notes = "Text output: each PNG file as it is written. The resync graphs edit the first "
                             "--resync-bytes of the inputs n = 1, 2, 4 ... --edits times; the dedup sweep scales "
                             "each algorithm's min, avg and max together (lower dedup ratio is better).",
                    .examples = {{"cdc plot -o graphs ~/data", "every chart for three algorithms"},
                                 {"cdc plot -a restic-rabin,fastcdc --chart cdf,dedup-sweep -o graphs ~/data",
                                  "two charts comparing restic's chunker with FastCDC"}},
                    .exit_codes = exit_codes({partial_exit()})});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
