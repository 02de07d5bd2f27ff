// SPDX-License-Identifier: Apache-2.0
// cdc bench run|plot — time, CPU and memory of chunking a whole tree with many
// chunkers in flight (one per file), pooled or not; graphs of saved runs.
#include "bench_run.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "escape.hpp"
#include "plot.hpp"
#include "sizes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

namespace cdc::cli {

namespace {

struct BenchRunArgs {
    std::string algorithm = "fastcdc";
    ProfileArgs profile;
    std::string root;
    std::size_t concurrency = 1;
    std::size_t threads = 0;
    bool pooled = false;
    std::optional<std::uint64_t> buffer;
    std::uint64_t sample_ms = 100;
    bool json = false;
    bool csv = false;
    bool quiet = false;
    std::string plot_dir;
    std::string label;
};

struct BenchPlotArgs {
    std::vector<std::string> inputs;
    std::string labels;
    std::string out;
    bool json = false;
    bool quiet = false;
};

// N files in flight hold N descriptors: raise the soft limit when needed.
void ensure_descriptors(std::size_t concurrency) {
    const std::uint64_t want = std::uint64_t{concurrency} + 64;
    const std::uint64_t have = raise_open_files_limit(want);
    if (have != 0 && have < want)
        throw UsageError(fmt::format("--concurrency = {} is invalid: only {} open files allowed (ulimit -n)",
                                     concurrency, have));
}

std::string default_label(const tools::BenchSummary& s) {
    return fmt::format("{} c={} max={}", s.pooled ? "pooled" : "unpooled", s.concurrency,
                       tools::format_size(static_cast<double>(s.max_size)));
}

std::string common_subtitle(const std::vector<tools::BenchResult>& runs) {
    const auto& s = runs.front().summary;
    std::string text = fmt::format("{}, {} files, {}; a sample every {} ms", s.algorithm, s.files,
                                   tools::format_size(static_cast<double>(s.bytes)), s.sample_ms);
    for (const auto& r : runs)
        if (r.summary.algorithm != s.algorithm || r.summary.files != s.files || r.summary.bytes != s.bytes ||
            r.summary.sample_ms != s.sample_ms)
            return "";
    return text;
}

// Fewer samples than this in a run: each is marked on the memory chart (a
// line between a few points would read as measured all along).
constexpr std::size_t kMarkedSamples = 60;

// CPU use between consecutive samples, as steps: the rate is an average over
// each interval, not a value at a point. x: the interval edges.
plot::Series cpu_steps(const std::string& label, const std::vector<tools::BenchSample>& samples) {
    plot::Series c{label, {}, {}};
    for (const auto& p : tools::cpu_utilisation(samples)) {
        if (c.x.empty()) c.x.push_back(p.from_s);  // the intervals follow each other
        c.x.push_back(p.t_s);
        c.y.push_back(p.percent);
    }
    if (c.y.empty()) c.x = {0, samples.empty() ? 1e-3 : std::max(samples.back().t_s, 1e-3)}, c.y = {0};
    return c;
}

// The two charts of a set of runs: resident memory and CPU over time; the
// files written.
std::vector<std::string> plot_runs(const std::vector<tools::BenchResult>& runs, const std::vector<std::string>& labels,
                                   const std::filesystem::path& dir) {
    plot::Chart mem;
    mem.title = "Memory over time (cdc bench)";
    mem.subtitle = common_subtitle(runs);
    mem.x_label = "elapsed (s)";
    mem.y_label = "resident set size (MB)";
    mem.x_min = 0;
    plot::Chart cpu = mem;
    cpu.title = "CPU over time (cdc bench)";
    cpu.y_label = "CPU (% of one core, user + sys)";
    if (runs.size() == 1 && runs.front().samples.size() < kMarkedSamples)  // (one run: a subtitle)
        mem.subtitle = fmt::format("{} ({} samples)", mem.subtitle, runs.front().samples.size());
    cpu.subtitle = mem.subtitle;
    cpu.kind = plot::Kind::steps;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        plot::Series m{labels[i], {}, {}};
        for (const auto& p : runs[i].samples) m.x.push_back(p.t_s), m.y.push_back(p.rss_mb);
        mem.markers = mem.markers || m.x.size() < kMarkedSamples;
        mem.series.push_back(std::move(m));
        cpu.series.push_back(cpu_steps(labels[i], runs[i].samples));
    }
    plot::render_png(mem, dir / "memory-over-time.png");
    plot::render_png(cpu, dir / "cpu-over-time.png");
    return {(dir / "memory-over-time.png").string(), (dir / "cpu-over-time.png").string()};
}

void print_text(const tools::BenchResult& r) {
    const auto& s = r.summary;
    using tools::format_size;
    fmt::print("algorithm    {} (min {}, avg {}, max {})\n", s.algorithm, format_size(static_cast<double>(s.min_size)),
               format_size(static_cast<double>(s.avg_size)), format_size(static_cast<double>(s.max_size)));
    if (s.pooled)
        fmt::print("buffers      pooled: caller-owned {} buffers, reused across files\n",
                   format_size(static_cast<double>(s.buffer_size)));
    else
        fmt::print("buffers      unpooled: each chunker allocates its own {} buffer\n",
                   format_size(static_cast<double>(s.buffer_size)));
    fmt::print("concurrency  {} files in flight on {} thread{}\n", s.concurrency, s.threads, s.threads == 1 ? "" : "s");
    fmt::print("files        {}{}\n", s.files, s.errors ? fmt::format(" ({} skipped after errors)", s.errors) : "");
    fmt::print("bytes        {} ({})\n", s.bytes, format_size(static_cast<double>(s.bytes)));
    fmt::print("chunks       {}\n", s.chunks);
    fmt::print("elapsed      {:.3f} s\n", s.elapsed_s);
    fmt::print("throughput   {:.1f} MB/s\n", s.mb_per_s);
    fmt::print("peak RSS     {:.1f} MB (at start {:.1f} MB, highest sample {:.1f} MB)\n", s.peak_rss_mb,
               s.start_rss_mb, s.max_sampled_rss_mb);
    fmt::print("CPU          user {:.3f} s, sys {:.3f} s\n", s.cpu_user_s, s.cpu_sys_s);
    fmt::print("allocations  {} buffers, {:.1f} MB\n", s.buffer_allocations,
               static_cast<double>(s.buffer_allocated_bytes) / 1e6);
    fmt::print("samples      {} every {} ms\n", r.samples.size(), s.sample_ms);
}

int run_bench_run(const BenchRunArgs& args) {
    tools::BenchConfig config;
    config.algorithm = args.algorithm;
    config.options = args.profile.options();
    // Validated before walking the tree; the buffers of every file in flight
    // must fit in memory.
    const std::size_t max_size = make_cut_finder(config.algorithm, config.options)->profile().max_size;
    if (args.buffer && !args.pooled)
        throw UsageError(fmt::format("--buffer = '{}' is invalid without --pooled (an unpooled chunker allocates its "
                                     "own buffer)",
                                     tools::format_size_exact(*args.buffer)));
    if (args.buffer) {
        if (*args.buffer < max_size)
            throw UsageError(fmt::format("--buffer = '{}' is invalid: must be at least the maximum chunk size ({})",
                                         tools::format_size_exact(*args.buffer), tools::format_size_exact(max_size)));
        config.buffer_size = static_cast<std::size_t>(*args.buffer);
    }
    const std::size_t per_file = config.buffer_size ? config.buffer_size : default_buffer_size(max_size);
    if (args.concurrency > tools::physical_memory() / 2 / per_file)
        throw UsageError(fmt::format("--concurrency = '{}' is invalid: {} files in flight need {} buffers of {}, more than "
                                     "half of this machine's {}",
                                     args.concurrency, args.concurrency, args.concurrency,
                                     tools::format_size(static_cast<double>(per_file)),
                                     tools::format_size(static_cast<double>(tools::physical_memory()))));
    tools::FileList list;
    try {
        list = tools::list_files(args.root);
    } catch (const IoError& e) {
        throw UsageError(e.what());
    }
    // What the walk could not read is reported and counted (exit 3), as by
    // cdc analyze: never skipped in silence.
    for (const auto& e : list.errors) print_error(fmt::format("{}: {} (skipped)", e.path, e.message));
    if (!args.quiet)
        for (const auto& w : list.warnings) print_warning(fmt::format("{}: {}", w.path, w.message));
    config.files = std::move(list.files);
    config.concurrency = args.concurrency;
    config.threads = args.threads;
    config.pooled = args.pooled;
    config.sample_interval = std::chrono::milliseconds(args.sample_ms);
    ensure_descriptors(config.concurrency);
    const bool progress = !args.quiet && stderr_is_tty();
    if (progress) {
        const std::size_t total = config.files.size();
        config.on_sample = [total](const tools::BenchSample& p) {
            fmt::print(stderr, "\r{}/{} files, {:.0f} MB, {:.0f} MB/s, RSS {:.0f} MB   ", p.files, total,
                       static_cast<double>(p.bytes) / 1e6,
                       p.t_s > 0 ? static_cast<double>(p.bytes) / 1e6 / p.t_s : 0.0, p.rss_mb);
        };
    }

    tools::BenchResult result = tools::run_bench(config);
    if (progress) fmt::print(stderr, "\r\033[K");
    // Every file skipped while chunking, named on stderr (the walk's were above).
    for (const auto& e : result.errors) print_error(fmt::format("{} (skipped)", e));
    result.summary.errors += list.errors.size();
    if (!list.errors.empty())
        result.summary.first_error = fmt::format("{}: {}", list.errors.front().path, list.errors.front().message);
    if (result.summary.errors > 0) fmt::print(stderr, "cdc: {} input(s) skipped after errors\n", result.summary.errors);
    if (args.json)
        fmt::print("{}\n", tools::to_json(result).dump(2));
    else if (args.csv)
        fmt::print("{}", tools::samples_csv(result.samples));
    else
        print_text(result);
    finish_stdout();
    if (!args.plot_dir.empty()) {
        const std::string label = args.label.empty() ? default_label(result.summary) : args.label;
        plot_runs({result}, {label}, args.plot_dir);
    }
    return result.summary.errors ? kExitPartial : kExitOk;
}

int run_bench_plot(const BenchPlotArgs& args) {
    const auto& inputs = args.inputs;
    std::vector<std::string> labels;
    if (!args.labels.empty()) {
        labels = split_comma_list(args.labels);
        if (labels.size() != inputs.size())
            throw UsageError(fmt::format("--labels has {} names for {} files", labels.size(), inputs.size()));
    }
    std::vector<tools::BenchResult> runs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        std::ifstream in(inputs[i]);
        if (!in) throw UsageError(fmt::format("cannot read '{}': {}", inputs[i], std::strerror(errno)));
        try {
            runs.push_back(tools::bench_result_from_json(nlohmann::json::parse(in)));
        } catch (const std::exception& e) {
            throw UsageError(fmt::format("'{}' is not a cdc bench run --json file: {}", inputs[i], e.what()));
        }
        if (labels.size() < runs.size()) labels.push_back(default_label(runs.back().summary));
    }
    const auto written = plot_runs(runs, labels, args.out);
    if (args.json) {
        nlohmann::json files = nlohmann::json::array();
        for (const auto& f : written) files.push_back(tools::escape_text(f));
        fmt::print("{}\n", nlohmann::json{{"files", files}}.dump());
    } else if (!args.quiet) {
        for (const auto& f : written) fmt::print("{}\n", tools::escape_text(f));
    }
    finish_stdout();
    return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
    auto* bench = app.add_subcommand("bench", "time, CPU and memory of chunking a tree with many chunkers in flight");
    bench->require_subcommand(1);
    document(*bench, {.notes = "bench run measures, bench plot draws saved runs, bench transfer compares one large "
                               "gRPC message with a stream of chunks.",
                      .examples = {{"cdc bench run -c 64 --pooled ~/src", "64 files in flight with pooled buffers"}},
                      .exit_codes = {}});

