// SPDX-License-Identifier: Apache-2.0
#include "bench_run.hpp"

#include "escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

namespace cdc::tools {

namespace {

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; }

double resident_mb() {
    // statm: size resident shared text lib data dt (pages)
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    unsigned long size = 0, resident = 0;
    const int n = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    if (n != 2) return 0;
    return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1e6;
}

// Each worker's counters on their own cache line; the sampler sums them.
struct alignas(64) Counters {
    std::atomic<std::uint64_t> files{0}, bytes{0}, chunks{0}, errors{0}, allocations{0}, allocated_bytes{0};
};

struct Shared {
    const BenchConfig& config;
    std::shared_ptr<const CutFinder> finder;
    std::size_t buffer_size;
    std::atomic<std::size_t> next_file{0};
    std::mutex error_mutex;
    std::vector<std::string> errors;  // every skipped file's message, in order
    std::exception_ptr fatal;
    std::atomic<bool> stop{false};
};

void note_error(Shared& shared, Counters& counters, const std::string& message) {
    counters.errors.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(shared.error_mutex);
    shared.errors.push_back(message);
}

// Lanes first_lane .. first_lane + lane_count - 1 of the run; lane g starts
// on file g, so N files are in flight from the start whatever the threads'
// timing, then lanes take files from the shared queue.
void worker(Shared& shared, Counters& counters, std::size_t first_lane, std::size_t lane_count) {
    struct Lane {
        std::optional<Chunker> chunker;
        std::byte* buffer = nullptr;
        bool done = false;
    };
    std::vector<Lane> lanes(lane_count);
    std::vector<std::unique_ptr<std::byte[]>> pool_storage;
    std::vector<std::byte*> pool_free;
    const bool pooled = shared.config.pooled;

    auto release = [&](Lane& lane) {
        lane.chunker.reset();
        if (lane.buffer != nullptr) pool_free.push_back(lane.buffer);
        lane.buffer = nullptr;
    };
    // Opens the next readable file on `lane`; false when the queue is empty.
    auto start = [&](Lane& lane, std::size_t initial) {
        for (;;) {
            std::size_t i = initial;
            if (initial == SIZE_MAX) i = shared.next_file.fetch_add(1, std::memory_order_relaxed);
            initial = SIZE_MAX;
            if (i >= shared.config.files.size()) return false;
            const auto& path = shared.config.files[i];
            try {
                Source source = FileSource(path);
                if (pooled) {
                    if (pool_free.empty()) {
                        // Uninitialised on purpose: pages are touched only by reads.
                        pool_storage.emplace_back(new std::byte[shared.buffer_size]);
                        pool_free.push_back(pool_storage.back().get());
                        counters.allocations.fetch_add(1, std::memory_order_relaxed);
                        counters.allocated_bytes.fetch_add(shared.buffer_size, std::memory_order_relaxed);
                    }
                    lane.buffer = pool_free.back();
                    pool_free.pop_back();
                    lane.chunker.emplace(shared.finder, std::move(source),
                                         std::span<std::byte>(lane.buffer, shared.buffer_size));
                } else {
                    lane.chunker.emplace(shared.finder, std::move(source));
                }
                return true;
            } catch (const IoError& e) {
                release(lane);
                note_error(shared, counters, e.what());
            }
        }
    };
    auto finish = [&](Lane& lane) {
        if (!lane.chunker->uses_caller_buffer() && lane.chunker->buffer_size() > 0) {
            counters.allocations.fetch_add(1, std::memory_order_relaxed);
            counters.allocated_bytes.fetch_add(lane.chunker->buffer_size(), std::memory_order_relaxed);
        }
        release(lane);
    };

    std::size_t active = lanes.size();
    Chunk chunk;
    bool first_pass = true;
    while (active > 0 && !shared.stop.load(std::memory_order_relaxed)) {
        for (std::size_t k = 0; k < lanes.size(); ++k) {
            Lane& lane = lanes[k];
            if (lane.done) continue;
            if (!lane.chunker && !start(lane, first_pass ? first_lane + k : SIZE_MAX)) {
                lane.done = true;
                --active;
                continue;
            }
            try {
                if (lane.chunker->next(chunk)) {
                    counters.chunks.fetch_add(1, std::memory_order_relaxed);
                    counters.bytes.fetch_add(chunk.size(), std::memory_order_relaxed);
                } else {
                    finish(lane);
                    counters.files.fetch_add(1, std::memory_order_relaxed);
                }
            } catch (const IoError& e) {
                finish(lane);
                note_error(shared, counters, e.what());
            }
        }
        first_pass = false;
    }
}

}  // namespace

