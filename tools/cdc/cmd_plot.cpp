// cdc plot — PNG graphs of chunk sizes, resync quality and dedup against the
// average size, per algorithm and overlaid. The data comes from the library
// (analyze, SizeStats, cdc/corpus/sweep.hpp); this file only lays out the charts.
#include "cli_common.hpp"
#include "commands.hpp"
#include "plot.hpp"
#include "sizes.hpp"

#include <cdc/corpus/analyze.hpp>
#include <cdc/corpus/resync.hpp>
#include <cdc/corpus/sweep.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>

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
    std::string edit_size = "1";
    std::size_t trials = 3;
    std::uint64_t seed = 1;
    std::string resync_bytes = "16MiB";
    std::string scales = "0.125,0.25,0.5,1,2,4,8";
    unsigned jobs = 0;
    bool quiet = false;
};

std::set<std::string> parse_kinds(const std::string& text) {
    std::set<std::string> kinds;
    for (const auto& k : split_comma_list(text)) {
        if (k == "all") {
            kinds.insert(std::begin(kKinds), std::end(kKinds));
            continue;
        }
        if (std::find(std::begin(kKinds), std::end(kKinds), k) == std::end(kKinds))
            throw UsageError(fmt::format("--kind = '{}' is invalid: distribution, cdf, resync, dedup-sweep or all", k));
        kinds.insert(k);
    }
    return kinds;
}

std::vector<double> parse_scales(const std::string& text) {
    std::vector<double> out;
    for (const auto& s : split_comma_list(text)) {
        try {
            std::size_t used = 0;
            const double v = std::stod(s, &used);
            if (used != s.size() || !(v > 0)) throw std::invalid_argument(s);
            out.push_back(v);
        } catch (const std::exception&) {
            throw UsageError(fmt::format("--scales = '{}' is invalid: comma-separated factors > 0", text));
        }
    }
    return out;
}

double kib(double bytes) { return bytes / 1024.0; }

std::string compact_size(std::size_t v) {
    if (v % (1024 * 1024) == 0) return fmt::format("{}M", v / (1024 * 1024));
    if (v % 1024 == 0) return fmt::format("{}K", v / 1024);
    return fmt::format("{}", v);
}

std::string profile_text(const Profile& p) {
    return fmt::format("min/avg/max {}/{}/{}", compact_size(p.min_size), compact_size(p.normal_size),
                       compact_size(p.max_size));
}

// The bytes resync edits: the corpus files concatenated in walk order, up to
// `limit` bytes (a tar-like stream).
std::vector<std::uint8_t> resync_input(const WalkResult& walk, std::uint64_t limit) {
    std::vector<std::uint8_t> data;
    for (const FileEntry& f : walk.files) {
        if (data.size() >= limit) break;
        std::ifstream in(f.path, std::ios::binary);
        if (!in) continue;
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(f.size, limit - data.size()));
        const std::size_t at = data.size();
        data.resize(at + want);
        in.read(reinterpret_cast<char*>(data.data() + at), static_cast<std::streamsize>(want));
        data.resize(at + static_cast<std::size_t>(in.gcount()));
    }
    return data;
}

class PngWriter {
public:
    explicit PngWriter(std::filesystem::path out, bool quiet) : out_(std::move(out)), quiet_(quiet) {}
    void write(const plot::Chart& chart, const std::filesystem::path& relative) {
        plot::render_png(chart, out_ / relative);
        if (!quiet_) fmt::print("{}\n", (out_ / relative).string());
    }

private:
    std::filesystem::path out_;
    bool quiet_;
};

