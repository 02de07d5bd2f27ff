// SPDX-License-Identifier: Apache-2.0
// cdc speed — in-memory chunking throughput of each algorithm (cutting only,
// or cutting + a digest of every chunk), beside a memory-read baseline and
// the algorithm's scalar reference, measured in the same run over the same
// buffer.
#include "cli_common.hpp"
#include "commands.hpp"

#include <cdc/corpus/datagen.hpp>
#include "sizes.hpp"
#include "common/mapped_bytes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <vector>
#include <chrono>
#include <cstring>
#include <ctime>
#include <limits>
#include <optional>
#include <span>

namespace cdc::cli {

namespace {
struct SpeedArgs {
    std::string algorithms = "all";
    std::string pages = "huge";
    ProfileArgs profile;
    std::uint64_t size = std::uint64_t{1} << 30;
    std::string data = "random";
    std::string digest = "none";
    std::string kernel = "auto";
    unsigned runs = 1;
    std::optional<unsigned> jobs;  // given: cut on this many threads, timed by the wall clock
    bool json = false;
    bool quiet = false;
};

// Time is the CPU time of the measuring thread: on a shared machine other
// processes then do not count against us (the work is single-threaded and in
// memory, so on an idle machine this equals wall-clock time).
struct Clock {
    using time_point = double;
    static double now() {
        timespec ts{};
        ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
};

double seconds_since(Clock::time_point t0) { return Clock::now() - t0; }

/// The memory-read baseline: the sum of every 64-bit word of the buffer.
std::uint64_t sum_words(const std::uint8_t* p, std::size_t n) {
    std::uint64_t a = 0, b = 0, c = 0, d = 0;
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        std::uint64_t w[4];
        std::memcpy(w, p + i, 32);
        a += w[0];
        b += w[1];
        c += w[2];
        d += w[3];
    }
    for (; i < n; ++i) a += p[i];
    return a + b + c + d;
}

struct Measure {
    double seconds = 0;
    std::uint64_t chunks = 0;
};

Measure cut_all(const CutFinder& finder, const std::uint8_t* buf, std::size_t size, DigestKind digest) {
    std::uint64_t chunks = 0;
    std::uint8_t sink = 0;
    // Up to 64 chunks at a time, then (with a digest) one compute_digests
    // call for them (BLAKE3 hashes them side by side), as analyze does.
    constexpr std::size_t kBatch = 64;
    std::array<std::uint32_t, kBatch> lengths{};
    std::array<Digest, kBatch> digests{};
    const auto data = std::as_bytes(std::span(buf, size));
    const auto t0 = Clock::now();
    for (std::size_t pos = 0; pos < size;) {
        const CutProgress batch = cut_lengths(finder, data.subspan(pos), true, lengths);
        if (digest != DigestKind::none) {
            compute_digests(digest, data.subspan(pos, batch.bytes), std::span(lengths.data(), batch.chunks),
                            std::span(digests.data(), batch.chunks));
            for (std::size_t i = 0; i < batch.chunks; ++i) sink ^= digests[i].bytes[0];
        }
        pos += batch.bytes;
        chunks += batch.chunks;
    }
    Measure m{seconds_since(t0), chunks};
    if (sink == 0x5A) m.chunks += 0;  // keep the digests alive
    return m;
}

// With --jobs: cut_lengths_parallel over the whole buffer (and the digests on
// as many threads), timed by the wall clock, as several threads' CPU time
// would not say how long the cut took.
Measure cut_all_parallel(const CutFinder& finder, const std::uint8_t* buf, std::size_t size, DigestKind digest,
                         unsigned jobs) {
    const auto data = std::as_bytes(std::span(buf, size));
    std::vector<std::uint32_t> lengths;
    const auto t0 = std::chrono::steady_clock::now();
    cut_lengths_parallel(finder, data, true, lengths, jobs);
    std::vector<Digest> digests;
    if (digest != DigestKind::none) {
        digests.resize(lengths.size());
        compute_digests_parallel(digest, data, lengths, digests, jobs);
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    return {took.count(), lengths.size()};
}

// The names to measure: the list given, or with "all" every content-defined
// name, kfastcdc with a fixed key when none was given.
std::vector<AlgorithmSpec> speed_runs(const SpeedArgs& args, const Options& base) {
    auto runs = parse_algorithm_list(args.algorithms, base, true);
    if (args.algorithms == "all") {
        // fixed-v1.0.0 does no content-defined work: nothing to measure.
        std::erase_if(runs, [](const AlgorithmSpec& r) { return r.name == "fixed-v1.0.0"; });
    }
    if (args.algorithms == "all" && !base.key) {
        // kfastcdc needs a key: measure it with a fixed one.
        Options keyed = base;
        Key k{};
        for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(i);
        keyed.key = k;
        auto it = std::find_if(runs.begin(), runs.end(), [](const AlgorithmSpec& r) { return r.name == "fastcdc-v1.0.0"; });
        runs.insert(it == runs.end() ? runs.end() : it, AlgorithmSpec{"kfastcdc", keyed});
    }
    return runs;
}

// The memory-read baseline: MB/s of summing the buffer's words (best of
// `runs` after a warm-up pass); `checksum` keeps the sums alive.
double memory_baseline(std::span<const std::uint8_t> buf, unsigned runs, std::uint64_t& checksum) {
    double best = 1e300;
    for (unsigned r = 0; r < runs + 1; ++r) {  // one warm-up pass
        const auto t0 = Clock::now();
        checksum += sum_words(buf.data(), buf.size());
        if (r > 0) best = std::min(best, seconds_since(t0));
    }
    return static_cast<double>(buf.size()) / 1e6 / best;
}

struct SpeedRow {
    std::string name;
    KernelLevel used;
    double mb_s;
    double scalar_mb_s;  // the scalar reference, measured side by side
    std::uint64_t chunks;
};

// One name: the kernel at `level` and the scalar reference, their runs
// alternating so that a slow spell of the machine does not fall on one only.
SpeedRow measure(const AlgorithmSpec& r, KernelLevel level, std::span<const std::uint8_t> buf, DigestKind digest,
                 unsigned runs, std::optional<unsigned> jobs) {
    const auto cut = [&](const CutFinder& f) {
        return jobs ? cut_all_parallel(f, buf.data(), buf.size(), digest, *jobs)
                    : cut_all(f, buf.data(), buf.size(), digest);
    };
    auto finder = make_cut_finder(r.name, r.options, level);
    auto scalar =
        finder->kernel_level() == KernelLevel::scalar ? finder : make_cut_finder(r.name, r.options, KernelLevel::scalar);
    Measure best{1e300, 0};
    Measure best_scalar{1e300, 0};
    for (unsigned k = 0; k < runs; ++k) {
        const Measure m = cut(*finder);
        if (m.seconds < best.seconds) best = m;
        if (scalar == finder) continue;
        const Measure s = cut(*scalar);
        if (s.seconds < best_scalar.seconds) best_scalar = s;
    }
    if (scalar == finder) best_scalar = best;
    const auto mb_s = [&buf](const Measure& m) { return static_cast<double>(buf.size()) / 1e6 / m.seconds; };
    return {r.name, finder->kernel_level(), mb_s(best), mb_s(best_scalar), best.chunks};
}

void print_rows(const SpeedArgs& args, const std::vector<SpeedRow>& rows, double baseline, std::size_t size,
                std::uint64_t checksum) {
    if (args.json) {
        nlohmann::json results = nlohmann::json::array();
        for (const auto& row : rows)
            results.push_back({{"algorithm", row.name},
                               {"mb_s", row.mb_s},
                               {"chunks", row.chunks},
                               {"fraction_of_baseline", row.mb_s / baseline},
                               {"scalar_mb_s", row.scalar_mb_s},
                               {"relative_to_scalar", row.mb_s / row.scalar_mb_s},
                               {"kernel", to_string(row.used)}});
        nlohmann::json out = {{"baseline_mb_s", baseline}, {"results", results},   {"bytes", size},
                              {"data", args.data},         {"digest", args.digest}, {"checksum", checksum & 0xFF},
                              {"pages", args.pages}};
        if (args.jobs) out["jobs"] = *args.jobs;
        fmt::print("{}\n", out.dump(2));
        return;
    }
    fmt::print("{} of {} data in memory ({} pages), digest {}, best of {} run(s){}; MB = 10^6 bytes; X SCALAR: "
               "against the scalar reference, measured side by side\n",
               tools::format_size(static_cast<double>(size)), args.data, args.pages, args.digest, args.runs,
               args.jobs ? fmt::format(", {} thread(s), wall-clock time", *args.jobs) : std::string());
    fmt::print("{:<18} {:<10} {:>10} {:>10} {:>9} {:>9}\n", "ALGORITHM", "KERNEL", "MB/S", "CHUNKS", "BASELINE",
               "X SCALAR");
    fmt::print("{:<18} {:<10} {:>10.0f} {:>10} {:>8.1f}% {:>9}\n", "memory-read", "-", baseline, "-", 100.0, "-");
    for (const auto& row : rows)
        fmt::print("{:<18} {:<10} {:>10.0f} {:>10} {:>8.1f}% {:>8.2f}x\n", row.name, to_string(row.used), row.mb_s,
                   row.chunks, 100.0 * row.mb_s / baseline, row.mb_s / row.scalar_mb_s);
}

int run(const SpeedArgs& args) {
    const Options base = args.profile.options();
    const DigestKind digest = parse_digest_kind(args.digest);
    const KernelLevel level = parse_kernel_level(args.kernel);
    const std::uint64_t size64 = args.size;
    tools::check_fits_in_memory(size64, "--size", tools::format_size_exact(size64));  // the buffer is allocated whole
    if (args.data != "random" && args.data != "text" && args.data != "zeros")
        throw UsageError(fmt::format("--data = '{}' is invalid: must be random, text or zeros", args.data));
    if (args.pages != "huge" && args.pages != "small")
        throw UsageError(fmt::format("--pages = '{}' is invalid: must be huge or small", args.pages));
    const auto runs = speed_runs(args, base);

    const auto size = static_cast<std::size_t>(size64);
    // (in the pages the store's and cdc chunk's own buffers use, unless
    // --pages small: docs/BENCHMARKS.md "What bounds it")
    const common::MappedBytes mapped = common::map_bytes(size, args.pages == "huge");
    const std::span<std::uint8_t> buf(reinterpret_cast<std::uint8_t*>(mapped.get()), size);
    if (args.data == "random") fill_splitmix64(buf, 1);
    else if (args.data == "text") fill_text(buf, 1);

    std::uint64_t checksum = 0;
    const double baseline = memory_baseline(buf, args.runs, checksum);
    std::vector<SpeedRow> rows;
    for (const auto& r : runs) {
        rows.push_back(measure(r, level, buf, digest, args.runs, args.jobs));
        if (!args.json && !args.quiet && stderr_is_tty()) fmt::print(stderr, "\r{} done\x1b[K", r.name);
    }
    if (!args.json && !args.quiet && stderr_is_tty()) fmt::print(stderr, "\r\x1b[K");
    print_rows(args, rows, baseline, size, checksum);
    finish_stdout();
    return kExitOk;
}
}  // namespace

void add_speed_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<SpeedArgs>();
    auto* cmd = app.add_subcommand(
        "speed", "in-memory chunking throughput of each algorithm beside a memory-read baseline (same buffer, same run)");
    add_algorithm_list_option(*cmd, args->algorithms, "algorithms to measure: names, comma-separated or repeated, or all");
    add_profile_options(*cmd, args->profile);
    add_size_option(*cmd, "--size", args->size, 1, std::numeric_limits<std::uint64_t>::max(), "buffer size");
    with_choices(cmd->add_option("--data", args->data, "buffer content: random, text or zeros")
                     ->type_name("KIND")
                     ->capture_default_str(),
                 {"random", "text", "zeros"});
    with_choices(cmd->add_option("--pages", args->pages,
                                 "pages of the buffer: huge (transparent huge pages where the kernel gives them, as "
                                 "the store's and cdc chunk's buffers) or small (4 KiB)")
                     ->type_name("KIND")
                     ->capture_default_str(),
                 {"huge", "small"});
    add_digest_option(*cmd, args->digest, true)->description("also fingerprint every chunk: blake3, sha256, xxh3 or none");
    add_kernel_option(*cmd, args->kernel);
    add_count_option(*cmd, "--runs", args->runs, 1, limits::kRuns,
                     "measure each algorithm this many times and report the best");
    // (an optional target: without -j, one thread and its CPU time; so not
    // add_count_option, but its parser)
    cmd->add_option_function<std::string>(
           "-j,--jobs",
           [args](const std::string& v) {
               args->jobs = static_cast<unsigned>(tools::parse_count(v, "--jobs", 0, limits::kJobs));
           },
           "cut each buffer as one stream on this many threads (0: every core), timed by the wall clock "
           "(without: one thread, its CPU time)")
        ->type_name("N");
    add_json_flag(*cmd, args->json,
                  "{\"baseline_mb_s\", \"results\": [{\"algorithm\", \"mb_s\", \"chunks\", "
                  "\"fraction_of_baseline\", \"scalar_mb_s\", \"relative_to_scalar\", \"kernel\"}], ...}");
    add_quiet_flag(*cmd, args->quiet);
    document(*cmd, {.notes = "Times are the measuring thread's CPU time, best of --runs; MB = 10^6 bytes.",
                    .examples = {{"cdc speed", "every algorithm on 1 GiB of random data"},
                                 {"cdc speed -a fastcdc-v1.0.0,ultracdc --size 256M --digest blake3 --runs 3",
                                  "two algorithms with BLAKE3 of every chunk, best of three"}},
                    .exit_codes = exit_codes()});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