ProcessUsage read_process_usage() {
    ProcessUsage u;
    rusage ru{};
    if (::getrusage(RUSAGE_SELF, &ru) == 0) {
        u.peak_rss_mb = static_cast<double>(ru.ru_maxrss) * 1024.0 / 1e6;  // ru_maxrss is in KiB
        u.cpu_user_s = seconds(ru.ru_utime);
        u.cpu_sys_s = seconds(ru.ru_stime);
    }
    u.rss_mb = resident_mb();
    return u;
}

FileList list_files(const std::filesystem::path& root) {
    if (root == "-") throw IoError("'-' (standard input) is not a tree to chunk");
    WalkResult walk = walk_inputs({root.string()});
    FileList out;
    out.files.reserve(walk.files.size());
    for (const FileEntry& f : walk.files) out.files.emplace_back(f.path);
    std::sort(out.files.begin(), out.files.end());
    out.errors = std::move(walk.errors);
    out.warnings = std::move(walk.warnings);
    return out;
}

BenchResult run_bench(const BenchConfig& config) {
    if (config.concurrency == 0) throw OptionError("--concurrency = 0 is invalid: at least one file in flight");
    if (config.sample_interval.count() <= 0)
        throw OptionError(fmt::format("--sample-ms = {} is invalid: must be > 0", config.sample_interval.count()));
    auto finder = make_cut_finder(config.algorithm, config.options);
    const Profile& profile = finder->profile();
    const std::size_t buffer_size = config.buffer_size ? config.buffer_size : default_buffer_size(profile.max_size);
    if (config.pooled && buffer_size < profile.max_size)
        throw OptionError(fmt::format("--buffer = {} is invalid: a pooled buffer must hold at least max_size ({})",
                                      buffer_size, profile.max_size));
    const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads = std::min(config.concurrency, config.threads ? config.threads : hw);

    Shared shared{config, finder, buffer_size, {}, {}, {}, {}, {}};
    shared.next_file = std::min(config.concurrency, config.files.size());  // files 0..N-1 go to lanes 0..N-1
    std::vector<Counters> counters(threads);

    BenchResult result;
    BenchSummary& s = result.summary;
    s.algorithm = config.algorithm;
    s.min_size = profile.min_size;
    s.avg_size = profile.normal_size;
    s.max_size = profile.max_size;
    s.concurrency = config.concurrency;
    s.threads = threads;
    s.pooled = config.pooled;
    s.buffer_size = config.pooled ? buffer_size : default_buffer_size(profile.max_size);
    s.sample_ms = config.sample_interval.count();

    const ProcessUsage start_usage = read_process_usage();
    s.start_rss_mb = start_usage.rss_mb;
    const auto t0 = std::chrono::steady_clock::now();
    auto sample = [&] {
        BenchSample p;
        const ProcessUsage u = read_process_usage();
        p.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (const Counters& c : counters) {
            p.files += c.files.load(std::memory_order_relaxed);
            p.bytes += c.bytes.load(std::memory_order_relaxed);
            p.chunks += c.chunks.load(std::memory_order_relaxed);
        }
        p.rss_mb = u.rss_mb;
        p.cpu_user_s = u.cpu_user_s - start_usage.cpu_user_s;
        p.cpu_sys_s = u.cpu_sys_s - start_usage.cpu_sys_s;
        return p;
    };

    std::mutex sampler_mutex;
    std::condition_variable sampler_cv;
    bool finished = false;
    result.samples.push_back(sample());
    std::thread sampler([&] {
        std::unique_lock lock(sampler_mutex);
        auto next = t0 + config.sample_interval;
        while (!sampler_cv.wait_until(lock, next, [&] { return finished; })) {
            lock.unlock();
            BenchSample p = sample();
            if (config.on_sample) config.on_sample(p);
            lock.lock();
            result.samples.push_back(p);
            next += config.sample_interval;
            // After a stall (a loaded machine), sample again soon rather than in a burst.
            const auto now = std::chrono::steady_clock::now();
            if (next < now) next = now + config.sample_interval;
        }
    });

    std::vector<std::thread> workers;
    std::exception_ptr fatal;
    std::mutex fatal_mutex;
    std::size_t first_lane = 0;
    for (std::size_t t = 0; t < threads; ++t) {
        const std::size_t lanes = config.concurrency / threads + (t < config.concurrency % threads ? 1 : 0);
        workers.emplace_back([&, t, lanes, first_lane] {
            try {
                worker(shared, counters[t], first_lane, lanes);
            } catch (...) {
                std::lock_guard lock(fatal_mutex);
                if (!fatal) fatal = std::current_exception();
                shared.stop = true;
            }
        });
        first_lane += lanes;
    }
    for (auto& w : workers) w.join();
    {
        std::lock_guard lock(sampler_mutex);
        finished = true;
    }
    sampler_cv.notify_all();
    sampler.join();
    result.samples.push_back(sample());
    if (fatal) std::rethrow_exception(fatal);

    const BenchSample& last = result.samples.back();
    const ProcessUsage end_usage = read_process_usage();
    for (const Counters& c : counters) {
        s.errors += c.errors.load();
        s.buffer_allocations += c.allocations.load();
        s.buffer_allocated_bytes += c.allocated_bytes.load();
    }
    s.files = last.files;
    s.bytes = last.bytes;
    s.chunks = last.chunks;
    s.elapsed_s = last.t_s;
    s.mb_per_s = s.elapsed_s > 0 ? static_cast<double>(s.bytes) / 1e6 / s.elapsed_s : 0;
    s.peak_rss_mb = end_usage.peak_rss_mb;
    for (const BenchSample& p : result.samples) s.max_sampled_rss_mb = std::max(s.max_sampled_rss_mb, p.rss_mb);
    s.cpu_user_s = last.cpu_user_s;
    s.cpu_sys_s = last.cpu_sys_s;
    if (!shared.errors.empty()) s.first_error = shared.errors.front();
    result.errors = std::move(shared.errors);
    return result;
}

