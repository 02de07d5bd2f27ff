// SPDX-License-Identifier: Apache-2.0
// The engine of `cdc bench run`: chunk every file of a tree, one chunker per
// file, N files in flight, and sample memory and CPU while it runs.
//
// Concurrency model. "Concurrency N" means N files in flight: N lanes, each
// holding one open file and one live chunker, exactly as N goroutines would
// in the Go benchmark. The lanes are stepped round robin (one chunk per lane
// per turn) by T worker threads (T = min(N, hardware threads) unless given),
// so concurrency 1000 on 2 cores is 1000 live chunkers and their buffers, not
// 1000 OS threads fighting over 2 cores. A lane that finishes a file takes the
// next one from a shared queue. Lanes are the worst case for memory (all N
// files always in flight); threads = N gives one OS thread per lane, where a
// thread often finishes a small file within its time slice and fewer
// buffers are live at once (docs/BENCHMARKS.md compares both).
//
// Buffer modes. Unpooled: every file gets `Chunker(finder, FileSource(path))`
// and the chunker allocates its own buffer (default_buffer_size(max)) — one
// allocation per file. Pooled: each worker thread keeps a free list of
// caller-owned buffers (uninitialised, `buffer_size` bytes); a lane takes one
// for a file and gives it back at the end, so the number of buffers ever
// allocated is the number of lanes, however many files there are.
#pragma once

#include <cdc/corpus.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace cdc::tools {

struct BenchSample;

struct BenchConfig {
    std::string algorithm = "fastcdc";
    cdc::Options options;
    std::vector<std::filesystem::path> files;  ///< chunked in this order
    std::size_t concurrency = 1;                ///< files in flight (lanes), >= 1
    std::size_t threads = 0;                    ///< worker threads; 0 = min(concurrency, hardware threads)
    bool pooled = false;
    std::size_t buffer_size = 0;                ///< pooled buffer size; 0 = default_buffer_size(max)
    std::chrono::milliseconds sample_interval{100};
    /// Called from the sampler thread after each periodic sample (progress).
    std::function<void(const BenchSample&)> on_sample;
};

/// Process-wide usage at one instant.
struct ProcessUsage {
    double rss_mb = 0;       ///< resident set now (/proc/self/statm), MB = 10^6 bytes
    double peak_rss_mb = 0;  ///< peak resident set so far (getrusage ru_maxrss)
    double cpu_user_s = 0;   ///< getrusage(RUSAGE_SELF)
    double cpu_sys_s = 0;
};
ProcessUsage read_process_usage();

/// One point of the time series.
struct BenchSample {
    double t_s = 0;  ///< seconds since the start of chunking
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;
    std::uint64_t chunks = 0;
    double rss_mb = 0;
    double cpu_user_s = 0;  ///< since the start of chunking
    double cpu_sys_s = 0;
};

struct BenchSummary {
    std::string algorithm;
    std::size_t min_size = 0, avg_size = 0, max_size = 0;
    std::size_t concurrency = 0, threads = 0;
    bool pooled = false;
    std::size_t buffer_size = 0;  ///< per chunker (unpooled) or per pooled buffer
    std::uint64_t files = 0, errors = 0, bytes = 0, chunks = 0;
    double elapsed_s = 0, mb_per_s = 0;
    double start_rss_mb = 0, peak_rss_mb = 0, max_sampled_rss_mb = 0;
    double cpu_user_s = 0, cpu_sys_s = 0;
    std::uint64_t buffer_allocations = 0, buffer_allocated_bytes = 0;
    std::int64_t sample_ms = 0;
    std::string first_error;  ///< message of the first skipped file, if any
};

struct BenchResult {
    BenchSummary summary;
    std::vector<std::string> errors;   ///< the message of every file skipped after an error (not in JSON)
    std::vector<BenchSample> samples;  ///< first at t = 0, last at the end
};

/// Runs the benchmark. Files that cannot be read are counted in `errors` and
/// skipped. Throws OptionError for bad options.
BenchResult run_bench(const BenchConfig& config);

/// The regular files under `root` (recursively: cdc::walk_inputs, the walk
/// of cdc analyze; symlinks not followed, each file once), sorted, or `root` itself
/// if it is a file, with what the walk could not read (errors: unreadable
/// directories, names too long...) and skipped on purpose (warnings: special
/// files). Throws IoError if `root` cannot be read.
struct FileList {
    std::vector<std::filesystem::path> files;
    std::vector<cdc::InputIssue> errors, warnings;
};
FileList list_files(const std::filesystem::path& root);

/// CPU utilisation between consecutive samples, in percent of one core
/// (200 = two cores busy): an average over the interval [from_s, t_s].
struct CpuPoint {
    double t_s = 0;
    double percent = 0;
    double from_s = 0;
};
std::vector<CpuPoint> cpu_utilisation(const std::vector<BenchSample>& samples);

/// JSON: {"summary": {...}, "samples": [{...}, ...]} (field names as in the
/// structs above; peak_rss_mb, mb_per_s, ...).
nlohmann::ordered_json to_json(const BenchResult& result);
/// The inverse of to_json; throws std::runtime_error naming a missing field.
BenchResult bench_result_from_json(const nlohmann::json& j);
/// CSV of the series: header then one row per sample.
std::string samples_csv(const std::vector<BenchSample>& samples);

}  // namespace cdc::tools