int run(const PlotArgs& args) {
    const auto kinds = parse_kinds(args.kinds);
    const Options base = args.profile.options();
    const auto runs = parse_algorithm_list(args.algorithms, base, args.quiet);
    if (args.bins == 0 || args.bins > 10000) throw UsageError(fmt::format("--bins = {} is invalid: 1..10000", args.bins));
    if (args.trials == 0) throw UsageError("--trials = 0 is invalid: at least 1");
    const auto scales = parse_scales(args.scales);
    EditSpec edit_spec;
    edit_spec.kind = parse_edit_kind(args.edit_kind);
    edit_spec.size = static_cast<std::size_t>(tools::parse_size(args.edit_size, "--edit-size"));
    edit_spec.seed = args.seed;
    const auto edit_counts = doubling_counts(args.max_edits);
    const std::uint64_t resync_limit = tools::parse_size(args.resync_bytes, "--resync-bytes");
    std::vector<std::shared_ptr<const CutFinder>> finders;  // each algorithm resolved once
    for (const auto& r : runs) finders.push_back(make_cut_finder(r));
    for (const auto& p : args.paths)
        if (p == "-") throw UsageError("cdc plot reads files and directories, not standard input");

    WalkResult walk;
    try {
        walk = walk_inputs(args.paths);
    } catch (const IoError& e) {
        throw UsageError(e.what());
    }
    for (const auto& e : walk.errors) fmt::print(stderr, "cdc plot: skipped '{}': {}\n", e.path, e.message);
    if (walk.total_bytes == 0) throw UsageError("no data: the inputs hold no bytes to chunk");
    const std::string corpus = fmt::format("{} file{}, {}", walk.files.size(), walk.files.size() == 1 ? "" : "s",
                                           tools::format_size(static_cast<double>(walk.total_bytes)));
    PngWriter writer(args.out, args.quiet);
    bool partial = !walk.errors.empty();

    if (kinds.count("distribution") || kinds.count("cdf")) {
        AnalyzeOptions options;
        options.jobs = args.jobs;
        options.algorithms = finders;
        const AnalyzeReport report = analyze(walk, options);
        for (const auto& e : report.errors) fmt::print(stderr, "cdc plot: skipped '{}': {}\n", e.path, e.message);
        partial = partial || !report.errors.empty();
        plot::Chart cmp_dist, cmp_cdf;
        for (const AlgorithmResult& r : report.algorithms) {
            const std::string sub = fmt::format("{}; {}; {} chunks", corpus, profile_text(r.profile), r.chunks);
            if (r.chunks == 0) continue;
            if (kinds.count("distribution")) {
                const SizeHistogram h = size_histogram(r.sizes, r.profile.max_size, args.bins);
                plot::Series s{r.algorithm, {}, {}};
                for (auto e : h.edges) s.x.push_back(kib(static_cast<double>(e)));
                for (auto c : h.counts)
                    s.y.push_back(100.0 * static_cast<double>(c) / static_cast<double>(h.total));
                plot::Chart c;
                c.title = fmt::format("Chunk-size distribution: {}", r.algorithm);
                c.subtitle = sub;
                c.x_label = "chunk size (KiB)";
                c.y_label = "share of chunks (%)";
                c.kind = plot::Kind::bars;
                c.series = {s};
                writer.write(c, std::filesystem::path(r.algorithm) / "chunk-distribution.png");
                cmp_dist.series.push_back(std::move(s));
            }
            if (kinds.count("cdf")) {
                plot::Series s{r.algorithm, {0}, {0}};
                for (const auto& [size, frac] : r.sizes.cdf()) {
                    // a step: the fraction jumps at each size
                    s.x.push_back(kib(static_cast<double>(size)));
                    s.y.push_back(s.y.back());
                    s.x.push_back(kib(static_cast<double>(size)));
                    s.y.push_back(100.0 * frac);
                }
                plot::Chart c;
                c.title = fmt::format("Chunk-size CDF: {}", r.algorithm);
                c.subtitle = sub;
                c.x_label = "chunk size (KiB)";
                c.y_label = "chunks of this size or smaller (%)";
                c.y_max = 102;
                c.series = {s};
                writer.write(c, std::filesystem::path(r.algorithm) / "chunk-size-cdf.png");
                cmp_cdf.series.push_back(std::move(s));
            }
        }
        if (kinds.count("distribution") && !cmp_dist.series.empty()) {
            cmp_dist.title = "Chunk-size distribution";
            cmp_dist.subtitle = corpus;
            cmp_dist.x_label = "chunk size (KiB)";
            cmp_dist.y_label = "share of chunks (%)";
            cmp_dist.kind = plot::Kind::steps;
            writer.write(cmp_dist, "compare-distribution.png");
        }
        if (kinds.count("cdf") && !cmp_cdf.series.empty()) {
            cmp_cdf.title = "Chunk-size CDF";
            cmp_cdf.subtitle = corpus;
            cmp_cdf.x_label = "chunk size (KiB)";
            cmp_cdf.y_label = "chunks of this size or smaller (%)";
            cmp_cdf.y_max = 102;
            writer.write(cmp_cdf, "compare-cdf.png");
        }
    }

    if (kinds.count("resync")) {
        const auto data = resync_input(walk, resync_limit);
        const auto curves = resync_curves(finders, data, edit_counts, edit_spec, args.trials);
        const std::string sub = fmt::format(
            "{} of input; n random {}-byte {}s; mean of {} trial{}",
            tools::format_size(static_cast<double>(data.size())), edit_spec.size, to_string(edit_spec.kind),
            args.trials, args.trials == 1 ? "" : "s");
        plot::Chart cmp;
        for (std::size_t i = 0; i < curves.size(); ++i) {
            plot::Series s{curves[i].algorithm, {}, {}};
            for (const auto& p : curves[i].points) s.x.push_back(static_cast<double>(p.edits)), s.y.push_back(p.shared_pct_mean);
            plot::Chart c;
            c.title = fmt::format("Resync impact: {}", curves[i].algorithm);
            c.subtitle = fmt::format("{}; {}", sub, profile_text(finders[i]->profile()));
            c.x_label = "number of edits (n)";
            c.y_label = "bytes still shared after the edits (%)";
            c.x_log = true;
            c.markers = true;
            c.y_min = 0;
            c.series = {s};
            writer.write(c, std::filesystem::path(curves[i].algorithm) / "resync-impact.png");
            cmp.series.push_back(std::move(s));
        }
        cmp.title = "Resync impact";
        cmp.subtitle = sub;
        cmp.x_label = "number of edits (n)";
        cmp.y_label = "bytes still shared after the edits (%)";
        cmp.x_log = true;
        cmp.markers = true;
        cmp.y_min = 0;
        if (!cmp.series.empty()) writer.write(cmp, "compare-resync.png");
    }

    if (kinds.count("dedup-sweep")) {
        plot::Chart cmp;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const AlgorithmSpec& r = runs[i];
            std::vector<double> skipped;
            const auto points = dedup_sweep(walk, r.name, r.options, scales, args.jobs, &skipped);
            for (double f : skipped)
                fmt::print(stderr, "cdc plot: {}: scale x{} left out (the scaled profile is invalid)\n", r.name, f);
            plot::Series s{r.name, {}, {}};
            for (const auto& p : points)
                if (p.chunks > 0) s.x.push_back(kib(p.mean_chunk_size)), s.y.push_back(p.dedup_ratio);
            if (s.x.empty()) continue;
            plot::Chart c;
            c.title = fmt::format("Dedup ratio against average chunk size: {}", r.name);
            c.subtitle = fmt::format("{}; min, avg, max scaled x{}..x{} from {}", corpus, scales.front(),
                                     scales.back(), profile_text(finders[i]->profile()));
            c.x_label = "measured mean chunk size (KiB, log scale)";
            c.y_label = "dedup ratio: distinct / total bytes";
            c.x_log = true;
            c.markers = true;
            c.y_from_zero = false;
            c.series = {s};
            writer.write(c, std::filesystem::path(r.name) / "dedup-sweep.png");
            cmp.series.push_back(std::move(s));
        }
        cmp.title = "Dedup ratio against average chunk size";
        cmp.subtitle = fmt::format("{}; min, avg, max scaled together", corpus);
        cmp.x_label = "measured mean chunk size (KiB, log scale)";
        cmp.y_label = "dedup ratio: distinct / total bytes";
        cmp.x_log = true;
        cmp.markers = true;
        cmp.y_from_zero = false;
        if (!cmp.series.empty()) writer.write(cmp, "compare-dedup-sweep.png");
    }
    finish_stdout();
    return partial ? kExitPartial : kExitOk;
}

}  // namespace

