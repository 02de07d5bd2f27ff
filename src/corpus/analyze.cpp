// SPDX-License-Identifier: Apache-2.0
// Corpus analysis: the walk, the worker pool and the multi-algorithm driver;
// see cdc/corpus/analyze.hpp.
#include <cdc/chunker.hpp>
#include <cdc/corpus/analyze.hpp>
#include <cdc/corpus/dedup_index.hpp>
#include <cdc/error.hpp>
#include <cdc/walk.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <utility>

#include <ctime>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {

// ================================================================ the walk

namespace {

// walk_inputs' side of the one walker (cdc/walk.hpp): files and stdin in
// walk order, each file once (by device and inode: overlapping inputs and
// hard links are counted once), problems as errors and warnings.
class InputCollector final : public WalkVisitor {
public:
    InputCollector(WalkResult& out, const std::vector<std::string>& roots,
                   const std::function<void(WalkResult&)>* on_file = nullptr)
        : out_(out), roots_(roots.begin(), roots.end()), on_file_(on_file) {}

    void file(const std::string& path, const struct stat& st) override {
        if (!seen_.emplace(st.st_dev, st.st_ino).second) {
            ++out_.duplicates_skipped;
            return;
        }
        const auto size = static_cast<std::uint64_t>(st.st_size);
        out_.files.push_back({path, size, !roots_.contains(path)});
        out_.total_bytes += size;
        if (on_file_ != nullptr) (*on_file_)(out_);
    }

    // Named on the command line: read as a stream (stdin, a FIFO,
    // /dev/stdin, a shell's <(...)), size unknown.
    void stream(const std::string& path) override { out_.files.push_back({path, 0}); }

    void skipped(const std::string& path, WalkSkip why, std::string_view message) override {
        switch (why) {
            case WalkSkip::symlink: ++out_.symlinks_skipped; break;
            case WalkSkip::overlap:  // walked once already: nothing is lost, but the user named it twice
                out_.warnings.push_back(
                    {path, "already walked through another path (overlapping inputs): its files are counted once"});
                break;
            case WalkSkip::error:
            case WalkSkip::dangling:  // named by the user's tree, unreadable: an error
                out_.errors.push_back({path, std::string(message)});
                break;
            case WalkSkip::special:
                out_.warnings.push_back({path, fmt::format("{} skipped", message)});
                break;
            case WalkSkip::loop:
            case WalkSkip::other_fs:
            case WalkSkip::excluded:
                out_.warnings.push_back({path, fmt::format("{} skipped", message)});
                break;
        }
    }

    void excluded(const std::string&, bool, WalkExclusion) override { ++out_.excluded; }

private:
    WalkResult& out_;
    std::set<std::string> roots_;  // a file reported under one of these was named, not found in a tree
    std::set<std::pair<dev_t, ino_t>> seen_;
    const std::function<void(WalkResult&)>* on_file_;
};

}  // namespace

WalkResult walk_inputs(const std::vector<std::string>& paths, const WalkOptions& options) {
    return walk_inputs(paths, options, {});
}

WalkResult walk_inputs(const std::vector<std::string>& paths, const WalkOptions& options,
                       const std::function<void(WalkResult&)>& on_file) {
    WalkResult out;
    InputCollector collector(out, paths, on_file ? &on_file : nullptr);
    walk(paths, options, collector);
    return out;
}

// ================================================================ results

double AlgorithmResult::dedup_ratio() const noexcept {
    return bytes == 0 ? 1.0 : static_cast<double>(distinct_bytes) / static_cast<double>(bytes);
}

double AlgorithmResult::chunk_mb_s() const noexcept {
    return cut_seconds <= 0 ? 0.0 : static_cast<double>(bytes) / cut_seconds / 1e6;
}

double AlgorithmResult::wall_mb_s() const noexcept {
    return wall_seconds <= 0 ? 0.0 : static_cast<double>(bytes) / wall_seconds / 1e6;
}

// ================================================================ analysis

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kDefaultReadSize = std::size_t{2} << 20;

// CPU time of the calling thread: the cut and hash timings are CPU time, so
// that a busy machine (preemption) does not distort the per-core speeds.
std::int64_t thread_cpu_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Algo {
    std::shared_ptr<const CutFinder> finder;
    std::unique_ptr<DedupIndex> index;
};