    auto ra = std::make_shared<BenchRunArgs>();
    auto* run = bench->add_subcommand(
        "run",
        "chunk every file of a tree, one chunker per file, N files in flight (N lanes stepped round robin by "
        "min(N, cores) threads); print a summary and a time series");
    add_algorithm_option(*run, ra->algorithm, "the algorithm (cdc algorithms lists them)");
    add_profile_options(*run, ra->profile);
    add_count_option(*run, "-c,--concurrency", ra->concurrency, 1, limits::kConcurrency, "files in flight (live chunkers)");
    add_count_option(*run, "--threads", ra->threads, 0, limits::kJobs, "worker threads stepping the lanes (0: min(concurrency, hardware threads); = concurrency for one "
                   "OS thread per file in flight)");
    run->add_flag("--pooled", ra->pooled,
                  "caller-owned buffers from a per-thread pool (one per file in flight) instead of one allocation "
                  "per chunker");
    add_size_option(*run, "--buffer", ra->buffer, 1, limits::kBuffer,
                    "with --pooled: the buffer size (max..1 GiB; default: the chunker's own, 2 x max, >= 256 KiB)");
    add_count_option(*run, "--sample-ms", ra->sample_ms, 1, limits::kSampleMs, "sampling interval of the time series (ms)");
    auto* json = add_json_flag(*run, ra->json, "the summary and the samples: {summary: {...}, samples: [...]}");
    auto* csv = add_csv_flag(*run, ra->csv, "the samples: t_s, files, bytes, chunks, rss_mb, cpu_user_s, cpu_sys_s");
    csv->excludes(json);
    add_quiet_flag(*run, ra->quiet);
    run->add_option("--plot", ra->plot_dir, "also draw memory-over-time.png and cpu-over-time.png into this directory")
        ->type_name("DIR");
    run->add_option("--label", ra->label, "legend label for --plot (default: mode, concurrency, max)")->type_name("TEXT");
    run->add_option("PATH", ra->root, "directory tree (or one file) to chunk")->required()->type_name("");
    document(*run, {.notes = "Text output: the summary. Peak RSS comes from the kernel (VmHWM); samples every "
                             "--sample-ms.",
                    .examples = {{"cdc bench run -c 64 ~/src", "64 files in flight, each chunker with its own buffer"},
                                 {"cdc bench run -c 64 --pooled --json ~/src > pooled.json",
                                  "the same with pooled buffers, saved for cdc bench plot"}},
                    .exit_codes = exit_codes({partial_exit()})});
    run->callback([ra, &exit_code] { exit_code = run_bench_run(*ra); });

