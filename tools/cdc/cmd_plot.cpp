// cdc plot — PNG graphs of chunk sizes, resync quality and dedup against the
// average size, per algorithm and overlaid. The data comes from the library
// (analyze, SizeStats, cdc/sweep.hpp); this file only lays out the charts.
#include "cli_common.hpp"
#include "commands.hpp"
#include "escape.hpp"
#include "plot.hpp"
#include "sizes.hpp"

#include <cdc/analyze.hpp>
#include <cdc/resync.hpp>
#include <cdc/sweep.hpp>

#include <fmt/format.h>

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

// Factors in [1/1024, 1024] that give every algorithm a valid profile.
std::vector<double> parse_scales(const std::string& text, const std::vector<AlgorithmRun>& runs) {
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

class PngWriter {
public:
    explicit PngWriter(std::filesystem::path out, bool quiet) : out_(std::move(out)), quiet_(quiet) {}
    void write(const plot::Chart& chart, const std::filesystem::path& relative) {
        plot::render_png(chart, out_ / relative);
        ++written_;
        if (!quiet_) fmt::print("{}\n", tools::escape_text((out_ / relative).string()));
    }
    std::size_t written() const noexcept { return written_; }

private:
    std::filesystem::path out_;
    bool quiet_;
    std::size_t written_ = 0;
};

int run(const PlotArgs& args) {
    const auto kinds = parse_kinds(args.kinds);
    const Options base = args.profile.options();
    const auto runs = parse_algorithm_list(args.algorithms, base, args.quiet);
    const auto scales = parse_scales(args.scales, runs);
    EditSpec edit_spec;
    edit_spec.kind = parse_edit_kind(args.edit_kind);
    edit_spec.size = static_cast<std::size_t>(tools::parse_size(args.edit_size, "--edit-size", 1, limits::kEditSize));
    edit_spec.seed = args.seed;
    edit_spec.count = args.max_edits;
    const auto edit_counts = doubling_counts(args.max_edits);
    const std::uint64_t resync_limit = tools::parse_size(args.resync_bytes, "--resync-bytes", 1,
                                                         std::numeric_limits<std::uint64_t>::max());
    if (kinds.count("resync")) tools::check_fits_in_memory(2 * resync_limit, "--resync-bytes", args.resync_bytes);
    for (const auto& r : runs) (void)resolve_profile(r.name, r.options);
    for (const auto& p : args.paths)
        if (p == "-") throw UsageError("cdc plot reads files and directories, not standard input");

    WalkResult walk;
    try {
        walk = walk_inputs(args.paths);
    } catch (const IoError& e) {
        throw UsageError(e.what());
    }
    // Every input left out (unreadable, vanished, a name too long...) is
    // reported once, whichever step found it, and makes the exit code 3.
    std::set<std::string> skipped;
    const auto skip = [&skipped](const std::string& path, const std::string& why) {
        if (skipped.insert(path).second) print_error(fmt::format("{}: {} (skipped)", path, why));
    };
    for (const auto& e : walk.errors) skip(e.path, e.message);
    if (!args.quiet)
        for (const auto& w : walk.warnings) print_warning(fmt::format("{}: {}", w.path, w.message));
    if (walk.total_bytes == 0) throw UsageError("no data: the inputs hold no bytes to chunk");
    const std::string corpus = fmt::format("{} file{}, {}", walk.files.size(), walk.files.size() == 1 ? "" : "s",
                                           tools::format_size(static_cast<double>(walk.total_bytes)));
    PngWriter writer(args.out, args.quiet);

    if (kinds.count("distribution") || kinds.count("cdf")) {
        AnalyzeOptions options;
        options.jobs = args.jobs;
        for (const auto& r : runs) options.algorithms.push_back({r.name, r.options});
        const AnalyzeReport report = analyze(walk, options);
        for (const auto& e : report.errors) skip(e.path, e.message);
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

    std::vector<std::uint8_t> data;
    if (kinds.count("resync")) data = resync_input(walk, resync_limit, skip);
    if (kinds.count("resync") && !data.empty()) {  // (no data: no resync graph, see the end)
        check_edits_fit(edit_spec, "--edits", data.size(), "the resync input (--resync-bytes of the files)");
        std::vector<std::shared_ptr<const CutFinder>> finders;
        for (const auto& r : runs) finders.push_back(make_cut_finder(r.name, r.options));
        const auto curves = resync_curves(finders, data, edit_counts, edit_spec, args.trials);
        const std::string sub = fmt::format(
            "{} of input; n random {}-byte {}s; mean of {} trial{}",
            tools::format_size(static_cast<double>(data.size())), edit_spec.size, to_string(edit_spec.kind),
            args.trials, args.trials == 1 ? "" : "s");
        const bool log_edits = edit_counts.front() > 0;  // (--edits 0: the one point n = 0)
        plot::Chart cmp;
        for (std::size_t i = 0; i < curves.size(); ++i) {
            plot::Series s{curves[i].algorithm, {}, {}};
            for (const auto& p : curves[i].points) s.x.push_back(static_cast<double>(p.edits)), s.y.push_back(p.shared_pct_mean);
            plot::Chart c;
            c.title = fmt::format("Resync impact: {}", curves[i].algorithm);
            c.subtitle = fmt::format("{}; {}", sub, profile_text(finders[i]->profile()));
            c.x_label = "number of edits (n)";
            c.y_label = "bytes still shared after the edits (%)";
            c.x_log = log_edits;
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
        cmp.x_log = log_edits;
        cmp.markers = true;
        cmp.y_min = 0;
        if (!cmp.series.empty()) writer.write(cmp, "compare-resync.png");
    }

    if (kinds.count("dedup-sweep")) {
        plot::Chart cmp;
        for (const auto& r : runs) {
            std::vector<InputIssue> errors;
            const auto points = dedup_sweep(walk, r.name, r.options, scales, args.jobs, nullptr, &errors);
            for (const auto& e : errors) skip(e.path, e.message);
            plot::Series s{r.name, {}, {}};
            for (const auto& p : points)
                if (p.chunks > 0) s.x.push_back(kib(p.mean_chunk_size)), s.y.push_back(p.dedup_ratio);
            if (s.x.empty()) continue;
            plot::Chart c;
            c.title = fmt::format("Dedup ratio against average chunk size: {}", r.name);
            c.subtitle = fmt::format("{}; min, avg, max scaled x{}..x{} from {}", corpus, scales.front(),
                                     scales.back(), profile_text(resolve_profile(r.name, r.options)));
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
    if (writer.written() == 0)
        throw IoError(fmt::format("no graph written: no data could be read ({} input(s) skipped)", skipped.size()));
    if (!skipped.empty()) fmt::print(stderr, "cdc: {} input(s) skipped after errors\n", skipped.size());
    return skipped.empty() ? kExitOk : kExitPartial;
}

}  // namespace

static void add_plot_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<PlotArgs>();
    auto* cmd = app.add_subcommand(
        "plot",
        "PNG graphs per algorithm (OUT/<algorithm>/chunk-distribution.png, chunk-size-cdf.png, resync-impact.png, "
        "dedup-sweep.png) and OUT/compare-<kind>.png overlaying them");
    cmd->add_option("-a,--algorithm", args->algorithms, "comma-separated algorithm names, or all")->capture_default_str();
    cmd->add_option("--kind", args->kinds, "distribution, cdf, resync, dedup-sweep or all (comma-separated)")
        ->capture_default_str();
    add_profile_options(*cmd, args->profile);
    cmd->add_option("--out", args->out, "output directory")->required();
    add_count_option(*cmd, "--bins", args->bins, 1, limits::kBins, "histogram bins over [0, max]");
    add_count_option(*cmd, "--edits", args->max_edits, 0, limits::kEdits,
                     "resync: up to this many edits (1, 2, 4, ... n; 0: the point n = 0 only, no edits)");
    cmd->add_option("--edit-kind", args->edit_kind, "resync: insert, delete, overwrite or mixed")->capture_default_str();
    cmd->add_option("--edit-size", args->edit_size, "resync: bytes per edit")->capture_default_str();
    add_count_option(*cmd, "--trials", args->trials, 1, limits::kTrials, "resync: trials (seeds) averaged per point");
    add_count_option(*cmd, "--seed", args->seed, 0, std::numeric_limits<std::uint64_t>::max(), "resync: first seed");
    cmd->add_option("--resync-bytes", args->resync_bytes,
                    "resync: edit the first this-many bytes of the inputs, concatenated")
        ->capture_default_str();
    cmd->add_option("--scales", args->scales,
                    "dedup-sweep: factors (1/1024..1024) applied to min, avg and max together")
        ->capture_default_str();
    add_count_option(*cmd, "-j,--jobs", args->jobs, 0, limits::kJobs, "analysis workers (0: every core)");
    cmd->add_flag("-q,--quiet", args->quiet, "do not list the files written");
    cmd->add_option("PATH", args->paths, "files or directories (recursive)")->required();
    cmd->footer(kExitCodesHelp);
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

static const CommandRegistration registration{56, &add_plot_command};

}  // namespace cdc::cli