// What one worker adds up for one algorithm (merged after the run).
struct Tally {
    SizeStats sizes;
    std::uint64_t bytes = 0;
    std::uint64_t chunks = 0;
    std::uint64_t files = 0;
    std::int64_t cut_ns = 0;
    std::int64_t hash_ns = 0;
};

struct Segment;

struct Shared {
    const WalkResult& walk;
    const AnalyzeOptions& options;
    std::vector<Algo>& algos;
    std::atomic<std::size_t> next_file{0};
    std::atomic<std::uint64_t> bytes_done{0};
    std::atomic<std::uint64_t> stream_bytes{0};  // read from inputs of unknown size
    std::atomic<std::uint64_t> files_done{0};
    std::atomic<std::uint64_t> errors{0};
    std::atomic<bool> stop{false};

    // Hash tasks: segments whose chunks are cut and wait to be fingerprinted.
    // Guarded by `mutex`, as are Segment::busy and files_active.
    std::mutex mutex{};
    std::condition_variable changed{};  // a task queued or finished, a file done
    std::deque<Segment*> tasks{};
    std::size_t files_active = 0;     // files taken and not yet finished
};

// One of a worker's two buffers. While its chunks are being fingerprinted
// (busy), possibly by another worker, its owner reads and cuts into the
// other one: reading + cutting overlap hashing, and idle workers (no file
// left) hash for the others.
struct Segment {
    std::unique_ptr<std::uint8_t[]> data;
    std::size_t capacity = 0;
    std::vector<std::size_t> starts;               // per algorithm: offset of its first chunk
    std::vector<std::vector<std::uint32_t>> cuts;  // per algorithm: chunk lengths
    bool busy = false;                              // queued or being hashed
};

class FileHandle {
public:
    explicit FileHandle(int fd, bool owned) : fd_(fd), owned_(owned) {}
    ~FileHandle() {
        if (owned_ && fd_ >= 0) ::close(fd_);
    }
    FileHandle(const FileHandle&) = delete;
    FileHandle& operator=(const FileHandle&) = delete;
    int fd() const noexcept { return fd_; }

private:
    int fd_;
    bool owned_;
};

class Worker {
public:
    Worker(Shared& shared, std::size_t buffer_size)
        : shared_(shared), tallies_(shared.algos.size()), pos_(shared.algos.size()) {
        std::size_t min_chunk = kMaxChunkSizeLimit;
        for (const auto& a : shared_.algos) min_chunk = std::min(min_chunk, a.finder->profile().min_size);
        for (auto& seg : segments_) {
            seg.data = std::make_unique_for_overwrite<std::uint8_t[]>(buffer_size);
            seg.capacity = buffer_size;
            seg.starts.resize(shared.algos.size());
            seg.cuts.resize(shared.algos.size());
            for (auto& c : seg.cuts) c.reserve(buffer_size / std::max<std::size_t>(min_chunk, 1) + 2);
        }
    }

    void run() {
        const auto& files = shared_.walk.files;
        for (;;) {
            if (shared_.stop.load(std::memory_order_relaxed)) break;
            std::size_t i;
            {
                std::lock_guard lock(shared_.mutex);
                i = shared_.next_file.fetch_add(1, std::memory_order_relaxed);
                if (i < files.size()) ++shared_.files_active;
            }
            if (i >= files.size()) break;
            const FileEntry& f = files[i];
            try {
                process(f);
                for (auto& t : tallies_) ++t.files;
            } catch (const IoError& e) {
                errors_.push_back({f.path, e.what()});
                shared_.errors.fetch_add(1, std::memory_order_relaxed);
            }
            shared_.files_done.fetch_add(1, std::memory_order_relaxed);
            {
                std::lock_guard lock(shared_.mutex);
                --shared_.files_active;
            }
            shared_.changed.notify_all();
        }
        // No file left: fingerprint for the others until every file is done.
        std::unique_lock lock(shared_.mutex);
        for (;;) {
            shared_.changed.wait(lock, [&] {
                return !shared_.tasks.empty() || shared_.files_active == 0 || shared_.stop.load();
            });
            if (!shared_.tasks.empty()) {
                run_one_task(lock);
                continue;
            }
            if (shared_.files_active == 0 || shared_.stop.load()) return;
        }
    }