    auto pa = std::make_shared<BenchPlotArgs>();
    auto* plot = bench->add_subcommand("plot", "draw memory and CPU over time of saved runs (cdc bench run --json), overlaid");
    plot->add_option("FILE", pa->inputs, "JSON files from cdc bench run --json")->required()->type_name("");
    add_list_option(*plot, "--labels", pa->labels, "TEXT", "legend labels, one per FILE (comma-separated or repeated)");
    plot->add_option("-o,--output", pa->out, "output directory (memory-over-time.png, cpu-over-time.png)")
        ->required()
        ->type_name("DIR");
    add_json_flag(*plot, pa->json, "{files: [the PNG files written]}");
    add_quiet_flag(*plot, pa->quiet);
    document(*plot, {.notes = "Text output: the PNG files written, one per line.",
                     .examples = {{"cdc bench plot -o graphs --labels own,pooled own.json pooled.json",
                                   "two saved runs overlaid in graphs/"}},
                     .exit_codes = exit_codes()});
    plot->callback([pa, &exit_code] { exit_code = run_bench_plot(*pa); });

    // Run by the cdc-transfer helper (main.cpp hands `cdc bench transfer` to it).
    bench->add_subcommand("transfer", "the seed's experiment: one huge gRPC message vs a stream of chunks, client "
                                      "and server memory over time (`cdc bench transfer --help`)")
        ->prefix_command();
}

}  // namespace cdc::cli