void add_plot_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<PlotArgs>();
    auto* cmd = app.add_subcommand(
        "plot",
        "PNG graphs per algorithm (OUT/<algorithm>/chunk-distribution.png, chunk-size-cdf.png, resync-impact.png, "
        "dedup-sweep.png) and OUT/compare-<kind>.png overlaying them");
    cmd->add_option("-a,--algorithm", args->algorithms, "comma-separated algorithm names, or all")->capture_default_str();
    cmd->add_option("--kind", args->kinds, "distribution, cdf, resync, dedup-sweep or all (comma-separated)")
        ->capture_default_str();
    add_profile_options(*cmd, args->profile, true, "--chunker-seed");
    cmd->add_option("--out", args->out, "output directory")->required();
    cmd->add_option("--bins", args->bins, "histogram bins over [0, max]")->capture_default_str();
    cmd->add_option("--edits", args->max_edits, "resync: up to this many edits (1, 2, 4, ... n)")->capture_default_str();
    cmd->add_option("--edit-kind", args->edit_kind, "resync: insert, delete, overwrite or mixed")->capture_default_str();
    cmd->add_option("--edit-size", args->edit_size, "resync: bytes per edit")->capture_default_str();
    cmd->add_option("--trials", args->trials, "resync: trials (seeds) averaged per point")->capture_default_str();
    cmd->add_option("--seed", args->seed, "resync: first seed")->capture_default_str();
    cmd->add_option("--resync-bytes", args->resync_bytes,
                    "resync: edit the first this-many bytes of the inputs, concatenated")
        ->capture_default_str();
    cmd->add_option("--scales", args->scales, "dedup-sweep: factors applied to min, avg and max together")
        ->capture_default_str();
    cmd->add_option("-j,--jobs", args->jobs, "analysis workers (default: every core)");
    cmd->add_flag("-q,--quiet", args->quiet, "do not list the files written");
    cmd->add_option("PATH", args->paths, "files or directories (recursive)")->required();
    cmd->footer(kExitCodesHelp);
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