    std::vector<Tally>& tallies() noexcept { return tallies_; }
    std::vector<InputIssue>& errors() noexcept { return errors_; }

private:
    // Runs the oldest queued task; `lock` is held on entry and exit.
    void run_one_task(std::unique_lock<std::mutex>& lock) {
        Segment* seg = shared_.tasks.front();
        shared_.tasks.pop_front();
        lock.unlock();
        try {
            hash_segment(*seg);
        } catch (...) {
            shared_.stop = true;
            lock.lock();
            seg->busy = false;
            shared_.changed.notify_all();
            throw;
        }
        lock.lock();
        seg->busy = false;
        shared_.changed.notify_all();
    }

    // Waits until `seg` is free, running queued tasks meanwhile.
    void wait_idle(Segment& seg, std::unique_lock<std::mutex>& lock) {
        while (seg.busy) {
            if (!shared_.tasks.empty())
                run_one_task(lock);
            else
                shared_.changed.wait(lock, [&] { return !seg.busy || !shared_.tasks.empty(); });
        }
    }

    // Fingerprints and indexes the chunks cut in `seg` (any worker may run it;
    // the figures go to this worker's tallies, merged exactly at the end).
    void hash_segment(Segment& seg) {
        const DigestKind kind = shared_.options.digest;
        for (std::size_t k = 0; k < seg.cuts.size(); ++k) {
            const std::int64_t t0 = thread_cpu_ns();
            DedupIndex& index = *shared_.algos[k].index;
            Tally& tally = tallies_[k];
            std::size_t q = seg.starts[k];
            const std::span<const std::uint32_t> cuts(seg.cuts[k]);
            // Up to kDigestBatch chunks at a time: BLAKE3 hashes them side by
            // side (compute_digests), then they go into the index.
            for (std::size_t i = 0; i < cuts.size(); i += kDigestBatch) {
                const auto lengths = cuts.subspan(i, std::min(kDigestBatch, cuts.size() - i));
                std::size_t bytes = 0;
                for (const std::uint32_t c : lengths) bytes += c;
                const std::span<Digest> digests(digests_.data(), lengths.size());
                compute_digests(kind, {reinterpret_cast<const std::byte*>(seg.data.get() + q), bytes}, lengths, digests);
                for (std::size_t j = 0; j < lengths.size(); ++j) {
                    index.insert(digests[j], lengths[j]);
                    tally.sizes.add(lengths[j]);
                }
                q += bytes;
            }
            tally.hash_ns += thread_cpu_ns() - t0;
        }
    }

    // Fills `seg` behind end_ until it is full or the input ends.
    void fill(Segment& seg, Reader& reader, bool stream) {
        const auto room = std::as_writable_bytes(std::span(seg.data.get() + end_, seg.capacity - end_));
        const FillResult r = read_at_least(reader, room, room.size());
        end_ += r.bytes;
        eof_ = r.end;
        shared_.bytes_done.fetch_add(r.bytes, std::memory_order_relaxed);
        if (stream) shared_.stream_bytes.fetch_add(r.bytes, std::memory_order_relaxed);
    }