std::vector<CpuPoint> cpu_utilisation(const std::vector<BenchSample>& samples) {
    std::vector<CpuPoint> out;
    for (std::size_t i = 1; i < samples.size(); ++i) {
        const double dt = samples[i].t_s - samples[i - 1].t_s;
        if (dt <= 0) continue;
        const double cpu = (samples[i].cpu_user_s + samples[i].cpu_sys_s) -
                           (samples[i - 1].cpu_user_s + samples[i - 1].cpu_sys_s);
        out.push_back({samples[i].t_s, std::max(0.0, cpu / dt * 100.0), samples[i - 1].t_s});
    }
    return out;
}

nlohmann::ordered_json to_json(const BenchResult& r) {
    const BenchSummary& s = r.summary;
    nlohmann::ordered_json summary = {
        {"algorithm", s.algorithm},
        {"min_size", s.min_size},
        {"avg_size", s.avg_size},
        {"max_size", s.max_size},
        {"concurrency", s.concurrency},
        {"threads", s.threads},
        {"pooled", s.pooled},
        {"buffer_size", s.buffer_size},
        {"files", s.files},
        {"errors", s.errors},
        {"bytes", s.bytes},
        {"chunks", s.chunks},
        {"elapsed_s", s.elapsed_s},
        {"mb_per_s", s.mb_per_s},
        {"start_rss_mb", s.start_rss_mb},
        {"peak_rss_mb", s.peak_rss_mb},
        {"max_sampled_rss_mb", s.max_sampled_rss_mb},
        {"cpu_user_s", s.cpu_user_s},
        {"cpu_sys_s", s.cpu_sys_s},
        {"buffer_allocations", s.buffer_allocations},
        {"buffer_allocated_bytes", s.buffer_allocated_bytes},
        {"buffer_allocated_mb", static_cast<double>(s.buffer_allocated_bytes) / 1e6},
        {"sample_ms", s.sample_ms},
    };
    if (!s.first_error.empty()) summary["first_error"] = escape_text(s.first_error);
    nlohmann::ordered_json samples = nlohmann::ordered_json::array();
    for (const BenchSample& p : r.samples)
        samples.push_back({{"t_s", p.t_s},
                           {"files", p.files},
                           {"bytes", p.bytes},
                           {"chunks", p.chunks},
                           {"rss_mb", p.rss_mb},
                           {"cpu_user_s", p.cpu_user_s},
                           {"cpu_sys_s", p.cpu_sys_s}});
    return {{"summary", summary}, {"samples", samples}};
}