    void process(const FileEntry& f) {
        const bool is_stdin = f.path == "-";
        const std::string name = is_stdin ? std::string("stdin") : f.path;
        int fd = 0;
        if (!is_stdin) {
            try {
                fd = open_walked_file(f.path, f.in_tree, shared_.options.follow_symlinks);
            } catch (const IoError& e) {
                throw IoError(fmt::format("'{}': {}", name, e.what()));
            }
        }
        FileHandle handle(fd, !is_stdin);
        struct stat st {};
        if (::fstat(fd, &st) != 0) throw IoError(fmt::format("cannot examine '{}': {}", name, std::strerror(errno)));
        if (S_ISDIR(st.st_mode)) throw IoError(fmt::format("'{}' became a directory during the run", name));
        const bool stream = !S_ISREG(st.st_mode) || f.size == 0;
        if (S_ISREG(st.st_mode)) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        FdReader reader(fd, fmt::format("'{}'", name));

        const std::size_t n_algos = shared_.algos.size();
        Segment* cur = &segments_[0];
        Segment* other = &segments_[1];
        {
            std::unique_lock lock(shared_.mutex);
            wait_idle(*cur, lock);
        }
        end_ = 0;
        eof_ = false;
        std::fill(pos_.begin(), pos_.end(), std::size_t{0});
        for (;;) {
            fill(*cur, reader, stream);
            bool all_done = true;
            for (std::size_t k = 0; k < n_algos; ++k) {
                cut(*cur, k);
                if (pos_[k] != end_) all_done = false;
            }
            {
                std::lock_guard lock(shared_.mutex);
                cur->busy = true;
                shared_.tasks.push_back(cur);
            }
            shared_.changed.notify_all();
            if (eof_ && all_done) return;
            // Carry the bytes not yet cut by the slowest cursor over to the
            // other buffer (cur is only read meanwhile, by its hasher too).
            {
                std::unique_lock lock(shared_.mutex);
                wait_idle(*other, lock);
            }
            const std::size_t lo = *std::min_element(pos_.begin(), pos_.end());
            std::memcpy(other->data.get(), cur->data.get() + lo, end_ - lo);
            end_ -= lo;
            for (auto& p : pos_) p -= lo;
            std::swap(cur, other);
        }
    }

    // Cuts every chunk of algorithm k that has a full window in the buffer
    // (or the rest, at the end of input); cut_ns is the chunking speed.
    void cut(Segment& seg, std::size_t k) {
        const Algo& algo = shared_.algos[k];
        const CutFinder& finder = *algo.finder;
        Tally& tally = tallies_[k];
        const std::uint8_t* data = seg.data.get();
        auto& cuts = seg.cuts[k];
        cuts.clear();
        const std::size_t start = pos_[k];
        seg.starts[k] = start;
        const std::int64_t t0 = thread_cpu_ns();
        const std::size_t consumed =
            cut_lengths(finder, std::as_bytes(std::span(data + start, end_ - start)), eof_, cuts);
        tally.cut_ns += thread_cpu_ns() - t0;
        tally.chunks += cuts.size();
        tally.bytes += consumed;
        pos_[k] = start + consumed;
    }

    Shared& shared_;
    std::array<Segment, 2> segments_;
    std::size_t end_ = 0;
    bool eof_ = false;
    std::vector<Tally> tallies_;
    std::vector<std::size_t> pos_;  // one cursor per algorithm, relative to the current buffer
    std::vector<InputIssue> errors_;
    static constexpr std::size_t kDigestBatch = 64;
    std::array<Digest, kDigestBatch> digests_{};  // hash_segment's batch
};

// Bad options fail before anything is walked or read.
void check_options(const AnalyzeOptions& options) {
    if (options.algorithms.empty()) throw OptionError("algorithms is empty: no algorithm given", "algorithms");
    for (const auto& a : options.algorithms)
        if (!a) throw OptionError("algorithms holds a null finder", "algorithms");
    if (options.digest == DigestKind::none)
        throw OptionError("digest = 'none' is invalid here: dedup needs fingerprints (blake3, sha256, xxh3)",
                          "digest");
}

bool by_path(const InputIssue& a, const InputIssue& b) {
    return a.path != b.path ? a.path < b.path : a.message < b.message;
}

}  // namespace

std::size_t analyze_buffer_size(const AnalyzeOptions& options) {
    std::size_t max = 0;
    for (const auto& a : options.algorithms) max = std::max(max, a->profile().max_size);
    return (options.read_size ? options.read_size : kDefaultReadSize) + max;
}

AnalyzeReport analyze(const std::vector<std::string>& paths, const AnalyzeOptions& options) {
    // Validate the options before walking (a bad option must fail at once).
    check_options(options);
    WalkOptions w;
    w.follow_symlinks = options.follow_symlinks;
    w.one_file_system = options.one_file_system;
    w.exclude = options.exclude;
    return analyze(walk_inputs(paths, w), options);
}

AnalyzeReport analyze(const WalkResult& walk, const AnalyzeOptions& options) {
    const auto t0 = Clock::now();
    check_options(options);

    std::vector<Algo> algos;
    for (const auto& a : options.algorithms) {
        Algo algo;
        algo.finder = a;
        algo.index = std::make_unique<DedupIndex>();
        algos.push_back(std::move(algo));
    }
    const std::size_t buffer_size = analyze_buffer_size(options);

    unsigned jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
    Shared shared{walk, options, algos};
    // Every job gets a worker even with fewer files: workers without a file
    // fingerprint the chunks the others cut.
    const std::size_t n_workers = walk.files.empty() ? 1 : std::max<std::size_t>(1, jobs);
    std::vector<std::unique_ptr<Worker>> workers;
    for (std::size_t i = 0; i < n_workers; ++i) workers.push_back(std::make_unique<Worker>(shared, buffer_size));

    std::mutex failure_mutex;
    std::exception_ptr failure;
    std::vector<std::thread> threads;
    for (auto& w : workers) {
        threads.emplace_back([&, worker = w.get()] {
            try {
                worker->run();
            } catch (...) {
                std::lock_guard lock(failure_mutex);
                if (!failure) failure = std::current_exception();
                {
                    std::lock_guard stop_lock(shared.mutex);
                    shared.stop = true;
                }
                shared.changed.notify_all();
            }
        });
    }

    // Progress, from this thread while the workers run.
    auto progress = [&](bool finished) {
        AnalyzeProgress p;
        p.bytes_done = shared.bytes_done.load();
        p.bytes_total = walk.total_bytes + shared.stream_bytes.load();
        p.files_done = shared.files_done.load();
        p.files_total = walk.files.size();
        p.errors = shared.errors.load() + walk.errors.size();
        p.seconds = seconds_since(t0);
        p.finished = finished;
        options.progress(p);
    };
    if (options.progress) {
        std::mutex m;
        std::unique_lock lock(m);
        std::condition_variable never;
        const auto interval = std::chrono::duration<double>(std::max(0.01, options.progress_interval));
        while (shared.files_done.load() < walk.files.size() && !shared.stop.load()) {
            never.wait_for(lock, interval);
            progress(false);
        }
    }
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    const double wall = seconds_since(t0);
    if (options.progress) progress(true);

    AnalyzeReport report;
    report.jobs = jobs;
    report.buffer_bytes = 2 * buffer_size;
    report.wall_seconds = wall;
    report.symlinks_skipped = walk.symlinks_skipped;
    report.duplicates_skipped = walk.duplicates_skipped;
    report.excluded = walk.excluded;
    report.errors = walk.errors;
    report.warnings = walk.warnings;
    for (auto& w : workers) report.errors.insert(report.errors.end(), w->errors().begin(), w->errors().end());
    std::sort(report.errors.begin(), report.errors.end(), by_path);
    std::sort(report.warnings.begin(), report.warnings.end(), by_path);

    for (std::size_t k = 0; k < algos.size(); ++k) {
        AlgorithmResult r;
        r.algorithm = std::string(algos[k].finder->name());
        r.profile = algos[k].finder->profile();
        std::int64_t cut_ns = 0, hash_ns = 0;
        for (auto& w : workers) {
            Tally& t = w->tallies()[k];
            r.files += t.files;
            r.bytes += t.bytes;
            r.chunks += t.chunks;
            r.sizes.merge(t.sizes);
            cut_ns += t.cut_ns;
            hash_ns += t.hash_ns;
        }
        r.distinct_chunks = algos[k].index->distinct_chunks();
        r.distinct_bytes = algos[k].index->distinct_bytes();
        r.index_memory_bytes = algos[k].index->memory_bytes();
        if (options.keep_indexes) r.index = std::move(algos[k].index);
        r.cut_seconds = static_cast<double>(cut_ns) / 1e9;
        r.hash_seconds = static_cast<double>(hash_ns) / 1e9;
        r.wall_seconds = wall;
        report.algorithms.push_back(std::move(r));
    }
    if (!report.algorithms.empty()) {
        report.files = report.algorithms.front().files;
        report.bytes = report.algorithms.front().bytes;
    }
    return report;
}

}  // namespace cdc