namespace {
template <class T>
T field(const nlohmann::json& j, const char* object, const char* name) {
    if (!j.is_object() || !j.contains(name))
        throw std::runtime_error(fmt::format("bench JSON: {} has no field '{}'", object, name));
    return j.at(name).get<T>();
}
}  // namespace

BenchResult bench_result_from_json(const nlohmann::json& j) {
    if (!j.is_object() || !j.contains("summary") || !j.contains("samples") || !j.at("samples").is_array())
        throw std::runtime_error("bench JSON: expected {\"summary\": {...}, \"samples\": [...]}");
    BenchResult r;
    const auto& js = j.at("summary");
    BenchSummary& s = r.summary;
    const char* sum = "summary";
    s.algorithm = field<std::string>(js, sum, "algorithm");
    s.min_size = field<std::size_t>(js, sum, "min_size");
    s.avg_size = field<std::size_t>(js, sum, "avg_size");
    s.max_size = field<std::size_t>(js, sum, "max_size");
    s.concurrency = field<std::size_t>(js, sum, "concurrency");
    s.threads = field<std::size_t>(js, sum, "threads");
    s.pooled = field<bool>(js, sum, "pooled");
    s.buffer_size = field<std::size_t>(js, sum, "buffer_size");
    s.files = field<std::uint64_t>(js, sum, "files");
    s.errors = field<std::uint64_t>(js, sum, "errors");
    s.bytes = field<std::uint64_t>(js, sum, "bytes");
    s.chunks = field<std::uint64_t>(js, sum, "chunks");
    s.elapsed_s = field<double>(js, sum, "elapsed_s");
    s.mb_per_s = field<double>(js, sum, "mb_per_s");
    s.start_rss_mb = field<double>(js, sum, "start_rss_mb");
    s.peak_rss_mb = field<double>(js, sum, "peak_rss_mb");
    s.max_sampled_rss_mb = field<double>(js, sum, "max_sampled_rss_mb");
    s.cpu_user_s = field<double>(js, sum, "cpu_user_s");
    s.cpu_sys_s = field<double>(js, sum, "cpu_sys_s");
    s.buffer_allocations = field<std::uint64_t>(js, sum, "buffer_allocations");
    s.buffer_allocated_bytes = field<std::uint64_t>(js, sum, "buffer_allocated_bytes");
    s.sample_ms = field<std::int64_t>(js, sum, "sample_ms");
    if (js.contains("first_error")) s.first_error = js.at("first_error").get<std::string>();
    for (const auto& p : j.at("samples")) {
        BenchSample b;
        b.t_s = field<double>(p, "sample", "t_s");
        b.files = field<std::uint64_t>(p, "sample", "files");
        b.bytes = field<std::uint64_t>(p, "sample", "bytes");
        b.chunks = field<std::uint64_t>(p, "sample", "chunks");
        b.rss_mb = field<double>(p, "sample", "rss_mb");
        b.cpu_user_s = field<double>(p, "sample", "cpu_user_s");
        b.cpu_sys_s = field<double>(p, "sample", "cpu_sys_s");
        r.samples.push_back(b);
    }
    return r;
}

std::string samples_csv(const std::vector<BenchSample>& samples) {
    std::string out = "t_s,files,bytes,chunks,rss_mb,cpu_user_s,cpu_sys_s\n";
    for (const BenchSample& p : samples)
        out += fmt::format("{:.3f},{},{},{},{:.3f},{:.3f},{:.3f}\n", p.t_s, p.files, p.bytes, p.chunks, p.rss_mb,
                           p.cpu_user_s, p.cpu_sys_s);
    return out;
}

}  // namespace cdc::tools
